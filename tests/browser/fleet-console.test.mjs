// The console's hub and its large-fleet parts, in Chromium as a user meets
// them, against the simulator: five tabs on one client and one poll loop
// (counted at the simulator) seeing the same waits live; a reload and a
// browser restart in the middle of a wait, taken up again from IndexedDB (no
// second PUT, no token stored); the hub in the page where there is no
// SharedWorker; 100,000 nodes with 1% churn scrolled and filtered, with frame
// times recorded (printed, never a pass/fail criterion); a large wait started
// by selecting every node of a filter, with its screenshot; a failed
// deploy's history; a power action waited; the charts moving.
//
// Screenshots go to target/console/; with UPDATE_SCREENSHOTS=1 the large
// wait's also to docs/console-fleet.png and the history's to
// docs/console-history.png (docs/console.md's pictures), as console.test.mjs does
// with docs/console.png. Frame times go to
// target/console/frames.json and the test's diagnostics.

import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup.mjs';
import { demoFleet } from '../../www/demo-fleet.mjs';
import { startConsoleServer } from '../../www/server.mjs';
import { collectProblems } from '../runtimes/pages.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHOTS = join(ROOT, 'target', 'console');
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const TIMING = { verifying: 400, deploying: 1500, 'wait call-back': 1000, cleaning: 800, power: 600 };
// Bounds, not budgets (a step takes seconds; other suites run beside this one on a loaded machine).
const STEP_TIMEOUT = 60_000;

const profiles = [];
const servers = [];
let context;

/** A Chromium with a profile of its own (IndexedDB and the SharedWorker live in it). */
async function launch(profile = mkdtempSync(join(tmpdir(), 'ironic-wait-fleet-'))) {
  if (!profiles.includes(profile)) profiles.push(profile);
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  ctx.profile = profile;
  return ctx;
}

before(async () => {
  context = await launch();
});

after(async () => {
  await context?.close();
  for (const s of servers) await s.close();
  for (const p of profiles) rmSync(p, { recursive: true, force: true });
});

async function serve(scenario) {
  const server = await startConsoleServer({ scenario });
  servers.push(server);
  return server;
}

/** Stops a large fleet's server at its test's end (hundreds of MB), rather than at the file's. */
async function release(server) {
  servers.splice(servers.indexOf(server), 1);
  await server.close();
}

/** A tab of the console, ready (its table listed); `problems` collects console errors, page errors and dialogs. */
async function openTab(server, ctx = context, { init } = {}) {
  const page = await ctx.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);
  collectProblems(page);
  if (init) await page.addInitScript(init);
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

const names = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(2, '0')}`);
const tick = async (page, list) => {
  for (const name of list) await page.locator(`#node-rows tr[data-name="${name}"] input[type="checkbox"]`).check();
};
const newestPanel = (page) => page.locator('#waits > .wait-panel').first();

/** Selects `list`, sets the form, presses Run; resolves to the new wait's id. */
async function run(page, list, action, { timeout = 300, poll = 0.3 } = {}) {
  const before = await page.locator('#waits > .wait-panel').count();
  await tick(page, list);
  await page.selectOption('#action', action);
  await page.fill('#timeout', String(timeout));
  await page.fill('#poll', String(poll));
  await page.click('#run');
  await page.waitForFunction((n) => document.querySelectorAll('#waits > .wait-panel').length > n, before);
  return newestPanel(page).getAttribute('data-wait-id');
}

const panel = (page, id) => page.locator(`#waits > .wait-panel[data-wait-id="${id}"]`);
const untilStatus = (page, id, status, timeout = 120_000) =>
  page.waitForFunction(
    ([i, s]) => document.querySelector(`#waits > .wait-panel[data-wait-id="${i}"]`)?.dataset.status === s,
    [id, status],
    { timeout },
  );

/** Resolves once `condition()` (on this side: the simulator's log, say) holds; fails after `ms`. */
async function until(condition, what, ms = STEP_TIMEOUT) {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${what}: not so after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What IndexedDB holds for the console, read from the page. */
const storedWaits = (page) =>
  page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const open = indexedDB.open('ironic-wait-console', 1);
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          const all = db.transaction('waits').objectStore('waits').getAll();
          all.onsuccess = () => {
            db.close();
            resolve(all.result);
          };
        };
      }),
  );

/** List requests of the table and the waits (their first pages: one a listing) since sim time `t`. */
const listings = (server, since = 0) =>
  server.sim.log({ method: 'GET', path: '/v1/nodes' }).filter((e) => e.t >= since && !e.query.includes('marker='));

