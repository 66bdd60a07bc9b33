"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) decoded
into the JSON objects the rest of the apiserver handles; see `decode`."""

from typing import Any

from draemu.apiserver.wire.protobuf.decode import ProtobufError, decode, message_name

__all__ = ["ProtobufError", "decode", "decode_body", "message_name"]


def decode_body(body: bytes) -> dict[str, Any]:
    """A request body whose envelope alone names the kind (the URL's kind is checked by
    the handler afterwards, as for JSON bodies)."""
    return decode(body, "", "", "")
