// The phone page (#/devices/<id>): any phone's live view with the inspector, and, once
// taken, remote control and the recorder. Taking the phone leases it for this page
// (`POST /v1/devices/{id}/control`); every action is a step of the hold's task, done on
// the phone through the server; the page keeps the hold alive while it is open and in
// use, and releases it when left (or lets it lapse when closed or idle).

import { api, token } from "./api.js";
import { h, fill, flash, badge, holderText } from "./dom.js";
import { phoneScreen } from "./panel.js";
import { inspector } from "./inspector.js";

const NAME_KEY = "droidpilot.name";
/** No keep-alive after this long without a click or key: the hold lapses. */
const IDLE_MS = 5 * 60_000;

export async function renderPhone({ main }, id) {
  const dev = await api(`/v1/devices/${encodeURIComponent(id)}`);
  const base = `/v1/devices/${encodeURIComponent(id)}`;
  let control = null; // {control_id, task_id, ttl_secs, steps}
  let lastInput = Date.now();
  let recording = null; // {from}

  const state = h("span", { class: "phone-state" });
  const holder = h("span", { class: "holder muted" });
  const nameInput = h("input", { id: "your-name", name: "name", placeholder: "your name", "aria-label": "your name", value: localStorage.getItem(NAME_KEY) || "", size: 10 });
  const takeBtn = h("button", { type: "button", id: "take", class: "primary" }, "Take this phone");
  const releaseBtn = h("button", { type: "button", id: "release", hidden: true }, "Release");
  const taskLink = h("a", { id: "control-task", hidden: true }, "its steps");

  async function act(action) {
    if (!control) return null;
    lastInput = Date.now();
    try {
      const r = await api(`${base}/control/${control.control_id}/actions`, { method: "POST", body: action });
      control.steps = r.step || control.steps;
      if (recording) recorder.refresh();
      insp.stale();
      return r;
    } catch (e) {
      if (e.code === "device_not_held") lost(e);
      else flash(e);
      return null;
    }
  }

  const screen = phoneScreen({
    deviceId: id, size: dev.screen, act,
    onHover: (x, y) => insp.hover(x, y),
    onPick: (x, y) => insp.pick(x, y),
    onTool: (t) => t === "inspect" && insp.load(),
  });
  const insp = inspector(base, screen);

  function showHold() {
    const held = !!control;
    takeBtn.hidden = held;
    releaseBtn.hidden = !held;
    nameInput.hidden = held;
    taskLink.hidden = !held;
    if (held) taskLink.href = `#/tasks/${control.task_id}`;
    screen.setEnabled(held);
    recorder.setEnabled(held);
    apps.setEnabled(held);
  }

  async function refreshDevice() {
    try {
      const d = await api(base);
      fill(state, badge(d.state));
      const mine = control && d.lease_owner === control.holder;
      fill(holder, d.lease_owner ? ["held by ", mine ? "you" : holderText(d.lease_owner)] : "");
      takeBtn.disabled = !control && d.state !== "available";
      if (d.screen) screen.setSize(d.screen);
    } catch (e) {
      if (e.status !== 401) flash(e);
    }
  }

  async function take() {
    const by = nameInput.value.trim();
    if (by) localStorage.setItem(NAME_KEY, by);
    try {
      control = await api(`${base}/control`, { method: "POST", body: by ? { by } : undefined });
      screen.setTool("tap");
      flash(`You hold ${id}: what you do is recorded as steps of its task.`, "ok");
    } catch (e) {
      flash(e);
    }
    showHold();
    refreshDevice();
  }

  async function release() {
    const c = control;
    control = null;
    recorder.stop();
    showHold();
    if (c) await api(`${base}/control/${c.control_id}`, { method: "DELETE" }).catch(() => {});
    refreshDevice();
  }

  function lost(e) {
    control = null;
    recorder.stop();
    showHold();
    flash(`You no longer hold ${id}: ${e.message}`);
    refreshDevice();
  }

  takeBtn.addEventListener("click", take);
  releaseBtn.addEventListener("click", release);

  const apps = appsPanel(base, (a) => screen.perform(a));
  const recorder = recorderPanel(base, () => control, (r) => (recording = r), (a) => screen.perform(a));

  fill(main,
    h("section", { class: "phone-head" },
      h("h1", {}, id), state, " ", h("span", { class: "muted" }, dev.model || ""), " ", holder,
      h("span", { class: "hold" }, nameInput, takeBtn, releaseBtn, taskLink)),
    h("section", { class: "phone-panel" },
      screen.el,
      h("div", { class: "side" }, apps.el, recorder.el, insp.el)));
  showHold();
  await refreshDevice();

  const onInput = () => (lastInput = Date.now());
  document.addEventListener("pointerdown", onInput);
  document.addEventListener("keydown", onInput);
  // Closing the tab: release at once (a keep-alive request outlives the page).
  const onHide = () => {
    if (!control) return;
    const t = token.get();
    fetch(`${base}/control/${control.control_id}`, {
      method: "DELETE", keepalive: true, headers: t ? { Authorization: `Bearer ${t}` } : {},
    }).catch(() => {});
    control = null;
  };
  window.addEventListener("pagehide", onHide);
  const keep = setInterval(async () => {
    refreshDevice();
    if (!control || document.visibilityState !== "visible" || Date.now() - lastInput > IDLE_MS) return;
    try {
      await api(`${base}/control/${control.control_id}`, { method: "POST" });
    } catch (e) {
      if (e.code === "device_not_held") lost(e);
    }
  }, 5000);
  return () => {
    clearInterval(keep);
    screen.stop();
    document.removeEventListener("pointerdown", onInput);
    document.removeEventListener("keydown", onInput);
    window.removeEventListener("pagehide", onHide);
    release();
  };
}