test('five tabs are served by one hub: one client, one poll loop (counted at the simulator), the same waits live in each', {
  timeout: 300_000,
}, async (t) => {
  const server = await serve({
    timing: TIMING,
    nodes: [
      ...names('a', 40).map((name) => ({ name, provision_state: 'available' })),
      ...names('m', 20).map((name) => ({ name, provision_state: 'manageable' })),
    ],
    // The deploy below stays under way until it is cancelled, however long the tabs take to look.
    transitions: [{ node: ['a01', 'a02', 'a03'], action: 'deploy', stall: true }],
  });
  const tabs = [await openTab(server)];
  assert.equal(await tabs[0].getAttribute('body', 'data-hub'), 'shared');

  // The hub's own clock: its fleet chart takes a point every 2 s (a timer of the hub, as its
  // poll loop's rounds are). The listings over three of its intervals: at least one round of
  // the table's two watches, and at most what one loop can make, a round per interval and one
  // more (two listings a round: the change feed and the other columns). Five loops would make
  // five times that.
  const points = async () => Number(await tabs[0].getAttribute('#fleet-chart', 'data-points'));
  const during = async (intervals) => {
    await until(async () => (await points()) >= 1, 'a first point of the chart');
    const p = await points();
    const since = server.sim.requests().next;
    await until(async () => (await points()) >= p + intervals, `${intervals} more points of the chart`, 120_000);
    return server.sim.log({ since, method: 'GET', path: '/v1/nodes' }).filter((e) => !e.query.includes('marker=')).length;
  };
  /** The change feed's first listings (a new watch of the table starts with one; its later rounds ask for changes). */
  const feedStarts = () =>
    listings(server).filter((e) => !new URLSearchParams(e.query).get('fields').includes('power_state') && !e.query.includes('sort_key='));
  const one = await during(3);
  for (let i = 1; i < 5; i++) tabs.push(await openTab(server));
  for (const tab of tabs) assert.equal(await tab.getAttribute('body', 'data-hub'), 'shared');
  const five = await during(3);
  t.diagnostic(`listings over three of the hub's 2 s intervals: one tab ${one}, five tabs ${five}`);
  assert.ok(one >= 2, `one tab's table lists every round: ${one}`);
  assert.ok(five <= 2 * (3 + 1), `five tabs cost what one does: ${five} listings against ${one}`);
  assert.equal(server.sim.log({ method: 'GET', path: '/v1' }).length, 1, 'one client: one version negotiation');
  assert.equal(feedStarts().length, 1, 'one change feed: started once, whatever the tabs');

  // A wait started in one tab shows in every tab, live, and is cancelled from another.
  const id = await run(tabs[0], ['a01', 'a02', 'a03'], 'deploy', { timeout: 0 });
  for (const tab of tabs) {
    await tab.waitForFunction(
      (i) =>
        [...document.querySelectorAll(`#waits > .wait-panel[data-wait-id="${i}"] .run-rows > li`)].some(
          (li) => li.dataset.state === 'wait call-back' || li.dataset.state === 'deploying',
        ),
      id,
    );
  }
  await panel(tabs[2], id).locator('.wait-cancel').click();
  for (const tab of tabs) {
    await untilStatus(tab, id, 'cancelled');
    assert.match(
      await panel(tab, id).locator('.run-status').textContent(),
      /the console stopped waiting, but the deploy action goes on in Ironic/,
    );
  }
  assert.equal(server.sim.log({ method: 'PUT' }).length, 3, 'one PUT per node, whatever the tabs');
  for (const tab of tabs) assert.deepEqual(tab.problems, []);
  for (const tab of tabs) await tab.close();
});

