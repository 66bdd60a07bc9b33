// draemu's web view: the server renders every part of the page (page.py); this script
// keeps it live (GET /api/stream replaces the sections as the cluster changes), opens a
// pod's decision or a claim's timeline in a panel instead of a page of its own, and
// highlights what is linked to what a click selected (device <-> claim <-> pod).
"use strict";

const $ = (sel) => document.querySelector(sel);
// Every write sends the page's CSRF token (the server refuses writes without it).
const CSRF = document.querySelector('meta[name="csrf-token"]').content;
let graph = new Map();
let selected = null;
let opened = null; // {url, id}: what the panel shows, refreshed when the cluster changes

function setLinks(pairs) {
  graph = new Map();
  for (const [a, b] of pairs) {
    if (!graph.has(a)) graph.set(a, new Set());
    if (!graph.has(b)) graph.set(b, new Set());
    graph.get(a).add(b);
    graph.get(b).add(a);
  }
}

function related(id) {
  const seen = new Set([id]);
  const todo = [id];
  while (todo.length) {
    for (const next of graph.get(todo.pop()) || []) {
      if (!seen.has(next)) { seen.add(next); todo.push(next); }
    }
  }
  return seen;
}

function highlight() {
  const on = selected ? related(selected) : new Set();
  for (const node of document.querySelectorAll("[data-id]")) {
    node.classList.toggle("hl", on.has(node.dataset.id));
    node.classList.toggle("sel", node.dataset.id === selected);
  }
}

async function openPanel(url, id) {
  opened = { url, id, loading: true, stale: false, at: Date.now() };
  const mine = opened;
  const res = await fetch(url + "&fragment=1");
  const text = await res.text();
  if (opened !== mine) return;  // another one was opened meanwhile
  $("#detail-body").innerHTML = text;  // server-rendered, escaped HTML
  $("#detail").hidden = false;
  $("#detail").dataset.for = id;
  mine.loading = false;
  if (mine.stale) refreshPanel();
}

// The open panel follows the cluster, but an explanation is a replay in the server's
// worker: at most one in flight, and not more often than every 2 s.
function refreshPanel() {
  if (!opened) return;
  if (opened.loading) { opened.stale = true; return; }
  const wait = 2000 - (Date.now() - opened.at);
  if (wait > 0) {
    if (!opened.timer) opened.timer = setTimeout(() => { if (opened) { opened.timer = null; refreshPanel(); } }, wait);
    return;
  }
  openPanel(opened.url, opened.id);
}

function closePanel() {
  opened = null;
  $("#detail").hidden = true;
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a.pod-link, a.claim-link");
  if (link && !link.closest("#detail")) {
    event.preventDefault();
    const id = link.dataset.pod ? "pod:" + link.dataset.pod : "claim:" + link.dataset.claim;
    selected = id;
    highlight();
    openPanel(link.getAttribute("href"), id);
    return;
  }
  if (link) {  // a link inside the panel: show that instead
    event.preventDefault();
    openPanel(link.getAttribute("href"), link.dataset.pod ? "pod:" + link.dataset.pod : "claim:" + link.dataset.claim);
    return;
  }
  const item = event.target.closest("[data-id]");
  if (item && !event.target.closest("details")) {
    selected = selected === item.dataset.id ? null : item.dataset.id;
    highlight();
  }
});

function apply(update) {
  for (const [id, html] of Object.entries(update.html)) {
    const box = document.getElementById(id);
    if (box) box.innerHTML = html;  // server-rendered, escaped HTML
  }
  setLinks(update.links);
  const demo = update.demo;
  $("#demo").hidden = !demo;
  if (demo) $("#demo-title").textContent = demo.current >= 0 ? demo.steps[demo.current] : "(the seed demo: press to start)";
  highlight();
  document.body.dataset.version = String(update.version);
  refreshPanel();  // the decision as it stands now
}

async function whatIf() {
  const res = await fetch("/api/whatif", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
                                           body: JSON.stringify({ manifest: $("#whatif-text").value }) });
  const body = await res.json();
  const box = $("#whatif-result");
  if (body.error) {
    const pre = document.createElement("pre");
    pre.className = "error";
    pre.textContent = body.error;
    box.replaceChildren(pre);
    return;
  }
  box.innerHTML = body.html;  // server-rendered, escaped HTML
}

function connect() {
  $("#live").textContent = "connecting…";
  $("#live").title = "updates as the cluster changes";
  const source = new EventSource("/api/stream");
  source.onopen = () => { $("#live").textContent = "live"; $("#live").className = "live on"; };
  source.onmessage = (msg) => apply(JSON.parse(msg.data));
  source.onerror = () => { $("#live").textContent = "reconnecting…"; $("#live").className = "live off"; };
}

$("#whatif-run").addEventListener("click", whatIf);
$("#detail-close").addEventListener("click", closePanel);
document.addEventListener("keydown", (e) => { if (e.key === "Escape") closePanel(); });
$("#demo-step").addEventListener("click", async () => { await fetch("/api/demo/step", { method: "POST", headers: { "X-CSRF-Token": CSRF } }); });
connect();
