// The phone panel's screen, shared by the phone page (#/devices/<id>) and take-over: the
// live screenshot sized to fit the window, an overlay in device pixels (where a click
// landed, a swipe's arrow, the inspector's outlines), the gesture tools (tap, long-press,
// swipe, inspect) and the key bar (Back, Home, Recents, Enter, type text) right under it,
// and a confirmation line that stays until the next action.

import { h, svg, actionText } from "./dom.js";
import { pollScreen } from "./devices.js";

const DRAG_PX = 12;
const LIVE = "format=jpeg&scale=0.5&quality=70";

/** Tools a click on the screen can be; `inspect` only reads. */
export const TOOLS = [["tap", "Tap"], ["long_press", "Long-press"], ["swipe", "Swipe"], ["inspect", "Inspect"]];

/**
 * The screen of `deviceId` (`size`: its {width, height}). `act(action)` performs an
 * action and resolves to the server's answer (with `detail`) or null; `tools` the tools
 * offered; `onHover(x, y)` / `onPick(x, y)` get device pixels in the inspect tool.
 */
export function phoneScreen({ deviceId, size, act, tools = TOOLS.map((t) => t[0]), onHover, onPick, onTool }) {
  const img = h("img", { class: "live-shot", alt: "the phone's screen", draggable: "false" });
  const layer = svg("svg", { class: "overlay live-overlay", preserveAspectRatio: "none", "aria-hidden": "true" });
  const marks = svg("g", { class: "marks" });
  const found = svg("g", { class: "matches" });
  const hover = svg("g", { class: "hover" });
  layer.append(found, hover, marks);
  const figure = h("figure", { class: "live" }, img, layer);
  const done = h("p", { class: "last-action muted", id: "last-action", "aria-live": "polite" }, "Nothing done yet.");
  let tool = tools[0];
  let busy = false;

  const setSize = (s) => {
    size = s;
    if (s) layer.setAttribute("viewBox", `0 0 ${s.width} ${s.height}`);
    figure.classList.toggle("landscape", !!s && s.width > s.height);
  };
  setSize(size);

  /** Device pixels of a pointer event on the image. */
  const at = (e) => {
    const r = img.getBoundingClientRect();
    const fx = Math.min(1, Math.max(0, (e.clientX - r.left) / r.width));
    const fy = Math.min(1, Math.max(0, (e.clientY - r.top) / r.height));
    return { fx, fy, x: Math.min(size.width - 1, Math.round(fx * size.width)), y: Math.min(size.height - 1, Math.round(fy * size.height)) };
  };

  const ring = (x, y, cls) => {
    const r = Math.max(size.width, size.height) / 40;
    marks.append(svg("circle", { cx: x, cy: y, r, class: `tap ${cls}`, "stroke-width": r / 5 }),
      svg("circle", { cx: x, cy: y, r: r / 4, class: `tap-dot ${cls}` }));
  };
  const arrow = ([x1, y1], [x2, y2], cls) => {
    const r = Math.max(size.width, size.height) / 40;
    marks.append(svg("line", { x1, y1, x2, y2, class: `swipe ${cls}`, "stroke-width": r / 3 }),
      svg("circle", { cx: x1, cy: y1, r: r / 2, class: "swipe-start" }));
  };

  /** Marks where an action landed: the server's point when it says, else where clicked. */
  function mark(action, detail, pending) {
    marks.replaceChildren();
    if (!size) return;
    const d = detail || {};
    if (Array.isArray(d.from) && Array.isArray(d.to)) arrow(d.from, d.to, "landed");
    else if (Array.isArray(d.point)) ring(d.point[0], d.point[1], "landed");
    else if (pending && pending.swipe) arrow(...pending.swipe, "pending");
    else if (pending && pending.point) ring(pending.point[0], pending.point[1], "pending");
    layer.dataset.marks = String(marks.querySelectorAll("circle.tap, line.swipe").length);
  }

  async function perform(action, pending) {
    if (busy) return null;
    busy = true;
    mark(action, null, pending);
    done.className = "last-action pending";
    done.textContent = `Doing: ${actionText(action)}…`;
    try {
      const r = await act(action);
      if (r) {
        mark(action, r.detail, pending);
        const step = r.step ? `Step ${r.step}: ` : "";
        done.className = "last-action ok";
        done.textContent = `${step}done ${actionText(r.action || action)} (${r.duration_ms} ms)`;
        stop.kick();
      } else {
        done.className = "last-action error";
        done.textContent = `Not done: ${actionText(action)}`;
      }
      return r;
    } catch (e) {
      done.className = "last-action error";
      done.textContent = `Failed: ${actionText(action)} — ${e}`;
      return null;
    } finally {
      busy = false;
    }
  }

  let down = null;
  img.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    if (!size) return;
    down = { ...at(e), px: e.clientX, py: e.clientY, t: performance.now() };
  });
  img.addEventListener("pointermove", (e) => {
    if (tool === "inspect" && size && onHover) {
      const p = at(e);
      onHover(p.x, p.y);
    }
  });
  img.addEventListener("pointerleave", () => onHover && tool === "inspect" && onHover(null, null));
  img.addEventListener("pointerup", (e) => {
    if (!down || !size) return;
    const up = at(e);
    const moved = Math.hypot(e.clientX - down.px, e.clientY - down.py) >= DRAG_PX;
    const start = down;
    down = null;
    if (tool === "inspect") {
      if (onPick) onPick(start.x, start.y);
      return;
    }
    if (moved || tool === "swipe") {
      if (!moved) return; // a click with the swipe tool is not a gesture
      const ms = Math.round(Math.min(2000, Math.max(100, performance.now() - start.t)));
      perform({ action: "swipe", start: [start.fx, start.fy], end: [up.fx, up.fy], duration_ms: ms },
        { swipe: [[start.x, start.y], [up.x, up.y]] });
    } else {
      perform({ action: tool === "long_press" ? "long_press" : "tap", pixel: [start.x, start.y] }, { point: [start.x, start.y] });
    }
  });

  const toolBar = h("div", { class: "tools", role: "radiogroup", "aria-label": "what a click on the screen does" },
    TOOLS.filter(([t]) => tools.includes(t)).map(([t, label]) => {
      const b = h("button", { type: "button", class: "tool", dataset: { tool: t }, "aria-pressed": String(t === tool) }, label);
      b.addEventListener("click", () => setTool(t));
      return b;
    }));
  function setTool(t) {
    tool = t;
    for (const b of toolBar.querySelectorAll("button.tool")) b.setAttribute("aria-pressed", String(b.dataset.tool === t));
    figure.dataset.tool = t;
    if (t !== "inspect") hover.replaceChildren();
    if (onTool) onTool(t);
  }
  figure.dataset.tool = tool;

  const swipes = h("div", { class: "swipes", "aria-label": "swipe the whole screen" },
    [["up", "↑"], ["down", "↓"], ["left", "←"], ["right", "→"]].map(([dir, label]) =>
      h("button", { type: "button", class: "small", title: `swipe ${dir}`, "aria-label": `swipe ${dir}`, onclick: () => perform({ action: "swipe", direction: dir }) }, label)));

  const text = h("input", { name: "text", placeholder: "text to type", "aria-label": "text to type", autocomplete: "off" });
  const typeForm = h("form", { class: "inline type-form" }, text, h("button", { type: "submit" }, "Type"));
  typeForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (text.value && (await perform({ action: "type", text: text.value }))) text.value = "";
  });
  const keys = h("div", { class: "keys" },
    [["back", "Back"], ["home", "Home"], ["recents", "Recents"], ["enter", "Enter"]].map(([k, label]) =>
      h("button", { type: "button", id: `key-${k}`, onclick: () => perform({ action: k }) }, label)),
    h("button", { type: "button", id: "rotate", title: "turn the screen a quarter", onclick: rotate }, "Rotate"));

  /** Portrait ⇄ landscape; the live view takes the turned size the server answers. */
  async function rotate() {
    const orientation = size && size.width > size.height ? "portrait" : "landscape";
    const r = await perform({ action: "rotate", orientation });
    const sc = r && r.detail && r.detail.screen;
    if (Array.isArray(sc)) setSize({ width: sc[0], height: sc[1] });
  }

  const controls = h("div", { class: "phone-controls" }, toolBar, swipes, keys, typeForm, done);
  const el = h("div", { class: "phone-screen" }, h("div", { class: "screen-box" }, figure), controls);
  const stop = pollScreen(deviceId, img, { query: LIVE });
  return {
    el, img, layer, hover, found, perform, mark, setSize, setTool,
    get tool() { return tool; },
    /** Disables the acting tools (a phone not held), keeping the inspector. */
    setEnabled(on) {
      for (const b of controls.querySelectorAll("button, input")) {
        if (b.dataset.tool === "inspect") continue;
        b.disabled = !on;
      }
      if (!on && tool !== "inspect" && tools.includes("inspect")) setTool("inspect");
    },
    stop: () => stop(),
    kick: () => stop.kick(),
  };
}
