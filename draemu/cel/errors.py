"""Errors and validation issues of the DRA CEL environment."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CELIssue:
    """One problem with an expression, as API validation reports it.

    `type` is the field-error type the apiserver uses: "Invalid", "Forbidden" or "TooLong".
    """

    type: str
    detail: str


class CELCompileError(ValueError):
    """The expression does not compile; `str()` is upstream's "compilation failed: ..." text."""

    def __init__(self, detail: str, *, result_type: bool = False, got: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        # True when the expression compiled but does not evaluate to the type wanted;
        # `got` is the type it evaluates to.
        self.result_type = result_type
        self.got = got


class CELRuntimeError(Exception):
    """Evaluation failed. `key` is set for a missing map key (an absent attribute)."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key


class Cancelled(CELRuntimeError):
    """The evaluation was stopped: no operator or macro absorbs this error."""


class CostLimitExceeded(Cancelled):
    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


class Interrupted(Cancelled):
    """The evaluation's deadline passed (cel-go's interrupt check)."""

    def __init__(self) -> None:
        super().__init__("operation interrupted")
