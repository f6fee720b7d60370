// A task's page, streamed over the WebSocket: a card per step (screenshot with the tap or
// swipe drawn, thinking, action, outcome, timings, tokens), interventions in the same
// timeline, progress (step n of max, elapsed, the server's estimate of the time left), the agent's question with its options and countdown (answered over the
// WebSocket), Cancel, Export, Save as script, and take-over (takeover.js).

import { api, blobUrl, download } from "./api.js";
import { h, fill, badge, flash, duration, when, actionText, isTerminal, inBrowserWords } from "./dom.js";
import { annotatedShot } from "./overlay.js";
import { takeover } from "./takeover.js";

const STEP_EVENTS = new Set(["step.observed", "step.decided", "step.executed", "step.annotated", "step.stuck", "model.retry", "action.retry", "agent.grounding_fallback"]);

function stepMs(t) {
  if (!t) return 0;
  return t.screenshot_ms + t.hierarchy_ms + t.inference_ms + t.action_ms + t.settle_ms + (t.overhead_ms || 0);
}

/** Runs `load` once `el` comes within a screen or so of the viewport: a long run's
 * screenshots are fetched as they are scrolled to, not all at once. */
const near = new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (!e.isIntersecting) continue;
    near.unobserve(e.target);
    e.target.loadNow();
  }
}, { rootMargin: "1000px" });

function whenNear(el, load) {
  el.loadNow = load;
  near.observe(el);
}

/** A step's card; `s` is a stored step or a `step.executed` payload (+ `thinking`, `at`). */
export function stepCard(taskId, s) {
  const img = h("img", { alt: `step ${s.n} screenshot`, class: "step-shot" });
  const shot = s.screenshot ? annotatedShot(img, s.action, s.outcome) : h("p", { class: "muted" }, "no screenshot");
  if (s.screenshot) whenNear(img, () => blobUrl(`/v1/tasks/${taskId}/steps/${s.n}/screenshot`)
    .then((u) => (img.src = u), () => img.classList.add("stale")));
  const o = s.outcome || {};
  const t = s.timings;
  const timing = t
    ? `${duration(stepMs(t))} (screen ${t.screenshot_ms} ms, model ${t.inference_ms} ms, action ${t.action_ms} ms, settle ${t.settle_ms} ms)`
    : "–";
  // Compact: what the step did and how it went first, beside a small screenshot; the
  // thinking, timings and tokens folded.
  return h("article", { class: `card step${s.by ? " manual" : ""}`, dataset: { n: s.n, at: Date.parse(s.at) || 0 } },
    h("header", {}, h("strong", {}, `Step ${s.n}`, s.by ? h("span", { class: "by" }, ` by ${s.by}`) : null), badge(o.status || "ok")),
    h("div", { class: "step-row" },
      shot,
      h("div", { class: "step-body" },
        h("p", { class: "action" }, h("code", {}, actionText(s.action || s.rejected))),
        h("p", { class: "outcome" }, o.status || "–",
          o.error ? h("span", { class: "error" }, ` — ${inBrowserWords(o.error)}`) : null,
          o.screen_changed === false ? h("span", { class: "muted" }, " (screen unchanged)") : null),
        retriesLine(o.detail && o.detail.retries),
        s.thinking ? h("details", {}, h("summary", {}, "thinking"), h("p", { class: "thinking" }, s.thinking)) : null,
        h("details", { class: "more muted" }, h("summary", {}, duration(stepMs(t))),
          h("p", { class: "timings" }, `took ${timing}`),
          h("p", { class: "tokens" }, `tokens ${s.tokens_in} in / ${s.tokens_out} out` +
            (s.tokens_cached ? ` (${s.tokens_cached} of them cached)` : "") +
            (s.cost_usd ? `, $${s.cost_usd.toFixed(4)}` : "") + (s.model_calls ? `, ${s.model_calls} model call(s)` : ""))))));
}

/** The device action's failed attempts before the last (`action.retry` events, kept on
 * the step as `detail.retries`): each attempt's error, in the page's words. */
function retriesLine(retries) {
  if (!Array.isArray(retries) || !retries.length) return null;
  return h("details", { class: "retries" },
    h("summary", {}, `tried ${retries.length + 1} times`),
    h("ol", {}, retries.map((r) => h("li", {}, `attempt ${r.attempt}: ${inBrowserWords(r.error || "")}` + (r.delay_ms ? `, then waited ${r.delay_ms} ms` : "")))));
}

