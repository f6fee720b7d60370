// Draws where a step acted on top of its screenshot: a ring at a tap's point, an arrow
// for a swipe or scroll. Positions come from the step's outcome (`detail.point`,
// `detail.from`/`to`, in device pixels) or the action (`pixel`, `coordinate`), drawn in
// an SVG whose viewBox is the screenshot's own pixel size.

import { h, svg } from "./dom.js";

/** The marks of an action, in pixels of a `w`×`h` screen: `{points: [[x,y]], swipe: [[x,y],[x,y]]}`. */
export function marks(action, outcome, w, hgt) {
  const d = (outcome && outcome.detail) || {};
  const out = { points: [], swipe: null };
  if (Array.isArray(d.from) && Array.isArray(d.to)) out.swipe = [d.from, d.to];
  else if (Array.isArray(d.point)) out.points.push(d.point);
  else if (action) {
    if (Array.isArray(action.pixel)) out.points.push(action.pixel);
    else if (Array.isArray(action.coordinate)) out.points.push([action.coordinate[0] * w, action.coordinate[1] * hgt]);
    if (Array.isArray(action.start) && Array.isArray(action.end)) {
      out.swipe = [[action.start[0] * w, action.start[1] * hgt], [action.end[0] * w, action.end[1] * hgt]];
    }
  }
  return out;
}

/** A figure: the image with the overlay sized to it once it has loaded. */
export function annotatedShot(img, action, outcome) {
  const layer = svg("svg", { class: "overlay", preserveAspectRatio: "none", "aria-hidden": "true" });
  const draw = () => {
    const w = img.naturalWidth;
    const ht = img.naturalHeight;
    if (!w || !ht) return;
    layer.setAttribute("viewBox", `0 0 ${w} ${ht}`);
    layer.replaceChildren();
    const m = marks(action, outcome, w, ht);
    const r = Math.max(w, ht) / 40;
    const stroke = Math.max(w, ht) / 200;
    for (const [x, y] of m.points) {
      layer.append(svg("circle", { cx: x, cy: y, r, class: "tap", "stroke-width": stroke }));
      layer.append(svg("circle", { cx: x, cy: y, r: r / 4, class: "tap-dot" }));
    }
    if (m.swipe) {
      const [[x1, y1], [x2, y2]] = m.swipe;
      layer.append(svg("line", { x1, y1, x2, y2, class: "swipe", "stroke-width": stroke * 1.5 }));
      layer.append(svg("circle", { cx: x1, cy: y1, r: r / 2, class: "swipe-start" }));
      const a = Math.atan2(y2 - y1, x2 - x1);
      const s = r * 0.9;
      const pts = [[x2, y2], [x2 - s * Math.cos(a - 0.5), y2 - s * Math.sin(a - 0.5)], [x2 - s * Math.cos(a + 0.5), y2 - s * Math.sin(a + 0.5)]];
      layer.append(svg("polygon", { points: pts.map((p) => p.join(",")).join(" "), class: "swipe-head" }));
    }
    layer.dataset.marks = String(m.points.length + (m.swipe ? 1 : 0));
  };
  if (img.complete && img.naturalWidth) draw();
  img.addEventListener("load", draw);
  return h("figure", { class: "shot" }, img, layer);
}
