"""certificates.k8s.io/v1: CertificateSigningRequest (+status), ClusterTrustBundle and
PodCertificateRequest (+status). The kube-controller-manager's certificate controllers
list all three; draemu stores and validates them (no signer issues certificates).

A CSR's requester fields (username, uid, groups, extra) are set from the creating user
and its spec never changes afterwards, as upstream's strategy does; `/approval` changes
only the conditions, `/status` the rest of the status. (Who may approve for a signer, the
CertificateApproval admission plugin's check, is not done.)"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from draemu.api.meta import time_now
from draemu.apiserver.registry.core.common import human_duration, qualified_name
from draemu.apiserver.registry.generic import (
    AGE_COLUMN,
    NAME,
    GenericStrategy,
    Printed,
    get_path,
)
from draemu.apiserver.registry.strategy import Column, Context, Obj
from draemu.apiserver.wire.jsoncopy import clone

GROUP = "certificates.k8s.io"
KEY_USAGES = ["any", "cert sign", "client auth", "code signing", "content commitment",
              "crl sign", "data encipherment", "decipher only", "digital signature",
              "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
              "ipsec user", "key agreement", "key encipherment", "microsoft sgc",
              "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing",
              "timestamping"]


def _pem_blocks(data: bytes, label: str) -> int:
    text = data.decode(errors="replace")
    return text.count(f"-----BEGIN {label}-----")


def _csr_condition(obj: Obj) -> str:
    kinds = {c.get("type") for c in get_path(obj, "status.conditions") or []}
    state = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        state += ",Failed"
    if get_path(obj, "status.certificate"):
        state += ",Issued"
    return state


def _duration(obj: Obj) -> str:
    seconds = get_path(obj, "spec.expirationSeconds")
    if seconds is None:
        return "<none>"
    return human_duration(seconds)


class CertificateSigningRequestStrategy(GenericStrategy):
    group = GROUP
    kind = "CertificateSigningRequest"
    resource = "certificatesigningrequests"
    singular = "certificatesigningrequest"
    short_names = ("csr",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status", "approval"})
    field_selectors = {"spec.signerName": lambda o: get_path(o, "spec.signerName") or ""}
    printer = (
        NAME,
        AGE_COLUMN,
        Printed(Column("SignerName", description="Name of the signer that should issue the "
                       "certificate."), lambda o: get_path(o, "spec.signerName") or "<none>"),
        Printed(Column("Requestor", description="Name of the user which submitted the "
                       "request."), lambda o: get_path(o, "spec.username") or ""),
        Printed(Column("RequestedDuration", description="Requested duration of the issued "
                       "certificate."), _duration),
        Printed(Column("Condition", description="Approval state and issuance of the "
                       "request."), _csr_condition),
    )

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.setdefault("spec", {})
        spec["username"] = ctx.user
        spec["groups"] = list(ctx.groups)
        for name in ("uid", "extra"):
            spec.pop(name, None)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: Context) -> None:
        super().prepare_for_update(new, old, ctx)
        new["spec"] = clone(old.get("spec") or {})

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj,
                                       ctx: Context) -> None:
        if subresource != "approval":
            super().prepare_for_subresource_update(subresource, new, old, ctx)
            _stamp_conditions(new, old)
            return
        conditions = (new.get("status") or {}).get("conditions")
        self.prepare_for_status_update(new, old, ctx)
        new["status"] = clone(old.get("status") or {})
        if conditions is not None:
            new["status"]["conditions"] = conditions
        else:
            new["status"].pop("conditions", None)
        _stamp_conditions(new, old)

    def validate_subresource_update(self, subresource: str, new: Obj, old: Obj,
                                    ctx: Context) -> list[FieldError]:
        if subresource == "approval":
            return self.validate(new, ctx) + _condition_update_errors(new, old, True, False)
        return super().validate_subresource_update(subresource, new, old, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self.validate(new, ctx) + _condition_update_errors(new, old, False, True)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return self.validate(new, ctx) + _condition_update_errors(new, old, False, False)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = _condition_errors(obj)
        request = spec.get("request")
        if not request:
            errs.append(required(path.child("request")))
        else:
            try:
                raw = base64.b64decode(request, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if _pem_blocks(raw, "CERTIFICATE REQUEST") != 1:
                errs.append(invalid(path.child("request"), request,
                                    "PEM block type must be CERTIFICATE REQUEST"))
        signer = spec.get("signerName") or ""
        if not signer:
            errs.append(required(path.child("signerName")))
        elif "/" not in signer:
            errs.append(invalid(path.child("signerName"), signer, "must be a fully qualified "
                                "domain and path of the form 'example.com/signer-name'"))
        else:
            errs += qualified_name(signer.split("/", 1)[0], path.child("signerName"))
        seconds = spec.get("expirationSeconds")
        if seconds is not None and seconds < 600:
            errs.append(invalid(path.child("expirationSeconds"), seconds,
                                "may not specify a duration less than 600 seconds (10 minutes)"))
        usages = spec.get("usages") or []
        if not usages:
            errs.append(required(path.child("usages")))
        for i, usage in enumerate(usages):
            if usage not in KEY_USAGES:
                errs.append(not_supported(path.child("usages").index(i), usage, KEY_USAGES))
        return errs


_TRUE_ONLY = ("Approved", "Denied", "Failed")


def _conditions(obj: Obj, kind: str | None = None) -> list[Obj]:
    found = get_path(obj, "status.conditions") or []
    return [c for c in found if kind is None or c.get("type") == kind]


def _condition_errors(obj: Obj) -> list[FieldError]:
    path = Path("status").child("conditions")
    errs: list[FieldError] = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(_conditions(obj)):
        kind, status = condition.get("type") or "", condition.get("status") or ""
        if not kind:
            errs.append(required(path.index(i).child("type")))
        allowed = ["True"] if kind in _TRUE_ONLY else ["False", "True", "Unknown"]
        if not status:
            errs.append(required(path.index(i).child("status")))
        elif status not in allowed:
            errs.append(not_supported(path.index(i).child("status"), status, allowed))
        if kind == "Approved":
            approved = True
            if denied:
                errs.append(invalid(path, kind, "Approved and Denied conditions are mutually "
                                    "exclusive"))
        elif kind == "Denied":
            denied = True
            if approved:
                errs.append(invalid(path, kind, "Approved and Denied conditions are mutually "
                                    "exclusive"))
        if kind in seen:
            errs.append(duplicate(path.index(i).child("type"), kind))
        seen.add(kind)
    return errs


def _condition_update_errors(new: Obj, old: Obj, approving: bool,
                             certifying: bool) -> list[FieldError]:
    path = Path("status").child("conditions")
    errs: list[FieldError] = []
    for kind in _TRUE_ONLY:
        if len(_conditions(new, kind)) < len(_conditions(old, kind)):
            errs.append(forbidden(path, f'updates may not remove a condition of type "{kind}"'))
    if not approving:
        for kind in ("Approved", "Denied"):
            before, after = _conditions(old, kind), _conditions(new, kind)
            if len(after) > len(before):
                errs.append(forbidden(path, f'updates may not add a condition of type "{kind}"'))
            elif len(after) == len(before) and after != before:
                errs.append(forbidden(path, "updates may not modify a condition of type "
                                      f'"{kind}"'))
    certificate = get_path(new, "status.certificate")
    if certificate != get_path(old, "status.certificate"):
        if not certifying:
            errs.append(forbidden(Path("status").child("certificate"),
                                  "updates may not set certificate content"))
        elif get_path(old, "status.certificate"):
            errs.append(forbidden(Path("status").child("certificate"),
                                  "updates may not modify existing certificate content"))
    return errs


def _stamp_conditions(new: Obj, old: Obj) -> None:
    """populateConditionTimestamps: new or changed conditions get the current time."""
    before = {c.get("type"): c for c in _conditions(old)}
    stamp = time_now()
    for condition in _conditions(new):
        previous = before.get(condition.get("type"))
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = stamp
        if not condition.get("lastTransitionTime"):
            unchanged = previous is not None and previous.get("status") == \
                condition.get("status") and previous.get("lastTransitionTime")
            condition["lastTransitionTime"] = previous["lastTransitionTime"] if unchanged \
                else stamp


class ClusterTrustBundleStrategy(GenericStrategy):
    group = GROUP
    kind = "ClusterTrustBundle"
    resource = "clustertrustbundles"
    singular = "clustertrustbundle"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False
    immutable_fields = ("spec.signerName",)
    required_fields = ("spec.trustBundle",)
    # The kube-controller-manager's informers list bundles by signer.
    field_selectors = {"spec.signerName": lambda o: get_path(o, "spec.signerName") or ""}
    printer = (
        NAME,
        Printed(Column("SignerName", description="Name of the signer whose trust anchors "
                       "this bundle holds."), lambda o: get_path(o, "spec.signerName") or
                "<none>"),
    )

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        """A bundle of a signer is named `<signer with ':' for '/'>:<suffix>`: the suffix
        is a DNS subdomain (validate_object checks the prefix against the signer)."""
        return super().validate_name(name.rsplit(":", 1)[-1], prefix)

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        bundle = get_path(obj, "spec.trustBundle") or ""
        errs: list[FieldError] = []
        if bundle and _pem_blocks(bundle.encode(), "CERTIFICATE") == 0:
            errs.append(invalid(Path("spec").child("trustBundle"), "<value omitted>",
                                "contains no valid certificates"))
        signer = get_path(obj, "spec.signerName") or ""
        name = (obj.get("metadata") or {}).get("name") or ""
        if signer:
            prefix = signer.replace("/", ":") + ":"
            if not name.startswith(prefix):
                errs.append(invalid(Path("metadata").child("name"), name,
                                    f"ClusterTrustBundle for signerName {signer} must be "
                                    f"named with prefix {prefix}"))
        elif ":" in name:
            errs.append(invalid(Path("metadata").child("name"), name, "ClusterTrustBundle "
                                "without signer name must not have \":\" in its name"))
        return errs


def _pcr_state(obj: Obj) -> str:
    state = "Pending"
    for condition in get_path(obj, "status.conditions") or []:
        if condition.get("type") in ("Issued", "Denied", "Failed"):
            state = condition["type"]
    return state


class PodCertificateRequestStrategy(GenericStrategy):
    group = GROUP
    kind = "PodCertificateRequest"
    resource = "podcertificaterequests"
    singular = "podcertificaterequest"
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    immutable_fields = ("spec",)
    required_fields = ("spec.signerName", "spec.podName", "spec.podUID",
                       "spec.serviceAccountName", "spec.serviceAccountUID", "spec.nodeName",
                       "spec.nodeUID", "spec.pkixPublicKey", "spec.proofOfPossession")
    field_selectors = {"spec.signerName": lambda o: get_path(o, "spec.signerName") or "",
                       "spec.podName": lambda o: get_path(o, "spec.podName") or "",
                       "spec.nodeName": lambda o: get_path(o, "spec.nodeName") or ""}
    printer = (
        NAME,
        Printed(Column("PodName", description="Name of the pod the certificate is for."),
                lambda o: get_path(o, "spec.podName") or ""),
        Printed(Column("ServiceAccountName", description="Service account of the pod."),
                lambda o: get_path(o, "spec.serviceAccountName") or ""),
        Printed(Column("NodeName", description="Node the pod runs on."),
                lambda o: get_path(o, "spec.nodeName") or ""),
        Printed(Column("SignerName", description="Signer that should issue the "
                       "certificate."), lambda o: get_path(o, "spec.signerName") or ""),
        Printed(Column("State", description="Issued, Denied, Failed or Pending."), _pcr_state),
        Printed(Column("UnverifiedUserAnnotations", priority=1, description="Annotations "
                       "passed to the signer."), lambda o: ",".join(
                           f"{k}={v}" for k, v in sorted((get_path(
                               o, "spec.unverifiedUserAnnotations") or {}).items()))
                or "<none>"),
    )

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        seconds: Any = get_path(obj, "spec.maxExpirationSeconds")
        if seconds is not None and not 3600 <= seconds <= 91 * 86400:
            return [invalid(Path("spec").child("maxExpirationSeconds"), seconds,
                            "must be in the range [3600, 7862400]")]
        return []


STRATEGIES = [CertificateSigningRequestStrategy(), ClusterTrustBundleStrategy(),
              PodCertificateRequestStrategy()]
