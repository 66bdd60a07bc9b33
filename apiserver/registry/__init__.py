"""One module per kind, each defining a `Strategy` (see `strategy.py`).

`discover()` imports every module below this package and collects the instances
listed in their module-level `STRATEGIES`; adding a kind means adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil

from draemu.apiserver.registry.strategy import Strategy


def discover() -> list[Strategy]:
    found: list[Strategy] = []
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        module = importlib.import_module(info.name)
        found.extend(getattr(module, "STRATEGIES", ()))
    return found
