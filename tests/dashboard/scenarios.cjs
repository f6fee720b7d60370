// The dashboard as a person uses it, in the Debian Chromium driven by playwright-core.
// Run by tests/dashboard/browser.rs with DROIDPILOT_URL, DROIDPILOT_TOKEN,
// DROIDPILOT_CHROMIUM, DROIDPILOT_PLAYWRIGHT_CORE, DROIDPILOT_SCREENS, DROIDPILOT_PROFILE.
// One browser for every scenario; each prints `ok N name` and saves a screenshot.
// Assertions are on what a person sees: text, element counts, image sizes.
"use strict";

const assert = require("assert");

const { URL0, TOKEN, launch, watch, signIn, shot, apiCall, noSideways, run } = require("./common.cjs");
const WAIT = { timeout: 30_000 };

/** The API as the page's user would call it, with the token (for setup and checks). */
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

async function main() {
  const { ctx, page } = await launch({ viewport: { width: 1280, height: 900 } });
  const seen = watch(ctx, page);
  page.on("dialog", (d) => d.accept());

  // 1. Load the page and sign in with the token.
  await page.goto(URL0);
  await page.waitForSelector("form.signin", WAIT);
  await shot(page, "1-signin");
  await signIn(page, WAIT);
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
  // "Add a phone" takes what people paste: a bare host, host:port, `adb connect …`, a serial.
  const bodies = await page.evaluate(() => import("/assets/devices.js").then((m) =>
    ["192.168.1.20", "192.168.1.20:5555", "adb connect 10.0.0.7:37011", "emulator-5554", "R58M12ABCDE", "pixel.lan"].map(m.addBody)));
  assert.deepEqual(bodies, [{ address: "192.168.1.20:5555" }, { address: "192.168.1.20:5555" }, { address: "10.0.0.7:37011" },
    { serial: "emulator-5554" }, { serial: "R58M12ABCDE" }, { address: "pixel.lan:5555" }]);
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
  // This server has a navigator key and no vision server: the form starts on the default
  // (navigator) and offers no model nobody configured (the vision default at 127.0.0.1:8000).
  await page.goto(`${URL0}#/tasks`);
  await page.waitForSelector("#f-kind", WAIT);
  assert.equal(await page.inputValue("#f-kind"), "");
  assert.equal(await page.isVisible(".submit .no-model"), false);
  const modelOptions = await page.locator("#f-model option").allInnerTexts();
  assert.ok(modelOptions.some((o) => o.includes("openai:")), `the configured navigator model is offered: ${modelOptions}`);
  assert.ok(!modelOptions.some((o) => /not configured|8000/.test(o)), `no unconfigured model is offered: ${modelOptions}`);
  const runId = await submitReplay(page, "turn on Bluetooth", flow);
  // Seen live: step cards while the task still runs, on a page never reloaded.
  await page.waitForFunction(() => {
    const n = document.querySelectorAll(".timeline .step").length;
    return n >= 1 && n < 5 && document.querySelector(".task-head .badge").dataset.status === "running";
  }, null, WAIT);
  // The estimate counts to the replay's six planned steps, not to max_steps.
  assert.match(await page.locator(".facts-line .eta").innerText(), /of 6 planned steps/);
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
  // Compact cards: each shows its action and outcome, none is tall.
  for (const c of await page.locator(".timeline .step").all()) {
    const box = await c.boundingBox();
    assert.ok(box.height < 240, `a step card is ${box.height} px tall`);
    assert.equal(await c.locator(".action").isVisible(), true);
    assert.equal(await c.locator(".outcome").isVisible(), true);
  }
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
  assert.equal(await page.getByText("Which account should I use?", { exact: true }).count(), 1, "the question is shown once");
  assert.match(await page.locator(".facts-line .eta").innerText(), /on hold/, "no estimate ticks while the agent waits");
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
  const waitTask = page.url().split("/").pop();
  // Elsewhere the phone is "held by task <short id>", linked, and cannot be removed.
  await page.goto(`${URL0}#/devices`);
  const holder = page.locator('article.device[data-id="sim-1"] .holder a');
  await holder.waitFor(WAIT);
  assert.equal(await holder.innerText(), `task ${waitTask.slice(0, 8)}`);
  assert.equal(await page.locator('article.device[data-id="sim-1"] button.remove').isDisabled(), true);
  await page.goto(`${URL0}#/tasks/${waitTask}`);
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
  // A failed step's hint is in this page's words, not a command line's.
  await submitReplay(page, "tap what is not there", [{ action: "tap", selector: "#no_such_button" }]);
  await statusIs(page, "failed");
  await page.waitForSelector(".timeline .step .outcome .error", WAIT);
  // Its step card and the task's reason both say why, with the hint.
  const failure = await page.locator("main").innerText();
  assert.match(failure, /no_such_button/);
  // The device action's retries are on the step card: how many attempts, each one's error.
  const tried = (await page.locator(".timeline .step details.retries summary").innerText()).match(/^tried (\d+) times$/);
  assert.ok(tried && +tried[1] >= 2, "the retries are shown");
  assert.equal(await page.locator(".timeline .step details.retries li").count(), +tried[1] - 1);
  assert.match(await page.locator(".timeline .step details.retries li").first().textContent(), /^attempt 1: .*no_such_button/);
  assert.doesNotMatch(failure, /droidpilot (screen|devices|doctor)|dump\.xml/, failure);
  console.log(`   the failed task reads: ${failure.split("\n").slice(0, 12).join(" | ")}`);
  // A Maestro flow from the form: no model; its commands are the task's steps.
  await page.goto(`${URL0}#/tasks`);
  assert.equal(await page.isVisible("#f-flow"), false, "the flow field is for flow tasks only");
  await page.fill("#f-instruction", "check Settings with a flow");
  await page.selectOption("#f-device", "sim-1");
  await page.selectOption("#f-kind", "flow");
  await page.fill("#f-flow", "appId: com.android.settings\n---\n- launchApp\n- assertVisible: Bluetooth\n- pressKey: Home\n");
  await page.click("form.submit button[type=submit]");
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/, WAIT);
  await statusIs(page, "succeeded");
  assert.ok(await page.locator(".timeline .step").count() >= 2, "the flow's commands are steps");
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
  await allInView(page, [".step-detail code", ".step-detail .badge", ".pair figure.shot img", "#next"], "the replay view");
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

  await driveByHand(page, ctx);
  await recordScript(page);
  await inspect(page);
  await scriptsView(page);

  assert.deepEqual(seen.errors, [], "no script errors in the page");
  assert.deepEqual(seen.consoleErrors, [], `no errors in the console: ${JSON.stringify(seen.consoleErrors)}`);
  assert.deepEqual(seen.missing, [], `nothing the page loads is missing (the favicon included): ${JSON.stringify(seen.missing)}`);
  await ctx.close();
}

