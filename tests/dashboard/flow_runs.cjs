// The suite-run view as a person uses it, in the Debian Chromium driven by playwright-core.
// Run by tests/dashboard/flow_runs.rs with the same variables as scenarios.cjs, against a
// server with sim-1 and sim-2. Each scenario prints `ok N name` and saves screenshots.
"use strict";

const assert = require("assert");

const { URL0, TOKEN, launch, watch, signIn, shot, apiCall, noSideways, run } = require("./common.cjs");
const WAIT = { timeout: 60_000 };

// One flow that passes and one that fails at its line 4 (after the lookup's wait).
const OK = "appId: com.android.settings\nname: settings open\n---\n- launchApp\n- assertVisible: \"Wi-Fi\"\n";
const BROKEN = "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Nowhere to be found\"\n";

const runBadge = (page, s) => page.waitForSelector(`.run-head .badge[data-status="${s}"]`, WAIT);
const row = (page, p) => page.locator(`table.flows tbody tr[data-path="${p}"]`);

async function main() {
  const { ctx, page } = await launch({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const seen = watch(ctx, page);
  page.on("dialog", (d) => d.accept());

  await page.goto(URL0);
  await signIn(page, WAIT);

  // 1. From the header to the (empty) list; a run started elsewhere appears and runs, live.
  await page.click("header.top nav a[data-nav=flow-runs]");
  await page.waitForURL(/#\/flow-runs$/, WAIT);
  await page.waitForSelector("h1:text('Suite runs')", WAIT);
  assert.equal(await page.locator("header.top nav a.active").innerText(), "Suites");
  await page.waitForSelector("#live[data-state=live]", WAIT);
  await page.evaluate(() => { window.notReloaded = true; });
  const started = await apiCall(page, "/v1/flow-runs", "POST",
    { files: { "ok.yaml": OK, "broken.yaml": BROKEN }, devices: ["sim-1", "sim-2"] });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const id = started.body.id;
  const listRow = page.locator(`table.flow-runs tbody tr[data-id="${id}"]`);
  await page.waitForSelector(`table.flow-runs tbody tr[data-id="${id}"][data-status=running]`, WAIT);
  await shot(page, "f1-suite-runs-running");
  await page.waitForSelector(`table.flow-runs tbody tr[data-id="${id}"][data-status=failed]`, WAIT);
  assert.equal(await listRow.locator("td.passed").innerText(), "1");
  assert.equal(await listRow.locator("td.failed").innerText(), "1");
  assert.match(await listRow.locator("td.phones").innerText(), /^sim-[12], sim-[12]$/);
  assert.equal(await page.evaluate(() => window.notReloaded), true, "updated without reloading the page");
  await noSideways(page, "table.flow-runs", "#/flow-runs");
  await shot(page, "f1-suite-runs-1280");
  console.log("ok 1 the run appears in #/flow-runs and ends there, live");

  // 2. A run's page while it runs: Cancel offered; it turns to failed without a reload.
  const second = await apiCall(page, "/v1/flow-runs", "POST",
    { files: { "ok.yaml": OK, "broken.yaml": BROKEN }, devices: ["sim-1", "sim-2"] });
  assert.equal(second.status, 201);
  const runId = second.body.id;
  await page.click(`table.flow-runs tbody tr[data-id="${runId}"] a`);
  await page.waitForURL(new RegExp(`#/flow-runs/${runId}$`), WAIT);
  await runBadge(page, "running");
  assert.equal(await page.isVisible("#cancel-run"), true, "Cancel while it runs");
  await page.evaluate(() => { window.notReloaded = true; });
  await page.waitForSelector('table.flows tbody tr[data-path="ok.yaml"][data-status=passed]', WAIT);
  await runBadge(page, "failed");
  assert.equal(await page.evaluate(() => window.notReloaded), true, "updated without reloading the page");
  assert.equal(await page.isVisible("#cancel-run"), false, "no Cancel once it ended");
  assert.match(await page.locator(".run-head .tally").innerText(), /^1 passed, 1 failed of 2$/);
  // Per flow: its name, the phone, one attempt, the status, a duration.
  const ok = row(page, "ok.yaml");
  assert.match(await ok.locator("td.name").innerText(), /settings open\s+ok\.yaml/);
  const okPhone = await ok.locator("td.phone").innerText();
  assert.match(okPhone, /^sim-[12]$/);
  assert.equal(await ok.locator("td.attempts a").count(), 1);
  assert.match(await ok.locator("td.num").innerText(), /\d( ms| s)/);
  assert.equal(await ok.locator("td.failure img").count(), 0);
  // The failing flow: its step, the reason naming the line, and the screen at that step.
  const broken = row(page, "broken.yaml");
  assert.equal(await broken.getAttribute("data-status"), "failed");
  const brokenPhone = await broken.locator("td.phone").innerText();
  assert.match(brokenPhone, /^sim-[12]$/);
  assert.notEqual(brokenPhone, okPhone, "the two flows ran on the two phones");
  assert.match(await broken.locator(".fail-step").innerText(), /^step \d+$/);
  assert.match(await broken.locator(".fail-message").innerText(), /broken\.yaml line 4 .*Nowhere to be found/);
  await page.waitForFunction(() => {
    const i = document.querySelector('tr[data-path="broken.yaml"] img.fail-shot');
    return i && i.naturalWidth > 0 && i.naturalHeight > i.naturalWidth;
  }, null, WAIT);
  const thumb = await broken.locator("img.fail-shot").boundingBox();
  assert.ok(thumb.width <= 80, `a thumbnail, not the full screen (${thumb.width} px)`);
  const replay = await broken.locator("a.replay-link").getAttribute("href");
  const taskId = (await apiCall(page, `/v1/flow-runs/${runId}`)).body.flows.find((f) => f.path === "broken.yaml").attempts[0].task_id;
  assert.equal(replay, `#/tasks/${taskId}/replay`);
  await noSideways(page, "table.flows", "a run's page");
  await shot(page, "f2-suite-run-1280");
  // The same at 390×844: every flow's result readable, nothing sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(200);
  await noSideways(page, "table.flows", "a run's page");
  assert.equal(await broken.locator(".fail-message").isVisible(), true);
  assert.equal(await broken.locator("img.fail-shot").isVisible(), true);
  await shot(page, "f2-suite-run-390");
  await page.goto(`${URL0}#/flow-runs`);
  await page.waitForSelector(`table.flow-runs tbody tr[data-id="${runId}"]`, WAIT);
  await noSideways(page, "table.flow-runs", "#/flow-runs");
  await shot(page, "f2-suite-runs-390");
  await page.setViewportSize({ width: 1280, height: 800 });
  console.log("ok 2 a run's page follows it live to failed: each flow's phone, attempts, duration, the failing step and its screen");

  // 3. The reports: JUnit names both flows and parses; the HTML report; the replay link.
  await page.goto(`${URL0}#/flow-runs/${runId}`);
  await runBadge(page, "failed");
  const [dl] = await Promise.all([page.waitForEvent("download", WAIT), page.click("#junit")]);
  assert.match(dl.suggestedFilename(), /\.xml$/);
  const xml = require("fs").readFileSync(await dl.path(), "utf8");
  const junit = await page.evaluate((text) => {
    const doc = new DOMParser().parseFromString(text, "application/xml");
    if (doc.querySelector("parsererror")) return { error: doc.querySelector("parsererror").textContent };
    return {
      cases: [...doc.querySelectorAll("testcase")].map((c) => ({ name: c.getAttribute("name"), failed: !!c.querySelector("failure") })),
    };
  }, xml);
  assert.ok(!junit.error, `the JUnit report parses: ${junit.error}`);
  assert.deepEqual(junit.cases.map((c) => c.name).sort(), ["broken", "settings open"], JSON.stringify(junit));
  assert.equal(junit.cases.find((c) => c.name === "broken").failed, true);
  assert.equal(junit.cases.find((c) => c.name === "settings open").failed, false);
  const [dh] = await Promise.all([page.waitForEvent("download", WAIT), page.click("#html-report")]);
  assert.match(dh.suggestedFilename(), /\.html$/);
  const html = require("fs").readFileSync(await dh.path(), "utf8");
  assert.match(html, /settings open/);
  assert.match(html, /broken/);
  await page.click('tr[data-path="broken.yaml"] a.replay-link');
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}\/replay$/, WAIT);
  await page.waitForSelector(".step-label", WAIT);
  console.log("ok 3 download the JUnit report (both flows, one failed) and the HTML report; open the failing flow's replay");

  // 4. Cancel a running run from its page.
  const third = await apiCall(page, "/v1/flow-runs", "POST", { files: { "broken.yaml": BROKEN }, devices: ["sim-1"] });
  assert.equal(third.status, 201);
  await page.goto(`${URL0}#/flow-runs/${third.body.id}`);
  await runBadge(page, "running");
  await page.click("#cancel-run");
  await runBadge(page, "cancelled");
  assert.equal(await page.isVisible("#cancel-run"), false);
  await page.waitForSelector('table.flows tbody tr[data-path="broken.yaml"][data-status=cancelled]', WAIT);
  await shot(page, "f4-suite-run-cancelled");
  console.log("ok 4 cancel a running suite from its page");

  seen.check();
  await ctx.close();
}

run(main, "f-failure");
