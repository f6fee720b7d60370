// Replay of a finished run: a step scrubber (slider, Previous/Next, arrow keys), the
// screen before the step with its action drawn and the screen after it (the next step's),
// the step's details, and the animated GIF of the whole run.

import { api, blobUrl, download } from "./api.js";
import { h, fill, flash, actionText, duration, badge, inBrowserWords } from "./dom.js";
import { annotatedShot } from "./overlay.js";

function shot(id, step, withMarks) {
  if (!step || !step.screenshot) return h("p", { class: "muted" }, step ? "no screenshot" : "the end of the run");
  const img = h("img", { alt: `step ${step.n} screen`, class: "step-shot" });
  blobUrl(`/v1/tasks/${id}/steps/${step.n}/screenshot`).then((u) => (img.src = u), () => img.classList.add("stale"));
  return withMarks ? annotatedShot(img, step.action, step.outcome) : h("figure", { class: "shot" }, img);
}

export async function renderReplay({ main }, id) {
  const [task, steps] = await Promise.all([api(`/v1/tasks/${id}`), api(`/v1/tasks/${id}/steps`)]);
  if (!steps.length) {
    fill(main, h("h1", {}, task.instruction), h("p", { class: "muted" }, "This run has no steps to replay."));
    return () => {};
  }
  const slider = h("input", { type: "range", id: "scrubber", min: 1, max: steps.length, value: 1, "aria-label": "step" });
  const label = h("span", { class: "step-label" });
  const view = h("section", { class: "replay" });
  const gif = h("div", { class: "gif" });

  function show(i) {
    const s = steps[i - 1];
    slider.value = String(i);
    label.textContent = `step ${i} of ${steps.length}`;
    // The step's action, outcome and error first, then the screens sized to the window.
    fill(view,
      h("div", { class: "card step-detail" },
        h("p", {}, h("b", {}, "action "), h("code", {}, actionText(s.action || s.rejected)), " ", badge(s.outcome.status)),
        s.outcome.error ? h("p", { class: "error" }, inBrowserWords(s.outcome.error)) : null,
        s.thinking ? h("details", {}, h("summary", {}, "thinking"), h("p", { class: "thinking" }, s.thinking)) : null,
        h("p", { class: "muted" }, `model ${duration(s.timings.inference_ms)}, action ${duration(s.timings.action_ms)}, tokens ${s.tokens_in}/${s.tokens_out}`)),
      h("div", { class: "pair" },
        h("div", {}, h("h3", {}, "Before"), shot(id, s, true)),
        h("div", {}, h("h3", {}, "After"), shot(id, steps[i], false))));
  }
  const step = (d) => show(Math.min(steps.length, Math.max(1, Number(slider.value) + d)));
  slider.addEventListener("input", () => show(Number(slider.value)));
  const onKey = (e) => {
    // A focused slider moves by itself; text fields keep their arrows.
    if (["INPUT", "TEXTAREA", "SELECT"].includes(e.target.tagName)) return;
    if (e.key === "ArrowRight") step(1);
    if (e.key === "ArrowLeft") step(-1);
  };
  document.addEventListener("keydown", onKey);

  const gifPath = `/v1/tasks/${id}/replay.gif?width=360&frame_ms=800`;
  const mp4 = () => h("button", { type: "button", class: "mp4-download",
    onclick: () => download(`/v1/tasks/${id}/replay.mp4?width=360`, `${id}.mp4`).catch(flash) }, "Download MP4");
  fill(gif,
    h("button", { type: "button", onclick: async () => {
      try {
        fill(gif, h("img", { src: await blobUrl(gifPath), alt: "the run as an animated GIF", class: "gif-img" }),
          h("button", { type: "button", onclick: () => download(gifPath, `${id}.gif`).catch(flash) }, "Download GIF"), mp4());
      } catch (e) {
        flash(e.status === 404 ? "This server cannot make a GIF of this run." : e);
      }
    } }, "Show as GIF"), mp4());

  fill(main,
    h("h1", {}, task.instruction), badge(task.status), " ",
    h("a", { href: `#/tasks/${id}` }, "back to the task"),
    h("div", { class: "scrub inline" },
      h("button", { type: "button", id: "prev", onclick: () => step(-1) }, "◀ Previous"),
      slider, label,
      h("button", { type: "button", id: "next", onclick: () => step(1) }, "Next ▶")),
    view, gif);
  show(1);
  return () => document.removeEventListener("keydown", onKey);
}
