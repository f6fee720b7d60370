// The scripts view: #/scripts lists the stored scripts (searchable) and imports a script
// document or a Maestro flow; #/scripts/<id> runs one on a chosen phone with its inputs,
// compares two versions side by side (a healed version's changed selectors marked), edits
// it as JSON (the server's validation errors shown by path) and exports it as JSON or
// Maestro YAML. A run is a task like any other: the page goes to it.

import { api, download } from "./api.js";
import { h, fill, flash, when } from "./dom.js";

/** Where a version came from, in words. */
export function sourceText(src) {
  if (!src) return "–";
  switch (src.kind) {
    case "healed": return `healed by task ${String(src.task_id).slice(0, 8)} from version ${src.from_version}`;
    case "task": return `recorded from task ${String(src.task_id).slice(0, 8)}`;
    case "navigator": return `recorded by the navigator in task ${String(src.task_id).slice(0, 8)}`;
    case "maestro": return "imported from Maestro";
    case "uploaded": return "uploaded or edited";
    default: return src.kind;
  }
}

/** The script document of a stored record (without id, version, created_at, source). */
function documentOf(rec) {
  const { id, version, created_at, source, ...doc } = rec;
  return doc;
}

function importForm(onDone) {
  const text = h("textarea", { id: "import-text", rows: 5, placeholder: "Paste a Maestro flow (YAML) or a script document (JSON), or choose a file" });
  const file = h("input", { type: "file", id: "import-file", accept: ".yaml,.yml,.json", "aria-label": "a file to import" });
  file.addEventListener("change", async () => {
    if (file.files[0]) text.value = await file.files[0].text();
  });
  const form = h("form", { class: "card import" }, h("h2", {}, "Import"), text,
    h("div", { class: "inline" }, file, h("button", { type: "submit" }, "Import")));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = text.value.trim();
    if (!body) return;
    try {
      let rec;
      if (body.startsWith("{")) {
        let doc;
        try {
          doc = JSON.parse(body);
        } catch (err) {
          flash(`This is not JSON: ${err.message}`);
          return;
        }
        rec = await api("/v1/scripts", { method: "POST", body: doc });
      } else {
        rec = await api("/v1/scripts/import", { method: "POST", text: body, type: "application/yaml" });
      }
      flash(`Imported “${rec.name}”.`, "ok");
      text.value = "";
      onDone(rec);
    } catch (err) {
      flash(err);
    }
  });
  return form;
}

export async function renderScripts({ main }) {
  const search = h("input", { id: "script-search", type: "search", placeholder: "search by name or goal", "aria-label": "search scripts" });
  const body = h("tbody");
  let all = [];
  const draw = () => {
    const q = search.value.trim().toLowerCase();
    const rows = all.filter((r) => !q || `${r.name} ${r.goal}`.toLowerCase().includes(q)).map((r) =>
      h("tr", { dataset: { id: r.id } },
        h("td", {}, h("a", { href: `#/scripts/${r.id}` }, r.name)),
        h("td", {}, r.goal),
        h("td", { class: "num" }, String(r.steps.length)),
        h("td", { class: "num" }, `v${r.version}`),
        h("td", {}, sourceText(r.source)),
        h("td", {}, when(r.created_at))));
    fill(body, rows.length ? rows : h("tr", {}, h("td", { colspan: 6, class: "muted" }, q ? "No script matches." : "No scripts yet: record one on a phone, save a finished task, or import one.")));
  };
  async function load() {
    all = [];
    let cursor = null;
    do {
      const q = new URLSearchParams({ limit: "200" });
      if (cursor) q.set("cursor", cursor);
      const page = await api(`/v1/scripts?${q}`);
      all.push(...page.scripts);
      cursor = page.next_cursor;
    } while (cursor && all.length < 2000);
    draw();
  }
  search.addEventListener("input", draw);
  fill(main, h("h1", {}, "Scripts"),
    h("section", { class: "card" }, h("div", { class: "inline" }, h("h2", {}, "Stored scripts"), search),
      h("div", { class: "scroll" }, h("table", { class: "tasks scripts" },
        h("thead", {}, h("tr", {}, ["name", "goal", "steps", "version", "from", "saved"].map((c) => h("th", {}, c)))), body))),
    importForm((rec) => (location.hash = `#/scripts/${rec.id}`)));
  await load();
  return () => {};
}

