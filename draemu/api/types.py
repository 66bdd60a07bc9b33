"""The shape every component passes Kubernetes objects around in: decoded JSON."""

from __future__ import annotations

from typing import Any

# An object (or any JSON object inside one) as decoded JSON: the API's own form.
Obj = dict[str, Any]
