"""The protobuf wire format, read: tags, varints, fixed-width numbers, length-delimited
payloads and packed repeated scalars. Every malformed input raises `WireError`."""

from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, BYTES, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_FIELD = (1 << 29) - 1


class WireError(ValueError):
    """The bytes are not a valid protobuf encoding."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise WireError("unexpected end of data inside a varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for each field of one message, in wire order: an
    int for varints and fixed-width values, bytes for length-delimited ones."""
    pos, end = 0, len(buf)
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # one-byte keys (fields 1-15) are nearly all of them
            pos += 1
        else:
            key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if not 0 < number <= _MAX_FIELD:
            raise WireError(f"illegal field number {number}")
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
            yield number, wire_type, value
        elif wire_type in (FIXED32, FIXED64):
            size = 4 if wire_type == FIXED32 else 8
            if pos + size > end:
                raise WireError(f"unexpected end of data in field {number}")
            yield number, wire_type, int.from_bytes(buf[pos:pos + size], "little")
            pos += size
        elif wire_type == BYTES:
            if pos < end and buf[pos] < 0x80:
                size = buf[pos]
                pos += 1
            else:
                size, pos = read_varint(buf, pos)
            if pos + size > end:
                raise WireError(f"field {number} is longer than the data left "
                                f"({size} > {end - pos} bytes)")
            yield number, wire_type, buf[pos:pos + size]
            pos += size
        elif wire_type == START_GROUP:
            pos = _skip_group(buf, pos, number)
        else:
            raise WireError(f"illegal wire type {wire_type} in field {number}")


def _skip_group(buf: bytes, pos: int, number: int) -> int:
    """Groups are obsolete and never part of a Kubernetes message: skip them whole."""
    while True:
        key, pos = read_varint(buf, pos)
        inner, wire_type = key >> 3, key & 7
        if wire_type == END_GROUP:
            if inner != number:
                raise WireError(f"group {number} closed by field {inner}")
            return pos
        if wire_type == VARINT:
            pos = read_varint(buf, pos)[1]
        elif wire_type in (FIXED32, FIXED64):
            pos += 4 if wire_type == FIXED32 else 8
        elif wire_type == BYTES:
            size, pos = read_varint(buf, pos)
            pos += size
        elif wire_type == START_GROUP:
            pos = _skip_group(buf, pos, inner)
        else:
            raise WireError(f"illegal wire type {wire_type} in field {inner}")
        if pos > len(buf):
            raise WireError(f"unexpected end of data in group {number}")


def packed(buf: bytes, wire_type: int) -> list[int]:
    """The values of a packed repeated scalar field."""
    if wire_type == VARINT:
        values, pos = [], 0
        while pos < len(buf):
            value, pos = read_varint(buf, pos)
            values.append(value)
        return values
    size = 4 if wire_type == FIXED32 else 8
    if len(buf) % size:
        raise WireError(f"packed field of {len(buf)} bytes is not a multiple of {size}")
    return [int.from_bytes(buf[i:i + size], "little") for i in range(0, len(buf), size)]


def signed(value: int, bits: int) -> int:
    """Two's complement: int32 and int64 travel as 64-bit varints."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
