"""How the SDK splits a pool into ResourceSlices within the API's limits."""

import pytest

from draemu.drivers.sdk import Pool, split_pool

pytestmark = pytest.mark.unit


def devices(n, **extra):
    return [{"name": f"d-{i}", **extra} for i in range(n)]


def test_up_to_128_plain_devices_fit_in_one_slice():
    assert [len(p["devices"]) for p in split_pool(Pool(devices=devices(128)))] == [128]


def test_more_than_128_devices_are_split():
    assert [len(p["devices"]) for p in split_pool(Pool(devices=devices(300)))] == [128, 128, 44]


def test_devices_consuming_counters_are_split_at_64():
    parts = split_pool(Pool(devices=devices(100, consumesCounters=[{"counterSet": "c"}]),
                            shared_counters=[{"name": "c", "counters": {}}]))
    assert "sharedCounters" in parts[0] and "devices" not in parts[0]
    assert [len(p["devices"]) for p in parts[1:]] == [64, 36]


def test_empty_pool_publishes_one_empty_slice():
    assert split_pool(Pool()) == [{"devices": []}]
