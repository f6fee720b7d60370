// Take-over of a running task: Pause, then act on the phone through the phone panel's
// screen (panel.js: a click is a tap at that point in device pixels, a drag or the swipe
// tool a swipe, long-press, keys, type text); then Resume. Each action is
// `POST /v1/tasks/{id}/actions`, which the server records as a `manual_action` intervention.

import { api } from "./api.js";
import { h, fill, flash } from "./dom.js";
import { phoneScreen } from "./panel.js";

/** Who acts: the name given on a phone page (kept in this browser), else "dashboard". */
const by = () => localStorage.getItem("droidpilot.name") || "dashboard";

/** The take-over controls of task `id`; `changed()` re-reads the task after pause/resume. */
export function takeover(id, changed) {
  const el = h("section", { class: "card takeover", hidden: true });
  let screen = null;
  let deviceId = null;
  // Pause answers 202 while the task still runs; it holds at its next step boundary.
  let pausing = false;

  async function post(path, body) {
    try {
      return await api(`/v1/tasks/${id}/${path}`, { method: "POST", body });
    } catch (e) {
      flash(e);
      return null;
    }
  }

  /** One action, as the phone panel performs it (its confirmation line says what it did). */
  function act(action) {
    return post("actions", { ...action, by: by() });
  }

  async function open(task) {
    if (screen || !task.assigned_device) return;
    deviceId = task.assigned_device;
    const d = await api(`/v1/devices/${encodeURIComponent(deviceId)}`).catch(() => null);
    if (screen || !d || !d.screen) return;
    screen = phoneScreen({ deviceId, size: d.screen, act, tools: ["tap", "long_press", "swipe"] });
    fill(el,
      h("h2", {}, `You have ${deviceId}`),
      h("p", { class: "muted" }, "Click the screen to tap, drag to swipe. The agent is told what you did when you resume."),
      screen.el);
    el.hidden = false;
    el.scrollIntoView({ block: "start" }); // the phone and its keys together on screen
  }

  function close() {
    if (screen) screen.stop();
    screen = null;
    el.hidden = true;
    el.replaceChildren();
  }

  return {
    el,
    /** The Pause or Resume button for the task's status. */
    buttons(task) {
      if (task.status === "running" && pausing) {
        return h("button", { type: "button", id: "pause", disabled: true }, "Pausing at the next step…");
      }
      if (task.status === "running") {
        const pause = async () => {
          if (await post("pause", { by: by() })) pausing = true;
          changed();
        };
        return h("button", { type: "button", id: "pause", onclick: pause }, "Pause");
      }
      if (task.status === "paused") {
        return h("button", { type: "button", id: "resume", onclick: async () => (await post("resume", { by: by() })) && changed() }, "Resume");
      }
      return null;
    },
    update(task) {
      if (task.status !== "running") pausing = false;
      if (task.status === "paused") open(task);
      else close();
    },
    stop: close,
  };
}
