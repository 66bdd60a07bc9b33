"""The web view's HTML, rendered here from the snapshot (model.py) and the explanations
(replay.py): the page a browser gets first (complete without JavaScript), the sections
the live stream replaces, a pod's decision, a claim's timeline and a what-if's answer.
One renderer for all of them, so that the page with and without JavaScript, and the
panels, show the same thing. Every value from the cluster is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

SECTIONS = ("nodes", "pending", "pods", "claims", "classes", "events")
NUMA = "numaNode"


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _attrs(**attributes: Any) -> str:
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{_e(v)}"'
                   for k, v in attributes.items() if v is not None)


def pod_link(key: str, text: str | None = None) -> str:
    namespace, _, name = key.partition("/")
    href = "/explain?" + urlencode({"namespace": namespace, "name": name})
    return f'<a class="pod-link"{_attrs(href=href, data_pod=key)}>{_e(text or key)}</a>'


def claim_link(key: str) -> str:
    namespace, _, name = key.partition("/")
    href = "/claim?" + urlencode({"namespace": namespace, "name": name})
    return f'<a class="claim-link"{_attrs(href=href, data_claim=key)}>{_e(key)}</a>'


# --- the live sections -----------------------------------------------------------------

def sections(snapshot: dict[str, Any]) -> dict[str, str]:
    """Each section's inner HTML, by element id."""
    return {"nodes": _nodes(snapshot["nodes"]), "pending": _pending(snapshot["pods"]),
            "pods": _pods(snapshot["pods"]), "claims": _claims(snapshot["claims"]),
            "classes": _classes(snapshot["classes"]), "events": _events(snapshot["events"])}


def links(snapshot: dict[str, Any]) -> list[tuple[str, str]]:
    """What is linked to what (device <-> claim <-> pod), for highlighting."""
    out = []
    for claim in snapshot["claims"]:
        out += [(f"claim:{claim['key']}", f"device:{d['id']}") for d in claim["devices"]]
        out += [(f"claim:{claim['key']}", f"pod:{p}") for p in claim["reservedFor"]]
    for pod in snapshot["pods"]:
        out += [(f"pod:{pod['key']}", f"claim:{c}") for c in pod["claims"]]
    return out


def _nodes(nodes: list[dict[str, Any]]) -> str:
    if not nodes:
        return '<p class="empty">no nodes</p>'
    out = []
    for n in nodes:
        ready = {True: '<span class="ready yes">Ready</span>',
                 False: '<span class="ready no">NotReady</span>'}.get(n["ready"], "")
        taints = "".join(f'<span class="tag taint">{_e(t)}</span>' for t in n["taints"])
        labels = "  ".join(f"{k}={v}" for k, v in n["labels"].items())
        devices = "".join(_device(d) for d in n["devices"]) or \
            '<p class="empty">no devices published</p>'
        out.append(f'<div class="node"{_attrs(data_node=n["name"])}><h3>{_e(n["name"])} '
                   f'{ready}{taints}</h3><div class="labels">{_e(labels)}</div>'
                   f'<div class="devices">{devices}</div></div>')
    return "".join(out)


def _device(d: dict[str, Any]) -> str:
    tags = []
    if NUMA in d["attributes"]:
        tags.append(f'<span class="tag numa">NUMA {_e(d["attributes"][NUMA])}</span>')
    if d["shared"]:
        tags.append('<span class="tag">shareable</span>')
    if d["consumesCounters"]:
        tags.append(f'<span class="tag">partition of {_e(", ".join(d["consumesCounters"]))}'
                    '</span>')
    tags += [f'<span class="tag taint">taint {_e(t)}</span>' for t in d["taints"]]
    caps = "".join(
        f'<div class="cap"><span>{_e(name)}</span><span class="bar" title="{_e(c["used"])} '
        f'used of {_e(c["total"])}, {_e(c["left"])} left"><span class="fill" style="width:'
        f'{round(c["fraction"] * 100)}%"></span></span><span>{_e(c["left"])} left of '
        f'{_e(c["total"])}</span></div>' for name, c in d["capacity"].items())
    holders = "→ " + ", ".join(d["claims"]) if d["claims"] else "free"
    used = " used" if d["claims"] else ""
    return (f'<div class="device{used}"{_attrs(data_id="device:" + d["id"])} tabindex="0">'
            f'<div class="dev-head"><b>{_e(d["name"])}</b> <span class="model">'
            f'{_e(d["model"] or d["driver"])}</span> {"".join(tags)}</div>'
            f'<div class="driver">{_e(d["driver"])}</div>{caps}'
            f'<div class="holders">{_e(holders)}</div>{_attribute_list(d["attributes"])}</div>')


def _attribute_list(attributes: dict[str, str]) -> str:
    """Every attribute with its whole value, folded away until asked for."""
    if not attributes:
        return ""
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in attributes.items())
    return (f'<details class="attrs"><summary>{len(attributes)} attributes</summary>'
            f"<dl>{rows}</dl></details>")


