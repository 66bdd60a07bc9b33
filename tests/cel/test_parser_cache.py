"""cel-python's parser tables are cached in the user's cache folder (lark's cache), and
a parser loaded from the cache parses as one built anew."""

from __future__ import annotations

from pathlib import Path

import pytest
from celpy.celparser import CELParser

from draemu.cel import syntax

pytestmark = pytest.mark.unit

EXPR = 'device.driver == "gpu.example.com" && device.attributes["x"].model.startsWith("a")'


@pytest.fixture
def fresh_parser(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    return tmp_path


def test_the_parser_tables_are_cached_in_the_users_cache_folder(fresh_parser: Path) -> None:
    built = syntax._new_parser().parse(EXPR)
    cached = fresh_parser / "draemu" / "cel-parser.lark"
    assert cached.stat().st_size > 0
    # written under a name of its own and renamed: nothing else is left in the folder
    assert [f.name for f in cached.parent.iterdir()] == ["cel-parser.lark"]
    CELParser.CEL_PARSER = None
    assert syntax._new_parser().parse(EXPR) == built


def test_a_damaged_cache_file_is_built_again(fresh_parser: Path) -> None:
    (fresh_parser / "draemu").mkdir()
    (fresh_parser / "draemu" / "cel-parser.lark").write_bytes(b"not a cache\n")
    assert syntax._new_parser().parse(EXPR) is not None


def test_without_a_writable_cache_folder_the_parser_is_built(
        fresh_parser: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = fresh_parser / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no folder under it
    assert syntax._new_parser().parse(EXPR) is not None
    assert CELParser.CEL_PARSER is not None