/** The centre of the first element of sim-1's screen whose text starts with `text`, in page pixels over `img`. */
async function centreOf(page, img, text) {
  const screen = await apiCall(page, "/v1/devices/sim-1/screen");
  const el = screen.body.actionable_elements.find((e) => (e.text || "").startsWith(text));
  assert.ok(el, `the screen shows ${text}`);
  const [l, t, r, b] = Array.isArray(el.bounds) ? el.bounds : [el.bounds.left, el.bounds.top, el.bounds.right, el.bounds.bottom];
  const dev = await apiCall(page, "/v1/devices/sim-1");
  const box = await page.locator(img).boundingBox();
  return {
    x: box.x + (((l + r) / 2) / dev.body.screen.width) * box.width,
    y: box.y + (((t + b) / 2) / dev.body.screen.height) * box.height,
    bounds: [l, t, r, b],
  };
}

/** Everything in `selectors` is inside the viewport, without scrolling. */
async function allInView(page, selectors, what) {
  const vp = page.viewportSize();
  for (const sel of selectors) {
    const box = await page.locator(sel).first().boundingBox();
    assert.ok(box, `${sel} is shown (${what})`);
    assert.ok(box.y >= 0 && box.y + box.height <= vp.height + 1 && box.x + box.width <= vp.width + 1,
      `${sel} is within the ${vp.width}×${vp.height} window without scrolling (${what}): ${JSON.stringify(box)}`);
  }
}

async function launchSettings(page) {
  const value = await page.locator("#app-pick option", { hasText: "Settings" }).first().getAttribute("value");
  await page.selectOption("#app-pick", value);
  await page.click("#launch");
}