def _pending(pods: list[dict[str, Any]]) -> str:
    pending = [p for p in pods if p["pending"]]
    if not pending:
        return '<p class="empty">none</p>'
    return "".join(
        f'<div class="pending"{_attrs(data_id="pod:" + p["key"])}><b>{pod_link(p["key"])}</b>'
        f'<p class="reason">{_e(p["reason"] or "not scheduled yet")}</p>'
        f'{pod_link(p["key"], "Explain, node by node and device by device ▸")}</div>'
        for p in pending)


def _pods(pods: list[dict[str, Any]]) -> str:
    return "".join(
        f'<tr{_attrs(data_id="pod:" + p["key"])}><td>{pod_link(p["key"])}</td>'
        f'<td class="phase {_e(p["phase"])}">{"Terminating" if p["deleting"] else _e(p["phase"])}'
        f'</td><td>{_e(p["node"] or "—")}</td><td>{_e(", ".join(p["devices"]) or "—")}</td>'
        f"</tr>" for p in pods)


def _claims(claims: list[dict[str, Any]]) -> str:
    rows = []
    for c in claims:
        if c["allocated"]:
            devices = "; ".join(
                d["id"] + (f" (share {d['shareID'][:8]})" if d.get("shareID") else "")
                + "".join(f" {k}={v}" for k, v in d["consumed"].items()) for d in c["devices"])
        else:
            devices = "not allocated"
        rows.append(f'<tr{_attrs(data_id="claim:" + c["key"])}><td>{claim_link(c["key"])}</td>'
                    f'<td>{_e(devices)}</td><td>{_e(", ".join(c["reservedFor"]) or "—")}</td>'
                    "</tr>")
    return "".join(rows)


def _classes(classes: list[dict[str, Any]]) -> str:
    return "".join(f'<li><b>{_e(c["name"])}</b> <code>'
                   f'{_e(" && ".join(c["selectors"]) or "(every device)")}</code></li>'
                   for c in classes)


def _events(events: list[dict[str, Any]]) -> str:
    return "".join(
        f'<li{_attrs(class_="warn" if e["type"] == "Warning" else None)}>'
        f'<span class="ev-reason">{_e(e["reason"])}</span> {_e(e["object"])}: '
        f'{_e(e["message"])}</li>' for e in events)


# --- a pod's decision -------------------------------------------------------------------

def decision(d: dict[str, Any]) -> str:
    """The DRA introduction's table as HTML: per node its verdict, per device a mark and
    the reason in words, the chosen device highlighted, and the scores that decided."""
    claims = "".join(
        f"<li>claim {claim_link(c['key'])}: "
        + (_e("allocated: " + ", ".join(c["devices"])) if c["devices"] else "not allocated")
        + (_e(f" (shared with {', '.join(c['sharedWith'])})") if c["sharedWith"] else "")
        + "</li>" for c in d["claims"])
    claims += "".join(f"<li>claim {_e(m)}</li>" for m in d["missing"])
    replayed = ('<p class="hint">Replayed with the scheduler\'s plugins, this pod\'s claims '
                "taken as not yet allocated.</p>") if d["replayed"] else ""
    nodes = "".join(_node_verdict(n) for n in d["nodes"])
    more = "".join(f"<li>{count} more node{'s' if count > 1 else ''}: {_e(reason)}</li>"
                   for reason, count in sorted(d["more"].items()))
    return (f'<div class="decision"{_attrs(data_pod=d["pod"])}>'
            f'<h3>Pod {_e(d["pod"])}</h3>{_status(d["status"])}'
            f'<ul class="claims">{claims}</ul>'
            f'<p class="verdict">{_e(d["verdict"])}</p>{_scores(d)}{replayed}{nodes}'
            + (f'<ul class="more">{more}</ul>' if more else "") + "</div>")


def _status(status: str) -> str:
    """The pod's status; the scheduler's message (long: every node's reason, once
    more) folded away, the table below says it node by node."""
    head, sep, message = status.partition(", unschedulable: ")
    if not sep:
        return f'<p class="status">{_e(status)}</p>'
    return (f'<details class="status"><summary>{_e(head)}, unschedulable (the scheduler\'s '
            f"message)</summary>{_e(message)}</details>")


