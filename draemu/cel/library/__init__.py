"""Functions of the DRA CEL environment, one module per library: CEL's standard functions
(`standard`), Kubernetes' quantity, semver, regex and lists libraries, cel-go's strings,
lists, sets and math extensions, optional values and DRA's `includes` (`dra`); the IP,
CIDR and URL libraries are `draemu.cel.netlib`, Kubernetes' format library `format`
and its authz library `authz` (the `authorizer` of admission policies).

Each function declares what the checker needs (receiver types, arities, result type)
and an implementation that checks its runtime argument types itself; `registry` holds
them. Importing this package registers every library.
"""

from __future__ import annotations

from draemu.cel.library import (
    authz,
    dra,
    format,
    lists,
    mathext,
    optional,
    quantity,
    regex,
    semver,
    sets,
    standard,
    strings,
)
from draemu.cel.library.dra import MAX_LIST_ATTRIBUTE_VALUES
from draemu.cel.library.registry import FUNCTIONS, Function, register, want
from draemu.cel.library.standard import to_string

# Names that are namespaces of global functions, so `optional.none()` is a call and not
# a field selection on a variable.
NAMESPACES = frozenset(name.split(".")[0] for name, _ in FUNCTIONS if "." in name) | {"cel"}

__all__ = ["FUNCTIONS", "MAX_LIST_ATTRIBUTE_VALUES", "NAMESPACES", "Function", "authz", "dra",
           "format",
           "lists",
           "mathext", "optional", "quantity", "regex", "register", "semver", "sets",
           "standard", "strings", "to_string", "want"]
