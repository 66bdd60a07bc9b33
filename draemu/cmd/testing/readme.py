"""The README's shell blocks, as a user pastes them: tests run them unchanged."""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
README = REPOSITORY / "README.md"


def shell_block(heading: str, index: int = 0) -> str:
    """The `index`-th ```sh block of the README's section `## heading`."""
    text = README.read_text()
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if section is None:
        raise LookupError(f"README.md has no section {heading!r}")
    blocks = re.findall(r"^```sh\n(.*?)^```", section.group(1), re.M | re.S)
    if len(blocks) <= index:
        raise LookupError(f"README.md's section {heading!r} has {len(blocks)} sh blocks")
    return blocks[index]
