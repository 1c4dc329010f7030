// The runtime matrix, headless Chromium (Debian's, driven by playwright-core):
// the scenario in two consumer projects, each in the page and in a module
// Web Worker, under the console's Content-Security-Policy:
// - a page built by vite (`vite build`, default settings: minified; only
//   module workers are built as ES modules, see browser/vite.config.js);
// - a page without a bundler, whose import map points `ironic-wait` at the
//   package's pkg/web.js (the CSP then also names the import map's hash:
//   an inline import map is an inline script).
// Each page is served from the same origin as the simulator (the CSP allows
// no other), by a static server that mounts the simulator's handler. And a
// page of the import-map project reloaded mid-wait, which resumes from the
// checkpoint it kept in localStorage (browser/resume.js).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CSP } from '../../www/server.mjs';
import { assertReport, BIN, consumerProject, nodeReport, runToEnd, startSim } from './harness.mjs';
import { allowImportMap, launchChromium, runPage, servePage } from './pages.mjs';

// Chromium logs every 4xx answer to fetch; the scenario asks for a missing node on purpose.
const expected404 = (text) => text === 'Failed to load resource: the server responded with a status of 404 (Not Found)';

let sim;
let browser;
let node;
const servers = {};
/** The X-Auth-Token of each API request the pages sent, in order. */
const tokens = [];

before(async () => {
  sim = await startSim();
  const mount = (req, res) => {
    if (req.url.startsWith('/v1')) tokens.push(req.headers['x-auth-token'] ?? null);
    return sim.handle(req, res);
  };
  const built = consumerProject('chromium', 'vite', {
    'index.html': 'browser/index.html',
    'main.js': 'browser/main.js',
    'worker.js': 'browser/worker.js',
    'vite.config.js': 'browser/vite.config.js',
  });
  await runToEnd(join(BIN, 'vite'), ['build', '--logLevel', 'warn'], { cwd: built });
  servers.vite = await servePage(join(built, 'dist'), { csp: CSP, mount });

  const mapped = consumerProject('chromium', 'importmap', {
    'index.html': 'browser/importmap.html',
    'main.js': 'browser/main.js',
    'worker.js': 'browser/importmap-worker.js',
    'resume.html': 'browser/resume.html',
    'resume.js': 'browser/resume.js',
  });
  const csp = allowImportMap(CSP, readFileSync(join(mapped, 'index.html'), 'utf8'));
  servers.importmap = await servePage(mapped, { csp, mount });

  browser = await launchChromium();
  node = await nodeReport('chromium', sim.url);
});

after(async () => {
  await browser?.close();
  for (const s of Object.values(servers)) await s.close();
  await sim?.close();
});

for (const [server, what] of [
  ['vite', 'a page built by vite 8'],
  ['importmap', 'a page with an import map'],
]) {
  for (const where of ['page', 'worker']) {
    test(`Chromium: ${what}, in the ${where}, under the console's CSP, same as Node`, async (t) => {
      const url = `${servers[server].url}/${where === 'worker' ? '#worker' : ''}`;
      const { report, violations, problems } = await runPage(browser, url, { expected: expected404 });
      assert.deepEqual(violations, [], 'the CSP refused nothing');
      assert.deepEqual(problems, [], 'no errors in the console');
      await assertReport(t, report, node);
    });
  }
}

