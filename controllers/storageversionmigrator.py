"""The storage version migrator (kube-controller-manager's storage-version-migrator-
controller, gate StorageVersionMigrator, GA in 1.37): a StorageVersionMigration asks
for every object of one resource to be written again, so that each is stored in the
resource's current storage version.

Upstream runs three loops over the migrations; here they are the steps of one
reconcile, each taken when the previous one is done:

1. promote (the migration runner): of the migrations of one resource, the oldest that
   is neither running nor finished becomes Running, when none of that resource runs;
   a CustomResourceDefinition of the resource gets `StorageMigrating` True.
2. resource version: the resource's current resourceVersion (a list of one item) goes
   to `status.resourceVersion`; a resource discovery does not serve (for a minute after
   the migration was created), or one without update, patch and list, fails it.
3. migrate: every object not newer than that resourceVersion is patched with only its
   resourceVersion (a write that changes nothing but its storage); conflicts and deleted
   objects are skipped, transient errors retried, others fail it; then Succeeded.
4. clean up (the runner again): a finished migration is no longer Running, and its
   CRD's `StorageMigrating` is False — on success with the storage version as the only
   `status.storedVersions`, when the CRD did not change meanwhile.

Conditions and messages are upstream's.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from draemu.api.meta import meta, name_of, parse_time, time_now
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller
from draemu.controllers.discovery import APIResource

VERSION = "storagemigration.k8s.io/v1"
RESOURCE = "storageversionmigrations"
CRDS = ("apiextensions.k8s.io/v1", "customresourcedefinitions")
MANAGER = "storage-version-migrator-controller"
RUNNER = "migration-runner-controller"
RUNNING, SUCCEEDED, FAILED = "Running", "Succeeded", "Failed"
RUNNING_REASON = "MigrationRunning"
FAILED_REASON = "StorageVersionMigrationFailed"
SUCCESS_REASON = "StorageVersionMigrationSucceeded"
VERBS = ("update", "patch", "list")
# How long a migration of a resource discovery does not (yet) serve waits for it.
DISCOVERY_WAIT = 60.0


def is_true(svm: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (svm.get("status") or {}).get("conditions") or [])


def has_condition(svm: Obj, kind: str) -> bool:
    return any(c.get("type") == kind for c in (svm.get("status") or {}).get("conditions") or [])


def set_condition(svm: Obj, kind: str, status: str, reason: str, message: str,
                  observed_generation: int | None = None) -> bool:
    """Upstream's meta.SetStatusCondition on `svm` (in place); whether it changed."""
    conditions = svm.setdefault("status", {}).setdefault("conditions", [])
    new: Obj = {"type": kind, "status": status, "reason": reason, "message": message,
                "lastTransitionTime": time_now()}
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    for cond in conditions:
        if cond.get("type") != kind:
            continue
        before = dict(cond)
        if cond.get("status") != status:
            cond["status"], cond["lastTransitionTime"] = status, new["lastTransitionTime"]
        cond.update(reason=reason, message=message)
        if observed_generation is not None:
            cond["observedGeneration"] = observed_generation
        return cond != before
    conditions.append(new)
    return True


def running_message(to_patch: int | None = None, total: int | None = None,
                    transient: str = "") -> str:
    message = "The migration is running"
    if to_patch is not None and total:
        message += (f", {to_patch}/{total} objects not yet migrated" if to_patch > 0
                    else f", {total} objects verified migrated")
    if transient:
        message += f"; transient error: {transient}"
    return message


def resource_version_newer(a: str, b: str) -> bool:
    """a > b as upstream compares well-formed resourceVersions."""
    return (len(a), a) > (len(b), b)


