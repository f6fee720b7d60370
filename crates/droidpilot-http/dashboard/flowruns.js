// Suite runs: `#/flow-runs`, the Maestro workspace runs on the farm (status, passed and
// failed counts, phones, start, duration), and `#/flow-runs/<id>`, one run's flows (the
// phone each ran on, attempts, status, duration, the failing step with its screenshot and
// a link to its task's replay), the JUnit and HTML reports, Cancel while it runs. Both
// follow the run's `flow_run.*` events over the WebSocket and re-read the run on each.

import { api, blobUrl, download } from "./api.js";
import { h, fill, badge, flash, duration, when, inBrowserWords } from "./dom.js";

const short = (id) => String(id).slice(0, 8);

function counts(run) {
  const n = (s) => run.flows.filter((f) => f.status === s).length;
  return { passed: n("passed"), failed: n("failed"), skipped: n("skipped"), cancelled: n("cancelled"), total: run.flows.length };
}

/** The phones a run used (its flows' last attempts), else the ones it asked for. */
function phones(run) {
  const used = [...new Set(run.flows.map((f) => f.device).filter(Boolean))].sort();
  if (used.length) return used.join(", ");
  if (run.devices.length) return run.devices.join(", ");
  return `${run.shards} free phone${run.shards === 1 ? "" : "s"}`;
}

/** Its duration, or how long it has been going (kept current by `tick`). */
function runTime(run) {
  if (run.duration_ms != null) return h("span", { class: "run-time" }, duration(run.duration_ms));
  return h("span", { class: "run-time", dataset: { since: run.created_at } }, sinceText(run.created_at));
}

const sinceText = (iso) => `${duration(Date.now() - Date.parse(iso))} so far`;

/** Every second, the running times on the page; returns its stopper. */
function tick(main) {
  const t = setInterval(() => {
    for (const el of main.querySelectorAll("[data-since]")) el.textContent = sinceText(el.dataset.since);
  }, 1000);
  return () => clearInterval(t);
}

/** A table cell with its column's name, shown beside the value when rows stack (narrow windows). */
export const cell = (label, cls, ...children) => h("td", { class: cls, dataset: { label } }, h("div", { class: "v" }, ...children));

function runRow(run) {
  const c = counts(run);
  return h("tr", { dataset: { id: run.id, status: run.status } },
    cell("run", "name", h("a", { href: `#/flow-runs/${run.id}` }, `run ${short(run.id)}`)),
    cell("status", "status", badge(run.status)),
    cell("passed", "num passed", String(c.passed)),
    cell("failed", "num failed", String(c.failed)),
    cell("flows", "num", String(c.total)),
    cell("phones", "phones", phones(run)),
    cell("started", "", when(run.created_at)),
    cell("duration", "num", runTime(run)));
}

/** `#/flow-runs`: the runs, newest first, re-read on any run's event. */
export async function renderFlowRuns({ main, newLive }) {
  const body = h("tbody");
  const more = h("button", { type: "button", class: "link", hidden: true }, "Older runs…");
  let cursor = null;
  let pending;
  const live = newLive();
  const watched = new Set();

  async function load(append = false) {
    const q = new URLSearchParams({ limit: "50" });
    if (append && cursor) q.set("cursor", cursor);
    try {
      const page = await api(`/v1/flow-runs?${q}`);
      if (!append) body.replaceChildren();
      body.append(...page.runs.map(runRow));
      cursor = page.next_cursor || null;
      more.hidden = !cursor;
      if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No suite runs yet.")));
      // Each running run's own stream; a run started later shows up through `all`.
      const running = page.runs.filter((r) => r.status === "running" && !watched.has(r.id)).map((r) => r.id);
      running.forEach((id) => watched.add(id));
      if (running.length) live.subscribe({ flow_runs: running });
    } catch (e) {
      flash(e);
    }
  }
  more.addEventListener("click", () => load(true));
  fill(main, h("h1", {}, "Suite runs"),
    h("p", { class: "muted" }, "Maestro workspaces run across the phones, one task per flow. Start one with ",
      h("code", {}, "droidpilot flow test DIR --server URL"), " or ", h("code", {}, "POST /v1/flow-runs"), "; it shows here as it runs."),
    h("section", { class: "card" },
      h("table", { class: "stack flow-runs" },
        h("thead", {}, h("tr", {}, ["run", "status", "passed", "failed", "flows", "phones", "started", "duration"].map((c) => h("th", {}, c)))),
        body),
      more));
  await load();
  live.on((m) => {
    if (m.type !== "event" || !m.event.type.startsWith("flow_run.")) return;
    clearTimeout(pending);
    pending = setTimeout(() => load(), 250);
  });
  live.subscribe({ all: true });
  const stop = tick(main);
  return () => {
    stop();
    clearTimeout(pending);
    live.close();
  };
}

