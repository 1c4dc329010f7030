// The console in a real browser (Debian's Chromium, driven by playwright-core)
// against the embedded simulator (and once through the IRONIC_URL proxy):
// runs with wait, failures, Cancel (checked in the simulator's request log),
// allocations, readable errors, server text as text, and the page under its
// CSP with no console errors. The hub, the large fleet, reloads and several
// tabs are in fleet-console.test.mjs.
//
// The mid-wait screenshot goes to target/console/console.png; with
// UPDATE_SCREENSHOTS=1 also to docs/console.png (the README's and docs/console.md's picture).

import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup.mjs';
import { demoFleet } from '../../www/demo-fleet.mjs';
import { CSP, startConsoleServer } from '../../www/server.mjs';
import { startIronic } from '../node/harness.mjs';

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
// Bounds, not budgets: a test takes 2 to 10 s, a wait in it a few seconds at most; a loaded
// machine running other suites beside this one must not reach them by chance.
const TEST_TIMEOUT = 120_000;
const STEP_TIMEOUT = 60_000;
// Quick phases for the scripted scenarios (the demo fleet keeps its own).
const TIMING = Object.fromEntries(
  ['verifying', 'deploying', 'wait call-back', 'deleting', 'cleaning', 'inspecting', 'adopting', 'rescuing', 'unrescuing', 'servicing'].map(
    (state) => [state, 400],
  ),
);

let server;
let context;
let profile;
let page;
let problems; // console errors, page errors and dialogs of the current test

before(async () => {
  server = await startConsoleServer({ scenario: { nodes: [] } });
  profile = mkdtempSync(join(tmpdir(), 'ironic-wait-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
    timeout: 60_000,
  });
});