class StorageVersionMigratorController(Controller):
    name = "storage-version-migrator"
    workers = 2
    resync_seconds = 60.0

    def setup(self) -> None:
        self.migrations = self.ctx.informers.informer(VERSION, RESOURCE)
        self.migrations.add_handler(on_add=self._changed,
                                    on_update=lambda _o, n: self._changed(n),
                                    on_delete=self._changed)

    def primary(self) -> Any:
        return self.migrations

    def _changed(self, svm: Obj) -> None:
        """A migration changed: it, and the others of its resource (one may now run)."""
        resource = (svm.get("spec") or {}).get("resource")
        for other in self.migrations.list():
            if (other.get("spec") or {}).get("resource") == resource:
                self.enqueue(other)
        self.enqueue(svm)

    async def reconcile(self, key: str) -> float | None:
        svm = self.migrations.get(key)
        if svm is None:
            return None
        svm = copy.deepcopy(svm)
        terminal = is_true(svm, SUCCEEDED) or is_true(svm, FAILED)
        if terminal:
            if is_true(svm, RUNNING):
                await self._clean_up(svm)
            return None
        if not is_true(svm, RUNNING):
            await self._promote(svm)
            return None
        resource_version = (svm.get("status") or {}).get("resourceVersion")
        if not resource_version:
            return await self._record_resource_version(svm)
        return await self._migrate(svm, resource_version)

    # 1. promote ------------------------------------------------------------------------
    async def _promote(self, svm: Obj) -> None:
        resource = (svm.get("spec") or {}).get("resource")
        candidates = [o for o in self.migrations.list()
                      if (o.get("spec") or {}).get("resource") == resource]
        if any(is_true(o, RUNNING) and not (is_true(o, SUCCEEDED) or is_true(o, FAILED))
               for o in candidates):
            return  # one at a time per resource
        waiting = [o for o in candidates
                   if not is_true(o, RUNNING) and not is_true(o, SUCCEEDED)
                   and not is_true(o, FAILED)]
        first = min(waiting, key=lambda o: (meta(o).get("creationTimestamp") or "",
                                            name_of(o)))
        if name_of(first) != name_of(svm):
            return
        crd = await self._crd(resource or {})
        if crd is not None:
            await self._crd_condition(crd, "True", RUNNING_REASON,
                                      f"Migration {name_of(svm)} is running", None)
        if has_condition(svm, RUNNING):
            return  # upstream adds Running only where no such condition is
        set_condition(svm, RUNNING, "True", RUNNING_REASON, running_message())
        await self._write_status(svm)

    # 2. resource version ---------------------------------------------------------------
    async def _record_resource_version(self, svm: Obj) -> float | None:
        target = await self._served((svm.get("spec") or {}).get("resource") or {})
        if target is None:
            wait = self.ctx.setting("svm_discovery_wait", DISCOVERY_WAIT)
            waited = time.time() - _created(svm)
            if waited < wait:
                return max(1.0, wait - waited)
            await self._fail_once(svm, "resource does not exist in discovery")
            return None
        if not set(VERBS) <= target.verbs:
            await self._fail_once(svm, f'resource "{_gvr(target)}" does not support discovery '
                                       f"operations: [{' '.join(VERBS)}]")
            return None
        listed = await self.client.list(target.api_version, target.resource, limit=1)
        latest = (listed.get("metadata") or {}).get("resourceVersion") or ""
        if not (latest.isdigit() and not latest.startswith("0")):
            await self._fail_once(svm, f"latest resourceVersion for {_gvr(target)} is not "
                                       f"valid: resource version is not well formed: {latest}")
            return None
        svm["status"]["resourceVersion"] = latest
        await self._write_status(svm)
        return None

    # 3. migrate --------------------------------------------------------------------------
    async def _migrate(self, svm: Obj, resource_version: str) -> float | None:
        target = await self._served((svm.get("spec") or {}).get("resource") or {})
        if target is None:
            set_condition(svm, FAILED, "True", FAILED_REASON, "migration encountered "
                          "unhandled error: unable to obtain GVR from discovery")
            await self._write_status(svm)
            return None
        listed = await self.client.list_all(target.api_version, target.resource)
        items = listed.get("items") or []
        candidates = [o for o in items if not resource_version_newer(
            meta(o).get("resourceVersion") or "", resource_version)]
        to_patch = len(candidates)
        for obj in candidates:
            body = {"apiVersion": target.api_version, "kind": target.kind,
                    "metadata": {"resourceVersion": meta(obj).get("resourceVersion")}}
            try:
                await self.client.patch(target.api_version, target.resource, name_of(obj),
                                        body, namespace=meta(obj).get("namespace") or None,
                                        field_manager=MANAGER)
            except ApiError as e:
                if e.code not in (404, 409):
                    return await self._patch_failed(svm, e, to_patch, len(items))
            to_patch -= 1
        changed = set_condition(svm, RUNNING, "True", RUNNING_REASON,
                                running_message(to_patch, len(items)))
        changed = set_condition(svm, SUCCEEDED, "True", SUCCESS_REASON,
                                "Migration completed") or changed
        if changed:
            await self._write_status(svm)
        self.log.info("migration done", migration=name_of(svm), objects=len(items))
        return None

    async def _patch_failed(self, svm: Obj, e: ApiError, to_patch: int, total: int
                            ) -> float | None:
        """A transient error (5xx, 429) is retried; any other fails the migration."""
        if e.code >= 500 or e.code == 429:
            set_condition(svm, RUNNING, "True", RUNNING_REASON,
                          running_message(to_patch, total, e.message))
            await self._write_status(svm)
            raise e
        set_condition(svm, RUNNING, "True", RUNNING_REASON, running_message(to_patch, total))
        set_condition(svm, FAILED, "True", FAILED_REASON,
                      f"{to_patch}/{total} not yet migrated. migration encountered unhandled "
                      f"error: {e.message}")
        await self._write_status(svm)
        return None

    # 4. clean up ---------------------------------------------------------------------------
    async def _clean_up(self, svm: Obj) -> None:
        crd = await self._crd((svm.get("spec") or {}).get("resource") or {})
        if crd is not None:
            await self._finish_crd(crd, is_true(svm, SUCCEEDED))
        set_condition(svm, RUNNING, "False", "MigrationCompleted", "Migration completed",
                      meta(svm).get("generation"))
        await self._write_status(svm)

    async def _finish_crd(self, crd: Obj, success: bool) -> None:
        migrating = next((c for c in (crd.get("status") or {}).get("conditions") or []
                          if c.get("type") == "StorageMigrating"), {})
        generation = meta(crd).get("generation")
        current = migrating.get("observedGeneration") == generation
        if success:
            message = "The migration has succeeded" + (
                " and the stored versions have been updated" if current else
                " but the stored versions have not been updated due to a generation mismatch")
        else:
            message = "The migration has failed"
        stored = next((v["name"] for v in (crd.get("spec") or {}).get("versions") or []
                       if v.get("storage")), None)
        await self._crd_condition(crd, "False", "MigrationSucceeded" if success else
                                  "MigrationFailed", message,
                                  [stored] if success and current and stored else None)

    # Helpers ---------------------------------------------------------------------------------
    async def _served(self, ref: Obj) -> APIResource | None:
        """The group's preferred version of the resource, as discovery serves it (what
        upstream's REST mapper resolves)."""
        group, resource = ref.get("group") or "", ref.get("resource") or ""
        version = "v1"
        if group:
            groups = (await self.client.get_json("/apis")).get("groups") or []
            found = next((g for g in groups if g.get("name") == group), None)
            version = ((found or {}).get("preferredVersion") or {}).get("version") or ""
            if not version:
                return None
        try:
            doc = await self.client.get_json(f"/apis/{group}/{version}" if group
                                             else "/api/v1")
        except ApiError as e:
            if e.code == 404:
                return None
            raise
        for r in doc.get("resources") or []:
            if r.get("name") == resource:
                return APIResource(group, version, resource, r.get("kind", ""),
                                   bool(r.get("namespaced")), frozenset(r.get("verbs") or []))
        return None

    async def _crd(self, ref: Obj) -> Obj | None:
        try:
            return await self.client.get(*CRDS, f"{ref.get('resource', '')}."
                                                 f"{ref.get('group', '')}")
        except ApiError as e:
            if e.code == 404:
                return None
            raise

    async def _crd_condition(self, crd: Obj, status: str, reason: str, message: str,
                             stored_versions: list[str] | None) -> None:
        """The CRD's StorageMigrating condition, applied with force as upstream does."""
        condition = {"type": "StorageMigrating", "status": status,
                     "lastTransitionTime": time_now(), "reason": reason, "message": message,
                     "observedGeneration": meta(crd).get("generation")}
        body: Obj = {"apiVersion": CRDS[0], "kind": "CustomResourceDefinition",
                     "metadata": {"name": name_of(crd),
                                  "resourceVersion": meta(crd).get("resourceVersion")},
                     "status": {"conditions": [condition]}}
        if stored_versions:
            body["status"]["storedVersions"] = stored_versions
        await self.client.patch(*CRDS, name_of(crd), body, patch_type="apply",
                                subresource="status", field_manager=RUNNER, force=True)

    async def _fail_once(self, svm: Obj, message: str) -> None:
        """Failed, unless a Failed condition is there already (upstream's
        setStatusConditions)."""
        if has_condition(svm, FAILED):
            return
        set_condition(svm, FAILED, "True", FAILED_REASON, message)
        await self._write_status(svm)

    async def _write_status(self, svm: Obj) -> None:
        try:
            await self.client.update(VERSION, RESOURCE, svm, subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise


def _created(svm: Obj) -> float:
    stamp = parse_time(meta(svm).get("creationTimestamp"))
    return stamp.timestamp() if stamp is not None else time.time()


def _gvr(r: APIResource) -> str:
    """A GroupVersionResource as Go's String() writes it."""
    return f"{r.group}/{r.version}, Resource={r.resource}"
