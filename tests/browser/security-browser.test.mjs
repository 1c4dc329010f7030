// The console server against hostile pages in real Chromium (playwright-core):
// a page from another loopback origin tries form posts, no-cors and
// credentialed fetches, framing and reading the fleet; a DNS-rebinding page
// finds the console behind its own origin; and an XSS corpus of node names,
// last_error texts and allocation names is rendered by the console. What
// reached Ironic is read from the simulator's request log or a recording
// server standing in as IRONIC_URL.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup.mjs';
import { listen } from '../../sim/http.mjs';
import { startConsoleServer } from '../../www/server.mjs';
import { startIronic } from '../node/harness.mjs';
import { collectProblems } from '../runtimes/pages.mjs';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // evil.test is the attacker's name, resolving to this machine (as after a DNS rebinding).
  '--host-resolver-rules=MAP evil.test 127.0.0.1',
];
// Bounds, not budgets: a test takes a few seconds; other suites run beside this one on a loaded machine.
const TEST_TIMEOUT = 180_000;
const STEP_TIMEOUT = 60_000;
const NODES = [
  { name: 'n1', provision_state: 'available', resource_class: 'gold' },
  { name: 'n2', provision_state: 'enroll', resource_class: 'gold' },
];

let context;
let profile;
const open = [];

before(async () => {
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
  if (profile) rmSync(profile, { recursive: true, force: true });
});

