"""`draemu.aio.run`: commands run on uvloop unless DRAEMU_EVENT_LOOP says otherwise."""

from __future__ import annotations

import asyncio

import pytest

from draemu import aio

pytestmark = pytest.mark.unit


async def _loop_class() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_commands_run_on_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(aio.ENV, raising=False)
    assert aio.loop_name() == "uvloop"
    assert aio.run(_loop_class()).startswith("uvloop")


def test_standard_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(aio.ENV, "asyncio")
    assert aio.run(_loop_class()).startswith("asyncio")


def test_unknown_loop_name_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(aio.ENV, "trio")
    with pytest.raises(SystemExit, match="DRAEMU_EVENT_LOOP='trio': expected uvloop or asyncio"):
        aio.run(_loop_class())
