// draemu's web view: renders the snapshot the server streams (GET /api/stream).
// Clicking a device, claim or pod highlights everything linked to it.
"use strict";

const $ = (sel) => document.querySelector(sel);
// Every write sends the page's CSRF token (the server refuses writes without it).
const CSRF = document.querySelector('meta[name="csrf-token"]').content;
let state = null;
let selected = null; // {kind, id}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// What is linked to what: device <-> claim <-> pod.
function links() {
  const out = new Map();
  const add = (a, b) => {
    if (!out.has(a)) out.set(a, new Set());
    if (!out.has(b)) out.set(b, new Set());
    out.get(a).add(b);
    out.get(b).add(a);
  };
  for (const claim of state.claims) {
    for (const d of claim.devices) add("claim:" + claim.key, "device:" + d.id);
    for (const p of claim.reservedFor) add("claim:" + claim.key, "pod:" + p);
  }
  for (const pod of state.pods) for (const c of pod.claims) add("pod:" + pod.key, "claim:" + c);
  return out;
}

function related(id) {
  const graph = links();
  const seen = new Set([id]);
  const todo = [id];
  while (todo.length) {
    for (const next of graph.get(todo.pop()) || []) {
      if (!seen.has(next)) { seen.add(next); todo.push(next); }
    }
  }
  return seen;
}

function select(id) {
  selected = selected === id ? null : id;
  highlight();
  if (selected && selected.startsWith("pod:")) showWhy(selected.slice(4));
}

function highlight() {
  const on = selected ? related(selected) : new Set();
  for (const node of document.querySelectorAll("[data-id]")) {
    node.classList.toggle("hl", on.has(node.dataset.id));
    node.classList.toggle("sel", node.dataset.id === selected);
  }
}

async function showWhy(key) {
  const [namespace, name] = key.split("/");
  const res = await fetch(`/api/why?namespace=${encodeURIComponent(namespace)}&name=${encodeURIComponent(name)}`);
  const body = await res.json();
  $("#detail-text").textContent = body.text || body.error;
  $("#detail").hidden = false;
}

function bar(cap) {
  const pct = Math.round(cap.fraction * 100);
  return el("div", { class: "cap" },
    el("span", { class: "cap-name" }, cap.name),
    el("span", { class: "bar", title: `${cap.used} used of ${cap.total}, ${cap.left} left` },
      el("span", { class: "fill", style: `width:${pct}%` })),
    el("span", { class: "cap-text" }, `${cap.left} left of ${cap.total}`));
}

function device(d) {
  const caps = Object.entries(d.capacity).map(([name, c]) => bar({ name, ...c }));
  const used = d.claims.length > 0;
  const tags = [];
  if (d.shared) tags.push(el("span", { class: "tag" }, "shareable"));
  if (d.consumesCounters.length) tags.push(el("span", { class: "tag" }, "partition of " + d.consumesCounters.join(", ")));
  for (const t of d.taints) tags.push(el("span", { class: "tag taint" }, "taint " + t));
  const attrs = Object.entries(d.attributes).map(([k, v]) => `${k}=${v}`).join("  ");
  return el("div", { class: "device" + (used ? " used" : ""), "data-id": "device:" + d.id,
                     onclick: (e) => { e.stopPropagation(); select("device:" + d.id); } },
    el("div", { class: "dev-head" },
      el("b", {}, d.name), " ", el("span", { class: "model" }, d.model || d.driver), " ", tags),
    el("div", { class: "driver" }, d.driver),
    caps,
    el("div", { class: "holders" }, used ? "→ " + d.claims.join(", ") : "free"),
    el("div", { class: "attrs", title: attrs }, attrs));
}

