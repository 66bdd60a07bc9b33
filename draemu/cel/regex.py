"""Regular expressions with RE2's semantics, as CEL's `matches`, `find` and `findAll`.

cel-go compiles patterns with Go's regexp package: RE2 syntax, matching in time linear
in the subject, so `"aaaa…!".matches("^(a+)+$")` cannot backtrack for seconds as
Python's `re` does. google-re2 (RE2 itself) gives the same guarantee and syntax; its
error texts are RE2's C++ ones, mapped here onto Go's (`error parsing regexp: missing
closing ): `a(``).
"""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error is returned to the client, not written to stderr

# RE2's C++ error codes -> Go's regexp/syntax ErrorCode texts.
_GO_CODES = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
}


class RegexError(ValueError):
    """The pattern does not compile; `str()` is Go's `error parsing regexp: ...`."""


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re2._Regexp:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        raise RegexError(_go_message(e, pattern)) from None


def _go_message(error: re2.error, pattern: str) -> str:
    text = error.args[0].decode(errors="replace") if error.args and \
        isinstance(error.args[0], bytes) else str(error)
    code, sep, arg = text.partition(": ")
    if code in ("missing )", "missing ]") or not sep:
        arg = pattern  # Go names the whole pattern for an unclosed group
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{arg}`"
