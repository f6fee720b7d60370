// The devices grid: each phone's state, model and screen size, a live scaled-JPEG
// screenshot, and adding/removing a network phone. A device's screenshot is polled with
// at most one request in flight, at least a second apart, and not while the tab is hidden.

import { api, blobUrl } from "./api.js";
import { h, fill, badge, flash, sleep, holderText } from "./dom.js";

export const FRAME = "format=jpeg&scale=0.3&quality=60";
const FRAME_GAP_MS = 1000;
const KICK_DELAY_MS = 600;

/**
 * Keeps `img` showing a device's current screen until `stop()`. Calls `onFrame(img)`
 * after each new frame. The loop waits for the response before sleeping, so one request
 * at most is in flight.
 */
export function pollScreen(deviceId, img, { gap = FRAME_GAP_MS, query = FRAME, onFrame } = {}) {
  let stopped = false;
  let wake = () => {};
  const visible = () => document.visibilityState === "visible";
  const onVis = () => wake();
  document.addEventListener("visibilitychange", onVis);
  (async () => {
    while (!stopped) {
      if (!visible()) {
        await new Promise((r) => (wake = r));
        continue;
      }
      const started = performance.now();
      try {
        const url = await blobUrl(`/v1/devices/${encodeURIComponent(deviceId)}/screenshot?${query}`);
        if (stopped) {
          URL.revokeObjectURL(url);
          break;
        }
        const old = img.src;
        img.src = url;
        await img.decode().catch(() => {});
        if (old.startsWith("blob:")) URL.revokeObjectURL(old);
        img.classList.remove("stale");
        if (onFrame) onFrame(img);
      } catch {
        img.classList.add("stale");
      }
      await Promise.race([sleep(Math.max(gap - (performance.now() - started), 250)), new Promise((r) => (wake = r))]);
    }
  })();
  const stop = () => {
    stopped = true;
    wake();
    document.removeEventListener("visibilitychange", onVis);
  };
  /**
   * Fetches a frame soon (after an action): past the server's frame cache interval
   * (`[dashboard] frame_interval_ms`, 500 by default), so the frame shows the action.
   */
  stop.kick = () => setTimeout(() => wake(), KICK_DELAY_MS);
  return stop;
}

function deviceCard(d, onRemove) {
  const img = h("img", { class: "screen", alt: `${d.id} screen`, dataset: { device: d.id } });
  const open = `#/devices/${encodeURIComponent(d.id)}`;
  const card = h("article", { class: "card device", dataset: { id: d.id } },
    h("header", {}, h("a", { class: "device-id", href: open }, h("strong", {}, d.id)), h("span", { class: "state" })),
    h("a", { class: "frame", href: open, title: "open the phone: inspect it, drive it, record a script" }, img),
    h("dl", { class: "facts" },
      h("dt", {}, "model"), h("dd", { class: "model" }),
      h("dt", {}, "screen"), h("dd", { class: "size" }),
      h("dt", {}, "backend"), h("dd", {}, d.backend),
      h("dt", {}, "held by"), h("dd", { class: "holder" })),
    h("div", { class: "buttons" },
      h("a", { class: "button small open", href: open }, "Open"),
      h("button", { type: "button", class: "danger small remove", onclick: () => onRemove(d) }, "Remove")));
  card.img = img;
  updateCard(card, d);
  return card;
}

function updateCard(card, d) {
  fill(card.querySelector(".state"), badge(d.state));
  card.querySelector(".model").textContent = d.model || "–";
  card.querySelector(".size").textContent = d.screen ? `${d.screen.width}×${d.screen.height}` : "–";
  fill(card.querySelector(".holder"), holderText(d.lease_owner) || "–");
  // A held phone is in use: removing it would pull it from under its holder.
  const remove = card.querySelector("button.remove");
  remove.disabled = d.state === "leased";
  remove.title = remove.disabled ? "in use: release it (or cancel its task) first" : "";
  card.title = d.last_error || "";
}

/**
 * What a person pastes to add a phone, as the body of `POST /v1/devices`: `host:port`, a
 * bare host or IP (port 5555, as `adb tcpip 5555` sets), `adb connect …` copied whole, or a
 * serial from `adb devices` (USB phones, emulators).
 */
export function addBody(pasted) {
  const v = pasted.trim().replace(/^adb\s+connect\s+/i, "").replace(/\s+(device|offline|unauthorized)$/i, "").trim();
  if (/^[A-Za-z0-9.-]+:\d{1,5}$/.test(v)) return { address: v };
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(v) || /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/.test(v)) return { address: `${v}:5555` };
  return { serial: v };
}

function addForm(refresh) {
  const input = h("input", {
    name: "address", placeholder: "192.168.1.20, host:5555 or a serial", required: true, "aria-label": "phone address",
  });
  const form = h("form", { class: "inline add-device" },
    h("label", {}, "Add a phone "), input, h("button", { type: "submit" }, "Add"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const d = await api("/v1/devices", { method: "POST", body: addBody(input.value) });
      flash(`Added ${d.id || input.value}.`, "ok");
      input.value = "";
      refresh();
    } catch (e) {
      flash(e);
    }
  });
  return form;
}

export async function renderDevices({ main, newLive }) {
  const grid = h("section", { class: "grid devices" });
  const cards = new Map(); // id -> {card, stop}
  let timer;

  async function remove(d) {
    if (!confirm(`Remove ${d.id} from the pool?`)) return;
    try {
      await api(`/v1/devices/${encodeURIComponent(d.id)}`, { method: "DELETE" });
      refresh();
    } catch (e) {
      flash(e);
    }
  }

  async function refresh() {
    let list;
    try {
      list = (await api("/v1/devices")).devices;
    } catch (e) {
      if (e.status !== 401) flash(e);
      return;
    }
    const seen = new Set();
    for (const d of list) {
      seen.add(d.id);
      let entry = cards.get(d.id);
      if (!entry) {
        const card = deviceCard(d, remove);
        grid.querySelector("p.muted")?.remove();
        grid.append(card);
        entry = { card, stop: pollScreen(d.id, card.img) };
        cards.set(d.id, entry);
      }
      updateCard(entry.card, d);
    }
    for (const [id, entry] of cards) {
      if (seen.has(id)) continue;
      entry.stop();
      entry.card.remove();
      cards.delete(id);
    }
    grid.dataset.count = String(cards.size);
    if (!cards.size) fill(grid, h("p", { class: "muted" }, "No devices in the pool."));
  }

  fill(main, h("h1", {}, "Devices"), addForm(refresh), grid);
  await refresh();
  // Pool events make the grid follow at once; the slow refresh covers the rest.
  const live = newLive();
  live.on((m) => m.type === "event" && refresh());
  live.subscribe({ devices: true });
  timer = setInterval(refresh, 5000);
  return () => {
    clearInterval(timer);
    live.close();
    for (const { stop } of cards.values()) stop();
  };
}