test('several waits at once, each with its own panel, counts, chart and cancel', { timeout: 300_000 }, async () => {
  // The simulator's clock moves by hand: the deploys are still under way when the manage is cancelled.
  const server = await serve({
    manualClock: true,
    timing: { ...TIMING, deploying: 2500 },
    nodes: [
      ...names('a', 4).map((name) => ({ name, provision_state: 'available' })),
      ...names('e', 2).map((name) => ({ name, provision_state: 'enroll' })),
    ],
    transitions: [{ node: 'e01', action: 'manage', stall: true }],
  });
  const page = await openTab(server);
  const deploy = await run(page, ['a01', 'a02'], 'deploy');
  await page.click('#clear-selection');
  const manage = await run(page, ['e01', 'e02'], 'manage', { timeout: 0 });
  await page.click('#clear-selection');
  const second = await run(page, ['a03', 'a04'], 'deploy');
  assert.equal(await page.locator('#waits > .wait-panel[data-status="running"]').count(), 3);
  // Cancelling one leaves the others running.
  server.sim.advance(TIMING.verifying);
  await page.waitForFunction(
    (i) => document.querySelector(`#waits > .wait-panel[data-wait-id="${i}"] .run-rows > li[data-outcome="reached"]`) !== null,
    manage,
  );
  await panel(page, manage).locator('.wait-cancel').click();
  await untilStatus(page, manage, 'cancelled');
  assert.deepEqual(
    await panel(page, manage)
      .locator('.run-rows > li')
      .evaluateAll((lis) => lis.map((li) => [li.querySelector('.run-name').textContent, li.dataset.outcome])),
    [
      ['e01', 'aborted'],
      ['e02', 'reached'],
    ],
  );
  assert.equal(await panel(page, deploy).getAttribute('data-status'), 'running');
  server.sim.advance(60_000);
  await untilStatus(page, deploy, 'done');
  await untilStatus(page, second, 'done');
  for (const id of [deploy, second]) {
    assert.match(await panel(page, id).locator('.run-status').textContent(), /^All 2 node\(s\) reached active/);
    assert.ok(Number(await panel(page, id).locator('.wait-chart').getAttribute('data-points')) >= 2);
  }
  assert.equal(server.sim.log({ method: 'PUT' }).length, 6);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a reload mid-wait: the wait is taken up again from IndexedDB and ends as it would have, with no second PUT; no token is stored', {
  timeout: 300_000,
}, async () => {
  // The simulator's clock moves by hand: the deploy is under way until the reloaded page has taken the wait up.
  const server = await serve({
    manualClock: true,
    timing: { ...TIMING, deploying: 2500, 'wait call-back': 2000 },
    nodes: names('a', 3).map((name) => ({ name, provision_state: 'available' })),
  });
  const page = await openTab(server);
  const token = await page.getAttribute('meta[name="console-token"]', 'content');
  const id = await run(page, ['a01', 'a02', 'a03'], 'deploy', { timeout: 120 });
  // Its checkpoint after the PUTs is kept (the first one, before them, is the call itself).
  await page.waitForFunction((i) => Number(document.querySelector(`#waits > .wait-panel[data-wait-id="${i}"]`)?.dataset.saved) >= 2, id);
  assert.equal(await panel(page, id).getAttribute('data-persisted'), 'true');

  const records = await storedWaits(page);
  assert.equal(records.length, 1);
  const [record] = records;
  assert.equal(record.id, id);
  const checkpoint = JSON.parse(record.checkpoint);
  assert.equal(checkpoint.method, 'provision');
  assert.equal(checkpoint.endpoint, server.url);
  // Nothing in the browser's storage is a credential: not the token, not its header.
  const text = JSON.stringify(records);
  assert.ok(token.length > 20 && !text.includes(token), 'the console token is not stored');
  assert.ok(!/x-console-token|x-auth-token|authorization/i.test(text), 'no header is stored');

  const putsBefore = server.sim.log({ method: 'PUT' }).length;
  assert.equal(putsBefore, 3);
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector(`#waits > .wait-panel[data-wait-id="${id}"]`);
  assert.equal(await panel(page, id).getAttribute('data-resumed'), 'true', 'a new hub took it up from its checkpoint');
  assert.match(await panel(page, id).locator('.wait-meta').textContent(), /taken up again from the checkpoint kept in this browser/);
  server.sim.advance(60_000);
  await untilStatus(page, id, 'done', 180_000);
  assert.match(await panel(page, id).locator('.run-status').textContent(), /^All 3 node\(s\) reached active in \d+\.\d s\.$/);
  assert.deepEqual(
    await panel(page, id)
      .locator('.run-rows > li')
      .evaluateAll((lis) => lis.map((li) => li.dataset.outcome)),
    ['reached', 'reached', 'reached'],
  );
  assert.equal(server.sim.log({ method: 'PUT' }).length, 3, 'no PUT sent twice');
  assert.deepEqual(await storedWaits(page), [], 'a finished wait is no longer kept');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test("a rescue's password is never stored: its wait is kept only once the PUT that carries it is answered", {
  timeout: 300_000,
}, async () => {
  // The simulator's clock moves by hand: the rescue is under way while the browser's storage is read.
  const server = await serve({
    manualClock: true,
    timing: { ...TIMING, rescuing: 3000 },
    nodes: [{ name: 'r1', provision_state: 'active' }],
  });
  const page = await openTab(server);
  await tick(page, ['r1']);
  await page.selectOption('#action', 'rescue');
  await page.fill('#rescue-password', 'hunter2-rescue-secret');
  await page.fill('#poll', '0.3');
  await page.click('#run');
  const p = newestPanel(page);
  await p.waitFor();
  const id = await p.getAttribute('data-wait-id');
  await page.waitForFunction((i) => document.querySelector(`#waits > .wait-panel[data-wait-id="${i}"]`)?.dataset.persisted === 'true', id);
  const records = await storedWaits(page);
  assert.equal(records.length, 1, 'kept, once its PUT was answered');
  assert.ok(!JSON.stringify(records).includes('hunter2-rescue-secret'), 'without the password');
  server.sim.advance(60_000);
  await untilStatus(page, id, 'done');
  assert.equal(server.sim.node('r1').provision_state, 'rescue');
  assert.deepEqual(await storedWaits(page), []);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a browser restart mid-wait: the next browser on the same profile finishes the wait', { timeout: 300_000 }, async () => {
  // The simulator's clock moves by hand: the deploy is under way until the next browser has taken the wait up.
  const server = await serve({
    manualClock: true,
    timing: { ...TIMING, deploying: 2500, 'wait call-back': 2000 },
    nodes: names('a', 2).map((name) => ({ name, provision_state: 'available' })),
  });
  let browser = await launch();
  let page = await openTab(server, browser);
  const id = await run(page, ['a01', 'a02'], 'deploy', { timeout: 120 });
  await page.waitForFunction((i) => Number(document.querySelector(`#waits > .wait-panel[data-wait-id="${i}"]`)?.dataset.saved) >= 2, id);
  await browser.close();
  const closed = server.sim.requests().next;
  browser = await launch(browser.profile);
  try {
    page = await openTab(server, browser);
    await page.waitForSelector(`#waits > .wait-panel[data-wait-id="${id}"][data-resumed="true"]`);
    server.sim.advance(60_000);
    await untilStatus(page, id, 'done', 180_000);
    assert.match(await panel(page, id).locator('.run-status').textContent(), /^All 2 node\(s\) reached active/);
    assert.equal(server.sim.log({ method: 'PUT' }).length, 2, 'no PUT sent twice');
    assert.ok(
      server.sim.log({ since: closed, method: 'GET' }).some((e) => e.path.startsWith('/v1/nodes')),
      'the new browser checked the nodes',
    );
    assert.deepEqual(page.problems, []);
  } finally {
    await browser.close();
  }
});

test('without SharedWorker the hub runs in the page: the console works the same, and a reload still resumes', {
  timeout: 300_000,
}, async () => {
  // The simulator's clock moves by hand: the deploy is under way until the reloaded page has taken the wait up.
  const server = await serve({
    manualClock: true,
    timing: { ...TIMING, deploying: 2500 },
    nodes: names('a', 2).map((name) => ({ name, provision_state: 'available' })),
  });
  const init = () => {
    delete window.SharedWorker;
  };
  const page = await openTab(server, context, { init });
  assert.equal(await page.getAttribute('body', 'data-hub'), 'page');
  assert.equal(await page.textContent('#hub-mode'), 'in this tab (no SharedWorker)');
  const id = await run(page, ['a01', 'a02'], 'deploy', { timeout: 120 });
  await page.waitForFunction((i) => Number(document.querySelector(`#waits > .wait-panel[data-wait-id="${i}"]`)?.dataset.saved) >= 2, id);
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector(`#waits > .wait-panel[data-wait-id="${id}"][data-resumed="true"]`);
  server.sim.advance(60_000);
  await untilStatus(page, id, 'done', 180_000);
  assert.equal(server.sim.log({ method: 'PUT' }).length, 2);
  assert.deepEqual(page.problems, []);
  await page.close();
});

/**
 * Frame times while `action` runs: requestAnimationFrame deltas (p50, p95,
 * max) and long tasks (over 50 ms), measured in the page.
 */
async function frames(page, action) {
  await page.evaluate(() => {
    const f = { deltas: [], long: [] };
    window.frameProbe = f;
    let last = performance.now();
    const step = (now) => {
      if (window.frameProbe !== f) return;
      f.deltas.push(now - last);
      last = now;
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
    f.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) f.long.push(e.duration);
    });
    f.observer.observe({ type: 'longtask' });
  });
  await action();
  return page.evaluate(() => {
    const f = window.frameProbe;
    window.frameProbe = null;
    f.observer.disconnect();
    const d = f.deltas.slice(1).sort((a, b) => a - b);
    const q = (p) => d[Math.min(d.length - 1, Math.floor(p * d.length))] ?? 0;
    const r = (n) => Math.round(n * 10) / 10;
    return {
      frames: d.length,
      p50: r(q(0.5)),
      p95: r(q(0.95)),
      max: r(d.at(-1) ?? 0),
      longTasks: f.long.length,
      longest: r(Math.max(0, ...f.long)),
      longTotal: Math.round(f.long.reduce((a, b) => a + b, 0)),
    };
  });
}

