// The replay MP4 in a real browser: Debian's Chromium (driven by playwright-core) loads
// `GET /v1/tasks/{id}/replay.mp4` in a <video> element, reads its metadata and seeks to
// the end, once per query in DROIDPILOT_QUERIES (comma-separated; the step video and the
// phone's own recording). Run by tests/dashboard/replay_video.rs with DROIDPILOT_URL,
// DROIDPILOT_TASK, DROIDPILOT_QUERIES, DROIDPILOT_CHROMIUM, DROIDPILOT_PLAYWRIGHT_CORE,
// DROIDPILOT_PROFILE. Prints one JSON line per video of what the element reported, then
// `ok` when every check passed.
"use strict";

const assert = require("assert");
const { launch, run } = require("./common.cjs");

async function main() {
  const { ctx, page } = await launch();
  await page.goto(process.env.DROIDPILOT_URL);
  for (const query of (process.env.DROIDPILOT_QUERIES || "width=360").split(",")) {
    await check(page, `/v1/tasks/${process.env.DROIDPILOT_TASK}/replay.mp4?${query}`);
  }
  await ctx.close();
  console.log("ok");
}

async function check(page, src) {
  const seen = await page.evaluate(async (src) => {
    const v = document.createElement("video");
    v.muted = true;
    v.preload = "auto";
    document.body.appendChild(v);
    const failed = () => ({ error: v.error && v.error.code, message: v.error && v.error.message });
    const meta = await new Promise((done) => {
      v.onloadedmetadata = () => done({ duration: v.duration, width: v.videoWidth, height: v.videoHeight });
      v.onerror = () => done(failed());
      v.src = src;
    });
    if (meta.error) return { h264: v.canPlayType('video/mp4; codecs="avc1.42E01E"'), ...meta };
    const end = await new Promise((done) => {
      v.onseeked = () => done({ at: v.currentTime, error: v.error && v.error.code });
      v.onerror = () => done(failed());
      v.currentTime = v.duration;
    });
    const seekable = v.seekable.length ? v.seekable.end(0) : 0;
    return { h264: v.canPlayType('video/mp4; codecs="avc1.42E01E"'), ...meta, seekable, end };
  }, src);
  console.log(JSON.stringify({ src, ...seen }));
  assert.equal(seen.error, undefined, `${src} failed to load: media error ${seen.error} ${seen.message}`);
  assert.ok(seen.duration > 0, "a duration");
  assert.ok(seen.width > 0 && seen.height > 0, "a picture size");
  assert.ok(seen.seekable > 0, "seekable (the server answers Range)");
  assert.equal(seen.end.error, null, `a media error after seeking: ${seen.end.error}`);
  assert.ok(Math.abs(seen.end.at - seen.duration) < 0.05, `the seek reached the end: ${seen.end.at} of ${seen.duration}`);
}

run(main);
