// densim serve: the page. Each pane (A, B) edits a copy of the chosen source through its controls;
// every change posts the edits, the server validates them as `densim run` would and starts (or finds
// in its cache) the run; the pane polls until its *current* run is done and ignores older answers.
"use strict";

const POLL_MS = 60;
const DEBOUNCE_MS = 120;
const state = { source: null, controls: [], panes: {} };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  return { status: r.status, body };
}

function paneOf(slot) {
  if (!state.panes[slot]) {
    const root = document.getElementById("pane-" + slot);
    state.panes[slot] = { slot, root, key: null, gen: 0, timer: null, view: null };
  }
  return state.panes[slot];
}

function buildControls(pane, values) {
  const form = pane.root.querySelector(".controls");
  form.replaceChildren();
  let group = null, fs = null;
  for (const c of state.controls) {
    if (c.group !== group) {
      group = c.group;
      fs = el("fieldset", { class: "group" }, el("legend", { text: group }));
      form.append(fs);
    }
    const id = `${pane.slot}-${c.path}`;
    let input;
    if (c.kind === "select") {
      input = el("select", { id, name: c.path, "data-path": c.path });
      for (const o of c.options) input.append(el("option", { value: o, text: o === "" ? "(as in the scenario / none)" : o }));
    } else {
      input = el("input", { id, name: c.path, "data-path": c.path, type: "text", inputmode: c.kind === "number" ? "decimal" : "text", size: "12" });
    }
    input.value = values && c.path in values ? values[c.path] : c.value;
    input.addEventListener(c.kind === "select" ? "change" : "input", () => schedule(pane));
    const row = el("div", { class: "field" }, el("label", { for: id, text: c.label, title: c.help || "" }), input,
      el("div", { class: "field-error", "data-for": c.path }));
    fs.append(row);
  }
}

function edits(pane) {
  const out = {};
  for (const c of state.controls) {
    const input = pane.root.querySelector(`[data-path="${CSS.escape(c.path)}"]`);
    if (input && input.value !== c.value) out[c.path] = input.value;
  }
  return out;
}

function values(pane) {
  const out = {};
  pane.root.querySelectorAll("[data-path]").forEach((i) => { out[i.dataset.path] = i.value; });
  return out;
}

function schedule(pane) {
  clearTimeout(pane.timer);
  pane.timer = setTimeout(() => submit(pane), DEBOUNCE_MS);
}

function showErrors(pane, fields, general) {
  pane.root.querySelectorAll(".field-error").forEach((d) => {
    const msg = fields[d.dataset.for];
    d.textContent = msg || "";
    d.classList.toggle("shown", !!msg);
  });
  const g = pane.root.querySelector(".general-errors");
  g.replaceChildren(...general.map((m) => el("p", { class: "fail", text: m })));
}

function setStatus(pane, text, done, total) {
  pane.root.querySelector(".state").textContent = text;
  const p = pane.root.querySelector("progress");
  p.max = total || 1; p.value = done || 0;
}

async function submit(pane) {
  const gen = ++pane.gen;
  pane.changedAt = performance.now();
  const { status, body } = await getJSON("/api/run", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ source: state.source, edits: edits(pane), slot: pane.slot }),
  });
  if (gen !== pane.gen) return; // superseded while we waited
  if (status === 422 && body && body.errors) {
    showErrors(pane, body.errors, body.general || []);
    setStatus(pane, "fix the marked field", 0, 1);
    return;
  }
  if (status !== 200 || !body) {
    showErrors(pane, {}, [`server answered ${status}` + (body && body.detail ? `: ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}` : "")]);
    return;
  }
  showErrors(pane, {}, []);
  pane.key = body.key;
  follow(pane, gen, body);
}

async function follow(pane, gen, st) {
  while (gen === pane.gen) {
    if (st.state === "done") { render(pane, st); return; }
    if (st.state === "error") { showErrors(pane, {}, [st.error]); setStatus(pane, "failed", 0, 1); return; }
    if (st.state === "cancelled") { setStatus(pane, "cancelled", 0, 1); return; }
    setStatus(pane, st.state === "queued" ? "queued" : "running", st.progress[0], st.progress[1]);
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (gen !== pane.gen) return;
    const r = await getJSON(`/api/runs/${pane.key}`);
    if (r.status !== 200) { showErrors(pane, {}, [`run ${r.status}`]); return; }
    st = r.body;
  }
}