/** An intervention's card: a question and its answer, a person's action, an outside change. */
export function interventionCard(iv) {
  const at = iv.at || iv.created_at;
  let text;
  if (iv.kind === "ask_user") {
    text = `The agent asked “${iv.question || ""}”` + (iv.answer != null ? ` — answered “${iv.answer}” (${iv.answered_by || iv.by || "?"})` : " — unanswered");
  } else if (iv.kind === "manual_action") {
    text = `${iv.by || "a person"} did: ${actionText(iv.action)}`;
  } else if (iv.kind === "external_change") {
    text = "The screen changed with no agent action (someone touched the phone).";
  } else {
    text = `${iv.kind}${iv.by ? ` by ${iv.by}` : ""}${iv.action ? `: ${actionText(iv.action)}` : ""}`;
  }
  return h("article", { class: `card intervention k-${iv.kind}`, dataset: { id: iv.id, kind: iv.kind, at: Date.parse(at) || 0 } },
    h("header", {}, h("strong", {}, "Intervention"), h("span", { class: "badge" }, iv.kind.replaceAll("_", " "))),
    h("p", {}, text), h("p", { class: "muted" }, when(at)));
}

/** Inserts a card into the timeline in time order (steps and interventions interleave). */
function place(timeline, card) {
  const at = Number(card.dataset.at);
  const after = [...timeline.children].find((c) => Number(c.dataset.at) > at);
  timeline.insertBefore(card, after || null);
}

function askPanel(live, taskId) {
  const el = h("section", { class: "card ask", hidden: true, "aria-live": "polite" });
  let timer;
  let open = null;
  const close = (id) => {
    if (id && open && open !== id) return;
    open = null;
    clearInterval(timer);
    el.hidden = true;
  };
  const show = (p, createdAt) => {
    open = p.prompt_id;
    const deadline = (Date.parse(createdAt) || Date.now()) + p.timeout_secs * 1000;
    const count = h("span", { class: "countdown" });
    const tick = () => (count.textContent = `${Math.max(0, Math.ceil((deadline - Date.now()) / 1000))} s left to answer`);
    const send = (answer) => answer.trim() && live.send({ type: "answer", task_id: taskId, prompt_id: p.prompt_id, answer });
    const input = h("input", { name: "answer", placeholder: "your answer", "aria-label": "answer" });
    const form = h("form", { class: "inline" }, input, h("button", { type: "submit" }, "Send"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      send(input.value);
    });
    fill(el, h("h2", {}, "The agent asks"), h("p", { class: "question" }, p.question),
      h("div", { class: "options" }, (p.options || []).map((o) => h("button", { type: "button", class: "option", onclick: () => send(o) }, o))),
      form, count);
    tick();
    clearInterval(timer);
    timer = setInterval(tick, 1000);
    el.hidden = false;
  };
  return { el, show, close, isOpen: () => open !== null, stop: () => clearInterval(timer) };
}

/** The estimate of the time left, as the server computes it (`GET /v1/tasks/{id}/estimate`,
 * and each `step.executed` event's `eta`): the median step time times the steps still
 * expected; none while paused or waiting for an answer (nothing runs). */
export function etaText(task, n, est) {
  if (isTerminal(task.status)) return "–";
  if (["paused", "waiting_for_user"].includes(task.status)) return `on hold (${task.status.replaceAll("_", " ")})`;
  if (!est) return "–";
  const left = est.remaining_steps;
  if (est.basis === "planned") {
    return `about ${duration(est.remaining_ms)} left (${left} of ${n + left} planned steps)`;
  }
  return `about ${duration(est.remaining_ms)} left (${duration(est.step_ms)} per step, about ${left} more steps)`;
}

function progress(task, steps, est) {
  const n = steps.length ? Math.max(...steps.map((s) => s.n)) : 0;
  const start = Date.parse(task.started_at);
  const end = task.finished_at ? Date.parse(task.finished_at) : Date.now();
  const elapsed = start ? end - start : NaN;
  const eta = etaText(task, n, est);
  return [
    h("span", { class: "progress" }, `step ${n} of ${task.max_steps}`),
    h("span", {}, `elapsed ${duration(elapsed)}`),
    h("span", { class: "eta" }, `ETA ${eta}`),
    h("span", {}, `tokens ${task.tokens_in} in / ${task.tokens_out} out`),
  ];
}

