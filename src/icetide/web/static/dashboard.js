// icetide dashboard: renders what /events pushes (icetide.app.dashboard.DashboardState).
"use strict";

const $ = (sel) => document.querySelector(sel);
let latest = null;
let chartTable = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c instanceof Node ? c : String(c ?? ""));
  return node;
}

const secs = (v) => (v === null || v === undefined ? "-"
  : `${Number(v).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 })}s`);
const stateClass = (s) => (["ok", "warn", "fail"].includes(s) ? `state-${s}` : "state-none");

// A name that may wrap only after its dots and colons ("ods_behavior." / "clickevent"),
// never inside a word.
function nameText(name) {
  const frag = document.createDocumentFragment();
  for (const part of String(name).split(/(?<=[.:])/)) {
    if (frag.childNodes.length) frag.append(document.createElement("wbr"));
    frag.append(part);
  }
  return frag;
}

// A stopped table is judged by the freshness its commits achieved: the worst in its window
// (its last minute of commits, app/window.py), else what its newest data had.
const judgedAtCommit = (row) => ["stopped", "suspended"].includes(row.activity) && ["ok", "warn", "fail"].includes(row.state);
const judgedWindow = (row) => (row.window && row.window.worst_s !== null ? row.window : null);
const clock = (ms) => new Date(ms).toISOString().slice(11, 19);
function committedText(row) {
  const w = judgedWindow(row);
  return w ? `${secs(w.worst_s)} worst when committed (${clock(w.start_ms)}–${clock(w.end_ms)} UTC, ${w.commits} commits)`
    : `${secs(row.achieved_s)} when committed`;
}

function target(row) {
  const td = el("td", { "data-field": "target" });
  if (row.target_s === null && row.warn_s === null) td.append("-");
  else if (row.target_s === null) td.append(`warn ${row.warn_s}s`);
  else {
    td.append(`${row.target_s}s`);
    if (row.warn_s !== null) td.append(el("div", { class: "muted" }, `warn ${row.warn_s}s`));
  }
  return td;
}

function numCell(field, value) {
  const shown = value === null || value === undefined ? "-" : Number(value).toLocaleString("en-US");
  return el("td", { class: "num", "data-field": field, "data-value": value ?? "" }, shown);
}

function expectations(row) {
  const parts = Object.entries(row.expectations || {}).sort()
    .map(([name, c]) => `${name}: ${c.failed ?? 0} failed (${c.action ?? "?"})`);
  return el("td", { "data-field": "expectations" }, parts.join("; ") || "-");
}

function deadLetterCell(row, act) {
  const td = numCell("dead_letters", row.dead_letters);
  td.title = "dead letters of the last commit";
  if (act && act.dead_letters_total !== null && act.dead_letters_total !== undefined) {
    td.append(el("span", { class: "muted", "data-total": act.dead_letters_total },
      ` (${act.dead_letters_total.toLocaleString("en-US")} in all)`));
  }
  if (act && act.dead_letter_table) {
    const btn = el("button", { class: "link", type: "button", "data-dlq": act.dead_letter_table },
      "recent");
    btn.addEventListener("click", () => showDeadLetters(act.dead_letter_table));
    td.append(" ", btn);
  }
  return td;
}

function lagCell(row, lagInfo) {
  const td = el("td", { "data-field": "lag" });
  if (lagInfo && lagInfo.state === "pending") {
    td.append(el("span", { class: "muted" }, "unavailable (asking the sources…)"));
    return td;
  }
  if (!row.lag.length) { td.append("-"); return td; }
  td.title = row.lag.map((l) => lagText(l, true)).join("\n");
  row.lag.forEach((l, i) => { if (i) td.append("; "); td.append(nameText(lagText(l, false))); });
  return td;
}

