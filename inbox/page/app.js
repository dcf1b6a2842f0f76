// agentbox inbox page: plain script, no build step, no other origin.
// Every value a run sent is shown with textContent (never as HTML), with
// control and invisible formatting characters made visible.
"use strict";

const $ = (sel) => document.querySelector(sel);
let asks = [], selected = 0, confirming = null, skew = 0, tab = "pending";

function vis(s) {
  return String(s ?? "").replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (c) => "\\u{" + c.codePointAt(0).toString(16) + "}");
}
function shq(w) {
  w = vis(w);
  return /^[A-Za-z0-9_\-+=\/.,:@%]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
}
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(typeof k === "string" ? document.createTextNode(k) : k);
  return e;
}
function status(msg, bad) { const s = $("#status"); s.textContent = msg; s.className = bad ? "error" : ""; }

async function api(path, body) {
  const opt = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, Object.assign({ credentials: "same-origin" }, opt));
  const data = await r.json().catch(() => ({}));
  if (r.status === 401) { showLogin(); }
  if (!r.ok) throw Object.assign(new Error(data.error || r.statusText), { status: r.status });
  return data;
}

function show(name) {
  tab = name;
  for (const s of ["login", "pending", "rules", "history"]) $("#" + s).hidden = s !== name;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("on", b.dataset.tab === name);
  if (name === "rules") loadRules();
  if (name === "history") loadHistory();
}
function showLogin() { $("#tabs").hidden = true; show("login"); }

async function login(body) {
  try {
    const r = await api("/api/login", body);
    history.replaceState(null, "", "/");
    start(r.user);
  } catch (e) { $("#login-error").textContent = e.message; showLogin(); }
}