/** Launch an app (from the phone's list) or open a URL. */
function appsPanel(base, perform) {
  const pick = h("select", { id: "app-pick", "aria-label": "app to launch" }, h("option", { value: "" }, "an app…"));
  api(`${base}/apps`).then((list) => {
    for (const a of list.sort((x, y) => (x.label || x.package).localeCompare(y.label || y.package))) {
      pick.append(h("option", { value: a.package }, a.label ? `${a.label} (${a.package})` : a.package));
    }
  }, () => {});
  const launch = h("button", { type: "button", id: "launch" }, "Launch");
  launch.addEventListener("click", () => pick.value && perform({ action: "launch_app", package: pick.value }));
  const url = h("input", { id: "open-url", name: "url", type: "url", placeholder: "https://example.com", "aria-label": "URL to open" });
  const urlForm = h("form", { class: "inline" }, url, h("button", { type: "submit" }, "Open URL"));
  urlForm.addEventListener("submit", (e) => {
    e.preventDefault();
    if (url.value.trim()) perform({ action: "open_url", url: url.value.trim() });
  });
  const el = h("section", { class: "card apps" }, h("h2", {}, "Apps and links"), h("div", { class: "inline" }, pick, launch), urlForm);
  return {
    el,
    setEnabled(on) {
      for (const c of el.querySelectorAll("button, input, select")) c.disabled = !on;
    },
  };
}

/** The recorder: the steps since "Record" as script steps, saved with the scripts API
 * as a new script or the next version of a stored one. The list is the page's own:
 * `kept` (steps already edited, moved or deleted here) then `live` (what the server
 * recorded since `from`). Editing folds `live` into `kept` and moves `from` past it, so
 * the server's recording never overwrites an edit. "Run from here" performs the steps
 * again on the held phone (each one a step of the hold's task) without recording them. */