/** Scenario 8: take a free phone, drive it, see another session refused, release by leaving. */
async function driveByHand(page, ctx) {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${URL0}#/devices`);
  await page.click('article.device[data-id="sim-1"] a.open');
  await page.waitForURL(/#\/devices\/sim-1$/, WAIT);
  await page.waitForFunction(() => { const i = document.querySelector("figure.live img"); return !!i && i.naturalWidth > 0; }, null, WAIT);
  await page.fill("#your-name", "alice");
  await page.click("#take");
  await page.waitForSelector("#release:not([hidden])", WAIT);
  await page.waitForSelector(".phone-head .holder:has-text('held by you')", WAIT);
  await launchSettings(page);
  await page.waitForSelector("#last-action.ok:has-text('Step 1: done launch_app')", WAIT);
  await page.waitForTimeout(1200); // the live frame shows Settings
  const bt = await centreOf(page, "figure.live img", "Bluetooth");
  await page.mouse.click(bt.x, bt.y);
  await page.waitForSelector("#last-action.ok:has-text('Step 2: done tap')", WAIT);
  assert.equal(await page.locator("svg.live-overlay circle.tap.landed").count(), 1, "the click's landing point is marked");
  // The gesture tool: swipe up on the screen; a key; typed text.
  await page.click("button.tool[data-tool=swipe]");
  const box = await page.locator("figure.live img").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height * 0.8);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height * 0.4, { steps: 5 });
  await page.mouse.up();
  await page.waitForSelector("#last-action.ok:has-text('Step 3: done swipe')", WAIT);
  assert.equal(await page.locator("svg.live-overlay line.swipe.landed").count(), 1, "the swipe is drawn");
  await page.click("#key-back");
  await page.waitForSelector("#last-action.ok:has-text('Step 4: done')", WAIT);
  // Seen without scrolling at 1280×800: the phone, its keys, the type field, the confirmation.
  await allInView(page, ["figure.live img", "#key-back", "#key-home", ".type-form input", "#last-action", "button.tool[data-tool=swipe]"], "phone panel");
  await shot(page, "8-phone-1280");
  const held = await apiCall(page, "/v1/devices/sim-1");
  assert.equal(held.body.lease_owner, "alice in the dashboard");
  const taskId = await page.locator("#control-task").getAttribute("href").then((hr) => hr.split("/").pop());
  const steps = await apiCall(page, `/v1/tasks/${taskId}/steps`);
  assert.equal(steps.body.length, 4, "each action is a recorded step");
  assert.ok(steps.body.every((st) => st.by === "alice"), "taken by alice");
  const [l, t, r, b] = bt.bounds;
  const [px, py] = steps.body[1].outcome.detail.point;
  assert.ok(px >= l && px < r && py >= t && py < b, "the tap landed on Bluetooth");
  // Rotate: the phone turns, the live view follows, and turning again restores portrait.
  await page.click("#rotate");
  await page.waitForSelector("#last-action.ok:has-text('Step 5: done rotate')", WAIT);
  await page.waitForFunction(() => { const i = document.querySelector("figure.live img"); return i.naturalWidth > i.naturalHeight; }, null, WAIT);
  assert.ok(await page.locator("figure.live.landscape").count(), "the live view is landscape");
  const turned = (await apiCall(page, "/v1/devices/sim-1")).body.screen;
  assert.ok(turned.width > turned.height, JSON.stringify(turned));
  await shot(page, "8-phone-landscape");
  await page.click("#rotate");
  await page.waitForSelector("#last-action.ok:has-text('Step 6: done rotate')", WAIT);
  await page.waitForFunction(() => { const i = document.querySelector("figure.live img"); return i.naturalWidth < i.naturalHeight; }, null, WAIT);

  // Another browser session (a new tab signs in on its own) sees who holds it and is refused.
  const other = await ctx.newPage();
  await other.goto(URL0);
  await other.fill("#token", TOKEN);
  await other.click("form.signin button[type=submit]");
  await other.waitForSelector('article.device[data-id="sim-1"] .holder:has-text("alice in the dashboard")', WAIT);
  assert.equal(await other.locator('article.device[data-id="sim-1"] button.remove').isDisabled(), true, "no Remove on a held phone");
  await other.goto(`${URL0}#/devices/sim-1`);
  await other.waitForSelector(".phone-head .holder:has-text('held by alice in the dashboard')", WAIT);
  assert.equal(await other.locator("#take").isDisabled(), true);
  const refused = await apiCall(other, "/v1/devices/sim-1/control", "POST", { by: "bob" });
  assert.equal(refused.status, 409);
  assert.match(refused.body.error.message, /held by alice in the dashboard/);
  await other.setViewportSize({ width: 390, height: 844 });
  await other.waitForFunction(() => { const i = document.querySelector("figure.live img"); return !!i && i.naturalWidth > 0; }, null, WAIT);
  await allInView(other, ["figure.live img", "button.tool[data-tool=inspect]", "#key-back", "#key-home", ".type-form input", "#last-action"], "phone panel at 390 px");
  await shot(other, "8-phone-390");
  await other.close();

  // Leaving the page releases the phone.
  await page.goto(`${URL0}#/devices`);
  await page.waitForSelector('article.device[data-id="sim-1"] .state .badge[data-status=available]', WAIT);
  const task = await apiCall(page, `/v1/tasks/${taskId}`);
  assert.equal(task.body.status, "succeeded");
  console.log("ok 8 drive a free phone by hand; another session is refused; leaving releases it");
}

