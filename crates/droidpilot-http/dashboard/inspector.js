// The inspector on a phone's live view (`GET /v1/devices/{id}/inspect`): hovering the
// screen outlines the element under the pointer, clicking selects it; the panel shows its
// attributes, the selector droidpilot recommends and the alternatives with how many
// elements each matches now, and the element tree, searchable. Choosing a selector (or
// typing one) tests it on the live screen and outlines every match.

import { api } from "./api.js";
import { h, fill, svg, flash } from "./dom.js";

const MAX_ROWS = 400;

/** The smallest listed node whose bounds contain (x, y), the deepest on a tie. */
export function nodeAt(nodes, x, y) {
  let best = null;
  for (const n of nodes) {
    const b = n.bounds;
    if (x < b.left || x >= b.right || y < b.top || y >= b.bottom) continue;
    const area = (b.right - b.left) * (b.bottom - b.top);
    if (!best || area < best.area || (area === best.area && n.depth > best.n.depth)) best = { n, area };
  }
  return best && best.n;
}

function rect(b, cls) {
  return svg("rect", { x: b.left, y: b.top, width: b.right - b.left, height: b.bottom - b.top, class: cls });
}

function label(n) {
  const cls = n.class.split(".").pop();
  const id = n.resource_id ? ` #${n.resource_id.split("/").pop()}` : "";
  const text = n.text || n.content_desc;
  return `${cls}${id}${text ? ` “${text.length > 40 ? `${text.slice(0, 40)}…` : text}”` : ""}`;
}

const plural = (k) => (k === 1 ? "1 match" : `${k} matches`);