function stateCell(row) {
  const judged = judgedAtCommit(row);
  const parts = [row.state === "-" ? "" : row.state + (judged ? " when committed" : ""),
    row.activity === "unknown" ? "" : row.activity + (row.pending === false ? " (caught up)" : "")];
  const label = parts.filter((p) => p).join(" · ") || "-";
  const pill = el("span", { class: `pill ${stateClass(row.state)}` }, label);
  if (judged) {
    pill.title = `stopped: judged by the freshness its commits achieved (${committedText(row)}) ` +
      `against its target, not by its data's age now (${secs(row.freshness_s)})`;
  }
  return el("td", { "data-field": "state" }, pill);
}

function freshnessCell(row) {
  const td = el("td", { class: "num", "data-field": "freshness_s" }, secs(row.freshness_s));
  if (judgedAtCommit(row) && (judgedWindow(row) || (row.achieved_s !== null && row.achieved_s !== undefined))) {
    td.append(el("div", { class: "muted", "data-field": "achieved_s" }, committedText(row)));
  }
  return td;
}

function rowsCell(row) {
  const td = numCell("rows_total", row.rows_total);
  const last = row.rows_last_commit;
  td.append(el("div", { class: "muted", "data-field": "rows_last_commit", "data-value": last ?? "",
    title: "rows of the last commit" },
    `last commit ${last === null || last === undefined ? "-" : Number(last).toLocaleString("en-US")}`));
  return td;
}

function lagText(lag, full) {
  if (lag.error) return `${lag.source}: unavailable` + (full ? ` (${lag.error})` : "");
  const behind = lag.behind === null ? "?" : Number(lag.behind).toLocaleString("en-US");
  return `${lag.source}: ${behind} ${lag.unit} behind`;
}

function storageCell(st) {
  // data files · average size · delete files · snapshots; last maintenance on hover
  if (st && st.data_files == null && st.snapshots) {  // a Hudi table: its commits only
    const when = st.last_maintenance_ms ? new Date(st.last_maintenance_ms).toLocaleTimeString() : "never";
    return el("td", { "data-field": "storage", title: "last compaction, clean or clustering" },
      `${st.snapshots} commits`, el("div", { class: "muted", "data-field": "maintained" }, `maintained ${when}`));
  }
  if (!st || st.data_files == null) return el("td", { "data-field": "storage" }, "-");
  const mb = st.avg_file_bytes == null ? "?" : (st.avg_file_bytes / 1048576).toFixed(1) + " MB";
  const when = st.last_maintenance_ms ? new Date(st.last_maintenance_ms).toLocaleTimeString() : "never";
  return el("td", { "data-field": "storage", title: `last maintenance (a pass or a compaction): ${when}` },
    `${st.data_files} files · ${mb}`, el("div", {}, `${st.delete_files ?? 0} deletes · ${st.snapshots ?? "?"} snaps`),
    el("div", { class: "muted", "data-field": "maintained" }, `maintained ${when}`));
}

function renderTables(state) {
  const body = $("#tables tbody");
  body.replaceChildren();
  for (const row of state.status) {
    const act = state.activity[row.table];
    const tr = el("tr", { "data-table": row.table });
    const name = el("td", { class: "name" }, nameText(row.table));
    if (row.format && row.format !== "iceberg") {  // a Hudi table beside the Iceberg ones
      name.append(el("div", { class: "muted", "data-field": "format" }, row.format));
    }
    tr.append(name);
    if (!row.exists) {
      tr.append(el("td", { colSpan: 9, class: "muted" }, "not created"));
      body.append(tr);
      continue;
    }
    tr.append(stateCell(row), rowsCell(row));
    tr.append(numCell("commits_per_min", act ? act.commits_per_min : null));
    tr.append(freshnessCell(row), target(row));
    tr.append(expectations(row));
    tr.append(el("td", { class: "num", "data-field": "batch_s" }, secs(row.batch_s)));
    tr.append(storageCell(row.storage), deadLetterCell(row, act), lagCell(row, state.lag));
    body.append(tr);
  }
}

