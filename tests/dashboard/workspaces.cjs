// The workspaces view as a person uses it, in the Debian Chromium driven by playwright-core.
// Run by tests/dashboard/workspaces.rs with the same variables as scenarios.cjs, against a
// server with sim-1. Each scenario prints `ok N name` and saves screenshots.
"use strict";

const assert = require("assert");

const { URL0, TOKEN, launch, watch, signIn, shot, apiCall, noSideways, run } = require("./common.cjs");
const WAIT = { timeout: 60_000 };

const V1 = {
  "login.yaml": "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Wi-Fi\"\n",
  "lib/old.yaml": "appId: com.android.settings\n---\n- back\n",
  "config.yaml": "flows:\n  - \"*\"\n",
};
const V2 = {
  "login.yaml": "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Bluetooth\"\n",
  "new.yaml": "appId: com.android.settings\n---\n- launchApp\n",
  "config.yaml": "flows:\n  - \"*\"\n",
};

async function main() {
  const { ctx, page } = await launch({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const seen = watch(ctx, page);

  await page.goto(URL0);
  await signIn(page, WAIT);

  // 1. The list: empty, then a stored workspace with its latest version.
  await page.click("header.top nav a[data-nav=workspaces]");
  await page.waitForURL(/#\/workspaces$/, WAIT);
  await page.waitForSelector("h1:text('Workspaces')", WAIT);
  assert.equal(await page.locator("header.top nav a.active").innerText(), "Workspaces");
  assert.match(await page.locator("table.workspaces tbody").innerText(), /No workspaces yet/);
  const created = await apiCall(page, "/v1/workspaces", "POST", { name: "settings suite", files: V1 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id;
  const next = await apiCall(page, `/v1/workspaces/${id}/versions`, "POST", { files: V2 });
  assert.equal(next.status, 201, JSON.stringify(next.body));
  await page.reload();
  const listRow = page.locator(`table.workspaces tbody tr[data-id="${id}"]`);
  await listRow.waitFor(WAIT);
  const cells = await listRow.locator("td").allInnerTexts();
  assert.deepEqual(cells.slice(0, 5), ["settings suite", "2", "3", "v2", "uploaded"], JSON.stringify(cells));
  await noSideways(page, "table.workspaces", "#/workspaces");
  await shot(page, "w1-workspaces");
  console.log("ok 1 #/workspaces lists a stored workspace's latest version");

  // 2. A workspace's versions, and the latest against the one before, file by file.
  await listRow.locator("a").click();
  await page.waitForURL(new RegExp(`#/workspaces/${id}$`), WAIT);
  await page.waitForSelector("h1:text('settings suite')", WAIT);
  assert.equal(await page.locator("table.workspace-versions tbody tr").count(), 2);
  await page.waitForSelector(".diff-summary", WAIT);
  assert.equal(await page.locator(".diff-summary").innerText(), "3 of 4 file(s) differ.");
  const file = (p) => page.locator(`.files details.file[data-path="${p}"]`);
  assert.equal(await file("login.yaml").getAttribute("data-status"), "changed");
  assert.equal(await file("new.yaml").getAttribute("data-status"), "added");
  assert.equal(await file("lib/old.yaml").getAttribute("data-status"), "removed");
  assert.equal(await file("config.yaml").getAttribute("data-status"), "same");
  assert.deepEqual(await file("login.yaml").locator(".line-diff .del").allInnerTexts(), ['- - assertVisible: "Wi-Fi"']);
  assert.deepEqual(await file("login.yaml").locator(".line-diff .add").allInnerTexts(), ['+ - assertVisible: "Bluetooth"']);
  assert.equal(await file("login.yaml").locator(".line-diff .ctx").count(), 4, "the unchanged lines are shown as they are");
  await shot(page, "w2-workspace-diff");
  console.log("ok 2 a workspace's versions, and the latest compared with the one before, file by file");

  // 3. Another pair: a version with itself is the same; older against newer swaps sides.
  await page.selectOption("#diff-a", "2");
  await page.waitForFunction(() => document.querySelector(".diff-summary").textContent === "The files are the same.", null, WAIT);
  await page.selectOption("#diff-b", "1");
  await page.waitForFunction(() => document.querySelector(".diff-summary").textContent === "3 of 4 file(s) differ.", null, WAIT);
  assert.equal(await file("new.yaml").getAttribute("data-status"), "removed");
  assert.deepEqual(await file("login.yaml").locator(".line-diff .add").allInnerTexts(), ['+ - assertVisible: "Wi-Fi"']);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(200);
  await noSideways(page, "table.workspace-versions", "a workspace's page");
  await shot(page, "w3-workspace-390");
  console.log("ok 3 any two versions compared, in a phone-sized window too");

  seen.check();
  await ctx.close();
}

run(main, "w-failure");
