// The stored Maestro workspaces: #/workspaces lists them (the latest version of each);
// #/workspaces/<id> has a workspace's versions (where each came from: an upload, or the
// flow run that healed it) and compares two of them file by file: added, removed and
// changed files, a changed file's lines diffed. Follows the scripts view (scripts.js).

import { api, download } from "./api.js";
import { h, fill, when } from "./dom.js";
import { cell } from "./flowruns.js";

/** Where a version came from, in words, with the healing run linked. */
export function sourceOf(src) {
  if (src && src.kind === "healed") {
    return h("span", {}, "healed by ", h("a", { href: `#/flow-runs/${src.flow_run}` }, `run ${String(src.flow_run).slice(0, 8)}`));
  }
  return h("span", {}, src ? (src.kind === "uploaded" ? "uploaded" : src.kind) : "–");
}

export async function renderWorkspaces({ main }) {
  const all = [];
  let cursor = null;
  do {
    const q = new URLSearchParams({ limit: "200" });
    if (cursor) q.set("cursor", cursor);
    const page = await api(`/v1/workspaces?${q}`);
    all.push(...page.workspaces);
    cursor = page.next_cursor;
  } while (cursor && all.length < 2000);
  const rows = all.map((w) => h("tr", { dataset: { id: w.id } },
    cell("name", "", h("a", { href: `#/workspaces/${w.id}` }, w.name)),
    cell("flows", "num", String(w.config.flows.length)),
    cell("files", "num", String(w.files.length)),
    cell("version", "num", `v${w.version}`),
    cell("from", "", sourceOf(w.source)),
    cell("saved", "", when(w.created_at))));
  fill(main, h("h1", {}, "Workspaces"),
    h("section", { class: "card" },
      h("p", { class: "muted" }, "Maestro workspaces stored on this server (droidpilot workspace push, POST /v1/workspaces)."),
      h("div", { class: "scroll" }, h("table", { class: "stack workspaces" },
        h("thead", {}, h("tr", {}, ["name", "flows", "files", "version", "from", "saved"].map((c) => h("th", {}, c)))),
        h("tbody", {}, rows.length ? rows
          : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No workspaces yet: push one with `droidpilot workspace push DIR`.")))))));
  return () => {};
}

/** Longest common subsequence of two line lists, as a list of [kind, line] rows
 *  (" " kept, "-" only in the older, "+" only in the newer). */
export function lineDiff(a, b) {
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push([" ", a[i++]]);
      j++;
    } else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push(["+", b[j++]]);
    } else {
      out.push(["-", a[i++]]);
    }
  }
  return out;
}

/** Beyond this many lines a side, a changed file is not diffed line by line. */
const DIFF_LINES = 3000;

function fileDiff(path, older, newer) {
  const status = older === undefined ? "added" : newer === undefined ? "removed" : older === newer ? "same" : "changed";
  const head = h("summary", {}, h("code", {}, path), h("span", { class: `file-status ${status}` }, status));
  if (status === "same") return h("details", { class: "file", dataset: { path, status } }, head);
  const a = older === undefined ? [] : older.split("\n");
  const b = newer === undefined ? [] : newer.split("\n");
  const body = a.length > DIFF_LINES || b.length > DIFF_LINES
    ? h("p", { class: "muted" }, `Too long to compare line by line (${a.length} and ${b.length} lines).`)
    : h("pre", { class: "line-diff" }, lineDiff(a, b).map(([k, line]) =>
      h("div", { class: k === "+" ? "add" : k === "-" ? "del" : "ctx" }, `${k} ${line}`)));
  return h("details", { class: "file", open: true, dataset: { path, status } }, head, body);
}

function compareCard(id, versions) {
  const opts = (sel) => versions.map((v) => h("option", { value: v.version, selected: v.version === sel }, `v${v.version}`));
  const last = versions[versions.length - 1];
  const prev = versions.length > 1 ? versions[versions.length - 2] : last;
  const a = h("select", { id: "diff-a", "aria-label": "older version" }, opts(prev.version));
  const b = h("select", { id: "diff-b", "aria-label": "newer version" }, opts(last.version));
  const out = h("div", { class: "files" });
  const contents = new Map();
  const load = (n) => {
    if (!contents.has(n)) contents.set(n, api(`/v1/workspaces/${id}/versions/${n}`).then((v) => v.contents));
    return contents.get(n);
  };
  const draw = async () => {
    const [x, y] = await Promise.all([load(Number(a.value)), load(Number(b.value))]);
    const paths = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
    const diffs = paths.map((p) => fileDiff(p, x[p], y[p]));
    const changed = diffs.filter((d) => d.dataset.status !== "same").length;
    fill(out, h("p", { class: "muted diff-summary" },
      changed ? `${changed} of ${paths.length} file(s) differ.` : "The files are the same."), diffs);
  };
  a.addEventListener("change", draw);
  b.addEventListener("change", draw);
  return [h("section", { class: "card versions" }, h("h2", {}, "Compare"),
    h("div", { class: "inline" }, "Compare ", a, " with ", b), out), draw];
}

export async function renderWorkspace({ main }, id) {
  const versions = await api(`/v1/workspaces/${id}/versions`);
  versions.sort((x, y) => x.version - y.version);
  const latest = versions[versions.length - 1];
  const rows = versions.map((v) => h("tr", { dataset: { version: v.version } },
    cell("version", "num", `v${v.version}`),
    cell("name", "", v.name),
    cell("flows", "num", String(v.config.flows.length)),
    cell("files", "num", String(v.files.length)),
    cell("from", "", sourceOf(v.source)),
    cell("saved", "", when(v.created_at)),
    cell("files", "", h("button", { type: "button", class: "link zip", onclick: () =>
      download(`/v1/workspaces/${id}/versions/${v.version}/zip`, `workspace-${id}-v${v.version}.zip`) }, ".zip"))));
  const [compare, draw] = compareCard(id, versions);
  fill(main,
    h("section", { class: "script-head" }, h("h1", {}, latest.name),
      h("p", { class: "muted" }, `version ${latest.version} · ${latest.config.flows.length} flows · ${latest.files.length} files`),
      h("div", { class: "buttons" }, h("a", { href: "#/workspaces" }, "all workspaces"))),
    h("section", { class: "card" }, h("h2", {}, `Versions (${versions.length})`),
      h("div", { class: "scroll" }, h("table", { class: "stack workspace-versions" },
        h("thead", {}, h("tr", {}, ["version", "name", "flows", "files", "from", "saved", ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, rows)))),
    compare);
  await draw();
  return () => {};
}