afterEach(async () => {
  for (const p of context.pages()) await p.close();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** A page with its console errors, page errors and dialogs collected. */
async function newPage() {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);
  return collectProblems(page);
}

/** Resolves once `condition()` holds (checked every 20 ms); fails after `ms`. */
async function until(condition, what, ms = STEP_TIMEOUT) {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${typeof what === 'function' ? what() : what}: not so after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A tiny server of the attacker's pages: `pages` maps a path to HTML (scripts inline, no CSP). */
async function startHostile(pages, port = 0) {
  const server = http.createServer((req, res) => {
    const html = pages[req.url];
    res.writeHead(html ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(html ?? 'not here');
  });
  const listening = await listen(server, port, '127.0.0.1');
  return { port: listening.port, close: () => listening.close() };
}

/** The attacker's page: every way a cross-origin page has to drive or read the console at `target`. */
function attackPage(target) {
  const t = JSON.stringify(target);
  return `<!doctype html><title>hostile</title>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="json-as-text" method="POST" action="${target}/v1/allocations" enctype="text/plain" target="sink1">
  <input name='{"resource_class": "gold", "x": "' value='"}'></form>
<form id="urlencoded" method="POST" action="${target}/v1/nodes/n2/states/provision" target="sink2">
  <input name="target" value="manage"></form>
<form id="reset" method="POST" action="${target}/__sim/reset" target="sink3"></form>
<script>
const T = ${t};
window.results = {};
const attempt = async (name, fn) => {
  try { results[name] = await fn(); } catch (e) { results[name] = 'threw ' + e.name; }
};
const loaded = (el) => new Promise((resolve) => { el.onload = () => resolve('loaded'); el.onerror = () => resolve('error'); });
// The console in a frame, loaded (as an error page, when refused) before anyone looks into it: until
// then its document is the initial about:blank, of this origin.
const framed = Object.assign(document.createElement('iframe'), { id: 'framed' });
const framedLoaded = new Promise((resolve) => { framed.onload = resolve; });
framed.src = T + '/';
document.body.append(framed);
(async () => {
  for (const id of ['json-as-text', 'urlencoded', 'reset']) document.getElementById(id).submit();
  await attempt('no-cors POST', async () => {
    const r = await fetch(T + '/v1/allocations', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
      body: '{"resource_class": "gold"}' });
    return r.type + ' ' + r.status;
  });
  await attempt('no-cors POST to the simulator', async () => (await fetch(T + '/__sim/scenario', { method: 'POST', mode: 'no-cors', body: '{"nodes": []}' })).type);
  await attempt('credentialed read', async () => (await fetch(T + '/v1/nodes', { credentials: 'include' })).text());
  await attempt('read the page', async () => (await fetch(T + '/', { credentials: 'include' })).text());
  await attempt('write with a guessed token', async () => (await fetch(T + '/v1/allocations', {
    method: 'POST', credentials: 'include', headers: { 'X-Console-Token': 'guess', 'Content-Type': 'application/json' },
    body: '{"resource_class": "gold"}' })).status);
  await attempt('PUT', async () => (await fetch(T + '/v1/nodes/n2/states/provision', {
    method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{"target": "manage"}' })).status);
  await attempt('script include', () => { const s = document.createElement('script'); s.src = T + '/v1/nodes'; document.body.append(s); return loaded(s); });
  await attempt('module include', () => { const s = document.createElement('script'); s.type = 'module'; s.src = T + '/app.js'; document.body.append(s); return loaded(s); });
  await framedLoaded;
  await attempt('framed document', () => framed.contentWindow.document.body.innerHTML);
  window.done = true;
})();
</script>`;
}

/**
 * Runs the attack page from `attackerHost` against `target`: its results, the
 * requests it made to the console, the answers the browser saw, and whether
 * the console rendered in its frame.
 */
async function attack(attackerHost, target) {
  const hostile = await startHostile({ '/': attackPage(target) });
  open.push(hostile);
  const page = await newPage();
  const requests = [];
  const answers = [];
  const name = (r) => `${r.method()} ${new URL(r.url()).pathname}`;
  page.on('request', (r) => r.url().startsWith(target) && requests.push(name(r)));
  page.on('response', (r) => r.url().startsWith(target) && answers.push(`${name(r.request())} ${r.status()}`));
  await page.goto(`http://${attackerHost}:${hostile.port}/`);
  await page.waitForFunction(() => window.done === true);
  // The three form posts land in their frames.
  const formPosts = ['POST /v1/allocations', 'POST /v1/nodes/n2/states/provision', 'POST /__sim/reset'];
  await until(
    () => formPosts.every((p) => answers.some((a) => a.startsWith(p))),
    () => `the form posts answered: ${answers.join(', ')}`,
  );
  const results = await page.evaluate(() => window.results);
  const framed = await (await page.$('#framed')).contentFrame();
  const framedConsole = await framed.$('#node-table').catch(() => null);
  return { page, results, requests, answers, framedConsole };
}

/** What the attack page must have got: nothing readable, no frame of the console, only refusals. */
function assertNothingReadable({ results, requests, answers, framedConsole }) {
  // Sent, and refused; Cross-Origin-Resource-Policy makes even their opaque answers network errors.
  assert.equal(results['no-cors POST'], 'threw TypeError');
  assert.equal(results['no-cors POST to the simulator'], 'threw TypeError');
  assert.equal(results['credentialed read'], 'threw TypeError');
  assert.equal(results['read the page'], 'threw TypeError');
  assert.equal(results['write with a guessed token'], 'threw TypeError', 'its preflight is refused');
  assert.equal(results.PUT, 'threw TypeError');
  assert.equal(results['script include'], 'error');
  assert.equal(results['module include'], 'error');
  assert.equal(results['framed document'], 'threw SecurityError');
  assert.equal(framedConsole, null, 'the console did not render in the frame');
  for (const r of [
    'GET /',
    'POST /v1/allocations',
    'POST /v1/nodes/n2/states/provision',
    'POST /__sim/reset',
    'POST /__sim/scenario',
    'GET /v1/nodes',
    'GET /app.js',
  ]) {
    assert.ok(requests.includes(r), `the attacker sent ${r}: ${requests.join(', ')}`);
  }
  assert.ok(answers.length >= 4, answers.join('\n'));
  assert.deepEqual(
    answers.filter((a) => !a.endsWith(' 403')),
    [],
    'every answer the attacker got was a refusal',
  );
}

test('a page on another loopback origin cannot drive or read the console (simulator mode)', { timeout: TEST_TIMEOUT }, async () => {
  const server = await startConsoleServer({ scenario: { nodes: NODES } });
  open.push(server);
  server.sim.setNode('n1', { provision_state: 'manageable' }); // a reset would undo this
  const outcome = await attack('127.0.0.1', server.url); // same site, another port: the closest an attacker gets
  assertNothingReadable(outcome);
  assert.deepEqual(server.sim.log(), [], 'the simulator served none of it');
  assert.equal(server.sim.summary().allocations, 0);
  assert.equal(server.sim.node('n1').provision_state, 'manageable', 'not reset');
  assert.equal(server.sim.node('n2').provision_state, 'enroll');
  assert.equal(server.sim.summary().nodes, 2, 'no scenario loaded');
});

test('a page on another site cannot drive or read the console (IRONIC_URL proxy mode)', { timeout: TEST_TIMEOUT }, async () => {
  const ironic = await startIronic({ nodes: NODES });
  open.push(ironic);
  const server = await startConsoleServer({ ironicUrl: ironic.url, ironicToken: 'the-server-token' });
  open.push(server);
  const outcome = await attack('evil.test', server.url);
  assertNothingReadable(outcome);
  assert.deepEqual(
    ironic.seen.map((r) => `${r.method} ${r.url}`),
    [],
    'nothing reached Ironic',
  );
  assert.equal(ironic.sim.summary().allocations, 0);
});

test("DNS rebinding: the console behind the attacker's own origin answers nothing", { timeout: TEST_TIMEOUT }, async () => {
  const ironic = await startIronic({ nodes: NODES });
  open.push(ironic);
  // The attacker's page loads from evil.test:PORT; then evil.test:PORT is the console (its server
  // gone, the console on the same port: what a DNS answer pointing at 127.0.0.1 does).
  const rebinding = `<!doctype html><title>rebinding</title><script>
    window.go = async () => {
      const out = {};
      for (const [name, init] of [
        ['read', {}],
        ['write', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{"resource_class": "gold"}' }],
        ['write as JSON', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"resource_class": "gold"}' }],
        ['page', {}],
      ]) {
        try {
          const r = await fetch({ read: '/v1/nodes', page: '/' }[name] ?? '/v1/allocations', init);
          out[name] = r.status + ' ' + await r.text();
        } catch (e) { out[name] = 'threw ' + e.name; }
      }
      return out;
    };</script>`;
  const hostile = await startHostile({ '/': rebinding });
  const page = await newPage();
  await page.goto(`http://evil.test:${hostile.port}/`);
  await hostile.close();
  const server = await startConsoleServer({ port: hostile.port, ironicUrl: ironic.url, ironicToken: 'the-server-token' });
  open.push(server);
  const out = await page.evaluate(() => window.go());
  for (const [name, text] of Object.entries(out)) {
    assert.match(text, /^421 .*only answers requests addressed to its own loopback address/, name);
    assert.doesNotMatch(text, /"nodes"|console-token|n1/, name);
  }
  // A page loaded by that name is refused too.
  const direct = await newPage();
  const response = await direct.goto(`http://evil.test:${hostile.port}/`);
  assert.equal(response.status(), 421);
  assert.doesNotMatch(await direct.content(), /console-token|node-table/);
  assert.deepEqual(ironic.seen, [], 'nothing reached Ironic');
});

// Server text meant to become markup, script or a link, and text meant to confuse.
const XSS = [
  '<img src=x onerror="window.__pwned=1;alert(1)">',
  '<script>window.__pwned=2;alert(2)</script>',
  '"><svg onload="window.__pwned=3">',
  "'><iframe srcdoc='<script>parent.__pwned=4</script>'>",
  'javascript:window.__pwned=5;alert(5)',
  '<a href="javascript:window.__pwned=6">click me</a>',
  '</title><script>window.__pwned=7</script>',
  '</textarea></style></script><script>window.__pwned=8</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template injection attempt, as text, is the test.
  '{{constructor.constructor("window.__pwned=9")()}}${window.__pwned=10}',
  '&lt;b&gt;entities stay entities&lt;/b&gt; &amp;',
  '\u202Etxt.exe\u202C evil \u2066rtl\u2069 \u200Bzero-width',
  `long ${'<b>x</b>'.repeat(3000)}`,
];

test('XSS corpus: names, last_error and allocation texts show literally and run nothing', { timeout: TEST_TIMEOUT }, async () => {
  const nodes = XSS.map((text, i) => ({
    name: `${text} #${i}`,
    provision_state: 'enroll',
    last_error: `stored ${text}`,
    resource_class: text,
  }));
  const server = await startConsoleServer({
    scenario: {
      timing: { verifying: 200, allocating: 100 },
      nodes: [...nodes, { name: 'plain', provision_state: 'available', resource_class: 'gold' }],
      transitions: nodes.map((n, i) => ({ node: n.name, action: 'manage', fail: `failed ${XSS[i]}` })),
    },
  });
  open.push(server);
  const page = await newPage();
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="true"]');

  const rows = await page.$$eval('#node-rows tr', (trs) =>
    trs.map((tr) => ({
      name: tr.querySelector('.col-name').textContent,
      lastError: tr.querySelector('.col-last-error').textContent,
      resourceClass: tr.querySelector('.col-resource-class').textContent,
    })),
  );
  for (const n of nodes) {
    const row = rows.find((r) => r.name === n.name);
    assert.ok(row, `row for ${n.name.slice(0, 40)}`);
    assert.equal(row.lastError, n.last_error);
    assert.equal(row.resourceClass, n.resource_class);
  }

  // A run over all of them: every one fails with its last_error shown as text.
  await page.fill('#text-filter', '#');
  await page.check('#select-all');
  await page.selectOption('#action', 'manage');
  await page.fill('#poll', '0.1');
  await page.click('#run');
  await page.waitForFunction(
    (count) =>
      [...document.querySelectorAll('#waits .run-rows > li')].filter((li) => li.dataset.outcome === 'unexpected-stable').length === count,
    nodes.length,
  );
  const runRows = await page.$$eval('#waits .run-rows > li', (lis) =>
    lis.map((li) => ({
      name: li.querySelector('.run-name').textContent,
      error: li.querySelector('.run-error')?.textContent,
    })),
  );
  for (const [i, n] of nodes.entries()) {
    assert.equal(runRows.find((r) => r.name === n.name)?.error, `failed ${XSS[i]}`, n.name.slice(0, 40));
  }

  // Allocations named with the corpus; one with a resource class no node has fails with a last_error that quotes it.
  for (const text of [XSS[0], XSS[4], XSS[6]]) {
    await page.fill('#alloc-rc', text);
    await page.fill('#alloc-name', text);
    await page.click('#alloc-create');
    await page.waitForFunction(() => document.querySelector('#alloc-rows li')?.dataset.state === 'error');
    const first = page.locator('#alloc-rows li').first();
    assert.equal(await first.locator('.run-name').textContent(), text);
    assert.match(
      await first.locator('.run-error').textContent(),
      /^Failed to process allocation [0-9a-f-]{36}: no available nodes match the resource class /,
    );
    assert.ok((await first.locator('.run-error').textContent()).includes(text));
  }

  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no script of the corpus ran');
  assert.equal(await page.title(), 'ironic-wait console');
  // The console's own charts are SVG (made element by element, text set as text); nothing else is.
  assert.equal(
    await page
      .locator(
        'main img, main script, main svg:not(.chart), main iframe, main a, main b, #messages *:not(li, div, strong, p, button, code)',
      )
      .count(),
    0,
    'no element was made from server text',
  );
  assert.equal(await page.locator('main svg.chart *:not(title, line, text, path)').count(), 0, 'the charts hold only what chart.js draws');
  // A CSP violation would be a console error: none means no markup was even attempted.
  assert.deepEqual(page.problems, []);
  assert.equal(server.sim.log({ method: 'POST', path: '/v1/allocations' }).length, 3, "the page's own writes went through");
});

test("the page's own writes pass with its token: Reset demo fleet", { timeout: TEST_TIMEOUT }, async () => {
  const server = await startConsoleServer({ scenario: { nodes: NODES } });
  open.push(server);
  server.sim.setNode('n1', { provision_state: 'manageable' });
  const page = await newPage();
  const resets = [];
  page.on('response', (r) => r.url().endsWith('/__sim/reset') && resets.push(r.status()));
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="true"]');
  await page.click('#reset-demo');
  await page.waitForFunction(() => document.querySelector('#node-rows tr[data-name="n1"]')?.dataset.state === 'available');
  assert.deepEqual(resets, [200]);
  assert.equal(server.sim.node('n1').provision_state, 'available');
  assert.deepEqual(page.problems, []);
});