function recorderPanel(base, getControl, onChange, perform) {
  const start = h("button", { type: "button", id: "record" }, "● Record");
  const stopBtn = h("button", { type: "button", id: "record-stop", hidden: true }, "Stop");
  const name = h("input", { id: "script-name", name: "script-name", placeholder: "script name", "aria-label": "script name" });
  const save = h("button", { type: "button", id: "save-script", disabled: true }, "Save script");
  // Save as a new script, or as the next version of one already stored.
  const target = h("select", { id: "save-as", "aria-label": "save as" }, h("option", { value: "" }, "as a new script"));
  const names = new Map();
  /** Offers `r` (a stored script) as a target for the next save. */
  const remember = (r) => {
    names.set(r.id, r.name);
    const text = `as version ${r.version + 1} of “${r.name}”`;
    const opt = [...target.options].find((o) => o.value === r.id);
    if (opt) opt.textContent = text;
    else target.append(h("option", { value: r.id }, text));
  };
  api("/v1/scripts?limit=200").then((page) => page.scripts.forEach(remember), () => {});
  const list = h("ol", { class: "recorded" });
  const note = h("p", { class: "muted" }, "Record what you do on the phone as a script: each action becomes a step with the selector droidpilot would use. Edit, move, delete or run steps again before saving.");
  let from = null; // the first hold step of `live`, while recording
  let meta = null; // the recording's name, goal and settings
  let kept = [];
  let live = [];
  let running = false;
  const steps = () => kept.concat(live);

  function show() {
    const all = steps();
    save.disabled = all.length === 0;
    fill(list, all.length ? all.map(stepItem) : h("li", { class: "muted" }, from === null ? "Nothing recorded." : "Recording: act on the phone."));
  }

  async function refresh() {
    const c = getControl();
    if (!c || from === null || running) return;
    const q = new URLSearchParams({ from: String(from) });
    try {
      const script = await api(`${base}/control/${c.control_id}/recording?${q}`);
      meta = { ...script, steps: undefined };
      live = script.steps;
    } catch (e) {
      live = [];
      if (e.code !== "nothing_to_record") flash(e);
    }
    show();
  }

  /** Makes every step the page's own before an edit; recording goes on after them. */
  function fold() {
    kept = steps();
    live = [];
    const c = getControl();
    if (from !== null && c) from = (c.steps || 0) + 1;
  }

  function edit(i, change) {
    fold();
    change(i);
    show();
  }

  function stepItem(s, i) {
    const target = s.selector ? h("code", { class: "selector" }, s.selector) : null;
    const params = Object.entries(s.parameters || {}).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
    const alts = s.alternative_selectors || [];
    const more = alts.length ? h("span", { class: "muted", title: alts.join("\n") }, ` (+${alts.length} alternative${alts.length > 1 ? "s" : ""})`) : null;
    const witness = s.witness && s.witness.length ? h("span", { class: "witness" }, ` in the row of “${s.witness.join("”, “")}”`) : null;
    const expect = s.expect ? h("span", { class: "muted expect" }, ` expect ${JSON.stringify(s.expect)}`) : null;
    const n = steps().length;
    const tool = (cls, label, title, on, disabled = false) =>
      h("button", { type: "button", class: `small ${cls}`, title, "aria-label": `${title} (step ${i + 1})`, disabled, onclick: on }, label);
    const tools = h("span", { class: "step-tools" },
      tool("step-up", "↑", "move up", () => edit(i, () => kept.splice(i - 1, 0, kept.splice(i, 1)[0])), i === 0),
      tool("step-down", "↓", "move down", () => edit(i, () => kept.splice(i + 1, 0, kept.splice(i, 1)[0])), i === n - 1),
      tool("step-edit", "✎", "edit", () => editor(li, i)),
      tool("step-del", "✕", "delete", () => edit(i, () => kept.splice(i, 1))),
      tool("step-run", "▶", "run from here", () => runFrom(i), !getControl()));
    const li = h("li", { class: "recorded-step" }, h("div", { class: "step-row" },
      h("span", { class: "step-text" }, h("b", {}, s.action), " ", target, more, witness, params ? ` ${params}` : "", expect), tools));
    return li;
  }

  /** The step as JSON in place; the scripts API checks it when the script is saved. */
  function editor(li, i) {
    fold();
    const text = h("textarea", { class: "step-json", rows: 6, "aria-label": `step ${i + 1} as JSON` }, JSON.stringify(kept[i], null, 2));
    const ok = h("button", { type: "button", class: "small step-ok" }, "OK");
    const cancel = h("button", { type: "button", class: "small" }, "Cancel");
    ok.addEventListener("click", () => {
      try {
        const step = JSON.parse(text.value);
        if (!step || typeof step !== "object" || typeof step.action !== "string") throw new Error("a step is an object with an \"action\"");
        kept[i] = step;
        show();
      } catch (e) {
        flash(`Step ${i + 1} is not a step: ${e.message}`);
      }
    });
    cancel.addEventListener("click", show);
    li.replaceChildren(text, h("div", { class: "inline" }, ok, cancel));
    text.focus();
  }

  /** Performs steps i.. again on the held phone, by their selectors; stops at a failure. */
  async function runFrom(i) {
    if (!getControl() || running) return;
    fold();
    running = true;
    try {
      for (const [k, s] of kept.slice(i).entries()) {
        if (!(await perform(stepAction(s)))) {
          flash(`Step ${i + k + 1} (${s.action}) did not run; edit it or record it again.`);
          break;
        }
      }
    } finally {
      running = false;
      fold();
      show();
    }
  }

  start.addEventListener("click", () => {
    const c = getControl();
    if (!c) return;
    from = (c.steps || 0) + 1;
    start.hidden = true;
    stopBtn.hidden = false;
    onChange({ from });
    show();
  });
  stopBtn.addEventListener("click", () => {
    fold();
    from = null;
    start.hidden = false;
    stopBtn.hidden = true;
    onChange(null);
    show();
  });
  save.addEventListener("click", async () => {
    await refresh();
    const all = steps();
    if (!all.length) return;
    const script = { ...(meta || { goal: "recorded in the dashboard" }), steps: all };
    delete script.name;
    const id = target.value;
    script.name = name.value.trim() || (id && names.get(id)) || (meta && meta.name) || "recorded in the dashboard";
    try {
      const rec = id
        ? await api(`/v1/scripts/${id}`, { method: "PUT", body: script })
        : await api("/v1/scripts", { method: "POST", body: script });
      remember(rec);
      fill(note, "Saved as ", h("a", { href: `#/scripts/${rec.id}` }, `${rec.name} (version ${rec.version})`), ".");
      flash(`Saved script “${rec.name}”.`, "ok");
    } catch (e) {
      flash(e);
    }
  });
  const el = h("section", { class: "card recorder" }, h("h2", {}, "Recorder"), note,
    h("div", { class: "inline" }, start, stopBtn, name, target, save), list);
  return {
    el,
    refresh,
    stop() {
      from = null;
      start.hidden = false;
      stopBtn.hidden = true;
      onChange(null);
    },
    setEnabled(on) {
      start.disabled = !on;
      for (const b of list.querySelectorAll(".step-run")) b.disabled = !on;
    },
  };
}

/** A script step as the action the phone's control route takes: by its selector when it
 * has one (the recorded point is only where it was, so it is left out). */
function stepAction(s) {
  const a = { action: s.action, ...(s.parameters || {}) };
  if (s.selector) {
    for (const k of ["coordinate", "pixel", "element", "element_id"]) delete a[k];
    a.selector = s.selector;
  }
  return a;
}