test('100,000 nodes with 1% churning a round: scrolled and filtered smoothly (frame times recorded), only the rows in view in the DOM', {
  timeout: 900_000,
}, async (t) => {
  const server = await serve(demoFleet({ size: 100_000 }));
  const page = await openTab(server);
  const count = () => page.textContent('#node-count');
  await page.waitForFunction(() => document.querySelector('#node-count').textContent === '100,000 of 100,000', null, { timeout: 300_000 });
  // A churn round has reached the table.
  await page.waitForFunction(() => Number(document.querySelector('#node-rows').dataset.changes ?? 0) > 0, null, { timeout: 180_000 });
  const rows = () => page.locator('#node-rows tr').count();
  assert.ok((await rows()) < 100, `virtual rows: ${await rows()} in the DOM for 100,000 nodes`);
  const wrap = page.locator('#table-scroll');
  const box = await wrap.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const figures = {};

  // Churn goes on under the table: a round changes ~1,000 nodes, and they reach it. (The
  // counts per state may well read the same: the demo churn keeps its mix of states.) The
  // idle frames are those of the page meanwhile: 150 of them at least (counted, not timed).
  const applied = async () => Number((await page.getAttribute('#node-rows', 'data-changes')) ?? 0);
  const appliedBefore = await applied();
  figures.idle = await frames(page, () =>
    page.waitForFunction(
      (n) => window.frameProbe.deltas.length > 150 && Number(document.querySelector('#node-rows').dataset.changes ?? 0) >= n,
      appliedBefore + 500,
      { timeout: 180_000 },
    ),
  );
  assert.ok(
    (await applied()) >= appliedBefore + 500,
    `the churn reaches the table: ${appliedBefore} -> ${await applied()} changes applied`,
  );

  figures.wheel = await frames(page, async () => {
    for (let i = 0; i < 100; i++) {
      await page.mouse.wheel(0, 400);
      await page.waitForTimeout(40);
    }
  });
  figures.jumps = await frames(page, async () => {
    for (let i = 0; i < 30; i++) {
      await wrap.evaluate(
        (el, f) => {
          el.scrollTop = f * (el.scrollHeight - el.clientHeight);
        },
        ((i * 7919) % 100) / 100,
      );
      await page.waitForTimeout(120);
    }
  });
  // Wherever it is scrolled, the rows in view are drawn.
  await wrap.evaluate((el) => {
    el.scrollTop = el.scrollHeight / 2;
  });
  await page.waitForFunction(() => {
    const wrapBox = document.querySelector('#table-scroll').getBoundingClientRect();
    return [...document.querySelectorAll('#node-rows tr')].some((tr) => {
      const r = tr.getBoundingClientRect();
      return r.top >= wrapBox.top && r.bottom <= wrapBox.bottom;
    });
  });
  assert.ok((await rows()) < 100);

  // Text search, typed as a person types.
  figures.search = await frames(page, async () => {
    await page.click('#text-filter');
    await page.keyboard.type('rack0123-node00', { delay: 120 });
    // The filter has been applied to the whole fleet.
    await page.waitForFunction(() => /^\d of 100,000$/.test(document.querySelector('#node-count').textContent));
  });
  const found = await page.$$eval('#node-rows tr', (trs) => trs.map((tr) => tr.dataset.name));
  assert.ok(found.length > 0 && found.length <= 10, `rows ${found}`);
  assert.ok(
    found.every((n) => n.startsWith('rack0123-node00')),
    found.join(),
  );
  assert.match(await count(), /^\d of 100,000$/);
  await page.fill('#text-filter', '');

  // A scope filter: Ironic lists only conductor group dc2; the page shows only it meanwhile.
  const since = server.sim.now();
  figures.scope = await frames(page, async () => {
    await page.fill('#group-filter', 'dc2');
    await page.press('#group-filter', 'Enter');
    await page.waitForFunction(() => /^[\d,]+ of 25,000$/.test(document.querySelector('#node-count').textContent), null, {
      timeout: 180_000,
    });
  });
  // The page filters what it has at once; the watch of the new scope lists it.
  await until(
    () => listings(server, since).some((e) => new URLSearchParams(e.query).get('conductor_group') === 'dc2'),
    "the watch's scope is the filter",
    180_000,
  );
  // Every row in view is of dc2 (the group column comes with the fields watch, known from the whole fleet's).
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#node-rows tr .col-conductor-group')].every((td) => td.textContent === 'dc2'),
  );
  figures.scrollScoped = await frames(page, async () => {
    for (let i = 0; i < 50; i++) {
      await page.mouse.wheel(0, 600);
      await page.waitForTimeout(40);
    }
  });
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, 'console-100k.png') });
  await page.fill('#group-filter', '');
  await page.press('#group-filter', 'Enter');
  await page.waitForFunction(() => /of 100,000$/.test(document.querySelector('#node-count').textContent), null, { timeout: 180_000 });

  const lines = Object.entries(figures).map(
    ([phase, f]) =>
      `${phase}: ${f.frames} frames, p50 ${f.p50} ms, p95 ${f.p95} ms, max ${f.max} ms; ${f.longTasks} long tasks (longest ${f.longest} ms, ${f.longTotal} ms in all)`,
  );
  for (const line of lines) t.diagnostic(line);
  console.log(`frame times, 100,000 nodes, 1% churn a round:\n  ${lines.join('\n  ')}`);
  writeFileSync(join(SHOTS, 'frames.json'), `${JSON.stringify(figures, null, 2)}\n`);
  assert.deepEqual(page.problems, []);
  await page.close();
  await release(server);
});