function render(pane, st) {
  const v = st.view;
  pane.view = v;
  const ms = (performance.now() - pane.changedAt).toFixed(0);
  setStatus(pane, `done: engine ${st.wall_s.toFixed(2)} s, page ${ms} ms`, 1, 1);
  const head = pane.root.querySelector(".headline");
  head.replaceChildren(...v.headline.map((h) => el("div", { class: "card", "data-metric": h.key, "data-value": String(h.value) },
    el("div", { class: "v", text: h.text }), el("div", { class: "k", text: h.label }))));
  head.dataset.key = st.key;
  const un = pane.root.querySelector(".unplaced");
  un.hidden = v.unplaced.length === 0;
  un.textContent = v.unplaced.length ? `VMs that fit nowhere: ${v.unplaced.join(", ")}` : "";
  const dl = pane.root.querySelector(".downloads");
  dl.hidden = false;
  dl.querySelector(".dl-yaml").href = `/api/runs/${st.key}/scenario.yaml`;
  dl.querySelector(".dl-summary").href = `/api/runs/${st.key}/files/summary.json`;
  dl.querySelector(".dl-files").replaceChildren();
  dl.querySelector(".dl-list").onclick = async () => {
    const r = await getJSON(`/api/runs/${st.key}/files`);
    if (r.status === 200) dl.querySelector(".dl-files").replaceChildren(...r.body.map((n) => el("a", { href: `/api/runs/${st.key}/files/${encodeURIComponent(n)}`, text: n, class: "file" })));
  };
  pane.root.querySelector(".subtitle").textContent = v.subtitle;
  // a figure already drawn is updated in place (Plotly.react diffs it: faster than drawing anew), in the view's order
  const plots = pane.root.querySelector(".plots");
  const figs = v.plots.map((p) => {
    const id = `${pane.slot}-fig-${p.id}`;
    const old = document.getElementById(id);
    const d = old && old.parentElement === plots ? old : el("div", { class: "fig", id });
    if (d === old) Plotly.react(d, p.data, p.layout, { responsive: true, displaylogo: false });
    return [d, p, d === old];
  });
  plots.replaceChildren(...figs.map(([d]) => d));
  for (const [d, p, kept] of figs) if (!kept) Plotly.newPlot(d, p.data, p.layout, { responsive: true, displaylogo: false });
  const tables = pane.root.querySelector(".tables");
  tables.replaceChildren(...v.tables.map((t) => el("div", { class: "table", "data-table": t.id }, el("h3", { text: t.title }),
    el("table", {}, el("thead", {}, el("tr", {}, ...t.columns.map((c) => el("th", { text: c })))),
      el("tbody", {}, ...t.rows.map((r) => el("tr", {}, ...r.map((c) => el("td", { text: c })))))))));
  updateDiff();
}

async function updateDiff() {
  const box = document.getElementById("diff");
  if (box.hidden) return;
  const a = paneOf("a"), b = paneOf("b");
  const body = box.querySelector(".diff-body");
  if (!a.key || !b.key || !a.view || !b.view) return;
  const r = await getJSON(`/api/diff?a=${a.key}&b=${b.key}`);
  if (r.status !== 200) return;
  const d = r.body;
  const fields = d.fields.length
    ? el("table", { class: "diff-fields" }, el("thead", {}, el("tr", {}, el("th", { text: "field" }), el("th", { text: "A" }), el("th", { text: "B" }))),
      el("tbody", {}, ...d.fields.map((f) => el("tr", {}, el("td", { text: f.path }), el("td", { text: f.a === null || f.a === undefined ? "(default)" : JSON.stringify(f.a) }),
        el("td", { text: f.b === null || f.b === undefined ? "(default)" : JSON.stringify(f.b) })))))
    : el("p", { class: "note", text: "The two configurations are the same scenario." });
  const sign = (x) => (x === null ? "-" : x === 0 ? "=" : (x > 0 ? "+" : "") + Number(x.toPrecision(4)).toLocaleString());
  // a run that leaves VMs unplaced: its lower energy is the VMs it left out; no bold "improvement", a warning instead
  const headRows = d.headline.map((h) => el("tr", { class: h.delta === 0 ? "same" : h.comparable ? "moved" : "not-comparable" },
    el("td", { text: h.label }), el("td", { text: h.a }), el("td", { text: h.b }), el("td", { text: sign(h.delta) })));
  const heads = el("table", { class: "diff-headline" },
    el("thead", {}, el("tr", {}, ...["figure", "A", "B", "B - A"].map((t) => el("th", { text: t })))),
    el("tbody", {}, ...headRows));
  const warn = d.warning ? [el("p", { class: "diff-warning", role: "alert", text: `Warning: ${d.warning}` })] : [];
  body.replaceChildren(...warn, fields, heads);
}

async function loadSource(sid) {
  const { status, body } = await getJSON(`/api/sources/${sid}`);
  if (status !== 200) return;
  state.source = sid;
  state.controls = body.controls;
  document.getElementById("origin").textContent = body.origin;
  for (const slot of ["a", "b"]) {
    const pane = paneOf(slot);
    pane.key = null; pane.view = null;
    buildControls(pane, null);
    pane.root.querySelector(".headline").replaceChildren();
    if (slot === "a" || document.getElementById("compare").checked) submit(pane);
  }
}

document.getElementById("source").addEventListener("change", (e) => loadSource(e.target.value));
document.getElementById("compare").addEventListener("change", (e) => {
  const on = e.target.checked;
  const b = paneOf("b");
  b.root.hidden = !on;
  document.getElementById("diff").hidden = !on;
  document.getElementById("panes").classList.toggle("two", on);
  // plots drawn at the old width: fit them to the new column width
  requestAnimationFrame(() => document.querySelectorAll(".js-plotly-plot").forEach((d) => Plotly.Plots.resize(d)));
  if (on) {
    buildControls(b, values(paneOf("a"))); // B starts as a copy of A
    submit(b);
  }
});
loadSource(document.getElementById("source").value);