/** The failing step: what went wrong, its screenshot (a thumbnail linking to the replay). */
function failureCell(f) {
  const last = f.attempts[f.attempts.length - 1];
  const replay = last ? `#/tasks/${last.task_id}/replay` : null;
  if (!f.failure) return cell("failing step", "failure", h("span", { class: "muted" }, "–"));
  const fail = f.failure;
  let thumb = null;
  if (fail.screenshot) {
    const img = h("img", { class: "fail-shot", alt: `${f.name}: the screen at step ${fail.step}` });
    blobUrl(fail.screenshot).then((u) => (img.src = u), () => img.classList.add("stale"));
    thumb = replay ? h("a", { href: replay, class: "fail-thumb", title: "open the replay" }, img) : img;
  }
  return cell("failing step", "failure",
    h("div", { class: "fail" },
      thumb,
      h("div", { class: "fail-text" },
        fail.step != null ? h("strong", { class: "fail-step" }, `step ${fail.step}`) : null,
        h("p", { class: "fail-message" }, inBrowserWords(fail.message)))));
}

function flowRow(f) {
  const last = f.attempts[f.attempts.length - 1];
  const attempts = f.attempts.length
    ? f.attempts.map((a, i) => h("a", { href: `#/tasks/${a.task_id}`, title: `${a.status}${a.device ? ` on ${a.device}` : ""}` }, String(i + 1)))
      .flatMap((a, i) => (i ? [" ", a] : [a]))
    : ["–"];
  return h("tr", { dataset: { path: f.path, status: f.status } },
    cell("flow", "name", h("strong", {}, f.name), f.name !== f.path ? h("div", { class: "muted path" }, f.path) : null),
    cell("phone", "phone", f.device || "–"),
    cell("attempts", "attempts", ...attempts),
    cell("status", "status", badge(f.status)),
    cell("duration", "num", f.duration_ms != null ? duration(f.duration_ms) : "–"),
    failureCell(f),
    cell("replay", "replay", last ? h("a", { href: `#/tasks/${last.task_id}/replay`, class: "replay-link" }, "replay") : "–"));
}

function runHead(run, actions) {
  const c = counts(run);
  const tally = [`${c.passed} passed`, `${c.failed} failed`];
  if (c.skipped) tally.push(`${c.skipped} skipped`);
  if (c.cancelled) tally.push(`${c.cancelled} cancelled`);
  return h("section", { class: "run-head" },
    h("div", { class: "inline" }, h("h1", {}, `Suite run ${short(run.id)}`), badge(run.status)),
    h("p", { class: "facts-line" },
      h("span", { class: "tally" }, `${tally.join(", ")} of ${c.total}`),
      h("span", {}, `on ${phones(run)}`),
      h("span", {}, `started ${when(run.created_at)}`),
      runTime(run),
      run.retries ? h("span", {}, `${run.retries} retr${run.retries === 1 ? "y" : "ies"}`) : null),
    run.reason ? h("p", { class: "reason" }, inBrowserWords(run.reason)) : null,
    actions);
}

/** `#/flow-runs/<id>`: one run's flows, live until it ends. */
export async function renderFlowRun({ main, newLive }, id) {
  let run = await api(`/v1/flow-runs/${id}`);
  const live = newLive();
  const tasks = new Set();
  let pending;

  const cancel = h("button", { type: "button", id: "cancel-run", class: "danger" }, "Cancel");
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      run = await api(`/v1/flow-runs/${id}/cancel`, { method: "POST" });
      show();
    } catch (e) {
      flash(e);
    } finally {
      cancel.disabled = false;
    }
  });
  const report = (format, ext) => () =>
    download(`/v1/flow-runs/${id}/report?format=${format}`, `flow-run-${short(id)}.${ext}`).catch(flash);
  const junit = h("button", { type: "button", id: "junit", onclick: report("junit", "xml") }, "Download JUnit");
  const html = h("button", { type: "button", id: "html-report", onclick: report("html", "html") }, "HTML report");
  const head = h("div");
  const rows = h("tbody");
  fill(main, head,
    h("section", { class: "card" },
      h("table", { class: "stack flows" },
        h("thead", {}, h("tr", {}, ["flow", "phone", "attempts", "status", "duration", "failing step", ""].map((c) => h("th", {}, c)))),
        rows)),
    h("p", {}, h("a", { href: "#/flow-runs" }, "All suite runs")));

  function show() {
    cancel.hidden = run.status !== "running";
    fill(head, runHead(run, h("div", { class: "buttons" }, cancel, junit, html)));
    rows.replaceChildren(...run.flows.map(flowRow));
    // A running flow's task: its start and end re-read the run too.
    const fresh = run.flows.filter((f) => f.status === "running")
      .map((f) => f.attempts[f.attempts.length - 1]).filter((a) => a && !tasks.has(a.task_id)).map((a) => a.task_id);
    fresh.forEach((t) => tasks.add(t));
    if (fresh.length) live.subscribe({ tasks: fresh });
  }

  async function reload() {
    try {
      run = await api(`/v1/flow-runs/${id}`);
      show();
    } catch (e) {
      flash(e);
    }
  }
  show();
  live.on((m) => {
    if (m.type !== "event") return;
    const t = m.event.type;
    if (!t.startsWith("flow_run.") && t !== "task.started" && t !== "task.finished") return;
    clearTimeout(pending);
    pending = setTimeout(reload, t === "flow_run.finished" ? 0 : 200);
  });
  live.subscribe({ flow_runs: [id] });
  const stop = tick(main);
  return () => {
    stop();
    clearTimeout(pending);
    live.close();
  };
}