/** One step in a line: its action, selector and parameters. */
function stepLine(s) {
  if (!s) return "";
  const params = Object.entries(s.parameters || {}).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
  return [s.action, s.selector, params].filter(Boolean).join(" ");
}

/** The two versions' steps side by side; rows that differ are marked, selectors named. */
function diffTable(a, b) {
  const n = Math.max(a.steps.length, b.steps.length);
  const rows = [];
  for (let i = 0; i < n; i++) {
    const x = a.steps[i];
    const y = b.steps[i];
    const same = JSON.stringify(x) === JSON.stringify(y);
    const selChanged = x && y && x.selector !== y.selector;
    const cell = (s, other) => h("td", {}, s ? h("code", {}, stepLine(s)) : h("span", { class: "muted" }, "—"),
      s && other && JSON.stringify(s.alternative_selectors || []) !== JSON.stringify(other.alternative_selectors || [])
        ? h("div", { class: "muted alts" }, `alternatives: ${(s.alternative_selectors || []).join(", ") || "none"}`) : null,
      s && other && JSON.stringify(s.expect) !== JSON.stringify(other.expect)
        ? h("div", { class: "muted alts" }, `expect: ${JSON.stringify(s.expect || null)}`) : null);
    rows.push(h("tr", { class: same ? "" : "changed", dataset: { step: i + 1, selectorChanged: selChanged ? "yes" : "no" } },
      h("td", { class: "num" }, String(i + 1)), cell(x, y), cell(y, x)));
  }
  return h("table", { class: "diff" },
    h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, `version ${a.version} (${sourceText(a.source)})`), h("th", {}, `version ${b.version} (${sourceText(b.source)})`))),
    h("tbody", {}, rows));
}

function versionsCard(versions) {
  const byV = new Map(versions.map((v) => [v.version, v]));
  const opts = (sel) => versions.map((v) => h("option", { value: v.version, selected: v.version === sel }, `v${v.version} — ${sourceText(v.source)}`));
  const last = versions[versions.length - 1];
  const prev = versions.length > 1 ? versions[versions.length - 2] : last;
  const a = h("select", { id: "diff-a", "aria-label": "older version" }, opts(prev.version));
  const b = h("select", { id: "diff-b", "aria-label": "newer version" }, opts(last.version));
  const out = h("div", { class: "scroll diff-box" });
  const draw = () => {
    const x = byV.get(Number(a.value));
    const y = byV.get(Number(b.value));
    const changed = x.steps.filter((s, i) => y.steps[i] && s.selector !== y.steps[i].selector).length;
    fill(out, h("p", { class: "muted diff-summary" },
      JSON.stringify(x.steps) === JSON.stringify(y.steps) ? "The steps are the same." : `${changed} selector(s) changed.`,
      y.source && y.source.kind === "healed" ? ` Version ${y.version} was healed by `: null,
      y.source && y.source.kind === "healed" ? h("a", { href: `#/tasks/${y.source.task_id}` }, "its run") : null,
      y.source && y.source.kind === "healed" ? " (its steps say why each selector changed)." : null),
    diffTable(x, y));
  };
  a.addEventListener("change", draw);
  b.addEventListener("change", draw);
  draw();
  return h("section", { class: "card versions" }, h("h2", {}, `Versions (${versions.length})`),
    h("div", { class: "inline" }, "Compare ", a, " with ", b), out);
}

/** A validation error `steps[2].selector: …` as its path and message. */
export function errorByPath(e) {
  const m = /^([A-Za-z_][\w.[\]]*): (.*)$/s.exec(e.message || "");
  return m ? { path: m[1], message: m[2], hint: e.hint } : { path: "", message: e.message, hint: e.hint };
}