function renderDag(state) {
  const states = Object.fromEntries(state.status.map((r) => [r.table, r.state]));
  const inputs = {};
  for (const [a, b] of state.dag.edges) (inputs[b] = inputs[b] || []).push(a);
  const box = $("#dag");
  box.replaceChildren();
  for (const layer of state.dag.layers) {
    const col = el("div", { class: "layer", "data-layer": layer.name }, el("h3", {}, layer.name));
    for (const name of layer.nodes) {
      const isSource = layer.name === "sources";
      const cls = isSource ? "node source" : `node ${stateClass(states[name])}`;
      const node = el("div", { class: cls, "data-node": name, title: states[name] || "" },
        el("span", { class: "name" }, nameText(name)));
      if (inputs[name]) node.append(el("div", { class: "from" }, "← ", nameText(inputs[name].join(", "))));
      col.append(node);
    }
    box.append(col);
  }
}

function renderLists(state) {
  const errors = state.status.flatMap((r) =>
    Object.entries(r.errors || {}).map(([flow, msg]) => `${r.table} · ${flow}: ${msg}`));
  $("#flow-errors").replaceChildren(...(errors.length ? errors.map((e) => el("li", {}, e))
    : [el("li", { class: "muted" }, "none")]));
  const seen = new Map();
  for (const r of state.status) for (const lag of r.lag) seen.set(lag.source, lagText(lag, true));
  const lags = [...seen.values()];
  const pending = state.lag && state.lag.state === "pending";
  $("#source-lag").replaceChildren(...(lags.length ? lags.map((t) => el("li", {}, nameText(t)))
    : [el("li", { class: "muted" }, pending ? "unavailable (asking the sources…)" : "none")]));
  const runs = new Map();  // master -> executors of its newest commit
  for (const r of state.status) if (r.master) runs.set(r.master, r.executors || []);
  const items = [...runs].map(([master, execs]) => el("li", { "data-master": master },
    `${master} · ${execs.length} executor${execs.length === 1 ? "" : "s"}` +
    (execs.length ? `: ${execs.join(", ")}` : "")));
  $("#runs-on").replaceChildren(...(items.length ? items
    : [el("li", { class: "muted" }, "unknown")]));
}

function renderChart(state) {
  const select = $("#chart-table");
  const names = Object.keys(state.activity).sort();
  if (!chartTable || !names.includes(chartTable)) {
    chartTable = names.find((n) => state.activity[n].history.length) || names[0] || null;
  }
  select.replaceChildren(...names.map((n) => el("option", { value: n, selected: n === chartTable }, n)));
  if (!chartTable || typeof Plotly === "undefined") return;
  const points = state.activity[chartTable].history;
  const row = state.status.find((r) => r.table === chartTable) || {};
  const xs = points.map((p) => new Date(p.at_ms));
  const traces = [{ x: xs, y: points.map((p) => p.freshness_s), type: "scatter",
    mode: "lines+markers", name: "freshness at commit (s)" }];
  const span = xs.length ? [xs[0], xs[xs.length - 1]] : [];
  if (row.target_s !== null && row.target_s !== undefined && span.length)
    traces.push({ x: span, y: [row.target_s, row.target_s], mode: "lines", name: "target",
      line: { dash: "dash", color: "#c0392b" } });
  if (row.warn_s !== null && row.warn_s !== undefined && span.length)
    traces.push({ x: span, y: [row.warn_s, row.warn_s], mode: "lines", name: "warn",
      line: { dash: "dot", color: "#d4a017" } });
  Plotly.react("freshness-chart", traces, { margin: { t: 10, r: 10, l: 50, b: 40 },
    yaxis: { title: "seconds", rangemode: "tozero" }, showlegend: true,
    legend: { orientation: "h" } }, { displayModeBar: false, responsive: true });
}

function render(state) {
  latest = state;
  document.body.dataset.generated = state.generated_ms;
  const banner = $("#error-banner");
  banner.hidden = !state.error;
  banner.textContent = state.error || "";
  if (state.error) return;
  $("#pipeline").textContent = state.pipeline ? `· ${state.pipeline}` : "· every table";
  $("#updated").textContent = `updated ${new Date(state.generated_ms).toLocaleTimeString()}`;
  $("#catalog").textContent = state.catalog ? `catalog ${state.catalog}` : "";
  renderDag(state);
  renderTables(state);
  renderLists(state);
  renderChart(state);
}

