// The dashboard as a person uses it, in the Debian Chromium driven by playwright-core.
// Run by tests/dashboard/browser.rs with DROIDPILOT_URL, DROIDPILOT_TOKEN,
// DROIDPILOT_CHROMIUM, DROIDPILOT_PLAYWRIGHT_CORE, DROIDPILOT_SCREENS, DROIDPILOT_PROFILE.
// One browser for every scenario; each prints `ok N name` and saves a screenshot.
// Assertions are on what a person sees: text, element counts, image sizes.
"use strict";

const path = require("path");
const assert = require("assert");
const { chromium } = require(process.env.DROIDPILOT_PLAYWRIGHT_CORE);

const URL0 = process.env.DROIDPILOT_URL;
const TOKEN = process.env.DROIDPILOT_TOKEN;
const SCREENS = process.env.DROIDPILOT_SCREENS;
const WAIT = { timeout: 30_000 };

async function shot(page, name) {
  const file = path.join(SCREENS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`   screenshot ${file}`);
}

/** The API as the page's user would call it, with the token (for setup and checks). */
async function apiCall(page, p, method = "GET", body) {
  return page.evaluate(async ([p, method, body, token]) => {
    const r = await fetch(p, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, body: await r.json().catch(() => null) };
  }, [p, method, body, TOKEN]);
}

/** Submits a replay task through the page's form; resolves to the task id. */
async function submitReplay(page, instruction, actions) {
  await page.goto(`${URL0}#/tasks`);
  await page.fill("#f-instruction", instruction);
  assert.equal(await page.isVisible("#f-actions"), false, "the actions field is for replay tasks only");
  await page.selectOption("#f-device", "sim-1");
  await page.selectOption("#f-kind", "replay");
  await page.fill("#f-actions", JSON.stringify(actions));
  await page.click("form.submit button[type=submit]");
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/, WAIT);
  return page.url().split("/").pop();
}

const statusIs = (page, s) => page.waitForSelector(`.task-head .badge[data-status="${s}"]`, WAIT);

let current = null;

