// The console through IRONIC_URL against a real Ironic 39, in Chromium: the
// console server proxies /v1 to Ironic (through support.mjs's recording proxy,
// which forwards everything unchanged and tells us Ironic's request ids), the
// page lists the real nodes, runs a wait, and shows a refusal with Ironic's
// own words and request id; Ironic's REST API is the judge of where the
// nodes ended. No console errors and no CSP violations on the page.

import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { CSP, startConsoleServer } from '../../www/server.mjs';
import { launchChromium } from '../runtimes/pages.mjs';
import { realIronic } from './support.mjs';

// Bounds, not budgets: a test takes 10 to 30 s against a real Ironic; other suites run beside
// this one on a loaded machine.
const TEST_TIMEOUT = 300_000;
// The nodes, as made through Ironic's REST API before the page opens.
const NODES = [
  ['manageable-1', 'manageable', {}],
  ['manageable-2', 'manageable', {}],
  ['manageable-3', 'manageable', {}],
  // No automated cleaning: it reaches available sooner.
  ['available-1', 'available', { automated_clean: false, resource_class: 'gold' }],
  ['enroll-1', 'enroll', {}],
];
// The node table's columns after the checkbox, as Ironic's fields.
const COLUMNS = ['name', 'uuid', 'provision_state', 'target_provision_state', 'power_state', 'maintenance', 'resource_class', 'last_error'];

let ironic;
let server;
let browser;
let page;
let problems; // console errors, page errors and dialogs of the current test
const uuids = {}; // name -> UUID, as Ironic made them

before(async () => {
  // Ironic (and its nodes) and Chromium start side by side; both are awaited
  // even when one fails, so that after() finds everything that started.
  const started = await Promise.allSettled([
    (async () => {
      ironic = await realIronic('console');
      const made = await Promise.all(NODES.map(([name, state, fields]) => ironic.nodeIn(state, { name, ...fields })));
      for (const n of made) uuids[n.name] = n.uuid;
      // So that the power and maintenance columns have something to show.
      const power = await ironic.api('PUT', '/v1/nodes/manageable-3/states/power', { target: 'power on' });
      assert.equal(power.status, 202, power.text);
      const maintenance = await ironic.api('PUT', '/v1/nodes/enroll-1/maintenance', { reason: 'console test' });
      assert.equal(maintenance.status, 202, maintenance.text);
      await ironic.reach('manageable-3', null, { until: (n) => n.power_state === 'power on' });
      server = await startConsoleServer({ ironicUrl: ironic.url });
    })(),
    (async () => {
      browser = await launchChromium();
    })(),
  ]);
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
});

after(async () => {
  // Each is stopped even when another fails to.
  const failures = [];
  for (const stop of [() => browser?.close(), () => server?.close(), () => ironic?.close()]) {
    try {
      await stop();
    } catch (e) {
      failures.push(e);
    }
  }
  if (failures.length) throw failures[0];
});

beforeEach(async () => {
  problems = [];
  page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  // Chromium also logs a violation as a console error; this says which directive refused what.
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (v) =>
      window.cspViolations.push(`${v.effectiveDirective} refused ${v.blockedURI || 'inline code'}`),
    );
  });
});

afterEach(async () => {
  await page?.close();
});

/** Opens the console; resolves to the page's answer once the table is filled. */
async function open() {
  const response = await page.goto(server.url);
  await page.waitForSelector('body[data-ready="true"]');
  return response;
}

const row = (name) => page.locator(`#node-rows tr[data-name="${name}"]`);
// The newest wait's panel comes first.
const runRow = (name) => page.locator(`#waits > .wait-panel:first-child .run-rows > li[data-uuid="${uuids[name]}"]`);

/** Ticks the nodes, chooses the action, waits up to two minutes checking every 0.5 s, presses Run. */
async function runAction(names, action) {
  for (const name of names) await row(name).locator('input[type="checkbox"]').check();
  await page.selectOption('#action', action);
  await page.fill('#timeout', '600');
  await page.fill('#poll', '0.5');
  await page.click('#run');
}

/** Waits until every named node's run row has settled; returns { name: outcome }. */
async function settled(names) {
  await page.waitForFunction(
    (ids) =>
      ids.every(
        (id) =>
          (document.querySelector(`#waits > .wait-panel:first-child .run-rows > li[data-uuid="${id}"]`)?.dataset.outcome ?? 'waiting') !==
          'waiting',
      ),
    names.map((name) => uuids[name]),
    { timeout: 180_000 },
  );
  const out = {};
  for (const name of names) out[name] = await runRow(name).getAttribute('data-outcome');
  return out;
}

