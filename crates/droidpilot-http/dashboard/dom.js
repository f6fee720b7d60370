// Small DOM helpers: elements built from data with textContent only (never innerHTML),
// and the formats every view shares.

/** `h("div", {class: "x", onclick: f}, child, "text")`. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element with attributes. */
export function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** A status as a coloured badge. */
export function badge(status) {
  return h("span", { class: `badge s-${status}`, dataset: { status } }, status.replaceAll("_", " "));
}

export const TERMINAL = ["succeeded", "failed", "incomplete", "timed_out", "cancelled", "interrupted"];

export function isTerminal(status) {
  return TERMINAL.includes(status);
}

/** 1.2 s, 3 min 4 s, 1 h 2 min. */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function when(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

/** The action object as one readable line. */
export function actionText(action) {
  if (!action) return "no action";
  const { action: name, ...rest } = action;
  const args = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return args ? `${name} ${args}` : name;
}

/**
 * The server's hints name what a command-line or API user does; in the page, what a
 * person does here instead. Longer phrases first: they contain shorter ones.
 */
const BROWSER_WORDS = [
  ["Check the selector against the current screen (`droidpilot screen dump.xml`).",
    "Check the selector against the current screen: open the phone (Devices) and use Inspect."],
  ["List devices with `droidpilot devices` or GET /v1/devices.", "See the phones on the Devices page."],
  ["add a device (POST /v1/devices), or run `droidpilot devices`.", "add a phone on the Devices page."],
  ["`droidpilot devices`", "the Devices page"],
  ["run `droidpilot doctor`", "check the phone on the Devices page (the server's `droidpilot doctor` says more)"],
  ["Run `droidpilot doctor`.", "Check the phone on the Devices page (the server's `droidpilot doctor` says more)."],
  ["GET /v1/devices/{id}/screen", "the phone's Inspect view"],
  ["GET /v1/devices/{id}/apps", "the phone's app list"],
  ["GET /v1/devices", "the Devices page"],
  ["GET /v1/tasks/{id}/events", "the task's page"],
];

/** A hint or error in a person's words for this page (see `BROWSER_WORDS`). */
export function inBrowserWords(text) {
  return BROWSER_WORDS.reduce((t, [from, to]) => t.split(from).join(to), String(text));
}

/** Shows a message in the page's alert line (errors carry their hint). */
export function flash(message, kind = "error") {
  const el = document.getElementById("flash");
  el.textContent = inBrowserWords(message);
  el.className = `flash ${kind}`;
  el.hidden = false;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => (el.hidden = true), 8000);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** "task 1a2b3c4d" for a task's lease (its owner is the task id), the owner otherwise. */
export function holderText(owner) {
  if (!owner) return null;
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(owner)) {
    return h("a", { href: `#/tasks/${owner}`, title: owner }, `task ${owner.slice(0, 8)}`);
  }
  return owner;
}
