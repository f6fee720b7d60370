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

/** Shows a message in the page's alert line (errors carry their hint). */
export function flash(message, kind = "error") {
  const el = document.getElementById("flash");
  el.textContent = String(message);
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
