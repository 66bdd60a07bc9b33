"""CI's fixed selection of upstream e2e specs (selection.py, ci-selection.txt): the file
parses, each section's focus selects exactly the specs it lists in the real e2e.test
(ginkgo's dry run: nothing runs), and a listed spec that does not pass is a regression."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

# In-process, but for the one test that runs ginkgo's dry run (marked e2e as well).
pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent
SELECTION = HERE / "ci-selection.txt"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"conformance_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


selection = _load("selection")
report = _load("report")
run = _load("run")


def test_the_file_parses_into_sections_with_their_specs() -> None:
    sections = selection.parse("# c\n[dra]\n a spec [DRA] (x)\n\n[api-machinery]\nb\n")
    assert [(s.suite, s.names) for s in sections] == [
        ("dra", ("a spec [DRA] (x)",)), ("api-machinery", ("b",))]
    with pytest.raises(ValueError, match="before the first"):
        selection.parse("a spec\n")
    with pytest.raises(ValueError, match="listed twice"):
        selection.parse("[dra]\na\na\n")
    with pytest.raises(ValueError, match=r"section \[x\] lists no spec"):
        selection.parse("[x]\n[dra]\na\n")
    sections = selection.load(SELECTION)
    assert {s.suite for s in sections} >= {"dra", "api-machinery"}


def test_a_listed_spec_that_does_not_pass_is_a_regression() -> None:
    expected = ("a", "b", "c", "d")
    found = selection.regressions(expected, {"a": "passed", "b": "failed", "c": "skipped"},
                                  selected={"a", "b", "c"})
    assert [(r.name, r.state) for r in found] == [
        ("b", "failed"), ("c", "skipped"), ("d", "not selected")]
    found = selection.regressions(expected, {"a": "passed"}, selected={"a", "b", "c", "d"})
    assert [r.state for r in found] == ["not run"] * 3


def test_the_focus_is_the_names_as_literals() -> None:
    import re

    names = ["[sig-x] a (b) [c] should d.e * f? {g} $h ^i | j + k\\l"]
    pattern = selection.focus(names)
    assert re.fullmatch(pattern, f"Kubernetes e2e suite {names[0]}")
    assert not re.fullmatch(pattern, f"Kubernetes e2e suite {names[0]} more")
    assert not re.fullmatch(pattern, f"Kubernetes e2e suite [sig-y] {names[0]}")
    assert "\\ " not in pattern  # RE2 refuses an escaped space


BINS = run.bin_dir()


@pytest.mark.e2e
@pytest.mark.skipif(not (BINS / "e2e.test").is_file() or not (BINS / "ginkgo").is_file(),
                    reason=f"needs e2e.test and ginkgo in {BINS} "
                           "(tests/e2e/realk8s/build.sh conformance)")
def test_each_sections_focus_selects_exactly_its_specs_in_the_real_e2e_test(
        tmp_path: Path) -> None:
    for suite in run.selection_suites(SELECTION):
        out = tmp_path / suite.name
        out.mkdir()
        dry = run.selected(BINS, suite, out)
        names = {spec.name for spec in dry.specs}
        assert names == set(suite.expect), (
            suite.name, sorted(set(suite.expect) - names), sorted(names - set(suite.expect)))
        assert dry.selected == len(suite.expect)


def test_ginkgo_is_given_the_selections_focus_and_the_dra_gates() -> None:
    [dra, *_] = run.selection_suites(SELECTION)
    assert dra.name == "ci-dra" and dra.dra_gates
    argv = run.ginkgo_argv(Path("/b"), dra, Path("/o"), Path("/k"), 2, [])
    # The focus is one argument, whatever it holds; no --skip narrows it.
    assert [a for a in argv if a.startswith(("--focus=", "--skip="))] == [f"--focus={dra.focus}"]
