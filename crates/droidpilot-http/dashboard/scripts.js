// The scripts view (#/scripts, #/scripts/<id>): the stored scripts, each one's versions.

import { api } from "./api.js";
import { h, fill } from "./dom.js";

export async function renderScripts({ main }) {
  const page = await api("/v1/scripts?limit=100");
  fill(main, h("h1", {}, "Scripts"),
    h("ul", { class: "scripts" }, page.scripts.map((r) => h("li", { dataset: { id: r.id } },
      h("a", { href: `#/scripts/${r.id}` }, r.script.name), ` v${r.version}`))));
  return () => {};
}

export async function renderScript({ main }, id) {
  const rec = await api(`/v1/scripts/${id}`);
  fill(main, h("h1", {}, rec.script.name), h("pre", {}, JSON.stringify(rec.script, null, 2)));
  return () => {};
}
