"""`--audit-log FILE`: one audit.k8s.io/v1 Event per request, JSON lines, at the
Metadata level (who, what, where, the answer's code and the authorization decision; no
bodies), as kube-apiserver writes with a Metadata-level policy. Only the
ResponseComplete stage is written (a policy with `omitStages: [RequestReceived]`), once
the answer is known; for a watch that is when the watch ends.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from draemu.api.jsonfast import dumps
from draemu.api.meta import format_micro_time
from draemu.api.types import Obj
from draemu.identity import UserInfo


class AuditLog:
    def __init__(self, path: Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] = open(path, "ab", buffering=0)

    def close(self) -> None:
        self._file.close()

    def write(self, *, received: datetime, uri: str, verb: str, user: UserInfo | None,
              impersonated: UserInfo | None, source_ip: str, user_agent: str,
              object_ref: Obj | None, status: Obj, decision: Any,
              annotations: dict[str, str] | None = None) -> None:
        event: Obj = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
                      "auditID": str(uuid.uuid4()), "stage": "ResponseComplete",
                      "requestURI": uri, "verb": verb}
        if user is not None:
            event["user"] = user.to_json()
        if impersonated is not None:
            event["impersonatedUser"] = impersonated.to_json()
        event["sourceIPs"] = [source_ip] if source_ip else []
        if user_agent:
            event["userAgent"] = user_agent
        if object_ref:
            event["objectRef"] = object_ref
        event["responseStatus"] = status
        event["requestReceivedTimestamp"] = format_micro_time(received)
        event["stageTimestamp"] = format_micro_time(datetime.now(UTC))
        notes = dict(annotations or {})
        if decision is not None:
            notes.update({
                "authorization.k8s.io/decision": "allow" if decision.allowed else "forbid",
                "authorization.k8s.io/reason": decision.reason})
        if notes:
            event["annotations"] = notes
        self._file.write(dumps(event) + b"\n")