after(async () => {
  await context?.close();
  await server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

beforeEach(async () => {
  problems = [];
  page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
});

afterEach(async () => {
  // A wait left running would be taken up again by the next test's page (the
  // hub keeps running waits in IndexedDB): cancel them, as a user would.
  if (page && !page.isClosed()) {
    for (const button of await page.locator('#waits .wait-cancel:visible').all()) await button.click().catch(() => {});
    await page
      .waitForFunction(() => !document.querySelector('#waits .wait-panel[data-status="running"]'), null, { timeout: 30_000 })
      .catch(() => {});
  }
  await page?.close();
});

/** Resolves once `condition()` (on this side: the simulator's log, say) holds; fails after `ms`. */
async function until(condition, what, ms = STEP_TIMEOUT) {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not so after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Loads `scenario` into the simulator and opens the page; resolves when the table is filled. */
async function open(scenario) {
  server.sim.load(scenario);
  const response = await page.goto(server.url);
  await page.waitForSelector('body[data-ready="true"]');
  return response;
}

const row = (name) => page.locator(`#node-rows tr[data-name="${name}"]`);
// The newest wait's panel comes first.
const PANEL = '#waits > .wait-panel:first-child';
const runRow = (uuid) => page.locator(`${PANEL} .run-rows > li[data-uuid="${uuid}"]`);
const runStatus = () => page.textContent(`${PANEL} .run-status`);
const uuidOf = (name) => server.sim.node(name).uuid;

/** Ticks the nodes, sets the form and presses Run. */
async function runAction(names, action, { timeout = 30, poll = 0.1, steps, password } = {}) {
  for (const name of names) await row(name).locator('input[type="checkbox"]').check();
  await page.selectOption('#action', action);
  await page.fill('#timeout', String(timeout));
  if (await page.isEnabled('#poll')) await page.fill('#poll', String(poll));
  if (steps) await page.fill('#steps', steps);
  if (password) await page.fill('#rescue-password', password);
  await page.click('#run');
}

/** Waits until every named node's run row has settled; returns { name: outcome }. */
async function settled(names) {
  const uuids = names.map(uuidOf);
  await page.waitForFunction(
    (ids) =>
      ids.every(
        (id) =>
          (document.querySelector(`#waits > .wait-panel:first-child .run-rows > li[data-uuid="${id}"]`)?.dataset.outcome ?? 'waiting') !==
          'waiting',
      ),
    uuids,
  );
  const out = {};
  for (const [i, name] of names.entries()) out[name] = await runRow(uuids[i]).getAttribute('data-outcome');
  return out;
}

const summary = () =>
  page.$$eval(`${PANEL} .summary li`, (items) =>
    Object.fromEntries(items.map((li) => [li.dataset.group, Number(li.querySelector('strong').textContent)])),
  );

test('manage with wait takes three nodes to manageable, through verifying', { timeout: TEST_TIMEOUT }, async () => {
  // The simulator's clock moves by hand: the nodes stay in verifying until the page has seen them there.
  await open({
    manualClock: true,
    timing: TIMING,
    nodes: [
      { name: 'e1', provision_state: 'enroll' },
      { name: 'e2', provision_state: 'enroll' },
      { name: 'e3', provision_state: 'enroll' },
      { name: 'm1', provision_state: 'manageable' },
    ],
  });
  assert.equal(await page.locator('#node-rows tr').count(), 4);
  assert.equal(await page.textContent('#selection'), 'No nodes selected: tick them in the table.');

  await runAction(['e1', 'e2', 'e3'], 'manage');
  await page.waitForFunction(
    (ids) =>
      ids.every(
        (id) => document.querySelector(`#waits > .wait-panel:first-child .run-rows > li[data-uuid="${id}"]`)?.dataset.state === 'verifying',
      ),
    ['e1', 'e2', 'e3'].map(uuidOf),
  );
  server.sim.advance(TIMING.verifying);
  assert.deepEqual(await settled(['e1', 'e2', 'e3']), { e1: 'reached', e2: 'reached', e3: 'reached' });

  for (const name of ['e1', 'e2', 'e3']) {
    const r = runRow(uuidOf(name));
    assert.equal(await r.getAttribute('data-state'), 'manageable');
    assert.match(await r.getAttribute('data-seen'), /verifying > manageable$/, 'the row moved through verifying');
    assert.deepEqual(await r.locator('.step').evaluateAll((s) => s.map((e) => [e.textContent, e.className])), [
      ['verifying', 'step step-done'],
      ['manageable', 'step step-done'],
    ]);
  }
  assert.deepEqual(await summary(), { waiting: 0, reached: 3, failed: 0, 'timed-out': 0 });
  assert.match(await runStatus(), /^All 3 node\(s\) reached manageable in \d+\.\d s\.$/);
  await page.waitForFunction(() =>
    ['e1', 'e2', 'e3'].every((n) => document.querySelector(`#node-rows tr[data-name="${n}"]`).dataset.state === 'manageable'),
  );
  assert.equal(await row('m1').getAttribute('data-state'), 'manageable');
  assert.equal(server.sim.log({ method: 'PUT' }).length, 3);
  assert.equal(await page.isEnabled('#run'), true, 'Run is available again');
  assert.deepEqual(problems, []);
});

test("the table is fed by the hub's watches (no refresh timer, no request per node), and pauses while hidden", {
  timeout: TEST_TIMEOUT,
}, async () => {
  await open({
    nodes: [
      { name: 'n1', provision_state: 'enroll' },
      { name: 'n2', provision_state: 'available' },
    ],
  });
  const lists = () => server.sim.log({ method: 'GET', path: '/v1/nodes' });
  await until(() => lists().length >= 3, 'three listings');
  // Two watches of the scope on the client's loop: the change feed (its
  // fields, stamp included), and one of the other columns, listed in full.
  const feed = ['uuid', 'name', 'provision_state', 'target_provision_state', 'last_error', 'provision_updated_at'].sort();
  const columns = [
    ...feed,
    'power_state',
    'target_power_state',
    'maintenance',
    'resource_class',
    'fault',
    'conductor_group',
    'owner',
    'shard',
  ].sort();
  for (const e of lists()) {
    const fields = new URLSearchParams(e.query).get('fields').split(',').sort();
    assert.ok([feed.join(), columns.join()].includes(fields.join()), `fields of ${e.query}`);
  }
  assert.ok(
    lists().some((e) => e.query.includes('sort_key=provision_updated_at')),
    'the feed asks for what changed',
  );
  assert.equal(server.sim.log({ method: 'GET', path: '/v1/nodes/*' }).length, 0, 'no request per node');

  // A change in Ironic shows up without a reload.
  server.sim.setNode('n1', { provision_state: 'manageable' });
  await page.waitForFunction(() => document.querySelector('#node-rows tr[data-name="n1"]').dataset.state === 'manageable');

  // A second tab on another scope (the available nodes) keeps the hub's loop going: the rounds
  // of its change feed are the clock by which this tab's silence is measured.
  const hasState = (e) => new URLSearchParams(e.query).has('provision_state');
  const ours = () => lists().filter((e) => !hasState(e));
  const otherRounds = () =>
    lists().filter(
      (e) => new URLSearchParams(e.query).get('provision_state') === 'available' && e.query.includes('sort_key=provision_updated_at'),
    ).length;
  const other = await context.newPage();
  try {
    await other.goto(server.url);
    await other.waitForSelector('body[data-ready="true"]');
    await other.selectOption('#state-filter', 'available');
    await until(() => otherRounds() >= 1, "the other tab's scope listed");

    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { value: true, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await page.waitForFunction(() => document.querySelector('#refresh-status').textContent === 'Paused while the page is hidden');
    // Two rounds of the hub's loop: it has heard of it, and a listing that was under way is over.
    let rounds = otherRounds();
    await until(() => otherRounds() >= rounds + 2, 'two rounds of the other scope');
    const before = ours().length;
    rounds = otherRounds();
    await until(() => otherRounds() >= rounds + 2, 'two more rounds of the other scope');
    assert.equal(ours().length, before, 'no listing while the only tab showing the scope is hidden, over two rounds of the loop');
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { value: false, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await until(() => ours().length > before, 'lists again once visible');
    await page.waitForFunction(() => /^Updated /.test(document.querySelector('#refresh-status').textContent));
  } finally {
    await other.close();
  }
  assert.deepEqual(problems, []);
});

test('a failing node shows its last_error in full, next to one that succeeds', { timeout: TEST_TIMEOUT }, async () => {
  const lastError =
    'Failed to get power state for node bad: IPMI call failed: power status.\n' +
    'Error: Unable to establish IPMI v2 / RMCP+ session (BMC 10.20.3.17 did not answer after 3 attempts, ' +
    'giving up; check the BMC address, its credentials and that IPMI over LAN is enabled)';
  await open({
    timing: TIMING,
    nodes: [
      { name: 'good', provision_state: 'enroll' },
      { name: 'bad', provision_state: 'enroll' },
    ],
    transitions: [{ node: 'bad', action: 'manage', fail: lastError }],
  });
  await runAction(['good', 'bad'], 'manage');
  assert.deepEqual(await settled(['good', 'bad']), { good: 'reached', bad: 'unexpected-stable' });

  const bad = runRow(uuidOf('bad'));
  assert.equal(await bad.locator('.run-error').textContent(), lastError);
  assert.equal(await bad.getAttribute('data-state'), 'enroll');
  assert.equal(await bad.locator('.outcome').textContent(), 'failed');
  assert.equal(await bad.locator('.step-failed').textContent(), 'verifying');
  assert.equal(await runRow(uuidOf('good')).locator('.run-error').count(), 0);
  assert.deepEqual(await summary(), { waiting: 0, reached: 1, failed: 1, 'timed-out': 0 });
  assert.match(await runStatus(), /1 of 2 node\(s\) reached manageable/);
  await page.waitForFunction(
    (text) => document.querySelector('#node-rows tr[data-name="bad"] .col-last-error').textContent === text,
    lastError,
  );
  assert.deepEqual(problems, []);
});

test('Cancel aborts the wait: no request for the node after it, and the action goes on in Ironic', { timeout: TEST_TIMEOUT }, async () => {
  await open({
    timing: TIMING,
    nodes: [{ name: 'slow', provision_state: 'enroll' }],
    transitions: [{ node: 'slow', action: 'manage', stall: true }],
  });
  await runAction(['slow'], 'manage', { timeout: 0 });
  const slow = runRow(uuidOf('slow'));
  await page.waitForFunction(() => document.querySelector('#waits .run-rows > li')?.dataset.state === 'verifying');
  // Let it poll a few times, so the check below means something.
  const polls = () => server.sim.log({ method: 'GET', node: 'slow' });
  await until(() => polls().length >= 3, 'three checks of the node');

  await page.click(`${PANEL} .wait-cancel`);
  await page.waitForFunction(() => document.querySelector('#waits .run-rows > li').dataset.outcome === 'aborted');
  const cancelledAt = server.sim.now();
  assert.match(await runStatus(), /the console stopped waiting, but the manage action goes on in Ironic/);
  assert.equal(await slow.locator('.outcome').textContent(), 'cancelled');
  assert.equal(await page.isHidden(`${PANEL} .wait-cancel`), true, 'nothing left to cancel');

  // The table's own listings go on, on the same client's loop: over two rounds of its change
  // feed (2 s apart; the wait checked every 0.1 s), no request for the node.
  const feedRounds = () =>
    server.sim
      .log({ method: 'GET', path: '/v1/nodes' })
      .filter((e) => e.t > cancelledAt && e.query.includes('sort_key=provision_updated_at'));
  await until(() => feedRounds().length >= 2, "two rounds of the table's change feed");
  const late = polls().filter((e) => e.t > cancelledAt);
  assert.deepEqual(late, [], 'no request for the node after Cancel');
  assert.equal(server.sim.node('slow').provision_state, 'verifying', 'Ironic is still verifying');
  assert.deepEqual(problems, []);
});

test('clean takes its steps and rescue its password from the form; bad steps are not sent', { timeout: TEST_TIMEOUT }, async () => {
  await open({
    timing: TIMING,
    nodes: [
      { name: 'm1', provision_state: 'manageable' },
      { name: 'a1', provision_state: 'active' },
    ],
  });
  await runAction(['m1'], 'clean', { steps: '[{"interface": "deploy", "step": "erase_devices_metadata"}' });
  await page.waitForSelector('#action-status .error-block');
  assert.equal(await page.textContent('#action-status .error-block strong'), 'clean not sent: Not sent: invalid input');
  assert.equal(server.sim.log({ method: 'PUT' }).length, 0);

  await page.fill('#steps', '[{"interface": "deploy", "step": "erase_devices_metadata"}]');
  await page.click('#run');
  assert.deepEqual(await settled(['m1']), { m1: 'reached' });
  assert.ok(server.sim.history('m1').entries.some((e) => e.provision_state === 'cleaning'));

  await row('m1').locator('input[type="checkbox"]').uncheck();
  await runAction(['a1'], 'rescue', { password: 'rescue-me' });
  assert.deepEqual(await settled(['a1']), { a1: 'reached' });
  assert.equal(server.sim.node('a1').provision_state, 'rescue');
  assert.equal(await page.inputValue('#rescue-password'), '', 'the password is not kept in the page');
  assert.deepEqual(problems, []);
});

test('a wait that runs out of time says so per node', { timeout: TEST_TIMEOUT }, async () => {
  await open({
    timing: TIMING,
    nodes: [
      { name: 'slow', provision_state: 'enroll' },
      // Manageable at its PUT: the check at the deadline finds it there, however late the page's checks come.
      { name: 'quick', provision_state: 'enroll', timing: { verifying: 0 } },
    ],
    transitions: [{ node: 'slow', action: 'manage', stall: true }],
  });
  await runAction(['slow', 'quick'], 'manage', { timeout: 1.5 });
  assert.deepEqual(await settled(['slow', 'quick']), { slow: 'timed-out', quick: 'reached' });
  assert.equal(await runRow(uuidOf('slow')).locator('.outcome').textContent(), 'timed out');
  assert.deepEqual(await summary(), { waiting: 0, reached: 1, failed: 0, 'timed-out': 1 });
  assert.deepEqual(problems, []);
});

test('server text is text: markup in a name and in last_error shows literally and runs nothing', { timeout: TEST_TIMEOUT }, async () => {
  const name = '<img src=x onerror=alert(1)>';
  const stored = '<script>alert(2)</script>';
  const failure = '<img src=y onerror=alert(3)><b>not bold</b>';
  await open({
    timing: TIMING,
    nodes: [{ name, provision_state: 'enroll', last_error: stored }],
    transitions: [{ node: name, action: 'manage', fail: failure }],
  });
  const tr = page.locator('#node-rows tr').first();
  assert.equal(await tr.locator('.col-name').textContent(), name);
  assert.equal(await tr.locator('.col-last-error').textContent(), stored);

  await tr.locator('input[type="checkbox"]').check();
  assert.equal(await page.textContent('#selection'), `1 selected: ${name}`);
  await page.selectOption('#action', 'manage');
  await page.fill('#poll', '0.1');
  await page.click('#run');
  const r = page.locator('#waits .run-rows > li').first();
  await page.waitForFunction(() => document.querySelector('#waits .run-rows > li')?.dataset.outcome === 'unexpected-stable');
  assert.equal(await r.locator('.run-name').textContent(), name);
  assert.equal(await r.locator('.run-error').textContent(), failure);
  await page.waitForFunction((text) => document.querySelector('#node-rows .col-last-error').textContent === text, failure);
  assert.equal(await page.locator('body img, body b, main script').count(), 0, 'no element was made from server text');
  // Its detail too: the fields and the history panel.
  await tr.locator('.col-name button').click();
  await page.waitForSelector('#detail-panel[data-loaded="true"]');
  assert.equal(await page.textContent('#detail-title'), name);
  assert.equal(await page.textContent('#detail-fields .field-name'), name);
  assert.equal(await page.locator('body img, body b, main script').count(), 0, 'no element was made from server text');
  assert.deepEqual(problems, [], 'no dialog, no error');
});

test('client errors are readable messages: HTTP errors with their request id, unusable answers', { timeout: TEST_TIMEOUT }, async () => {
  await open({
    timing: TIMING,
    nodes: [{ name: 'busy', provision_state: 'active' }],
    // The page's first list answer is cut in half.
    faults: [{ path: '/v1/nodes', method: 'GET', kind: 'malformed', count: 1 }],
  });
  await page.waitForFunction(() =>
    /Listing failed: Ironic's answer cannot be used/.test(document.querySelector('#refresh-status').textContent),
  );
  await page.waitForSelector('#node-rows tr[data-name="busy"]'); // the other watch of the table lists it
  // The failed watch's retry, a moment later, recovers.
  await page.waitForFunction(() => /^Updated /.test(document.querySelector('#refresh-status').textContent));

  // A refused PUT is that node's outcome, with Ironic's words and request id.
  await runAction(['busy'], 'manage');
  const row = runRow(uuidOf('busy'));
  await page.waitForSelector(`#waits .run-rows li[data-uuid="${uuidOf('busy')}"][data-outcome="error"] .error-block`);
  assert.equal(await row.locator('.error-block strong').textContent(), 'Ironic answered HTTP 400');
  assert.equal(
    await row.locator('.error-detail').textContent(),
    `The requested action "manage" can not be performed on node "${uuidOf('busy')}" while it is in state "active".`,
  );
  const put = server.sim.log({ method: 'PUT' })[0];
  assert.equal(await row.locator('.error-request code').textContent(), put.id);
  assert.match(await runStatus(), /^0 of 1 node\(s\) reached manageable/);
  // The browser itself logs failed loads; nothing else may reach the console.
  assert.deepEqual(
    problems.filter((p) => !/Failed to load resource: the server responded with a status of 400/.test(p)),
    [],
  );
});

test('allocations: one becomes active on a gold node, one fails with a readable last_error', { timeout: TEST_TIMEOUT }, async () => {
  await open({
    timing: { ...TIMING, allocating: 300 },
    nodes: [{ name: 'g1', provision_state: 'available', resource_class: 'gold' }],
  });
  await page.fill('#alloc-rc', 'gold');
  await page.click('#alloc-create');
  const first = page.locator('#alloc-rows li').first();
  await page.waitForFunction(() => !['allocating', undefined].includes(document.querySelector('#alloc-rows li')?.dataset.state));
  assert.equal(await first.getAttribute('data-state'), 'active');
  assert.equal(await first.locator('.alloc-node strong').textContent(), 'g1');

  await page.fill('#alloc-rc', 'platinum');
  await page.fill('#alloc-name', 'big-one');
  await page.click('#alloc-create');
  await page.waitForFunction(() => document.querySelector('#alloc-rows li')?.dataset.state === 'error');
  const second = page.locator('#alloc-rows li').first();
  assert.equal(await second.locator('.run-name').textContent(), 'big-one');
  assert.match(
    await second.locator('.run-error').textContent(),
    /^Failed to process allocation [0-9a-f-]{36}: no available nodes match the resource class platinum\.$/,
  );
  assert.deepEqual(problems, []);
});

test('the demo fleet: connection, CSP, labelled controls, keyboard use, narrow screens; screenshot mid-wait', {
  timeout: TEST_TIMEOUT,
}, async () => {
  // The simulator's clock moves by hand (below): the screenshot is taken with the deploys stopped mid-way.
  const response = await open({ ...demoFleet(), manualClock: true });
  assert.equal(response.headers()['content-security-policy'], CSP);
  assert.equal(await page.locator('#node-rows tr').count(), 24);
  assert.equal(await page.textContent('#microversion'), '1.115');
  assert.equal(await page.textContent('#endpoint'), `simulator at ${server.url}/v1`);
  assert.equal(await page.textContent('#state-filter option:checked'), 'all states (24)');

  // Every control has a name a screen reader can read.
  const unnamed = await page.$$eval('input, select, textarea, button', (els) =>
    els.filter((e) => !e.hidden && !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim())).map((e) => e.outerHTML),
  );
  assert.deepEqual(unnamed, []);

  // Keyboard only: tick three available nodes, choose deploy, press Enter on Run.
  for (const name of ['compute-05', 'compute-06', 'compute-08']) {
    await row(name).locator('input[type="checkbox"]').focus();
    await page.keyboard.press('Space');
  }
  assert.equal(await page.textContent('#selection'), '3 selected: compute-05, compute-06, compute-08');
  await page.focus('#action');
  await page.selectOption('#action', 'deploy');
  await page.fill('#poll', '0.5');
  await page.focus('#run');
  await page.keyboard.press('Enter');
  // Time moves until one deploy is in wait call-back (a phase of 1.5 s at least, so not stepped over),
  // then stands still: none of the three can have ended while the page catches up and is shot.
  const deploying = ['compute-05', 'compute-06', 'compute-08'];
  await until(() => server.sim.log({ method: 'PUT' }).length === deploying.length, 'the PUTs');
  const calledBack = () => deploying.some((name) => server.sim.node(name).provision_state === 'wait call-back');
  for (let i = 0; i < 200 && !calledBack(); i++) server.sim.advance(100);
  assert.ok(calledBack(), 'a deploy reached wait call-back');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#waits .run-rows > li')].some((li) => li.dataset.state === 'wait call-back'),
  );
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, 'console.png') });
  if (process.env.UPDATE_SCREENSHOTS) {
    mkdirSync(join(ROOT, 'docs'), { recursive: true });
    copyFileSync(join(SHOTS, 'console.png'), join(ROOT, 'docs', 'console.png'));
  }
  assert.equal((await summary()).waiting > 0, true, 'the screenshot is mid-wait');

  // Sort and filter (while the wait goes on).
  await page.click('th button[data-sort="name"]');
  assert.equal(await page.getAttribute('#node-rows tr:first-child', 'data-name'), 'storage-04');
  // The state filter is the watch's scope: Ironic lists only those (the page filters what it has meanwhile).
  await page.selectOption('#state-filter', 'enroll');
  await page.waitForFunction(() => /^Updated /.test(document.querySelector('#refresh-status').textContent));
  assert.deepEqual(await page.$$eval('#node-rows tr', (rows) => rows.map((r) => r.dataset.name)), [
    'edge-04',
    'edge-03',
    'compute-12',
    'compute-11',
  ]);
  // The page filtered what it had at once; the watch of the new scope lists it (however late that comes).
  await until(
    () =>
      server.sim.log({ method: 'GET', path: '/v1/nodes' }).some((e) => new URLSearchParams(e.query).get('provision_state') === 'enroll'),
    'a listing of the enroll scope',
  );
  await page.selectOption('#state-filter', '');

  await page.setViewportSize({ width: 400, height: 800 });
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 400, 'no sideways scrolling at 400 px');
  await page.screenshot({ path: join(SHOTS, 'console-narrow.png'), fullPage: true });
  assert.deepEqual(problems, []);
});