test('select by filter: every available node of conductor group dc2 deployed in one wait, its panel counting (screenshot)', {
  timeout: 900_000,
}, async () => {
  const scenario = demoFleet({ size: 10_000, churn: 0 });
  // A few of them fail, as deploys do.
  const dc2 = scenario.nodes.filter((n) => n.conductor_group === 'dc2' && n.provision_state === 'available');
  const failing = dc2.filter((_, i) => i % 97 === 5).map((n) => n.name);
  scenario.transitions = [{ node: failing, action: 'deploy', fail: 'Deploy step deploy.write_image failed: Image checksum mismatch' }];
  scenario.timing = { ...scenario.timing, deploying: [2000, 5000], 'wait call-back': [2000, 4000] };
  const server = await serve(scenario);
  const page = await openTab(server);
  await page.setViewportSize({ width: 1280, height: 1100 });
  const scoped = server.sim.requests().next;
  await page.selectOption('#state-filter', 'available');
  await page.fill('#group-filter', 'dc2');
  await page.press('#group-filter', 'Enter');
  const n = dc2.length;
  const label = `${n.toLocaleString('en')} of `;
  // The scope's own listing (both watches of it answered), not only the page's filtering of the whole fleet.
  const ofScope = (e) => {
    const q = new URLSearchParams(e.query);
    return q.get('conductor_group') === 'dc2' && q.get('provision_state') === 'available' && e.tEnd !== null;
  };
  await until(
    () => server.sim.log({ since: scoped, method: 'GET', path: '/v1/nodes' }).filter(ofScope).length >= 2,
    "the scope's listings",
    180_000,
  );
  await page.waitForFunction(
    (l) =>
      document.querySelector('#node-count').textContent.startsWith(l) &&
      /^Updated /.test(document.querySelector('#refresh-status').textContent),
    label,
    { timeout: 180_000 },
  );
  assert.equal(await page.textContent('#select-matching'), `Select all ${n.toLocaleString('en')} shown`);
  await page.click('#select-matching');
  assert.match(await page.textContent('#selection'), new RegExp(`^${n.toLocaleString('en')} selected: `));
  await page.selectOption('#action', 'deploy');
  await page.fill('#timeout', '600');
  await page.fill('#poll', '1');
  const since = server.sim.now();
  await page.click('#run');
  const p = newestPanel(page);
  await p.waitFor();
  assert.match(
    await p.locator('.wait-title').textContent(),
    new RegExp(`^deploy · ${n.toLocaleString('en')} node\\(s\\) of provision state available, conductor group dc2$`),
  );
  // The table back on all of dc2, to watch them move.
  await page.selectOption('#state-filter', '');
  const group = scenario.nodes.filter((node) => node.conductor_group === 'dc2').length.toLocaleString('en');
  await page.waitForFunction((g) => document.querySelector('#node-count').textContent === `${g} of ${g}`, group, { timeout: 180_000 });
  // A large wait counts and lists its failures rather than a row per node.
  await page.waitForFunction(
    () => {
      const c = Object.fromEntries(
        [...document.querySelectorAll('#waits > .wait-panel:first-child .summary li')].map((li) => [
          li.dataset.group,
          Number(li.querySelector('strong').textContent.replace(/,/g, '')),
        ]),
      );
      return c.reached > 0 && c.waiting > 0 && c.failed > 0;
    },
    null,
    { timeout: 180_000 },
  );
  await page.waitForTimeout(1000);
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, 'console-fleet.png') });
  if (process.env.UPDATE_SCREENSHOTS) {
    mkdirSync(join(ROOT, 'docs'), { recursive: true });
    copyFileSync(join(SHOTS, 'console-fleet.png'), join(ROOT, 'docs', 'console-fleet.png'));
  }
  const id = await p.getAttribute('data-wait-id');
  await untilStatus(page, id, 'done', 600_000);
  const summary = await panel(page, id)
    .locator('.summary li')
    .evaluateAll((lis) =>
      Object.fromEntries(lis.map((li) => [li.dataset.group, Number(li.querySelector('strong').textContent.replace(/,/g, ''))])),
    );
  assert.deepEqual(summary, { waiting: 0, reached: n - failing.length, failed: failing.length, 'timed-out': 0 });
  assert.equal(await panel(page, id).locator('.failures-title').textContent(), `Failures: ${failing.length}`);
  const failed = await panel(page, id)
    .locator('.run-rows > li')
    .evaluateAll((lis) => lis.map((li) => [li.querySelector('.run-name').textContent, li.querySelector('.run-error')?.textContent]));
  assert.deepEqual(failed.map(([name]) => name).sort(), [...failing].sort());
  assert.ok(failed.every(([, e]) => e === 'Deploy step deploy.write_image failed: Image checksum mismatch'));
  assert.equal((await panel(page, id).locator('.wait-chart').getAttribute('data-points')) > 2, true, 'its chart has points over time');
  assert.equal(server.sim.log({ method: 'PUT' }).length, n, 'one PUT per node');
  // The wait listed the table's scope (less the state it moves the nodes out of), no GET per node.
  assert.ok(
    listings(server, since).some(
      (e) => new URLSearchParams(e.query).get('conductor_group') === 'dc2' && !e.query.includes('provision_state='),
    ),
  );
  // A node that moves while a listing pages the list by stamp moves to a
  // page already read; the loop asks for such a node by a GET (see
  // src/poll/feed.rs), so a few GETs may come, never one a node.
  const gets = server.sim.log({ method: 'GET', path: '/v1/nodes/*' }).filter((e) => e.t >= since);
  assert.ok(gets.length <= n / 20, `${gets.length} GETs of ${n} nodes`);
  assert.deepEqual(page.problems, []);
  await page.close();
  await release(server);
});

