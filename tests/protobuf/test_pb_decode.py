"""The decoder on hand-built bodies: envelope rules, wire-format details, Go's JSON
conventions, and clear errors for malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pb_encode import (
    MAGIC,
    encode_message,
    encode_object,
    envelope,
    length_delimited,
    tag,
    varint,
)

from draemu.apiserver.wire.codec import dumps
from draemu.apiserver.wire.protobuf import ProtobufError, decode, message_name

pytestmark = pytest.mark.unit

CLAIM = {
    "kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
    "metadata": {"name": "c", "namespace": "default", "labels": {"a": "b"},
                 "creationTimestamp": "2026-01-02T03:04:05Z"},
    "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "count": 2, "adminAccess": False,
            "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": -3}]}}],
        "config": [{"requests": ["gpu"], "opaque": {
            "driver": "gpu.example.com", "parameters": {"kind": "Cfg", "n": [1, 2.5, None]}}}]}},
}


def test_round_trip_of_a_hand_built_resource_claim() -> None:
    assert decode(encode_object(CLAIM, "resource.v1.ResourceClaim"), "", "", "") == CLAIM


def test_blank_envelope_type_takes_the_url_kind() -> None:
    raw = encode_message({"metadata": {"name": "x"}}, "core.v1.ConfigMap")
    obj = decode(envelope(raw, "", ""), "", "v1", "ConfigMap")
    assert obj == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}


def test_envelope_kind_wins_over_the_url_kind() -> None:
    raw = encode_message({"metadata": {"name": "x"}}, "core.v1.Secret")
    obj = decode(envelope(raw, "v1", "Secret"), "", "v1", "ConfigMap")
    assert obj["kind"] == "Secret"  # the handler rejects the mismatch, as for JSON


def test_delete_options_of_any_group_version() -> None:
    raw = encode_message({"gracePeriodSeconds": 0, "dryRun": ["All"]}, "meta.v1.DeleteOptions")
    obj = decode(envelope(raw, "resource.k8s.io/v1", "DeleteOptions"), "", "", "")
    assert obj["gracePeriodSeconds"] == 0 and obj["dryRun"] == ["All"]


def test_message_names() -> None:
    assert message_name("", "v1", "Pod") == "core.v1.Pod"
    assert message_name("resource.k8s.io", "v1beta2", "ResourceSlice") == \
        "resource.v1beta2.ResourceSlice"
    assert message_name("apps", "v1", "Scale") is None  # draemu serves autoscaling/v1 Scale
    assert message_name("", "v1", "Service") == "core.v1.Service"
    assert message_name("rbac.authorization.k8s.io", "v1", "ClusterRole") == \
        "rbac.v1.ClusterRole"
    assert message_name("", "v1", "ComponentStatus") is None  # not taken as a body
    assert message_name("", "v1", "PodSpec") is None  # a message, not a kind


def test_unknown_fields_are_skipped() -> None:
    raw = encode_message({"metadata": {"name": "x"}}, "core.v1.ConfigMap")
    raw += tag(99, 0) + varint(5) + length_delimited(98, b"junk") + tag(97, 5) + b"\0\0\0\0"
    raw += tag(96, 1) + bytes(8) + tag(95, 3) + tag(1, 0) + varint(1) + tag(95, 4)  # a group
    assert decode(envelope(raw, "v1", "ConfigMap"), "", "", "")["metadata"] == {"name": "x"}


def test_packed_and_unpacked_repeated_numbers_both_decode() -> None:
    packed = varint(1) + varint(-2) + varint(1 << 40)
    raw = length_delimited(6, packed) + tag(6, 0) + varint(7)  # DeviceAttribute.ints
    device = length_delimited(1, b"d") + length_delimited(  # Device.attributes entry
        2, length_delimited(1, b"numa") + length_delimited(2, raw))
    spec = length_delimited(1, b"drv") + length_delimited(6, device)
    obj = decode(envelope(length_delimited(2, spec), "resource.k8s.io/v1", "ResourceSlice"),
                 "", "", "")
    assert obj["spec"]["devices"][0]["attributes"]["numa"] == {"ints": [1, -2, 1 << 40, 7]}


def test_zero_values_follow_go_json() -> None:
    spec = {"replicas": 0, "paused": False, "minReadySeconds": 0,
            "template": {"metadata": {"name": ""}, "spec": {"containers": []}}}
    raw = encode_message({"spec": spec}, "apps.v1.Deployment")
    obj = decode(envelope(raw, "apps/v1", "Deployment"), "", "", "")
    # replicas is a Go pointer (0 is not "unset"); the others are omitempty values.
    assert obj["spec"] == {"replicas": 0, "template": {"metadata": {}, "spec": {}}}


def test_inlined_struct_fields_land_in_the_parent() -> None:
    volume = {"name": "v", "configMap": {"name": "cm", "optional": False}}
    pod = {"spec": {"containers": [{"name": "c"}], "volumes": [volume]}}
    raw = encode_message(pod, "core.v1.Pod")
    assert decode(envelope(raw, "v1", "Pod"), "", "", "")["spec"]["volumes"] == [volume]


def test_int_or_string_and_quantities() -> None:
    rolling = {"maxSurge": "25%", "maxUnavailable": 0}
    raw = encode_message({"spec": {"strategy": {"rollingUpdate": rolling}}}, "apps.v1.Deployment")
    obj = decode(envelope(raw, "apps/v1", "Deployment"), "", "", "")
    assert obj["spec"]["strategy"]["rollingUpdate"] == rolling


def test_micro_time_keeps_microseconds() -> None:
    raw = encode_message({"spec": {"renewTime": "2026-01-02T03:04:05.123456Z"}},
                         "coordination.v1.Lease")
    obj = decode(envelope(raw, "coordination.k8s.io/v1", "Lease"), "", "", "")
    assert obj["spec"]["renewTime"] == "2026-01-02T03:04:05.123456Z"


def test_empty_time_is_left_out_like_a_null() -> None:
    raw = length_delimited(1, length_delimited(1, b"x") + length_delimited(8, b""))
    obj = decode(envelope(raw, "v1", "Namespace"), "", "", "")
    assert obj["metadata"] == {"name": "x"}


def time_body(seconds: int) -> bytes:
    stamp = tag(1, 0) + varint(seconds)
    return envelope(length_delimited(1, length_delimited(1, b"x") + length_delimited(8, stamp)),
                    "v1", "Namespace")


def test_early_years_keep_four_digits() -> None:
    year_5 = -62009366400  # 0005-01-01T00:00:00Z
    assert decode(time_body(year_5), "", "", "")["metadata"]["creationTimestamp"] == \
        "0005-01-01T00:00:00Z"


def test_times_past_year_9999_are_refused() -> None:
    with pytest.raises(ProtobufError, match="time out of range"):
        decode(time_body(1 << 40), "", "", "")


def test_extra_values_are_plain_lists() -> None:
    status = {"userInfo": {"username": "u", "extra": {"scopes": ["a", "b"]}}}
    raw = encode_message({"status": status}, "authentication.v1.SelfSubjectReview")
    obj = decode(envelope(raw, "authentication.k8s.io/v1", "SelfSubjectReview"), "", "", "")
    assert obj["status"] == status


@pytest.mark.parametrize(("body", "message"), [
    (b"", "empty data"),
    (b'{"kind":"ConfigMap"}', "provided data does not appear to be a protobuf message, "
                              "expected prefix [107 56 115 0]"),
    (MAGIC, "empty body"),
    (MAGIC + b"\x0a", "unable to decode the protobuf body: unexpected end of data inside a "
                      "varint"),
    (MAGIC + b"\x12\x05ab", "unable to decode the protobuf body: field 2 is longer than the "
                            "data left (5 > 2 bytes)"),
    (MAGIC + b"\x0f", "unable to decode the protobuf body: illegal wire type 7 in field 1"),
    (MAGIC + b"\x00", "unable to decode the protobuf body: illegal field number 0"),
    (envelope(b"", "v1", ""),
     """Object 'Kind' is missing in 'runtime.TypeMeta{APIVersion:"v1", Kind:""}'"""),
    (envelope(b"", "", "Pod"),
     """Object 'apiVersion' is missing in 'runtime.TypeMeta{APIVersion:"", Kind:"Pod"}'"""),
    (envelope(b"", "v1", "ComponentStatus"),
     'no kind "ComponentStatus" is registered for version "v1"'),
    (envelope(b"", "apps/v2", "Deployment"),
     'no kind "Deployment" is registered for version "apps/v2"'),
    (envelope(b"", "v1", "ConfigMap", contentEncoding="gzip"),
     'unsupported content encoding "gzip" in the protobuf envelope'),
    (envelope(b"", "v1", "ConfigMap", contentType="application/json"),
     'unsupported content type "application/json" in the protobuf envelope'),
    (envelope(tag(1, 0) + varint(1), "v1", "ConfigMap"),
     "core.v1.ConfigMap.metadata: wire type 0, expected 2 for a message"),
    (envelope(length_delimited(1, length_delimited(7, b"x")), "v1", "ConfigMap"),
     "meta.v1.ObjectMeta.generation: wire type 2, expected 0 for int64"),
])
def test_malformed_bodies_raise_clear_errors(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError) as e:
        decode(body, "", "", "")
    assert str(e.value) == message


@pytest.mark.parametrize("parameters", [b"{nope", b"[" * 100_000])
def test_raw_extension_must_hold_json(parameters: bytes) -> None:
    opaque = length_delimited(1, b"drv") + length_delimited(2, length_delimited(1, parameters))
    config = length_delimited(1, length_delimited(1, opaque))  # DeviceClassConfiguration
    raw = length_delimited(2, length_delimited(2, config))
    with pytest.raises(ProtobufError, match="RawExtension does not hold JSON"):
        decode(envelope(raw, "resource.k8s.io/v1", "DeviceClass"), "", "", "")


GOLDEN = sorted((Path(__file__).with_name("fixtures") / "golden").glob("*.pb"))


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(GOLDEN), cut=st.integers(min_value=0, max_value=4000),
       flips=st.lists(st.tuples(st.integers(min_value=0, max_value=4000),
                                st.integers(min_value=0, max_value=255)), max_size=4))
def test_mangled_bodies_decode_or_raise_protobuf_error(case: Path, cut: int,
                                                       flips: list[tuple[int, int]]) -> None:
    data = bytearray(case.read_bytes())
    for pos, byte in flips:
        data[pos % len(data)] = byte
    try:
        result = decode(bytes(data[:max(cut, 4)]), "", "", "")
    except ProtobufError:
        return
    assert isinstance(result, dict)


CRD_SCHEMA = {
    "type": "object",
    "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
        "ratio": {"type": "number", "multipleOf": 0.25, "maximum": 1e21},
        "tags": {"type": "array", "items": {"type": "string"}},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        "open": {"type": "object", "additionalProperties": {"type": "string"}},
        "closed": {"type": "object", "additionalProperties": False},
        "any": {"x-kubernetes-preserve-unknown-fields": True, "enum": [{"a": 1}, "b", None]},
    },
    "dependencies": {"ratio": ["replicas"], "tags": {"required": ["open"]}},
}


def test_crd_schema_unions_and_doubles_decode_as_a_json_client_writes_them() -> None:
    """Go writes a float64 that holds an integer without a fraction (`10`, not `10.0`),
    and apiextensions' unions as the schema, the bool or the list they hold."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": CRD_SCHEMA}}]}}
    body = encode_object(crd, "apiextensions.v1.CustomResourceDefinition")
    got = decode(body, "", "", "")
    assert got == crd
    schema = got["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert dumps(schema["replicas"]) == \
        b'{"type":"integer","default":1,"maximum":10,"minimum":0}'
    assert dumps(schema["ratio"]) == b'{"type":"number","maximum":1e+21,"multipleOf":0.25}'


@pytest.mark.parametrize(("group", "kind", "message"), [
    ("apiextensions.k8s.io", "CustomResourceDefinition",
     "apiextensions.v1.CustomResourceDefinition"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", "flowcontrol.v1.FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration",
     "flowcontrol.v1.PriorityLevelConfiguration"),
    ("apiregistration.k8s.io", "APIService", "apiregistration.v1.APIService"),
])
def test_groups_outside_k8s_io_api_name_their_messages(group: str, kind: str,
                                                         message: str) -> None:
    assert message_name(group, "v1", kind) == message
