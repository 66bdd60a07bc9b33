"""What exists from the start: the namespaces `default`, `kube-system`, `kube-public`
and `kube-node-lease`, created through the normal create path (defaults, validation)
when missing."""

from __future__ import annotations

from draemu.api.errors import StatusError
from draemu.apiserver.codec import Accept
from draemu.apiserver.requestinfo import RequestInfo
from draemu.apiserver.resources import ResourceTable
from draemu.apiserver.rest_write import create_object
from draemu.apiserver.scope import Scope
from draemu.apiserver.storage import Storage
from draemu.features import FeatureGates
from draemu.identity import UserInfo

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_SYSTEM_USER = UserInfo("system:apiserver", groups=("system:masters",))


async def ensure_system_namespaces(table: ResourceTable, storage: Storage,
                                   gates: FeatureGates) -> None:
    namespaces = table.by_group_resource("", "namespaces")
    if namespaces is None:
        return
    version = namespaces.strategy.storage_version
    for name in SYSTEM_NAMESPACES:
        if storage.cache.get(namespaces.key("", name)) is not None:
            continue
        info = RequestInfo(f"/api/{version}/namespaces", "create", True, "", version, "",
                           "namespaces")
        scope = Scope(None, info, namespaces, version, "", _SYSTEM_USER,  # type: ignore[arg-type]
                      Accept(), gates, lambda *a: None)
        obj = {"apiVersion": namespaces.api_version(version), "kind": "Namespace",
               "metadata": {"name": name}}
        try:
            await create_object(scope, storage, obj, dry_run=False, manager="kube-apiserver")
        except StatusError as e:
            if e.reason != "AlreadyExists":  # another apiserver on the same store was first
                raise
    await storage.caught_up()
