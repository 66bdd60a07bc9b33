"""The CEL environment of DRA device selectors (`device.driver`, `device.attributes`,
`device.capacity`, `device.allowMultipleAllocations`), over cel-python's parser.

    issues = check_expression(expr, gates=gates)        # API validation (cost estimate too)
    program = compile_expression(expr)                   # cached; CELCompileError
    program.evaluate(device) -> bool                     # CELRuntimeError
    program.evaluate(device, Meter(limit, deadline))     # the actual cost, a deadline
    compile_derived(expr).evaluate(device) -> attribute  # derivedAttributes
"""

from draemu.cel.cost import Meter
from draemu.cel.device import CelDevice
from draemu.cel.errors import (
    CELCompileError,
    CELIssue,
    CELRuntimeError,
    CostLimitExceeded,
    Interrupted,
)
from draemu.cel.program import (
    MAX_COST,
    MAX_EXPRESSION_LENGTH,
    NO_SUCH_KEY_HINT,
    DerivedProgram,
    Program,
    check_derived,
    check_expression,
    compile_derived,
    compile_expression,
)

__all__ = [
    "MAX_COST",
    "MAX_EXPRESSION_LENGTH",
    "NO_SUCH_KEY_HINT",
    "CELCompileError",
    "CELIssue",
    "CELRuntimeError",
    "CelDevice",
    "CostLimitExceeded",
    "Interrupted",
    "Meter",
    "DerivedProgram",
    "Program",
    "check_derived",
    "check_expression",
    "compile_derived",
    "compile_expression",
]