function renderNodes() {
  const box = $("#nodes");
  box.replaceChildren(...state.nodes.map((n) => el("div", { class: "node" },
    el("h3", {}, n.name, " ",
      el("span", { class: "ready " + (n.ready ? "yes" : "no") }, n.ready ? "Ready" : n.ready === false ? "NotReady" : ""),
      n.taints.map((t) => el("span", { class: "tag taint" }, t))),
    el("div", { class: "labels" }, Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join("  ")),
    el("div", { class: "devices" }, n.devices.length ? n.devices.map(device) : el("p", { class: "empty" }, "no devices published")))));
}

function renderPods() {
  const rows = state.pods.map((p) => el("tr", { "data-id": "pod:" + p.key, onclick: () => select("pod:" + p.key) },
    el("td", {}, p.key), el("td", { class: "phase " + p.phase }, p.deleting ? "Terminating" : p.phase),
    el("td", {}, p.node || "—"), el("td", {}, p.devices.join(", ") || "—")));
  $("#pods tbody").replaceChildren(...rows);
  const pending = state.pods.filter((p) => p.pending);
  $("#pending").replaceChildren(...(pending.length ? pending.map((p) => el("div", { class: "pending", "data-id": "pod:" + p.key, onclick: () => select("pod:" + p.key) },
    el("b", {}, p.key), el("pre", { class: "why" }, p.explanation || "(click for the explanation)"))) : [el("p", { class: "empty" }, "none")]));
}

function renderClaims() {
  $("#claims tbody").replaceChildren(...state.claims.map((c) => el("tr", { "data-id": "claim:" + c.key, onclick: () => select("claim:" + c.key) },
    el("td", {}, c.key),
    el("td", {}, c.allocated ? c.devices.map((d) => d.id + (d.shareID ? ` (share ${d.shareID.slice(0, 8)})` : "") +
      (Object.keys(d.consumed).length ? " " + Object.entries(d.consumed).map(([k, v]) => `${k}=${v}`).join(",") : "")).join("; ") : "not allocated"),
    el("td", {}, c.reservedFor.join(", ") || "—"))));
}

function renderRest() {
  $("#classes").replaceChildren(...state.classes.map((c) => el("li", {}, el("b", {}, c.name), " ", el("code", {}, c.selectors.join(" && ") || "(every device)"))));
  $("#events").replaceChildren(...state.events.map((e) => el("li", { class: e.type === "Warning" ? "warn" : "" },
    el("span", { class: "ev-reason" }, e.reason), " ", e.object, ": ", e.message)));
  const demo = state.demo;
  $("#demo").hidden = !demo;
  if (demo) $("#demo-title").textContent = demo.current >= 0 ? demo.steps[demo.current] : "(the seed demo: press to start)";
}

function render() {
  renderNodes();
  renderPods();
  renderClaims();
  renderRest();
  highlight();
  document.body.dataset.version = String(state.version);
}

async function whatIf() {
  const res = await fetch("/api/whatif", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
                                           body: JSON.stringify({ manifest: $("#whatif-text").value }) });
  const body = await res.json();
  const box = $("#whatif-result");
  if (body.error) { box.replaceChildren(el("pre", { class: "error" }, body.error)); return; }
  box.replaceChildren(...body.nodes.map((n) => el("details", { class: "whatif " + n.outcome, open: n.outcome === "Allocated" ? "" : null },
    el("summary", {}, (n.outcome === "Allocated" ? "✅ " : "❌ ") + n.node + ": " + n.outcome + (n.devices.length ? " → " + n.devices.join(", ") : "")),
    el("pre", {}, n.text))));
}

function connect() {
  const source = new EventSource("/api/stream");
  source.onopen = () => { $("#live").textContent = "live"; $("#live").className = "live on"; };
  source.onmessage = (msg) => { state = JSON.parse(msg.data); render(); };
  source.onerror = () => { $("#live").textContent = "reconnecting…"; $("#live").className = "live off"; };
}

$("#whatif-run").addEventListener("click", whatIf);
$("#detail-close").addEventListener("click", () => { $("#detail").hidden = true; });
$("#demo-step").addEventListener("click", async () => { await fetch("/api/demo/step", { method: "POST", headers: { "X-CSRF-Token": CSRF } }); });
connect();
