"""CI's fixed selection of upstream e2e specs: the specs that pass against draemu and must
keep passing (`ci-selection.txt`), one suite per section.

The file lists each spec by its full name as ginkgo reports it (the containers' texts and
the leaf's, joined by spaces), under a section naming the suite whose settings it runs
with (`[dra]`: every DRA feature gate on, as the `dra` suite; any other name: none):

    # a comment
    [dra]
    [sig-node] [DRA] control plane supports claim and class parameters
    [api-machinery]
    [sig-api-machinery] Servers with support for Table transformation should return ...

The focus of each suite matches exactly those names. A listed spec that does not pass
(failed, skipped or never reported) is a regression; a listed name that the focus no
longer selects (renamed upstream) is one too, so that the list cannot silently shrink.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# What RE2 (ginkgo's regular expressions) treats as special: escaped; nothing else is
# (RE2 refuses a backslash before a letter, digit or space).
_SPECIAL = set("\\.+*?()|[]{}^$")


def literal(text: str) -> str:
    """`text` as an RE2 pattern that matches exactly it."""
    return "".join("\\" + c if c in _SPECIAL else c for c in text)


# ginkgo matches a focus against the suite's description, a space and the spec's full
# text; e2e.test's description (test/e2e/e2e.go's RunSpecs).
SUITE_DESCRIPTION = "Kubernetes e2e suite"


def focus(names: list[str]) -> str:
    """A focus that selects exactly the specs named."""
    return (f"^{literal(SUITE_DESCRIPTION)} (?:" + "|".join(literal(name) for name in names)
            + ")$")


@dataclass(frozen=True)
class Section:
    suite: str  # the suite whose settings apply: "dra" or another name
    names: tuple[str, ...]


def parse(text: str, source: str = "selection") -> list[Section]:
    sections: list[Section] = []
    current: str | None = None
    names: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]") and " " not in line:
            if current is not None:
                sections.append(Section(current, tuple(names)))
            current, names = line[1:-1], []
            continue
        if current is None:
            raise ValueError(f"{source}:{number}: a spec before the first [suite] section")
        if line in names:
            raise ValueError(f"{source}:{number}: {line!r} is listed twice")
        names.append(line)
    if current is not None:
        sections.append(Section(current, tuple(names)))
    empty = [s.suite for s in sections if not s.names]
    if empty:
        raise ValueError(f"{source}: section [{empty[0]}] lists no spec")
    return sections


def load(path: Path) -> list[Section]:
    return parse(path.read_text(), str(path))


@dataclass(frozen=True)
class Regression:
    name: str
    state: str  # the spec's state, or "not selected" / "not run"


def regressions(expected: tuple[str, ...], states: dict[str, str],
                selected: set[str] | None = None) -> list[Regression]:
    """The listed specs that did not pass. `states`: spec name -> ginkgo's state for the
    specs reported; `selected`: the names the focus selected (ginkgo's dry run), when
    known."""
    found = []
    for name in expected:
        state = states.get(name)
        if state == "passed":
            continue
        if state is None:
            state = "not selected" if selected is not None and name not in selected \
                else "not run"
        found.append(Regression(name, state))
    return found