test("a failed deploy's history, opened from its row: the error, when, and the time in each state; below API 1.78 it says so", {
  timeout: 300_000,
}, async () => {
  const failure = 'Deploy step deploy.write_image failed: Image download timed out after 3 attempts';
  const server = await serve({
    timing: TIMING,
    nodes: [
      { name: 'web-1', provision_state: 'available' },
      { name: 'web-2', provision_state: 'available' },
    ],
    transitions: [{ node: 'web-1', action: 'deploy', fail: failure }],
  });
  const page = await openTab(server);
  const id = await run(page, ['web-1', 'web-2'], 'deploy');
  await untilStatus(page, id, 'done');
  // The wait's report brought the failed node's last events (diagnose), under its row.
  const failedRow = panel(page, id).locator('.run-rows > li[data-outcome="failed"]');
  await failedRow.locator('.run-history summary').click();
  assert.match(await failedRow.locator('.run-history').textContent(), new RegExp(`ERROR deploying: ${failure}`));
  assert.equal(await panel(page, id).locator('.run-rows > li[data-outcome="reached"] .run-history').count(), 0);
  await page.locator('#node-rows tr[data-name="web-1"] .col-name button').click();
  await page.waitForSelector('#detail-panel[data-loaded="true"]');
  assert.equal(await page.textContent('#detail-title'), 'web-1');
  assert.equal(await page.textContent('#detail-fields .field-provision-state'), 'deploy failed');
  assert.equal(await page.textContent('#detail-fields .field-last-error'), failure);
  const events = await page.$$eval('#detail-history .timeline > li', (lis) =>
    lis.map((li) => ({
      severity: li.dataset.severity,
      type: li.dataset.type,
      text: li.querySelector('.event-text').textContent,
      time: li.querySelector('time').getAttribute('datetime'),
    })),
  );
  const errors = events.filter((e) => e.severity === 'ERROR');
  assert.equal(errors.length, 1, JSON.stringify(events));
  assert.equal(errors[0].type, 'deploying');
  assert.equal(errors[0].text, failure);
  assert.ok(!Number.isNaN(Date.parse(errors[0].time)), 'with its time');
  assert.ok(
    events.some((e) => e.type === 'deployment_start'),
    "the flow's start too",
  );
  const stints = await page.$$eval('#detail-history .stints > li', (lis) => lis.map((li) => li.textContent));
  assert.ok(
    stints.some((s) => /^deploying \d+(\.\d)? s/.test(s)),
    `time in deploying: ${stints}`,
  );
  assert.ok(
    stints.some((s) => /^deploy failed now, for /.test(s)),
    `and where it is now: ${stints}`,
  );
  assert.equal(await page.locator('#detail-history .event-error').count(), 1, 'the error marked');
  mkdirSync(SHOTS, { recursive: true });
  await page.locator('#detail-panel').screenshot({ path: join(SHOTS, 'console-history.png') });
  if (process.env.UPDATE_SCREENSHOTS) copyFileSync(join(SHOTS, 'console-history.png'), join(ROOT, 'docs', 'console-history.png'));
  assert.deepEqual(page.problems, []);
  await page.close();

  // An Ironic older than 1.78 has no history: the panel says so, the fields still show.
  const old = await serve({ maxVersion: '1.77', nodes: [{ name: 'old-1', provision_state: 'active' }] });
  const oldPage = await openTab(old);
  await oldPage.locator('#node-rows tr[data-name="old-1"] .col-name button').click();
  await oldPage.waitForSelector('#detail-panel[data-loaded="true"]');
  assert.equal(await oldPage.textContent('#detail-fields .field-provision-state'), 'active');
  assert.equal(
    await oldPage.textContent('#detail-history .history-unsupported'),
    'Node history needs API version 1.78; the server speaks 1.77',
  );
  assert.equal(old.sim.log({ path: '/v1/nodes/*/history' }).length, 0, 'not asked for');
  assert.equal(await oldPage.isDisabled('#shard-filter'), true, 'the shard filter needs 1.82');
  assert.deepEqual(oldPage.problems, []);
  await oldPage.close();
});