async function main() {
  const ctx = await chromium.launchPersistentContext(process.env.DROIDPILOT_PROFILE, {
    executablePath: process.env.DROIDPILOT_CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 900 },
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  current = page;
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", (d) => d.accept());

  // 1. Load the page and sign in with the token.
  await page.goto(URL0);
  await page.waitForSelector("form.signin", WAIT);
  await shot(page, "1-signin");
  await page.fill("#token", TOKEN);
  await page.click("form.signin button[type=submit]");
  await page.waitForSelector("h1:text('Devices')", WAIT);
  assert.equal(await page.evaluate(() => location.href.includes("dash-test-token")), false, "no token in the URL");
  console.log("ok 1 load the page with a token");

  // 2. sim-1 with its live screenshot: a 0.3-scaled JPEG of the 1080×2400 screen.
  const card = page.locator('article.device[data-id="sim-1"]');
  await card.waitFor(WAIT);
  await page.waitForFunction(() => {
    const img = document.querySelector('article.device[data-id="sim-1"] img.screen');
    return img && img.naturalWidth > 0;
  }, null, WAIT);
  const size = await card.locator("img.screen").evaluate((i) => [i.naturalWidth, i.naturalHeight]);
  assert.deepEqual(size, [324, 720], "a 0.3-scaled frame of the 1080×2400 screen");
  assert.match(await card.locator(".size").innerText(), /1080×2400/);
  assert.match(await card.locator(".state").innerText(), /available/);
  await page.waitForSelector("#live[data-state=live]", WAIT);
  await shot(page, "2-devices");
  console.log("ok 2 sim-1 with a screenshot");

  // 3. Submit a replay task and watch its steps appear while it runs.
  const flow = [
    { action: "launch_app", label: "Settings" },
    { action: "wait", ms: 1500 },
    { action: "tap", selector: ':text("Bluetooth")' },
    { action: "wait", ms: 1500 },
    { action: "back" },
  ];
  const runId = await submitReplay(page, "turn on Bluetooth", flow);
  // Seen live: step cards while the task still runs, on a page never reloaded.
  await page.waitForFunction(() => {
    const n = document.querySelectorAll(".timeline .step").length;
    return n >= 1 && n < 5 && document.querySelector(".task-head .badge").dataset.status === "running";
  }, null, WAIT);
  await statusIs(page, "succeeded");
  // The five actions, then the replay agent's own finish.
  const steps = flow.length + 1;
  await page.waitForFunction((n) => document.querySelectorAll(".timeline .step").length === n, steps, WAIT);
  assert.match(await page.locator(".facts-line .progress").innerText(), new RegExp(`step ${steps} of \\d+`));
  const tapCard = page.locator('.timeline .step[data-n="3"]');
  assert.match(await tapCard.locator(".action").innerText(), /tap selector=:text\("Bluetooth"\)/);
  await page.waitForFunction(() => {
    const img = document.querySelector('.timeline .step[data-n="3"] img');
    return img && img.naturalWidth === 1080 && img.naturalHeight === 2400;
  }, null, WAIT);
  assert.equal(await tapCard.locator("svg.overlay").getAttribute("data-marks"), "1", "the tap is drawn");
  assert.equal(await tapCard.locator("svg.overlay circle.tap").count(), 1);
  await shot(page, "3-task-live");
  console.log("ok 3 submit a replay task and watch its steps appear live");

  // 4. The agent asks; the person answers from the page (over the WebSocket).
  await submitReplay(page, "ask which account", [
    { action: "ask_user", question: "Which account should I use?", options: ["work", "home"] },
  ]);
  await page.waitForSelector(".ask:not([hidden]) .question:text('Which account should I use?')", WAIT);
  assert.equal(await page.locator(".ask button.option").count(), 2);
  assert.match(await page.locator(".ask .countdown").innerText(), /\d+ s left to answer/);
  await statusIs(page, "waiting_for_user");
  await shot(page, "4-ask-user");
  await page.click(".ask button.option:text('home')");
  await page.waitForSelector(".ask", { state: "hidden", ...WAIT });
  await statusIs(page, "succeeded");
  await page.waitForSelector(".intervention[data-kind=ask_user]:has-text('answered “home”')", WAIT);
  console.log("ok 4 answer an ask_user from the page");

  // 5. Take-over: pause, tap "Bluetooth" on the live screenshot, resume.
  await takeOver(page);

  // 6. Cancel a running task.
  await submitReplay(page, "wait a long time", [
    { action: "wait", ms: 4000 }, { action: "wait", ms: 4000 }, { action: "wait", ms: 4000 },
  ]);
  await statusIs(page, "running");
  await page.click("#cancel");
  await statusIs(page, "cancelled");
  assert.equal(await page.locator("#cancel").count(), 0, "no Cancel on a finished task");
  await shot(page, "6-cancelled");
  // The list, filtered by status: the one cancelled task.
  await page.goto(`${URL0}#/tasks`);
  await page.waitForSelector("table.tasks tbody tr[data-id]", WAIT);
  assert.ok(await page.locator("table.tasks tbody tr[data-id]").count() === 4, "the four tasks are listed");
  await page.selectOption("#status-filter", "cancelled");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("table.tasks tbody tr[data-id]")];
    return rows.length === 1 && rows[0].querySelector(".badge").dataset.status === "cancelled";
  }, null, WAIT);
  assert.match(await page.locator("table.tasks tbody tr[data-id]").innerText(), /wait a long time/);
  await shot(page, "6-tasks-cancelled");
  console.log("ok 6 cancel a task");

  // 7. A finished run, step by step.
  await page.goto(`${URL0}#/tasks/${runId}/replay`);
  await page.waitForSelector(".step-label:text('step 1 of 6')", WAIT);
  await page.click("#next");
  await page.waitForSelector(".step-label:text('step 2 of 6')", WAIT);
  await page.locator("h1").click();
  await page.keyboard.press("ArrowRight");
  await page.waitForSelector(".step-label:text('step 3 of 6')", WAIT);
  assert.match(await page.locator(".step-detail code").innerText(), /tap selector/);
  await page.waitForFunction(() => [...document.querySelectorAll(".pair img")]
    .filter((i) => i.naturalWidth === 1080 && i.naturalHeight === 2400).length === 2, null, WAIT);
  assert.equal(await page.locator(".pair svg.overlay circle.tap").count(), 1, "the tap is drawn on the before screen");
  // The run as an animated GIF, 360 px wide.
  await page.click("button:text('Show as GIF')");
  await page.waitForFunction(() => {
    const g = document.querySelector("img.gif-img");
    return g && g.naturalWidth === 360;
  }, null, WAIT);
  await shot(page, "7-replay");
  // The same run in a phone-sized window.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${URL0}#/tasks/${runId}`);
  await page.waitForFunction(() => document.querySelectorAll(".timeline .step").length === 6, null, WAIT);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no sideways scrolling at 390 px (overflow ${overflow} px)`);
  await shot(page, "7-phone-task");
  console.log("ok 7 open a finished run and step through it");

  assert.deepEqual(errors, [], "no script errors in the page");
  await ctx.close();
}

/** Scenario 5. Needs the API's pause/resume/actions (contract15). */
async function takeOver(page) {
  const id = await submitReplay(page, "hand over to a person", [
    { action: "launch_app", label: "Settings" },
    { action: "wait", ms: 2000 }, { action: "wait", ms: 2000 }, { action: "wait", ms: 2000 },
    { action: "wait", ms: 2000 },
  ]);
  await statusIs(page, "running");
  await page.waitForSelector(".timeline .step", WAIT); // Settings is open
  await page.click("#pause");
  await statusIs(page, "paused");
  const img = page.locator(".takeover img.live-shot");
  await page.waitForFunction(() => {
    const i = document.querySelector(".takeover img.live-shot");
    return i && i.naturalWidth > 0;
  }, null, WAIT);
  // Where "Bluetooth" is on the phone, from what the agent would see.
  const screen = await apiCall(page, "/v1/devices/sim-1/screen");
  const el = screen.body.actionable_elements.find((e) => e.text === "Bluetooth" || (e.text || "").startsWith("Bluetooth"));
  assert.ok(el, "Settings shows Bluetooth");
  const [l, t, r, b] = Array.isArray(el.bounds) ? el.bounds : [el.bounds.left, el.bounds.top, el.bounds.right, el.bounds.bottom];
  const dev = await apiCall(page, "/v1/devices/sim-1");
  const box = await img.boundingBox();
  const x = box.x + (((l + r) / 2) / dev.body.screen.width) * box.width;
  const y = box.y + (((t + b) / 2) / dev.body.screen.height) * box.height;
  await page.mouse.click(x, y);
  await page.waitForSelector(".flash.ok:has-text('Done: tap')", WAIT);
  await page.waitForSelector(".timeline .intervention[data-kind=manual_action]:has-text('tap')", WAIT);
  await shot(page, "5-takeover");
  await page.click("#resume");
  await statusIs(page, "running");
  await statusIs(page, "succeeded");
  const ivs = await apiCall(page, `/v1/tasks/${id}/interventions`);
  const manual = ivs.body.filter((iv) => iv.kind === "manual_action");
  assert.equal(manual.length, 1, "the tap is a stored intervention");
  const [px, py] = manual[0].action.pixel;
  assert.ok(px >= l && px < r && py >= t && py < b, `the tap [${px}, ${py}] is on Bluetooth [${l},${t}][${r},${b}]`);
  assert.equal(manual[0].by, "dashboard");
  assert.equal(await page.locator(".timeline .intervention[data-kind=manual_action]").count(), 1);
  console.log("ok 5 pause, tap Bluetooth on the live screenshot, resume, see the intervention");
}

main().catch(async (e) => {
  console.error(e && e.stack ? e.stack : e);
  if (current) {
    console.error(`at ${current.url()}`);
    await shot(current, "failure").catch(() => {});
    const text = await current.locator("body").innerText().catch(() => "");
    console.error(`the page showed:\n${text.slice(0, 3000)}`);
  }
  process.exit(1);
});
