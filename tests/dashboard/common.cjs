// What the dashboard's Playwright scripts share: the Debian Chromium launched through
// playwright-core with CI's flags, a page that collects script errors, console errors and
// 404s, signing in with the token, screenshots, API calls with the token, the sideways
// overflow check, and a failure that prints where the page was.
"use strict";

const path = require("path");
const assert = require("assert");
const { chromium } = require(process.env.DROIDPILOT_PLAYWRIGHT_CORE);

const URL0 = process.env.DROIDPILOT_URL;
const TOKEN = process.env.DROIDPILOT_TOKEN;
const SCREENS = process.env.DROIDPILOT_SCREENS;

/** The page being driven, for the failure report. */
let current = null;

/** Chromium with a fresh profile and CI's flags; `options` adds a viewport and such. */
async function launch(options = {}) {
  const ctx = await chromium.launchPersistentContext(process.env.DROIDPILOT_PROFILE, {
    executablePath: process.env.DROIDPILOT_CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    ...options,
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  current = page;
  return { ctx, page };
}

/**
 * Collects what must stay empty: the page's script errors, its console errors (a failed
 * request is logged as "Failed to load resource"; those are checked by status instead, a
 * 404 being a missing file such as a favicon) and the 404s. `check()` asserts all three.
 */
function watch(ctx, page) {
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const consoleErrors = [];
  ctx.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource")
    && consoleErrors.push(`${m.page() && m.page().url()}: ${m.text()}`));
  const missing = [];
  ctx.on("response", (r) => r.status() === 404 && missing.push(r.url()));
  return {
    errors,
    consoleErrors,
    missing,
    check() {
      assert.deepEqual(errors, [], "no script errors in the page");
      assert.deepEqual(consoleErrors, [], `no errors in the console: ${JSON.stringify(consoleErrors)}`);
      assert.deepEqual(missing, [], `nothing the page loads is missing: ${JSON.stringify(missing)}`);
    },
  };
}

/** Signs in with the token and waits for the devices page. */
async function signIn(page, wait) {
  await page.fill("#token", TOKEN);
  await page.click("form.signin button[type=submit]");
  await page.waitForSelector("h1:text('Devices')", wait);
}

async function shot(page, name) {
  const file = path.join(SCREENS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`   screenshot ${file}`);
}

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

/** Nothing scrolls sideways, and the table's right edge is inside the window. */
async function noSideways(page, table, what) {
  const vp = page.viewportSize();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no sideways scrolling on ${what} at ${vp.width} px (overflow ${overflow} px)`);
  const box = await page.locator(table).boundingBox();
  assert.ok(box && box.x >= 0 && box.x + box.width <= vp.width + 1, `${table} fits the ${vp.width} px window: ${JSON.stringify(box)}`);
  const inner = await page.locator(table).evaluate((t) => t.scrollWidth - t.clientWidth);
  assert.ok(inner <= 1, `${table} does not overflow itself (${inner} px)`);
}

/** Runs `main`; on a failure prints the error, where the page was, a screenshot named
 * `failure` and what the page showed, and exits 1. */
function run(main, failure = "failure") {
  main().catch(async (e) => {
    console.error(e && e.stack ? e.stack : e);
    if (current && SCREENS) {
      console.error(`at ${current.url()}`);
      await shot(current, failure).catch(() => {});
      const text = await current.locator("body").innerText().catch(() => "");
      console.error(`the page showed:\n${text.slice(0, 3000)}`);
    }
    process.exit(1);
  });
}

module.exports = { URL0, TOKEN, SCREENS, launch, watch, signIn, shot, apiCall, noSideways, run };