test("power off on the selection, waited: its panel, the table's power column, a node whose power action fails", {
  timeout: 300_000,
}, async () => {
  const server = await serve({
    timing: TIMING,
    nodes: names('p', 3).map((name) => ({ name, provision_state: 'active', power_state: 'power on' })),
    transitions: [{ node: 'p03', action: 'power off', fail: 'IPMI power off failed: BMC not answering' }],
  });
  const page = await openTab(server);
  await tick(page, ['p01', 'p02', 'p03']);
  await page.fill('#timeout', '30');
  await page.fill('#poll', '0.3');
  await page.click('#power-buttons button[data-power="power off"]');
  const p = newestPanel(page);
  await p.waitFor();
  const id = await p.getAttribute('data-wait-id');
  assert.equal(await p.getAttribute('data-kind'), 'power');
  await untilStatus(page, id, 'done');
  const outcomes = await p
    .locator('.run-rows > li')
    .evaluateAll((lis) =>
      Object.fromEntries(lis.map((li) => [li.querySelector('.run-name').textContent, [li.dataset.outcome, li.dataset.state]])),
    );
  assert.deepEqual(outcomes, { p01: ['reached', 'power off'], p02: ['reached', 'power off'], p03: ['failed', 'power on'] });
  assert.match(
    await p.locator('.run-rows > li[data-outcome="failed"] .run-error').textContent(),
    /IPMI power off failed: BMC not answering/,
  );
  assert.match(await p.locator('.run-status').textContent(), /^2 of 3 node\(s\) reached power off/);
  await page.waitForFunction(() =>
    ['p01', 'p02'].every((n) => document.querySelector(`#node-rows tr[data-name="${n}"] .col-power-state`).textContent === 'power off'),
  );
  const puts = server.sim.log({ method: 'PUT', path: '/v1/nodes/*/states/power' });
  assert.equal(puts.length, 3);
  assert.equal(server.sim.node('p01').power_state, 'power off');
  assert.deepEqual(
    page.problems.filter((x) => !/status of 4\d\d/.test(x)),
    [],
  );
  await page.close();
});

