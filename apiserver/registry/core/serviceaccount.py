"""core/v1 ServiceAccount: metadata rules only; `kubectl get sa` columns; the token
subresource (TokenRequest)."""

from __future__ import annotations

from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.registry.strategy import AGE, AGE_COLUMN, NAME_COLUMN, Column, Strategy


class ServiceAccountStrategy(Strategy):
    kind = "ServiceAccount"
    resource = "serviceaccounts"
    singular = "serviceaccount"
    short_names = ("sa",)
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    # TokenRequest (apiserver/endpoints/tokenrequest.py).
    subresources = frozenset({"token"})

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Secrets", description="Secrets is a list of the secrets in the same "
                       "namespace that pods running using this ServiceAccount are allowed to "
                       "use."),
                AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        return [(obj.get("metadata") or {}).get("name", ""), len(obj.get("secrets") or []),
                AGE]


STRATEGIES = [ServiceAccountStrategy()]