def _scores(d: dict[str, Any]) -> str:
    """The feasible nodes' scores, plugin by plugin (only when there was a choice)."""
    scored = [n for n in d["nodes"] if n["score"] is not None]
    if len(scored) < 2:
        return ""
    plugins = [p for p in d["weights"] if any(p in n["scores"] for n in scored)]
    best = max(n["score"] for n in scored)
    head = "".join(f'<th title="weight {d["weights"][p]}">{_e(p)}</th>' for p in plugins)
    rows = "".join(
        f'<tr{_attrs(class_="best" if n["score"] == best else None)}><td>{_e(n["name"])}'
        f'{" ←" if n["scheduled"] else ""}</td>'
        + "".join(f"<td>{_e(n['scores'].get(p, '—'))}</td>" for p in plugins)
        + f"<td><b>{_e(n['score'])}</b></td></tr>" for n in scored)
    return (f'<div class="scroll"><table class="scores"><caption>Scores of the nodes that fit '
            f"(each plugin's share, weighted)</caption><thead><tr><th>node</th>{head}"
            f"<th>total</th></tr></thead><tbody>{rows}</tbody></table></div>")


def _node_verdict(n: dict[str, Any]) -> str:
    mark = "✅" if n["feasible"] else "❌"
    if n["feasible"]:
        head = "fits" + (f", score {n['score']}" if n["score"] is not None else "")
    elif n["plugin"] == "DynamicResources" and n["requests"]:
        head = f"{n['plugin']}: {n['reason'].split(': ', 1)[0]}"  # the rows say why
    else:
        head = f"{n['plugin']}: {n['reason']}" if n["plugin"] else n["reason"]
    where = ' <span class="here">← scheduled here</span>' if n["scheduled"] else ""
    state = "ok" if n["feasible"] else "bad"
    rows = "".join(_device_rows(r) for r in n["requests"])
    table = (f'<div class="scroll"><table class="devices-verdict"><thead><tr><th></th>'
             f"<th>request</th><th>device</th><th>model</th><th>why</th></tr></thead>"
             f"<tbody>{rows}</tbody></table></div>") if rows else ""
    return (f'<section class="node-verdict {state}"{_attrs(data_node=n["name"])}>'
            f'<h4>{mark} {_e(n["name"])} <span class="head">{_e(head)}</span>{where}</h4>'
            f"{table}</section>")


def _device_rows(r: dict[str, Any]) -> str:
    out = []
    for dev in r["devices"]:
        kind = "chosen" if dev["chosen"] else "ok" if dev["ok"] else "bad"
        mark = "✅" if dev["ok"] else "❌"
        detail = ""
        if dev["clause"]:
            detail = f'<div class="clause">{_e(dev["reason"].split(":", 1)[0])}: ' \
                     f'<code>{_e(dev["clause"])}</code></div>'
        attributes = "\n".join(f"{k}={v}" for k, v in dev["attributes"].items())
        out.append(
            f'<tr class="dev {kind}"{_attrs(data_device=dev["id"], title=attributes)}>'
            f"<td>{mark}</td><td>{_e(r['request'])}</td><td>{_e(dev['name'])}</td>"
            f"<td>{_e(dev['model'])}</td><td><span class=\"why\">{_e(dev['short'])}</span>"
            f"{detail}{_attribute_list(dev['attributes'])}</td></tr>")
    return "".join(out)


# --- a claim's timeline, a what-if ------------------------------------------------------

def timeline(key: str, entries: list[dict[str, str]]) -> str:
    if not entries:
        return f'<div class="timeline"><h3>Claim {_e(key)}</h3><p class="empty">no history ' \
               "(not seen by this view)</p></div>"
    rows = "".join(f'<li class="step {_e(e["step"])}"><time>{_e(e["time"])}</time> '
                   f'<b>{_e(e["step"])}</b> {_e(e["detail"])}</li>' for e in entries)
    return f'<div class="timeline"><h3>Claim {_e(key)}</h3><ol>{rows}</ol></div>'


def what_if(result: dict[str, Any]) -> str:
    out = []
    for n in result["nodes"]:
        ok = n["outcome"] == "Allocated"
        devices = " → " + ", ".join(n["devices"]) if n["devices"] else ""
        rows = "".join(_device_rows({"request": r["request"], "devices": [
            {**dev, "id": dev["device"], "name": dev["device"].rsplit("/", 1)[-1],
             "model": "", "chosen": dev["device"] in r["chosen"], "words": dev.get("plain", ""),
             "short": dev.get("plain") or dev["reason"], "clause": dev.get("clause", ""),
             "attributes": {}} for dev in r["devices"] if not _another_driver(dev)]})
            for r in n["explanation"]["requests"])
        out.append(f'<details class="whatif {_e(n["outcome"])}"{" open" if ok else ""}>'
                   f'<summary>{"✅" if ok else "❌"} {_e(n["node"])}: {_e(n["outcome"])}'
                   f'{_e(devices)}</summary><p>{_e(n["explanation"]["summary"])}</p>'
                   f'<div class="scroll"><table class="devices-verdict"><tbody>{rows}</tbody>'
                   "</table></div></details>")
    return "".join(out)


def _another_driver(dev: dict[str, Any]) -> bool:
    """A device its class turns down for its driver: not a candidate at all."""
    return not dev["ok"] and dev["reason"].startswith("class ") and \
        dev.get("plain", "").startswith("driver ")