test("the charts: the fleet by provision state follows a churning fleet; a wait's chart its outcomes over time", {
  timeout: 300_000,
}, async () => {
  const server = await serve(demoFleet({ size: 2000, churn: 0.05 }));
  const page = await openTab(server);
  const chart = page.locator('#fleet-chart');
  await page.waitForFunction(() => Number(document.querySelector('#fleet-chart').dataset.points) >= 2, null, { timeout: 120_000 });
  const first = {
    points: Number(await chart.getAttribute('data-points')),
    shape: await chart.locator('path.area').evaluateAll((ps) => ps.map((p) => p.getAttribute('d')).join()),
  };
  await page.waitForFunction((n) => Number(document.querySelector('#fleet-chart').dataset.points) >= n + 3, first.points, {
    timeout: 120_000,
  });
  const later = await chart.locator('path.area').evaluateAll((ps) => ps.map((p) => [p.dataset.key, p.getAttribute('d')]));
  assert.notEqual(later.map(([, d]) => d).join(), first.shape, 'the areas moved');
  assert.ok(later.some(([k]) => k === 'active') && later.some(([k]) => k === 'available'), later.map(([k]) => k).join());
  assert.ok((await page.locator('#fleet-legend li[data-key="active"]').count()) === 1);

  const available = await page.$$eval('#node-rows tr[data-state="available"]', (trs) => trs.slice(0, 4).map((tr) => tr.dataset.name));
  const id = await run(page, available, 'manage', { poll: 0.3 });
  await untilStatus(page, id, 'done');
  const wait = panel(page, id).locator('.wait-chart');
  assert.ok(Number(await wait.getAttribute('data-points')) >= 2);
  // Every node ends in one of its areas (the churn may take one of them first: then it is refused, a failure).
  const legend = await panel(page, id)
    .locator('.chart-legend li')
    .evaluateAll((lis) => Object.fromEntries(lis.map((li) => [li.dataset.key, Number(li.querySelector('strong').textContent)])));
  assert.equal(legend.waiting, 0);
  assert.equal(legend.reached + legend.failed + legend.other, available.length, JSON.stringify(legend));
  assert.ok(legend.reached > 0);
  assert.deepEqual(page.problems, []);
  await page.close();
});