/** Scenario 9: record three steps on a free phone and save them as a script. */
async function recordScript(page) {
  await page.goto(`${URL0}#/devices/sim-1`);
  await page.waitForFunction(() => { const i = document.querySelector("figure.live img"); return !!i && i.naturalWidth > 0; }, null, WAIT);
  await page.click("#take");
  await page.waitForSelector("#release:not([hidden])", WAIT);
  await page.click("#key-home");
  await page.waitForSelector("#last-action.ok:has-text('Step 1: done')", WAIT);
  await page.click("#record");
  await launchSettings(page);
  await page.waitForSelector("#last-action.ok:has-text('Step 2: done launch_app')", WAIT);
  await page.waitForTimeout(1200);
  const bt = await centreOf(page, "figure.live img", "Bluetooth");
  await page.mouse.click(bt.x, bt.y);
  await page.waitForSelector("#last-action.ok:has-text('Step 3: done tap')", WAIT);
  await page.click("#key-back");
  await page.waitForSelector("#last-action.ok:has-text('Step 4: done')", WAIT);
  await page.waitForFunction(() => document.querySelectorAll("ol.recorded li.recorded-step").length === 3, null, WAIT);
  const items = await page.locator("ol.recorded li.recorded-step").allInnerTexts();
  assert.match(items[0], /^launch_app/);
  // The tap is written with the selector droidpilot would use: the Bluetooth row (by
  // its text, or by its position with the row's texts as a witness).
  assert.match(items[1], /^tap (:text\(|#|\[)\S*.*Bluetooth/, JSON.stringify(items));
  assert.match(items[2], /^key key=back/);
  await page.fill("#script-name", "bluetooth by hand");
  await page.click("#save-script");
  await page.waitForSelector(".recorder a[href^='#/scripts/']", WAIT);
  await shot(page, "9-recorder");
  const list = await apiCall(page, "/v1/scripts");
  const saved = list.body.scripts.find((r) => r.name === "bluetooth by hand");
  assert.ok(saved, "the script is stored");
  assert.deepEqual(saved.steps.map((st) => st.action), ["launch_app", "tap", "key"]);
  assert.ok(saved.steps[1].selector, "the tap has a selector, not a point");
  // The same recording saved again as the script's next version.
  const value = await page.locator("#save-as option", { hasText: "of “bluetooth by hand”" }).getAttribute("value");
  assert.equal(value, saved.id);
  await page.selectOption("#save-as", value);
  await page.click("#save-script");
  await page.waitForSelector(".recorder a:has-text('(version 2)')", WAIT);
  assert.equal((await apiCall(page, `/v1/scripts/${saved.id}/versions`)).body.length, 2);

  // Before saving, the steps are the page's: move, run again from a step, edit, delete.
  await page.click("#record-stop");
  const rows = page.locator("ol.recorded li.recorded-step");
  await rows.nth(2).locator(".step-up").click();
  let texts = await rows.allInnerTexts();
  assert.match(texts[1], /^key/, JSON.stringify(texts));
  assert.match(texts[2], /^tap/, JSON.stringify(texts));
  await rows.nth(1).locator(".step-down").click();
  texts = await rows.allInnerTexts();
  assert.deepEqual(texts.map((t) => t.split(" ")[0]), ["launch_app", "tap", "key"]);
  // Run from step 1, twice: each run performs the three steps on the phone (Settings,
  // the Bluetooth row, back), as steps of the hold's task, so Bluetooth ends as it was.
  for (const last of [7, 10]) {
    await rows.nth(0).locator(".step-run").click();
    await page.waitForSelector(`#last-action.ok:has-text('Step ${last}: done')`, WAIT);
  }
  const holdTask = (await page.getAttribute("#control-task", "href")).split("/").pop();
  const held = await apiCall(page, `/v1/tasks/${holdTask}/steps`);
  assert.deepEqual(held.body.slice(4).map((st) => st.action.action), ["launch_app", "tap", "key", "launch_app", "tap", "key"], "each run's steps are steps of the hold's task");
  assert.equal(await rows.count(), 3, "running steps again records nothing new");
  // Edit the tap's selector as JSON, delete the last step, save as a new script.
  await rows.nth(1).locator(".step-edit").click();
  const step = JSON.parse(await page.inputValue("ol.recorded textarea.step-json"));
  step.selector = ':text("Bluetooth")';
  step.alternative_selectors = [];
  await page.fill("ol.recorded textarea.step-json", JSON.stringify(step));
  await page.click("ol.recorded .step-ok");
  await rows.nth(2).locator(".step-del").click();
  assert.equal(await rows.count(), 2);
  await page.selectOption("#save-as", "");
  await page.fill("#script-name", "bluetooth edited");
  await page.click("#save-script");
  await page.waitForSelector(".recorder a:has-text('bluetooth edited (version 1)')", WAIT);
  const edited = (await apiCall(page, "/v1/scripts")).body.scripts.find((r) => r.name === "bluetooth edited");
  assert.deepEqual(edited.steps.map((st) => st.action), ["launch_app", "tap"]);
  assert.equal(edited.steps[1].selector, ':text("Bluetooth")');
  await page.click("#release");
  await page.waitForSelector("#take:not([hidden])", WAIT);
  console.log("ok 9 record a three-step script on a free phone and save it");
}

/** Scenario 10: inspect an element on the live view and test its selector. */
async function inspect(page) {
  await page.goto(`${URL0}#/devices/sim-1`);
  await page.waitForFunction(() => { const i = document.querySelector("figure.live img"); return !!i && i.naturalWidth > 0; }, null, WAIT);
  await page.click("#take");
  await launchSettings(page);
  await page.waitForSelector("#last-action.ok", WAIT);
  await page.click("#release");
  await page.waitForTimeout(1200);
  await page.click("button.tool[data-tool=inspect]");
  await page.waitForSelector(".inspector .tree .row", WAIT);
  const bt = await centreOf(page, "figure.live img", "Bluetooth");
  await page.mouse.move(bt.x, bt.y);
  await page.waitForSelector("svg.live-overlay rect.hovered", WAIT);
  await page.mouse.click(bt.x, bt.y);
  await page.waitForSelector(".node-info .node-title", WAIT);
  const rec = page.locator(".selectors .selector-choice.recommended");
  const sel = await rec.getAttribute("data-selector");
  assert.equal(await rec.getAttribute("data-count"), "1", `the recommended selector ${sel} is unique`);
  await rec.click();
  await page.waitForSelector("#selector-result:has-text('1 match now')", WAIT);
  assert.equal(await page.locator("svg.live-overlay rect.match").count(), 1, "its one match is outlined");
  // A selector that matches several elements outlines them all.
  await page.fill("#selector-test", "TextView");
  await page.click(".inspector form button[type=submit]");
  await page.waitForFunction(() => document.querySelectorAll("svg.live-overlay rect.match").length > 1, null, WAIT);
  const n = await page.locator("svg.live-overlay rect.match").count();
  await page.waitForSelector(`#selector-result:has-text('${n} matches now')`, WAIT);
  await page.fill("#tree-search", "Bluetooth");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll(".inspector .tree .row")];
    return rows.length >= 1 && rows.every((r) => r.textContent.includes("Bluetooth"));
  }, null, WAIT);
  await shot(page, "10-inspector");
  console.log(`ok 10 inspect an element, read its selector (${sel}) and test it live`);
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
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.click("#pause");
  await statusIs(page, "paused");
  assert.match(await page.locator(".facts-line .eta").innerText(), /on hold \(paused\)/);
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
  await page.waitForSelector(".takeover #last-action.ok:has-text('done tap')", WAIT);
  assert.equal(await page.locator(".takeover svg.live-overlay circle.tap.landed").count(), 1, "where the click landed is marked");
  await allInView(page, [".takeover figure.live img", ".takeover #key-back", ".takeover #key-home", ".takeover .type-form input",
    ".takeover #last-action", ".takeover button.tool[data-tool=swipe]"], "take-over at 1280×800");
  await page.waitForSelector(".timeline .intervention[data-kind=manual_action]:has-text('tap')", WAIT);
  await shot(page, "5-takeover");
  await shot(page, "5-takeover-1280x800");
  await page.setViewportSize({ width: 1280, height: 900 });
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

/** Scenario 11: the scripts view: find the recorded script, run it, read a healed version's diff, edit, export. */
async function scriptsView(page) {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${URL0}#/scripts`);
  await page.waitForSelector("table.scripts tbody tr[data-id]", WAIT);
  await page.fill("#script-search", "bluetooth by");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("table.scripts tbody tr[data-id]")];
    return rows.length === 1 && rows[0].textContent.includes("bluetooth by hand");
  }, null, WAIT);
  await shot(page, "11-scripts");
  await page.click("table.scripts tbody tr[data-id] a");
  await page.waitForSelector("h1:text('bluetooth by hand')", WAIT);
  // Run it on sim-1: a task like any other, its steps live. The phone starts where the
  // recording did (the recorded tap switched Bluetooth off: switch it back on first).
  for (const a of [{ action: "launch_app", package: "com.android.settings" }, { action: "tap", selector: ':text("Bluetooth")' }, { action: "home" }]) {
    assert.equal((await apiCall(page, "/v1/devices/sim-1/actions", "POST", a)).status, 200);
  }
  await page.selectOption("#run-device", "sim-1");
  await page.click("#run-script");
  await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/, WAIT);
  await page.waitForSelector('.task-head .badge[data-status="succeeded"], .task-head .badge[data-status="failed"]', { timeout: 60_000 });
  assert.ok(await page.locator(".timeline .step").count() >= 3, "the run's steps are shown");
  const runTask = await apiCall(page, `/v1/tasks/${page.url().split("/").pop()}`);
  assert.equal(runTask.body.status, "succeeded", `the recorded script replays: ${runTask.body.reason}`);

  // A healed version's diff: the selector the heal changed, side by side.
  await page.goto(`${URL0}#/scripts/${process.env.DROIDPILOT_HEALED_SCRIPT}`);
  await page.waitForSelector(".versions table.diff", WAIT);
  assert.match(await page.locator("#diff-b option:checked").innerText(), /v2 — healed by task .* from version 1/);
  const changed = page.locator('table.diff tr.changed[data-selector-changed="yes"]');
  assert.equal(await changed.count(), 1, "one step's selector changed");
  assert.match(await changed.innerText(), /#bt_old_row[\s\S]*:text\("Bluetooth"\)/);
  assert.match(await page.locator(".diff-summary").innerText(), /1 selector\(s\) changed/);
  await allInView(page, ["table.diff tr.changed"], "the healed diff");
  await shot(page, "11-script-diff");
  // Editing: a mistake is shown by its path; a fix is saved as version 3.
  const doc = JSON.parse(await page.inputValue("#script-json"));
  doc.steps[1].selector = ":text(";
  await page.fill("#script-json", JSON.stringify(doc, null, 2));
  await page.click("form.edit button[type=submit]");
  await page.waitForSelector("#script-errors li code.path", WAIT);
  assert.equal(await page.locator("#script-errors li").getAttribute("data-path"), "steps[1].selector");
  doc.steps[1].selector = "#bluetooth";
  await page.fill("#script-json", JSON.stringify(doc, null, 2));
  await page.click("form.edit button[type=submit]");
  await page.waitForSelector(".script-head p:has-text('version 3')", WAIT);
  // Export as Maestro YAML, and import it back as a new script.
  const [dl] = await Promise.all([page.waitForEvent("download", WAIT), page.click("#export-maestro")]);
  const yaml = require("fs").readFileSync(await dl.path(), "utf8");
  assert.match(yaml, /launchApp/);
  await page.goto(`${URL0}#/scripts`);
  await page.fill("#import-text", yaml);
  await page.click("form.import button[type=submit]");
  await page.waitForURL(/#\/scripts\/[0-9a-f-]{36}$/, WAIT);
  await page.waitForSelector(".script-head p:has-text('imported from Maestro')", WAIT);
  // Every view in a phone-sized window: nothing scrolls sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [name, hash] of [["devices", "#/devices"], ["tasks", "#/tasks"], ["scripts", "#/scripts"],
    ["script", `#/scripts/${process.env.DROIDPILOT_HEALED_SCRIPT}`], ["phone", "#/devices/sim-1"]]) {
    await page.goto(`${URL0}${hash}`);
    await page.waitForSelector("main h1", WAIT);
    await page.waitForTimeout(300);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways scrolling on ${hash} at 390 px (overflow ${overflow} px)`);
    await shot(page, `11-${name}-390`);
  }
  console.log("ok 11 find the script, run it, read a healed version's diff, edit, export and import");
}

run(main, "failure");