/** The inspector panel for the device at `base`, drawing on `screen`'s overlay. */
export function inspector(base, screen) {
  let data = null;
  let byIndex = new Map();
  let selected = null;
  let loading = null;
  let isStale = true;
  const info = h("div", { class: "node-info" }, h("p", { class: "muted" }, "Choose Inspect, then point at the screen."));
  const search = h("input", { id: "tree-search", type: "search", placeholder: "search the tree", "aria-label": "search the element tree" });
  const tree = h("div", { class: "tree", role: "tree" });
  const test = h("input", { id: "selector-test", name: "selector", placeholder: '#id, :text("…")', "aria-label": "selector to test" });
  const testOut = h("span", { class: "test-result muted", id: "selector-result" });
  const testForm = h("form", { class: "inline" }, test, h("button", { type: "submit" }, "Test"), testOut);
  const refresh = h("button", { type: "button", class: "small", id: "inspect-refresh" }, "Refresh");
  const el = h("section", { class: "card inspector" },
    h("header", {}, h("h2", {}, "Inspector"), refresh), info, testForm,
    h("details", { class: "tree-box", open: true }, h("summary", {}, "Element tree"), search, tree));

  async function load() {
    if (loading) return loading;
    loading = (async () => {
      try {
        data = await api(`${base}/inspect`);
        byIndex = new Map(data.nodes.map((n) => [n.index, n]));
        isStale = false;
        if (data.width && data.height) screen.setSize({ width: data.width, height: data.height });
        renderTree();
        if (selected) {
          // The same element on the new screen, by its path, if it is still there.
          const again = data.nodes.find((n) => n.path === selected.path && n.class === selected.class);
          if (again) select(again); else clear();
        }
      } catch (e) {
        flash(e);
      } finally {
        loading = null;
      }
    })();
    return loading;
  }

  function clear() {
    selected = null;
    screen.found.replaceChildren();
    fill(info, h("p", { class: "muted" }, "Point at the screen to see an element."));
  }

  function outline(indices, cls) {
    screen.found.replaceChildren();
    for (const i of indices) {
      const n = byIndex.get(i);
      if (n) screen.found.append(rect(n.bounds, cls));
    }
    screen.layer.dataset.matches = String(indices.length);
  }

  function selectorRow(m, recommended) {
    const b = h("button", { type: "button", class: `selector-choice${recommended ? " recommended" : ""}`, dataset: { selector: m.selector, count: m.count } },
      h("code", {}, m.selector), " ", h("span", { class: `count${m.count === 1 ? " unique" : ""}` }, plural(m.count)));
    b.addEventListener("click", () => testSelector(m.selector));
    return h("li", {}, b, recommended ? h("span", { class: "muted" }, " recommended") : null);
  }

  function select(n) {
    selected = n;
    outline(n.selector.nodes.length ? [n.index] : [], "picked");
    const attrs = [
      ["class", n.class], ["resource-id", n.resource_id], ["text", n.text], ["content-desc", n.content_desc],
      ["hint", n.hint], ["package", n.package],
      ["bounds", `[${n.bounds.left},${n.bounds.top}][${n.bounds.right},${n.bounds.bottom}]`],
      ["flags", n.flags.join(", ")], ["element", n.element ?? ""], ["path", n.path],
    ].filter(([, v]) => v !== "" && v !== undefined);
    fill(info,
      h("h3", { class: "node-title" }, label(n)),
      h("dl", { class: "facts attrs" }, attrs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", { dataset: { attr: k } }, String(v))])),
      h("p", {}, h("b", {}, "Selectors"), h("span", { class: "muted" }, " (click one to test it on the live screen)")),
      h("ul", { class: "selectors" }, selectorRow(n.selector, true), n.alternatives.map((a) => selectorRow(a, false))));
    for (const row of tree.querySelectorAll(".row.on")) row.classList.remove("on");
    const row = tree.querySelector(`.row[data-index="${n.index}"]`);
    if (row) {
      row.classList.add("on");
      row.scrollIntoView({ block: "nearest" });
    }
  }

  async function testSelector(sel) {
    test.value = sel;
    try {
      const r = await api(`${base}/inspect?${new URLSearchParams({ selector: sel })}`);
      data = r;
      byIndex = new Map(r.nodes.map((n) => [n.index, n]));
      const t = r.tested;
      if (t.error) {
        testOut.className = "test-result error";
        testOut.textContent = t.error;
        outline([], "match");
        return;
      }
      outline(t.nodes, "match");
      testOut.className = `test-result ${t.count === 1 ? "ok" : "muted"}`;
      testOut.textContent = `${plural(t.count)} now`;
    } catch (e) {
      flash(e);
    }
  }

  function renderTree() {
    const q = search.value.trim().toLowerCase();
    const rows = [];
    for (const n of data ? data.nodes : []) {
      if (q && ![n.class, n.resource_id, n.text, n.content_desc].some((v) => v && v.toLowerCase().includes(q))) continue;
      const row = h("div", { class: "row", role: "treeitem", dataset: { index: n.index } }, label(n));
      row.style.paddingLeft = `${(q ? 0 : n.depth) * 0.6}rem`; // CSSOM: the CSP allows no style attribute
      rows.push(row);
      if (rows.length >= MAX_ROWS) break;
    }
    fill(tree, rows.length ? rows : h("p", { class: "muted" }, q ? "Nothing matches." : "No elements."));
  }

  search.addEventListener("input", renderTree);
  tree.addEventListener("click", (e) => {
    const row = e.target.closest(".row");
    if (row) select(byIndex.get(Number(row.dataset.index)));
  });
  testForm.addEventListener("submit", (e) => {
    e.preventDefault();
    if (test.value.trim()) testSelector(test.value.trim());
  });
  refresh.addEventListener("click", () => load());

  return {
    el,
    load,
    /** The screen changed (an action): read it again when next needed. */
    stale() {
      isStale = true;
      if (screen.tool === "inspect") setTimeout(load, 700);
    },
    hover(x, y) {
      screen.hover.replaceChildren();
      if (x === null || !data) return;
      if (isStale) load();
      const n = nodeAt(data.nodes, x, y);
      if (!n) return;
      screen.hover.append(rect(n.bounds, "hovered"));
      screen.layer.dataset.hover = String(n.index);
    },
    async pick(x, y) {
      if (!data || isStale) await load();
      const n = data && nodeAt(data.nodes, x, y);
      if (n) select(n);
    },
  };
}