/** What the page's node table shows, one row per node as Ironic's fields would read in it. */
const tableRows = () =>
  page.$$eval('#node-rows tr', (trs) =>
    trs.map((tr) => {
      const cell = (key) => tr.querySelector(`.col-${key.replaceAll('_', '-')}`);
      return {
        name: cell('name').textContent,
        uuid: cell('uuid').title,
        provision_state: cell('provision_state').textContent,
        target_provision_state: cell('target_provision_state').textContent,
        power_state: cell('power_state').textContent,
        maintenance: cell('maintenance').textContent,
        resource_class: cell('resource_class').textContent,
        last_error: cell('last_error').textContent,
      };
    }),
  );

/** Ironic's own view of the nodes, as the table would show it (a missing value is an empty cell; maintenance is "yes" or empty). */
async function ironicRows() {
  const r = await ironic.api('GET', `/v1/nodes?fields=${COLUMNS.join(',')}`);
  assert.equal(r.status, 200, r.text);
  return r.body.nodes.map((n) =>
    Object.fromEntries(COLUMNS.map((key) => [key, key === 'maintenance' ? (n.maintenance ? 'yes' : '') : (n[key] ?? '')])),
  );
}

const byName = (rows) => [...rows].sort((a, b) => a.name.localeCompare(b.name));

/** No console error (less those `expected` allows), no page error, no dialog, no CSP violation. */
async function assertClean(expected = () => false) {
  assert.deepEqual(await page.evaluate(() => window.cspViolations), []);
  assert.deepEqual(
    problems.filter((p) => !expected(p)),
    [],
  );
}

test('the page lists the real nodes as Ironic has them, under its CSP, at the microversion Ironic offers', {
  timeout: TEST_TIMEOUT,
}, async () => {
  const response = await open();
  assert.equal(response.headers()['content-security-policy'], CSP);
  assert.equal(await page.textContent('#endpoint'), `${ironic.url} (through this server)`);
  assert.equal(await page.isHidden('#reset-demo'), true, 'no simulator controls');
  const root = await ironic.api('GET', '/v1');
  assert.equal(await page.textContent('#microversion'), root.body.version.version, "Ironic's newest microversion");

  const shown = byName(await tableRows());
  assert.deepEqual(
    shown.map((n) => [n.name, n.uuid, n.provision_state]),
    NODES.map(([name, state]) => [name, uuids[name], state]).sort(([a], [b]) => a.localeCompare(b)),
  );
  assert.deepEqual(shown, byName(await ironicRows()), 'every column as Ironic has it');
  assert.deepEqual(
    shown.filter((n) => n.power_state || n.maintenance).map((n) => [n.name, n.power_state, n.maintenance]),
    [
      ['enroll-1', '', 'yes'],
      ['manageable-3', 'power on', ''],
    ],
  );
  assert.equal(await page.textContent('#state-filter option:checked'), 'all states (5)');
  await assertClean();
});

test('provide with wait from the page: two manageable nodes reach available through cleaning, as Ironic reports', {
  timeout: TEST_TIMEOUT,
}, async () => {
  await open();
  const puts = () => ironic.requests('PUT', '/v1/nodes/*/states/provision');
  const putsBefore = puts().length;
  const names = ['manageable-1', 'manageable-2'];
  await runAction(names, 'provide');
  assert.deepEqual(await settled(names), { 'manageable-1': 'reached', 'manageable-2': 'reached' });
  assert.match(
    await page.textContent('#waits > .wait-panel:first-child .run-status'),
    /^All 2 node\(s\) reached available in \d+\.\d s\.$/,
  );

  for (const name of names) {
    const r = runRow(name);
    assert.equal(await r.getAttribute('data-state'), 'available');
    assert.match(await r.getAttribute('data-seen'), /cleaning.* > available$/, `${name} was seen cleaning on the way`);
    assert.equal(await r.locator('.outcome').textContent(), 'reached');
    // Ironic agrees, and has nothing left to do.
    const node = await ironic.node(name);
    assert.deepEqual([node.provision_state, node.target_provision_state, node.last_error], ['available', null, null]);
  }
  // One PUT per node went through the console server to Ironic, and was accepted.
  assert.deepEqual(
    puts()
      .slice(putsBefore)
      .map((e) => [e.path, e.status])
      .sort(),
    names.map((name) => [`/v1/nodes/${uuids[name]}/states/provision`, 202]).sort(),
  );
  // The table follows; the node left alone stays where it was.
  await page.waitForFunction(
    (ns) => ns.every((n) => document.querySelector(`#node-rows tr[data-name="${n}"]`)?.dataset.state === 'available'),
    names,
  );
  assert.equal(await row('manageable-3').getAttribute('data-state'), 'manageable');
  assert.equal((await ironic.node('manageable-3')).provision_state, 'manageable');
  await assertClean();
});

