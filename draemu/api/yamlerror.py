"""One-line messages for YAML syntax errors in files people hand to draemu."""

from __future__ import annotations

import yaml


def one_line(err: yaml.YAMLError) -> str:
    """PyYAML's messages span several lines with a source excerpt; a person needs the
    problem and where it is: `found character '\\t' ... (line 1, column 6)`."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        return f"{err.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(err).split())
