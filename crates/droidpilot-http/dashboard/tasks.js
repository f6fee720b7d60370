// The tasks view: the submit form (instruction, device, agent kind, model, from
// `GET /v1/presets`, or the kinds docs/agents.md lists when the server has no presets) and
// the list with live status and a status filter.

import { api } from "./api.js";
import { h, fill, badge, flash, when, TERMINAL } from "./dom.js";

const STATUSES = ["queued", "running", "paused", "waiting_for_user", ...TERMINAL];
/** The agent kinds of docs/agents.md "The agent object", for a server without `/v1/presets`. */
const FALLBACK_KINDS = ["navigator", "vision", "planned", "chain", "replay", "script", "flow"];

async function presets() {
  try {
    return await api("/v1/presets");
  } catch (e) {
    if (e.status !== 404) flash(e);
    return { agent_kinds: FALLBACK_KINDS, models: [], defaults: {} };
  }
}

function select(name, label, options, value) {
  const el = h("select", { name, id: `f-${name}` },
    options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
  return [h("label", { for: `f-${name}` }, label), el];
}

async function submitForm() {
  const [p, devs] = await Promise.all([presets(), api("/v1/devices").catch(() => ({ devices: [] }))]);
  const defaults = p.defaults || {};
  const defKind = (defaults.agent && defaults.agent.kind) || "";
  // A fresh install has no model configured: start on replay, which needs none.
  const noModel = defaults.agent_configured === false;
  // Only models the server can use are offered: one nobody configured (no key, a server
  // nobody runs) would only fail the task.
  const usable = (p.models || []).map((m, i) => [m, i]).filter(([m]) => m.configured !== false);
  const needsModel = (k) => !["replay", "script", "flow"].includes(k);
  const noneUsable = noModel && !usable.length;
  const kinds = [["", defKind ? `default (${defKind}${noModel ? ", no model configured" : ""})` : "default"],
    ...p.agent_kinds.map((k) => [k, noneUsable && needsModel(k) ? `${k} (needs a model)` : k])];
  const models = [["", "default"], ...usable.map(([m, i]) => [String(i), `${m.name} (${m.provider}:${m.model})`])];
  const devices = [["", "any free phone"], ...devs.devices.map((d) => [d.id, `${d.id} — ${d.model}`])];
  const [kindLabel, kind] = select("kind", "Agent", kinds, noModel ? "replay" : "");
  const actions = h("textarea", {
    name: "actions", id: "f-actions", rows: 4,
    placeholder: '[{"action": "launch_app", "label": "Settings"}, {"action": "tap", "selector": ":text(\\"Bluetooth\\")"}]',
  });
  const actionsRow = h("div", { class: "row", hidden: kind.value !== "replay" },
    h("label", { for: "f-actions" }, "Actions (replay: a JSON list)"), actions);
  const flow = h("textarea", {
    name: "flow", id: "f-flow", rows: 6, spellcheck: false,
    placeholder: "appId: com.android.settings\n---\n- launchApp\n- tapOn: Bluetooth",
  });
  const flowRow = h("div", { class: "row", hidden: kind.value !== "flow" },
    h("label", { for: "f-flow" }, "Flow (Maestro YAML, runs with no model)"), flow);
  kind.addEventListener("change", () => {
    actionsRow.hidden = kind.value !== "replay";
    flowRow.hidden = kind.value !== "flow";
  });
  const instruction = h("textarea", { name: "instruction", id: "f-instruction", rows: 2, required: true, placeholder: "open Clock and set an alarm for 7:30" });
  const maxSteps = h("input", { type: "number", name: "max_steps", id: "f-max_steps", min: 1, max: 1000, placeholder: String(defaults.max_steps || 50) });
  const [modelLabel, model] = select("model", "Model", models, "");
  const [deviceLabel, device] = select("device", "Device", devices, "");
  const form = h("form", { class: "card submit" },
    h("h2", {}, "New task"),
    h("div", { class: "row" }, h("label", { for: "f-instruction" }, "Instruction"), instruction),
    h("div", { class: "cols" },
      h("div", { class: "row" }, deviceLabel, device),
      h("div", { class: "row" }, kindLabel, kind),
      h("div", { class: "row" }, modelLabel, model),
      h("div", { class: "row" }, h("label", { for: "f-max_steps" }, "Max steps"), maxSteps)),
    actionsRow,
    flowRow,
    noModel ? h("p", { class: "muted no-model" }, "No model is configured on this server, so the form starts on replay (a list of actions, no model). " +
      "For agents that read the screen, configure a model in the server's [agent] settings with its key, or list one in [[dashboard.models]] (see the server's docs/agents.md).") : null,
    h("button", { type: "submit" }, "Submit"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { instruction: instruction.value.trim() };
    if (device.value) body.device_id = device.value;
    if (maxSteps.value) body.max_steps = Number(maxSteps.value);
    const agent = {};
    if (kind.value) agent.kind = kind.value;
    if (model.value) {
      const m = p.models[+model.value];
      if (m.server) {
        Object.assign(agent, { server: m.server, model: m.model });
      } else {
        Object.assign(agent, { provider: m.provider, model: m.model });
        // A base URL shown masked (it holds credentials) is the server's own: left out.
        if (m.base_url && !m.base_url.includes("***")) agent.base_url = m.base_url;
      }
    }
    if (kind.value === "replay") {
      try {
        agent.actions = JSON.parse(actions.value || "[]");
      } catch (e) {
        flash(`The actions are not JSON: ${e.message}`);
        return;
      }
    }
    if (kind.value === "flow") agent.flow = flow.value;
    if (Object.keys(agent).length) body.agent = agent;
    try {
      const task = await api("/v1/tasks", { method: "POST", body });
      location.hash = `#/tasks/${task.id}`;
    } catch (e) {
      flash(e);
    }
  });
  return form;
}

function row(t) {
  return h("tr", { dataset: { id: t.id } },
    h("td", {}, h("a", { href: `#/tasks/${t.id}` }, t.instruction)),
    h("td", { class: "status" }, badge(t.status)),
    h("td", {}, t.assigned_device || t.device_id || "–"),
    h("td", { class: "num" }, `${t.steps}/${t.max_steps}`),
    h("td", {}, t.agent.kind),
    h("td", {}, when(t.created_at)));
}

export async function renderTasks({ main, newLive }) {
  const filter = h("select", { id: "status-filter", "aria-label": "status filter" },
    h("option", { value: "" }, "every status"), STATUSES.map((s) => h("option", { value: s }, s.replaceAll("_", " "))));
  const body = h("tbody");
  const more = h("button", { type: "button", class: "link", hidden: true }, "Older tasks…");
  let cursor = null;
  let pending;

  async function load(append = false) {
    const q = new URLSearchParams({ limit: "50" });
    if (filter.value) q.set("status", filter.value);
    if (append && cursor) q.set("cursor", cursor);
    try {
      const page = await api(`/v1/tasks?${q}`);
      if (!append) body.replaceChildren();
      body.append(...page.tasks.map(row));
      cursor = page.next_cursor || null;
      more.hidden = !cursor;
      if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No tasks.")));
    } catch (e) {
      flash(e);
    }
  }
  filter.addEventListener("change", () => load());
  more.addEventListener("click", () => load(true));

  const form = await submitForm();
  fill(main, h("h1", {}, "Tasks"), form,
    h("section", { class: "card" },
      h("div", { class: "inline" }, h("h2", {}, "Recent tasks"), filter),
      h("div", { class: "scroll" }, h("table", { class: "tasks" },
        h("thead", {}, h("tr", {}, ["instruction", "status", "device", "steps", "agent", "created"].map((c) => h("th", {}, c)))),
        body)),
      more));
  await load();
  // Any task event refreshes the first page (debounced): status changes show live.
  const live = newLive();
  live.on((m) => {
    if (m.type !== "event" || !m.event.type.startsWith("task.")) return;
    clearTimeout(pending);
    pending = setTimeout(() => load(), 250);
  });
  live.subscribe({ all: true });
  return () => {
    clearTimeout(pending);
    live.close();
  };
}