test("an action Ironic refuses: that row shows Ironic's error and request id, the other node reaches its state", {
  timeout: TEST_TIMEOUT,
}, async () => {
  await open();
  // manage: available-1 may (straight to manageable), manageable-3 is there already and Ironic says no.
  const refused = () => ironic.requests('PUT', `/v1/nodes/${uuids['manageable-3']}/states/provision`);
  const refusedBefore = refused().length;
  await runAction(['available-1', 'manageable-3'], 'manage');
  assert.deepEqual(await settled(['available-1', 'manageable-3']), { 'available-1': 'reached', 'manageable-3': 'error' });

  const [put] = refused().slice(refusedBefore);
  assert.equal(put.status, 400);
  assert.match(put.requestId ?? '', /^req-[0-9a-f-]{36}$/, 'Ironic sent a request id');
  const bad = runRow('manageable-3');
  assert.equal(await bad.locator('.outcome').textContent(), 'error');
  assert.equal(await bad.locator('.error-block strong').textContent(), 'Ironic answered HTTP 400');
  assert.equal(
    await bad.locator('.error-detail').textContent(),
    `The requested action "manage" can not be performed on node "${uuids['manageable-3']}" while it is in state "manageable".`,
  );
  assert.equal(await bad.locator('.error-request code').textContent(), put.requestId);
  assert.equal(await runRow('available-1').getAttribute('data-state'), 'manageable');
  assert.equal(await runRow('available-1').locator('.error-block').count(), 0);
  assert.match(
    await page.textContent('#waits > .wait-panel:first-child .run-status'),
    /^1 of 2 node\(s\) reached manageable; see the rows below\.$/,
  );

  for (const name of ['available-1', 'manageable-3']) {
    const node = await ironic.node(name);
    assert.deepEqual([node.provision_state, node.target_provision_state], ['manageable', null], name);
  }
  // The browser logs the 400 it loaded; nothing else may reach the console.
  await assertClean((p) => /^console: Failed to load resource: the server responded with a status of 400/.test(p));
});

test("a failed deploy's history from Ironic in the node's detail, and power off from the page, waited until Ironic is done", {
  timeout: TEST_TIMEOUT,
}, async () => {
  // A deploy Ironic fails at once (real-ironic.md's recipe), made through its REST API.
  const failed = await ironic.nodeIn('available', { name: 'history-1' });
  uuids['history-1'] = failed.uuid;
  await ironic.setState('history-1', 'active', { deploy_steps: [{ interface: 'deploy', step: 'deploy', args: {}, priority: 0 }] });
  await ironic.reach('history-1', null, { until: (n) => n.provision_state === 'deploy failed' });
  await open();
  await row('history-1').locator('.col-name button').click();
  await page.waitForSelector('#detail-panel[data-loaded="true"]');
  assert.equal(await page.textContent('#detail-title'), 'history-1');
  assert.equal(await page.textContent('#detail-fields .field-provision-state'), 'deploy failed');
  const events = await page.$$eval('#detail-history .timeline > li', (lis) =>
    lis.map((li) => ({
      severity: li.dataset.severity,
      text: li.querySelector('.event-text').textContent,
      time: li.querySelector('time').getAttribute('datetime'),
    })),
  );
  // What the page shows is Ironic's own history of the node.
  const history = await ironic.api('GET', `/v1/nodes/${failed.uuid}/history?detail=true`);
  assert.equal(history.status, 200, history.text);
  assert.deepEqual(
    events.map((e) => [e.severity, e.text]),
    history.body.history.map((e) => [e.severity, e.event]),
  );
  const error = events.find((e) => e.severity === 'ERROR');
  assert.match(error?.text ?? '', /No deploy steps returned by the driver/, JSON.stringify(events));
  assert.ok(!Number.isNaN(Date.parse(error.time)));
  assert.equal(await page.locator('#detail-history .event-error').count(), events.filter((e) => e.severity === 'ERROR').length);

  // manageable-3 is powered on (before()); the page powers it off and waits.
  const puts = () => ironic.requests('PUT', `/v1/nodes/${uuids['manageable-3']}/states/power`);
  const putsBefore = puts().length;
  await row('manageable-3').locator('input[type="checkbox"]').check();
  await page.fill('#timeout', '600');
  await page.fill('#poll', '0.5');
  await page.click('#power-buttons button[data-power="power off"]');
  assert.deepEqual(await settled(['manageable-3']), { 'manageable-3': 'reached' });
  assert.equal(await runRow('manageable-3').getAttribute('data-state'), 'power off');
  const node = await ironic.node('manageable-3');
  assert.deepEqual([node.power_state, node.target_power_state], ['power off', null]);
  assert.deepEqual(
    puts()
      .slice(putsBefore)
      .map((e) => e.status),
    [202],
    'one power PUT, accepted',
  );
  await page.waitForFunction(
    () => document.querySelector('#node-rows tr[data-name="manageable-3"] .col-power-state')?.textContent === 'power off',
  );
  await assertClean();
});