// ---- pending asks ----
function left(a) {
  const ms = new Date(a.deadline).getTime() - (Date.now() - skew);
  if (ms <= 0) return "deadline passed: auto-denied";
  const s = Math.ceil(ms / 1000);
  return "auto-deny in " + (s >= 60 ? Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s" : s + "s");
}
function soon(a) { return new Date(a.deadline).getTime() - (Date.now() - skew) < 30000; }
async function loadAsks() {
  try {
    const r = await api("/api/asks");
    skew = Date.now() - new Date(r.now).getTime();
    const cur = asks[selected] && asks[selected].id;
    asks = r.asks;
    $("#loading").hidden = true;
    selected = Math.max(0, asks.findIndex((a) => a.id === cur));
    if (confirming && !asks.some((a) => a.id === confirming.id)) confirming = null;
    renderAsks();
  } catch (e) { if (e.status !== 401) status(e.message, true); }
}
function row(dl, name, value, cls) {
  if (value == null || value === "" || (Array.isArray(value) && value.length === 0)) return;
  dl.append(el("dt", {}, name), el("dd", cls ? { class: cls } : {}, value));
}
const answers = [
  ["a", "allow", "Allow once", "allow"],
  ["s", "allow_always", "Allow for this run", "allow"],
  ["A", "remember", "Always…", "allow"],
  ["d", "deny", "Deny", "deny"],
  ["D", "remember_deny", "Deny always…", "deny"],
];
function renderAsks() {
  $("#count").textContent = asks.length;
  $("#empty").hidden = asks.length > 0 || !$("#loading").hidden;
  const box = $("#asks");
  box.replaceChildren();
  asks.forEach((a, i) => {
    const dl = el("dl");
    row(dl, "command", vis(a.action));
    row(dl, "argv", (a.argv || []).map(shq).join(" "));
    row(dl, "started by", (a.parent || []).map(shq).join(" "));
    row(dl, "program", vis(a.program) + (a.identified ? "  — " + vis(a.identified) : ""));
    row(dl, "cwd", vis(a.cwd));
    row(dl, "environment", (a.env || []).map(vis).join("\n"));
    row(dl, "rule", vis(a.rule) + (a.layer ? " (" + vis(a.layer) + ")" : ""));
    row(dl, "why it asks", vis(a.reason));
    row(dl, "last commands", (a.recent || []).map(vis).join("\n"));
    row(dl, "changed so far", (a.changed || []).map(vis).join("\n"));
    row(dl, "workspace", vis(a.workspace));
    const card = el("div", { class: "ask" + (i === selected ? " selected" : ""), "data-ask": a.id, "data-agent": a.agent },
      el("h3", {}, el("span", {}, vis(a.agent) + " · " + vis(a.role)), el("span", { class: "run" }, "run " + vis(a.run) + " · pid " + a.pid),
        el("span", { class: "deadline" + (soon(a) ? " soon" : ""), "data-deadline": a.deadline }, left(a))),
      dl);
    if (a.answering) card.append(el("p", { class: "answering" }, "being answered by " + vis(a.answering)));
    const btns = el("div", { class: "buttons" });
    for (const [key, ans, label, cls] of answers) {
      btns.append(el("button", { class: "act " + cls, "data-answer": ans, title: "key " + key,
        onclick: () => { selected = i; choose(a, ans); } }, label + " [" + key + "]"));
    }
    card.append(btns);
    if (confirming && confirming.id === a.id) card.append(confirmBox(a, confirming.answer));
    card.addEventListener("click", () => { if (selected !== i) { selected = i; renderAsks(); } });
    box.append(card);
  });
}
function confirmBox(a, ans) {
  const deny = ans === "remember_deny", rem = a.remember || {};
  const prefix = deny ? rem.deny : rem.allow;
  const kids = [];
  if (prefix) {
    kids.push(el("p", {}, "Writes to " + vis(rem.file) + ":"),
      el("pre", { class: "rule" }, "- decision: " + (deny ? "deny" : "allow") + "\n  command: " + vis(prefix)));
  } else {
    kids.push(el("p", {}, "Nothing can be saved for this command" + (rem.allow_note && !deny ? " (" + vis(rem.allow_note) + ")" : "") +
      "; it is " + (deny ? "denied" : "allowed") + " for the rest of this run."));
  }
  kids.push(el("button", { class: "act " + (deny ? "deny" : "allow"), "data-confirm": ans, onclick: () => send(a, ans) }, "Confirm [Enter]"),
    el("button", { class: "act", onclick: () => { confirming = null; renderAsks(); } }, "Cancel [Esc]"));
  return el("div", { class: "confirm" }, ...kids);
}
function choose(a, ans) {
  if (ans === "remember" || ans === "remember_deny") { confirming = { id: a.id, answer: ans }; renderAsks(); return; }
  send(a, ans);
}
async function send(a, ans) {
  confirming = null;
  try {
    await api("/api/asks/" + encodeURIComponent(a.id), { answer: ans });
    status("answered " + ans + ": " + vis(a.action));
  } catch (e) { status(e.message, true); }
  loadAsks();
}
document.addEventListener("keydown", (ev) => {
  if (tab !== "pending" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.tagName === "INPUT") return;
  const a = asks[selected];
  if (ev.key === "j" || ev.key === "ArrowDown") { selected = Math.min(asks.length - 1, selected + 1); renderAsks(); return; }
  if (ev.key === "k" || ev.key === "ArrowUp") { selected = Math.max(0, selected - 1); renderAsks(); return; }
  if (!a) return;
  if (ev.key === "Escape") { confirming = null; renderAsks(); return; }
  if (ev.key === "Enter" && confirming && confirming.id === a.id) { ev.preventDefault(); send(a, confirming.answer); return; }
  const hit = answers.find(([key]) => key === ev.key);
  if (hit) { ev.preventDefault(); choose(a, hit[1]); }
});
setInterval(() => {
  for (const d of document.querySelectorAll("[data-deadline]")) {
    d.textContent = left({ deadline: d.dataset.deadline });
    d.classList.toggle("soon", soon({ deadline: d.dataset.deadline }));
  }
}, 1000);

// ---- rules ----
async function loadRules() {
  let r;
  try { r = await api("/api/rules"); } catch (e) { return status(e.message, true); }
  const sb = $("#session-rules");
  sb.replaceChildren();
  for (const run of r.runs.filter((x) => x.attached)) {
    const t = el("table", { "data-run": run.run }, el("caption", {}, vis(run.agent) + " · " + vis(run.role) + " · run " + vis(run.run)));
    t.append(el("tr", {}, el("th", {}, "rule"), el("th", {}, "decision"), el("th", {}, "matches"), el("th", {}, "from"), el("th", {}, "when"), el("th", {})));
    if (run.rules.length === 0) t.append(el("tr", {}, el("td", { colspan: "6", class: "empty" }, "no session rules")));
    for (const rule of run.rules) {
      t.append(el("tr", { "data-rule": rule.id }, el("td", {}, vis(rule.id)), el("td", {}, vis(rule.decision)), el("td", {}, vis(rule.match)),
        el("td", {}, vis(rule.by)), el("td", {}, rule.at ? new Date(rule.at).toLocaleString() : ""),
        el("td", {}, el("button", { class: "act deny", "data-revoke": rule.id, onclick: async () => {
          try { await api("/api/rules/revoke", { run: run.run, id: rule.id }); status("revoked " + rule.id); } catch (e) { status(e.message, true); }
          loadRules();
        } }, "Revoke"))));
    }
    sb.append(t);
  }
  if (!sb.children.length) sb.append(el("p", { class: "empty" }, "No run is attached."));
  const pb = $("#project-rules");
  pb.replaceChildren();
  for (const f of r.project) {
    const t = el("table", { "data-file": f.file }, el("caption", {}, vis(f.file) + (f.error ? " — " + vis(f.error) : "")));
    t.append(el("tr", {}, el("th", {}, "decision"), el("th", {}, "matches"), el("th", {}, "where it came from"), el("th", {})));
    if (f.rules.length === 0) t.append(el("tr", {}, el("td", { colspan: "4", class: "empty" }, "no rules")));
    for (const rule of f.rules) {
      const cell = el("td", {});
      cell.append(el("button", { class: "act deny", "data-project-revoke": rule.key, onclick: () => {
        cell.replaceChildren(el("div", { class: "confirm" }, el("p", {}, "This edit removes these lines from " + vis(f.file) + ":"),
          el("pre", {}, rule.text.split("\n").filter(Boolean).map((l) => "- " + vis(l)).join("\n")),
          el("button", { class: "act deny", "data-confirm-project": rule.key, onclick: async () => {
            try { await api("/api/project-rules/revoke", { file: f.file, key: rule.key, text: rule.text }); status("removed " + rule.key + " from " + f.file); }
            catch (e) { status(e.message, true); }
            loadRules();
          } }, "Remove it"),
          el("button", { class: "act", onclick: () => loadRules() }, "Cancel")));
      } }, "Revoke…"));
      t.append(el("tr", { "data-key": rule.key }, el("td", {}, vis(rule.decision)), el("td", {}, vis(rule.match)), el("td", {}, vis(rule.description)), cell));
    }
    pb.append(t);
  }
  if (!pb.children.length) pb.append(el("p", { class: "empty" }, "No project policy known yet."));
}

// ---- history ----
async function loadHistory() {
  const q = new URLSearchParams(new FormData($("#filter")));
  for (const [k, v] of [...q]) if (!v) q.delete(k);
  let r;
  try { r = await api("/api/history?" + q); } catch (e) { return status(e.message, true); }
  const tb = $("#history-table tbody");
  tb.replaceChildren();
  for (const h of r.rows) {
    tb.append(el("tr", {}, el("td", {}, new Date(h.time).toLocaleString()), el("td", {}, vis(h.agent)), el("td", {}, vis(h.run)),
      el("td", {}, vis(h.action || h.reason)), el("td", {}, vis(h.decision || h.event)), el("td", {}, vis(h.rule)), el("td", {}, vis(h.approver)),
      el("td", {}, el("a", { href: "#event/" + h.log + "/" + h.seq, onclick: (ev) => { ev.preventDefault(); showEvent(h.log, h.seq); } }, "event"))));
  }
  if (r.problems && r.problems.length) status(r.problems.map(vis).join("; "), true);
}
async function showEvent(log, seq) {
  try {
    const r = await api("/api/event?log=" + log + "&seq=" + seq);
    const p = $("#event");
    p.textContent = vis(r.log) + " #" + seq + "\n" + JSON.stringify(r.event, null, 2);
    p.hidden = false;
    history.replaceState(null, "", "#event/" + log + "/" + seq);
  } catch (e) { status(e.message, true); }
}

// ---- start ----
function stream() {
  const es = new EventSource("/api/stream");
  es.addEventListener("change", () => { $("#live").classList.add("on"); loadAsks(); if (tab === "rules") loadRules(); });
  es.onerror = () => $("#live").classList.remove("on");
}
function start(user) {
  $("#who").textContent = user;
  $("#tabs").hidden = false;
  const m = location.hash.match(/^#event\/(\d+)\/(\d+)$/);
  show(m ? "history" : "pending");
  if (m) showEvent(m[1], m[2]);
  loadAsks();
  stream();
}
for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => show(b.dataset.tab));
$("#filter").addEventListener("submit", (ev) => { ev.preventDefault(); loadHistory(); });
$("#login-form").addEventListener("submit", (ev) => { ev.preventDefault(); login({ token: $("#token").value }); });
(async () => {
  const code = location.hash.match(/^#code=([0-9a-f]+)$/);
  if (code) { history.replaceState(null, "", "/login"); return login({ code: code[1] }); }
  try { start((await api("/api/whoami")).user); } catch (e) { showLogin(); }
})();