// A page reloaded mid-wait takes the wait up again from the checkpoint it kept
// in localStorage (browser/resume.js, the import-map project), on the
// simulator's manual clock: where the wait stands at the reload is exact.
test('Chromium: a page reloaded mid-wait resumes from its localStorage checkpoint: the uninterrupted outcome, no PUT twice, no token in storage', async () => {
  const TOKEN = 'chromium-resume-token-91e4d2a7'; // resume.js's client is made with it
  const NO_IMAGE = 'Deploy step deploy.write_image failed: no image';
  const url = `${servers.importmap.url}/resume.html`;
  // b1, b2: deploying (1 s) -> wait call-back (1 s) -> deploying (1 s) -> active; b3 fails at 300 ms.
  const load = () =>
    sim.load({
      seed: 7,
      manualClock: true,
      epoch: '2026-01-01T00:00:00Z',
      timing: { deploying: 1000, 'wait call-back': 1000 },
      nodes: [
        { name: 'b1', provision_state: 'available' },
        { name: 'b2', provision_state: 'available' },
        { name: 'b3', provision_state: 'available', timing: { deploying: 100, 'wait call-back': 100 } },
      ],
      transitions: [{ node: 'b3', action: 'deploy', fail: NO_IMAGE }],
    });
  const expected = {
    ok: false,
    nodes: [
      ['b1', 'reached', 'active', null],
      ['b2', 'reached', 'active', null],
      ['b3', 'failed', 'deploy failed', NO_IMAGE],
    ],
  };
  const putsByNode = () => {
    const counts = {};
    for (const r of sim.log({ method: 'PUT', path: '/v1/nodes/*/states/provision' }))
      counts[r.path.split('/')[3]] = (counts[r.path.split('/')[3]] ?? 0) + 1;
    return counts;
  };
  const dataset = (page) => page.evaluate(() => ({ ...document.body.dataset }));
  /** Waits until <body data-*> satisfies `fn` (run in the page). */
  const until = (page, fn) => page.waitForFunction(fn, null, { timeout: 120_000, polling: 20 });
  /** Everything the origin keeps in the browser, as text. */
  const storage = (page) =>
    page.evaluate(async () => ({
      local: Object.fromEntries(Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)])),
      session: Object.fromEntries(Object.keys(sessionStorage).map((k) => [k, sessionStorage.getItem(k)])),
      cookies: document.cookie,
      indexedDB: (await indexedDB.databases()).map((d) => d.name),
      caches: await caches.keys(),
    }));
  const watch = (page) => {
    const problems = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    return problems;
  };

  // Uninterrupted: once the first round is answered, time jumps past every transition.
  load();
  const plain = await browser.newPage();
  const plainProblems = watch(plain);
  let whole;
  try {
    await plain.goto(url);
    await until(plain, () => JSON.parse(document.body.dataset.seen ?? '[]').length === 3);
    sim.advance(10_000);
    await until(plain, () => document.body.dataset.report || document.body.dataset.error);
    const data = await dataset(plain);
    assert.equal(data.error, undefined, data.error);
    assert.equal(data.mode, 'started');
    whole = JSON.parse(data.report);
  } finally {
    await plain.close();
  }
  assert.deepEqual(whole, expected);
  assert.deepEqual(plainProblems, []);

  // Cut by a reload: at 500 ms b3 has failed and b1, b2 are deploying; the page reloads once
  // the checkpoint written after b3 settled is in localStorage.
  load();
  const page = await browser.newPage();
  const problems = watch(page);
  try {
    await page.goto(url);
    await until(page, () => JSON.parse(document.body.dataset.seen ?? '[]').length === 3);
    sim.advance(500);
    await until(page, () => document.body.dataset.settledAtCheckpoint === '["b3"]');
    const before = await storage(page);
    const kept = before.local['ironic-wait:deploy:checkpoint'];
    assert.equal(typeof kept, 'string', 'a checkpoint in localStorage');
    assert.ok(!JSON.stringify(before).includes(TOKEN), `no token in the browser's storage: ${JSON.stringify(before)}`);
    assert.deepEqual(
      ['b1', 'b2', 'b3'].map((n) => sim.node(n).provision_state),
      ['deploying', 'deploying', 'deploy failed'],
      'cut mid-wait',
    );
    assert.deepEqual(putsByNode(), { b1: 1, b2: 1, b3: 1 });
    assert.equal(await page.evaluate(() => document.body.dataset.report), undefined, 'the wait was still going');

    const since = sim.requests().next;
    const tokensBefore = tokens.length;
    await page.reload();
    await until(page, () => document.body.dataset.mode);
    assert.equal((await dataset(page)).mode, 'resumed');
    sim.advance(10_000);
    await until(page, () => document.body.dataset.report || document.body.dataset.error);
    const data = await dataset(page);
    assert.equal(data.error, undefined, data.error);
    assert.deepEqual(JSON.parse(data.report), whole, 'the same outcome as the uninterrupted wait');
    assert.deepEqual(putsByNode(), { b1: 1, b2: 1, b3: 1 }, 'no PUT sent twice');
    assert.equal(sim.log({ since, method: 'PUT' }).length, 0);
    assert.deepEqual(
      sim.log({ since, node: 'b3' }).map((r) => `${r.method} ${r.path}`),
      [],
      'b3, settled in the checkpoint, is not asked again',
    );
    assert.ok(sim.log({ since, node: 'b1' }).length > 0, 'the reloaded page asked about b1');
    // The resumed client sent its own token (the one it was made with): the checkpoint carried none.
    assert.ok(tokens.length > tokensBefore);
    assert.deepEqual(new Set(tokens.slice(tokensBefore)), new Set([TOKEN]));

    const after = await storage(page);
    assert.equal(after.local['ironic-wait:deploy:checkpoint'], undefined, 'the page dropped its checkpoint at the end');
    assert.ok(!JSON.stringify(after).includes(TOKEN), `no token in the browser's storage: ${JSON.stringify(after)}`);
  } finally {
    await page.close();
  }
  assert.deepEqual(problems, []);
});