async function showDeadLetters(table) {
  const resp = await fetch(`/api/dead-letters?table=${encodeURIComponent(table)}&limit=20`);
  const data = await resp.json();
  $("#dead-letters").hidden = false;
  $("#dlq-table").textContent = table;
  const body = $("#dlq-rows tbody");
  if (!resp.ok) {
    body.replaceChildren(el("tr", {}, el("td", { colSpan: 6, class: "error" }, data.error)));
    return;
  }
  body.replaceChildren(...data.rows.map((d) => el("tr", { "data-dead-letter": "" },
    el("td", {}, d.ingested_at), el("td", { "data-field": "error" }, d.error),
    el("td", {}, d.topic ?? d.source), el("td", { class: "num" }, d.partition ?? "-"),
    el("td", { class: "num", "data-field": "offset" }, d.offset ?? d.position ?? "-"),
    el("td", { class: "raw", "data-field": "raw" }, d.raw))));
}

function queryChart(data) {
  const box = $("#query-chart");
  const numeric = (i) => data.rows.length && data.rows.every((r) => r[i] === null || typeof r[i] === "number");
  const y = data.columns.findIndex((_, i) => numeric(i) && (i > 0 || data.columns.length === 1));
  box.hidden = y < 0;
  if (y < 0) return;
  const x = y === 0 ? null : 0;
  const seen = new Map();
  const labels = data.rows.map((r, i) => {  // a category axis merges equal labels: number repeats
    const label = x === null ? String(i + 1) : String(r[x]);
    const n = (seen.get(label) || 0) + 1;
    seen.set(label, n);
    return n > 1 ? `${label} (${n})` : label;
  });
  Plotly.react(box, [{ type: "bar", x: labels, y: data.rows.map((r) => r[y]), name: data.columns[y] }],
    { margin: { t: 10, r: 10, l: 50, b: 60 }, yaxis: { title: data.columns[y] },
      xaxis: { type: "category", title: x === null ? "row" : data.columns[x] } },
    { displayModeBar: false, responsive: true });
}

async function runQuery(event) {
  event.preventDefault();
  const err = $("#query-error");
  err.hidden = true;
  $("#query-info").textContent = "running…";
  const body = { sql: $("#query-sql").value, limit: Number($("#query-limit").value) || 100 };
  const resp = await fetch("/api/query", { method: "POST", body: JSON.stringify(body),
    headers: { "content-type": "application/json" } });
  const data = await resp.json();
  const head = $("#query-result thead");
  const rows = $("#query-result tbody");
  if (!resp.ok) {
    err.textContent = data.error;
    err.hidden = false;
    $("#query-info").textContent = "";
    head.replaceChildren();
    rows.replaceChildren();
    $("#query-chart").hidden = true;
    return;
  }
  head.replaceChildren(el("tr", {}, ...data.columns.map((c) => el("th", {}, c))));
  rows.replaceChildren(...data.rows.map((r) => el("tr", { "data-row": "" },
    ...r.map((v) => el("td", {}, v === null ? "null" : v)))));
  $("#query-info").textContent = `${data.rows.length} rows in ${data.seconds}s` +
    (data.truncated ? ` (more rows exist: limit ${data.limit})` : "");
  queryChart(data);
}

function connect() {
  const source = new EventSource("/events");
  const badge = $("#connection");
  source.addEventListener("open", () => { badge.textContent = "live"; badge.className = "badge live"; });
  source.addEventListener("error", () => { badge.textContent = "reconnecting…"; badge.className = "badge down"; });
  source.addEventListener("state", (e) => render(JSON.parse(e.data)));
}

$("#query-form").addEventListener("submit", runQuery);
$("#chart-table").addEventListener("change", (e) => { chartTable = e.target.value; if (latest) renderChart(latest); });
$("#dlq-close").addEventListener("click", () => { $("#dead-letters").hidden = true; });
connect();
