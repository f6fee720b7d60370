// The page's entry: the sign-in form, the hash router (#/devices, #/devices/<id> the
// phone panel, #/tasks, #/tasks/<id>, #/tasks/<id>/replay, #/scripts, #/scripts/<id>,
// #/flow-runs, #/flow-runs/<id>, #/workspaces, #/workspaces/<id>) and the live-connection indicator. Each view's
// render returns a cleanup that stops its pollers and closes its socket.

import { api, token, Live } from "./api.js";
import { h, fill, flash } from "./dom.js";
import { renderDevices } from "./devices.js";
import { renderTasks } from "./tasks.js";
import { renderTask } from "./task.js";
import { renderReplay } from "./replay.js";
import { renderPhone } from "./phone.js";
import { renderScripts, renderScript } from "./scripts.js";
import { renderFlowRuns, renderFlowRun } from "./flowruns.js";
import { renderWorkspaces, renderWorkspace } from "./workspaces.js";

const main = document.getElementById("main");
const liveEl = document.getElementById("live");
let cleanup = () => {};

function setLive(state) {
  liveEl.textContent = state;
  liveEl.dataset.state = state;
}

/** A fresh socket per view, so each view's subscriptions replay from its own start. */
function newLive() {
  return new Live(setLive);
}

function routeOf(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  if (parts[0] === "tasks" && parts[1] && parts[2] === "replay") return ["replay", parts[1]];
  if (parts[0] === "tasks" && parts[1]) return ["task", parts[1]];
  if (parts[0] === "tasks") return ["tasks"];
  if (parts[0] === "devices" && parts[1]) return ["phone", decodeURIComponent(parts[1])];
  if (parts[0] === "scripts" && parts[1]) return ["script", parts[1]];
  if (parts[0] === "scripts") return ["scripts"];
  if (parts[0] === "flow-runs" && parts[1]) return ["flow-run", parts[1]];
  if (parts[0] === "flow-runs") return ["flow-runs"];
  if (parts[0] === "workspaces" && parts[1]) return ["workspace", parts[1]];
  if (parts[0] === "workspaces") return ["workspaces"];
  return ["devices"];
}

async function route() {
  cleanup();
  cleanup = () => {};
  document.getElementById("flash").hidden = true;
  const [view, id] = routeOf(location.hash);
  for (const a of document.querySelectorAll("[data-nav]")) {
    const section = { devices: "devices", phone: "devices", scripts: "scripts", script: "scripts",
      "flow-runs": "flow-runs", "flow-run": "flow-runs", workspaces: "workspaces", workspace: "workspaces" }[view] || "tasks";
    a.classList.toggle("active", a.dataset.nav === section);
  }
  document.getElementById("signout").hidden = !token.get();
  const ctx = { main, newLive };
  try {
    if (view === "devices") cleanup = await renderDevices(ctx);
    else if (view === "tasks") cleanup = await renderTasks(ctx);
    else if (view === "task") cleanup = await renderTask(ctx, id);
    else if (view === "phone") cleanup = await renderPhone(ctx, id);
    else if (view === "scripts") cleanup = await renderScripts(ctx);
    else if (view === "script") cleanup = await renderScript(ctx, id);
    else if (view === "flow-runs") cleanup = await renderFlowRuns(ctx);
    else if (view === "flow-run") cleanup = await renderFlowRun(ctx, id);
    else if (view === "workspaces") cleanup = await renderWorkspaces(ctx);
    else if (view === "workspace") cleanup = await renderWorkspace(ctx, id);
    else cleanup = await renderReplay(ctx, id);
  } catch (e) {
    if (e.status === 401) return; // the sign-in form is showing
    fill(main, h("p", { class: "error" }, String(e)));
  }
}

function signIn(reason) {
  cleanup();
  cleanup = () => {};
  setLive("offline");
  const input = h("input", {
    type: "password", id: "token", name: "token", autocomplete: "current-password",
    placeholder: "the server's bearer token", required: true,
  });
  const form = h("form", { class: "signin card" },
    h("h1", {}, "Sign in"),
    h("p", { class: "muted" }, reason || "This server needs its bearer token (one of server.tokens). It is kept for this browser tab only."),
    h("label", { for: "token" }, "Token"), input,
    h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    token.set(input.value);
    try {
      await api("/v1/devices");
    } catch (e) {
      if (e.status === 401) return;
      flash(e);
    }
    route();
  });
  fill(main, form);
  input.focus();
}

window.addEventListener("droidpilot:unauthorized", () => {
  const had = token.get();
  token.clear();
  signIn(had ? "That token was refused; paste a valid one." : undefined);
});
document.getElementById("signout").addEventListener("click", () => {
  token.clear();
  signIn("Signed out.");
});
window.addEventListener("hashchange", route);
route();
