"""Objects encoded by apimachinery's own protobuf serializer (what client-go sends)
decode to what Go's encoding/json writes for the same objects. The pairs are written by
`golden/main.go` from the Kubernetes Go types. Go also writes null for nil slices, maps
and pointers without `omitempty`, which are absent from the wire: the decoder leaves
those out, and writes only nulls that Go writes too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draemu.apiserver.wire.protobuf import decode, message_name
from draemu.apiserver.wire.protobuf.messages import KINDS

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).with_name("fixtures") / "golden"
CASES = sorted(p.stem for p in GOLDEN.glob("*.pb"))


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def test_golden_pairs_cover_every_kind_the_decoder_takes() -> None:
    covered = set()
    for case in CASES:
        obj = json.loads((GOLDEN / f"{case}.json").read_text())
        group, _, version = obj["apiVersion"].rpartition("/")
        covered.add(message_name(group, version, obj["kind"]))
    assert covered == KINDS


def null_paths(value: Any, path: str = "") -> set[str]:
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in null_paths(v, f"{path}.{k}")}
    if isinstance(value, list):
        return {p for i, v in enumerate(value) for p in null_paths(v, f"{path}[{i}]")}
    return {path} if value is None else set()


@pytest.mark.parametrize("case", CASES)
def test_go_protobuf_decodes_to_go_json(case: str) -> None:
    want = json.loads((GOLDEN / f"{case}.json").read_text())
    got = decode((GOLDEN / f"{case}.pb").read_bytes(), "", "", "")
    assert without_nulls(got) == without_nulls(want)
    assert null_paths(got) <= null_paths(want)