export async function renderTask({ main, newLive }, id) {
  let task = await api(`/v1/tasks/${id}`);
  const steps = new Map();
  const ivs = new Set();
  const thinking = new Map();
  const head = h("section", { class: "task-head" });
  const bar = h("div", { class: "facts-line" });
  let est = null;
  const buttons = h("div", { class: "buttons" });
  const timeline = h("section", { class: "timeline" });
  const live = newLive();
  const ask = askPanel(live, id);
  const take = takeover(id, () => refresh());

  function renderHead() {
    fill(head, h("h1", {}, task.instruction), badge(task.status),
      h("span", { class: "muted" }, ` ${task.assigned_device || task.device_id || "any phone"} · ${id}`),
      // While the agent waits for an answer the reason is its question, which the
      // question panel shows: once is enough.
      task.reason && !(task.status === "waiting_for_user" && ask.isOpen()) ? h("p", { class: "reason" }, inBrowserWords(task.reason)) : null,
      task.answer ? h("p", { class: "answer" }, `Answer: ${task.answer}`) : null);
    fill(bar, progress(task, [...steps.values()], est));
    const done = isTerminal(task.status);
    fill(buttons,
      done ? null : h("button", { type: "button", class: "danger", id: "cancel", onclick: cancel }, "Cancel"),
      take.buttons(task),
      h("button", { type: "button", onclick: () => download(`/v1/tasks/${id}/export`, `${id}.tar.gz`).catch(flash) }, "Export .tar.gz"),
      done && task.status === "succeeded" ? h("button", { type: "button", onclick: saveScript }, "Save as script") : null,
      done ? h("a", { class: "button", href: `#/tasks/${id}/replay` }, "Replay") : null);
    take.update(task);
  }

  async function cancel() {
    try {
      const r = await api(`/v1/tasks/${id}/cancel`, { method: "POST" });
      task = r.task;
      flash(r.outcome === "cancelled" ? "Cancelled." : "Cancelling at the next step…", "ok");
      renderHead();
    } catch (e) {
      flash(e);
    }
  }

  async function saveScript() {
    try {
      const s = await api("/v1/scripts", { method: "POST", body: { from_task: id } });
      flash(`Saved as script ${s.id} (version ${s.version}).`, "ok");
    } catch (e) {
      flash(e);
    }
  }

  function addStep(s) {
    if (steps.has(s.n)) return;
    steps.set(s.n, s);
    place(timeline, stepCard(id, s));
  }

  function addIntervention(iv) {
    if (!iv || ivs.has(iv.id)) return;
    ivs.add(iv.id);
    place(timeline, interventionCard(iv));
  }

  async function refresh() {
    try {
      task = await api(`/v1/tasks/${id}`);
      renderHead();
    } catch (e) {
      flash(e);
    }
  }

  async function loadInterventions() {
    const list = await api(`/v1/tasks/${id}/interventions`).catch(() => []);
    for (const iv of list) {
      // An open question's card waits for its answer (it is re-read then).
      if (iv.kind === "ask_user" && iv.answer == null && !isTerminal(task.status)) continue;
      addIntervention(iv);
    }
  }

  function onEvent(ev) {
    const p = ev.payload || {};
    if (ev.type === "step.decided") thinking.set(p.step, p.thinking);
    if (ev.type === "step.executed") {
      if (p.eta) est = p.eta;
      addStep({ ...p, n: p.step, thinking: thinking.get(p.step), at: ev.created_at });
      renderHead();
      return;
    }
    if (STEP_EVENTS.has(ev.type)) return;
    if (ev.type === "task.ask_user") {
      ask.show(p, ev.created_at);
      renderHead();
    }
    if (["task.answered", "task.answer_timeout", "task.question_closed"].includes(ev.type)) {
      ask.close(p.prompt_id);
      loadInterventions();
    }
    if (ev.type === "task.intervention") addIntervention(p.intervention);
    if (ev.type === "task.finished") ask.close();
    refresh();
  }

  fill(main, head, bar, buttons, ask.el, take.el, h("h2", {}, "Trajectory"), timeline);
  est = (await api(`/v1/tasks/${id}/estimate`).catch(() => null))?.estimate || null;
  renderHead();
  for (const s of await api(`/v1/tasks/${id}/steps`)) addStep({ ...s, at: s.started_at });
  await loadInterventions();
  live.on((m) => {
    if (m.type === "event") onEvent(m.event);
    else if (m.type === "answered") flash("Answer sent.", "ok");
    else if (m.type === "error") flash(`${m.error.message} — ${m.error.hint}`);
  });
  live.subscribe({ tasks: [id] });
  const tick = setInterval(() => isTerminal(task.status) || fill(bar, progress(task, [...steps.values()], est)), 1000);
  return () => {
    clearInterval(tick);
    ask.stop();
    take.stop();
    live.close();
  };
}