function editCard(rec, onSaved) {
  const text = h("textarea", { id: "script-json", rows: 16, spellcheck: "false" }, JSON.stringify(documentOf(rec), null, 2));
  const errors = h("ul", { class: "errors", id: "script-errors" });
  const save = h("button", { type: "submit" }, "Save as a new version");
  const form = h("form", { class: "card edit" }, h("h2", {}, "Edit"),
    h("p", { class: "muted" }, "The script document as JSON (docs/scripts.md). Saving keeps the old versions."), text, errors, save);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    errors.replaceChildren();
    let doc;
    try {
      doc = JSON.parse(text.value);
    } catch (err) {
      errors.append(h("li", {}, h("code", {}, "JSON"), ` ${err.message}`));
      return;
    }
    try {
      const saved = await api(`/v1/scripts/${rec.id}`, { method: "PUT", body: doc });
      flash(`Saved version ${saved.version}.`, "ok");
      onSaved(saved);
    } catch (err) {
      const p = errorByPath(err);
      errors.append(h("li", { dataset: { path: p.path } }, p.path ? h("code", { class: "path" }, p.path) : null, ` ${p.message}`,
        p.hint ? h("div", { class: "muted" }, p.hint) : null));
    }
  });
  return form;
}

async function runCard(rec) {
  const devs = await api("/v1/devices").catch(() => ({ devices: [] }));
  const device = h("select", { id: "run-device", "aria-label": "phone to run on" },
    h("option", { value: "" }, "any free phone"),
    devs.devices.map((d) => h("option", { value: d.id }, `${d.id} — ${d.state}`)));
  const inputs = Object.entries(rec.inputs || {}).map(([name, spec]) => {
    const secret = spec && typeof spec === "object" && spec.secret;
    const def = typeof spec === "string" ? spec : spec && spec.default;
    const input = h("input", { name, type: secret ? "password" : "text", placeholder: def || "", "aria-label": `input ${name}`, dataset: { input: name } });
    return h("label", { class: "row" }, `${name}${secret ? " (secret, not stored)" : ""}`, input);
  });
  const form = h("form", { class: "card run" }, h("h2", {}, "Run"),
    h("div", { class: "inline" }, "on ", device), inputs, h("button", { type: "submit", id: "run-script" }, "Run"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { inputs: {} };
    if (device.value) body.device_id = device.value;
    for (const i of form.querySelectorAll("input[data-input]")) if (i.value) body.inputs[i.dataset.input] = i.value;
    try {
      const task = await api(`/v1/scripts/${rec.id}/run`, { method: "POST", body });
      location.hash = `#/tasks/${task.id}`;
    } catch (err) {
      flash(err);
    }
  });
  return form;
}

export async function renderScript({ main }, id) {
  const [rec, versions] = await Promise.all([api(`/v1/scripts/${id}`), api(`/v1/scripts/${id}/versions`)]);
  versions.sort((x, y) => x.version - y.version);
  const exportAs = (format, ext) => download(`/v1/scripts/${id}/export?format=${format}`, `${rec.name.replace(/[^\w.-]+/g, "_")}.${ext}`)
    .catch((e) => flash(e.code === "not_exportable" ? `${e.message} — ${e.hint}` : e));
  const remove = async () => {
    if (!confirm(`Delete “${rec.name}” and all its versions?`)) return;
    try {
      await api(`/v1/scripts/${id}`, { method: "DELETE" });
      location.hash = "#/scripts";
    } catch (e) {
      flash(e);
    }
  };
  fill(main,
    h("section", { class: "script-head" },
      h("h1", {}, rec.name), h("p", { class: "muted" }, `${rec.goal} · version ${rec.version} · ${sourceText(rec.source)} · ${rec.steps.length} steps`),
      h("div", { class: "buttons" },
        h("button", { type: "button", id: "export-json", onclick: () => exportAs("json", "json") }, "Export JSON"),
        h("button", { type: "button", id: "export-maestro", onclick: () => exportAs("maestro", "yaml") }, "Export Maestro YAML"),
        h("button", { type: "button", class: "danger", onclick: remove }, "Delete"),
        h("a", { href: "#/scripts" }, "all scripts"))),
    h("div", { class: "script-grid" },
      h("div", {}, await runCard(rec),
        h("section", { class: "card steps" }, h("h2", {}, "Steps"),
          h("ol", { class: "script-steps" }, rec.steps.map((s) => h("li", {}, h("code", {}, stepLine(s)),
            s.expect ? h("span", { class: "muted" }, ` expect ${JSON.stringify(s.expect)}`) : null))))),
      h("div", {}, versionsCard(versions), editCard(rec, () => location.reload()))));
  return () => {};
}

