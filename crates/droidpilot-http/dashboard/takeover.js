// Take-over of a running task: Pause, then act on the phone through its live screenshot
// (a click is a tap at that point in device pixels, a drag is a swipe), type text, Back,
// Home; then Resume. Each action is `POST /v1/tasks/{id}/actions`, which the server
// records as a `manual_action` intervention.

import { api } from "./api.js";
import { h, fill, flash, actionText } from "./dom.js";
import { pollScreen } from "./devices.js";

const DRAG_PX = 12;
const BY = "dashboard";

/** The take-over controls of task `id`; `changed()` re-reads the task after pause/resume. */
export function takeover(id, changed) {
  const el = h("section", { class: "card takeover", hidden: true });
  let stopPoll = null;
  let size = null;
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

  async function act(action) {
    const r = await post("actions", { ...action, by: BY });
    if (!r) return;
    flash(`Done: ${actionText(r.action || action)} (${r.duration_ms} ms)`, "ok");
    if (stopPoll) stopPoll.kick(); // show the result now, not at the next poll
  }

  function screenImage() {
    const img = h("img", { class: "live-shot", alt: "the phone's screen: click to tap, drag to swipe", draggable: "false" });
    let down = null;
    img.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      down = { x: e.offsetX, y: e.offsetY, t: performance.now() };
    });
    img.addEventListener("pointerup", (e) => {
      if (!down || !size) return;
      const w = img.clientWidth;
      const ht = img.clientHeight;
      const dx = e.offsetX - down.x;
      const dy = e.offsetY - down.y;
      const frac = (x, y) => [Math.min(1, Math.max(0, x / w)), Math.min(1, Math.max(0, y / ht))];
      if (Math.hypot(dx, dy) < DRAG_PX) {
        const px = Math.min(size.width - 1, Math.max(0, Math.round((down.x / w) * size.width)));
        const py = Math.min(size.height - 1, Math.max(0, Math.round((down.y / ht) * size.height)));
        act({ action: "tap", pixel: [px, py] });
      } else {
        const ms = Math.round(Math.min(2000, Math.max(100, performance.now() - down.t)));
        act({ action: "swipe", start: frac(down.x, down.y), end: frac(e.offsetX, e.offsetY), duration_ms: ms });
      }
      down = null;
    });
    return img;
  }

  async function open(task) {
    if (stopPoll || !task.assigned_device) return;
    deviceId = task.assigned_device;
    const d = await api(`/v1/devices/${encodeURIComponent(deviceId)}`).catch(() => null);
    size = d && d.screen;
    const img = screenImage();
    const text = h("input", { name: "text", placeholder: "text to type", "aria-label": "text to type" });
    const typeForm = h("form", { class: "inline" }, text, h("button", { type: "submit" }, "Type"));
    typeForm.addEventListener("submit", (e) => {
      e.preventDefault();
      if (text.value) act({ action: "type", text: text.value }).then(() => (text.value = ""));
    });
    fill(el,
      h("h2", {}, `You have ${deviceId}`),
      h("p", { class: "muted" }, "Click the screen to tap, drag to swipe. The agent is told what you did when you resume."),
      h("div", { class: "frame big" }, img),
      typeForm,
      h("div", { class: "buttons" },
        h("button", { type: "button", onclick: () => act({ action: "back" }) }, "Back"),
        h("button", { type: "button", onclick: () => act({ action: "home" }) }, "Home")));
    el.hidden = false;
    stopPoll = pollScreen(deviceId, img, { query: "format=jpeg&scale=0.5&quality=70" });
  }

  function close() {
    if (stopPoll) stopPoll();
    stopPoll = null;
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
          if (await post("pause", { by: BY })) pausing = true;
          changed();
        };
        return h("button", { type: "button", id: "pause", onclick: pause }, "Pause");
      }
      if (task.status === "paused") {
        return h("button", { type: "button", id: "resume", onclick: async () => (await post("resume", { by: BY })) && changed() }, "Resume");
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