test('proxy mode: the page works against an Ironic behind IRONIC_URL', { timeout: TEST_TIMEOUT }, async () => {
  // A standalone simulator plays the real Ironic; a second console server proxies to it.
  const ironic = await startIronic({ timing: TIMING, nodes: [{ name: 'far', provision_state: 'enroll' }] });
  const proxy = await startConsoleServer({ ironicUrl: ironic.url, ironicToken: 'token-of-the-server' });
  try {
    await page.goto(proxy.url);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.textContent('#endpoint'), `${ironic.url} (through this server)`);
    assert.equal(await page.isHidden('#reset-demo'), true, 'no simulator controls');
    for (const name of ['far']) await page.locator(`#node-rows tr[data-name="${name}"] input[type="checkbox"]`).check();
    await page.selectOption('#action', 'manage');
    await page.fill('#poll', '0.1');
    await page.click('#run');
    await page.waitForFunction(() => document.querySelector('#waits .run-rows > li')?.dataset.outcome === 'reached');
    assert.equal(ironic.sim.node('far').provision_state, 'manageable');
    // The page's writes went through with its token; Ironic saw the server's token, not the page's.
    const put = ironic.requests('PUT', '/v1/nodes/*/states/provision');
    assert.equal(put.length, 1);
    assert.equal(put[0].headers['x-auth-token'], 'token-of-the-server');
    assert.equal(put[0].headers['x-console-token'], undefined);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
    await proxy.close();
    await ironic.close();
  }
});
