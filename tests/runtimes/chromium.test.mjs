// The runtime matrix, headless Chromium (Debian's, driven by playwright-core):
// the scenario in two consumer projects, each in the page and in a module
// Web Worker, under the console's Content-Security-Policy:
// - a page built by vite (`vite build`, default settings: minified; only
//   module workers are built as ES modules, see browser/vite.config.js);
// - a page without a bundler, whose import map points `ironic-wait` at the
//   package's pkg/web.js (the CSP then also names the import map's hash:
//   an inline import map is an inline script).
// Each page is served from the same origin as the simulator (the CSP allows
// no other), by a small static server that mounts the simulator's handler.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup.mjs';
import { CSP } from '../../www/server.mjs';
import { listen } from '../../sim/http.mjs';
import { BIN, startSim, consumerProject, runToEnd, nodeReport, assertReport } from './harness.mjs';

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run',
];
const SCENARIO_TIMEOUT = 120_000;

let sim;
let browser;
let node;
const servers = {};

before(async () => {
  sim = await startSim();
  const built = consumerProject('chromium', 'vite', {
    'index.html': 'browser/index.html', 'main.js': 'browser/main.js', 'worker.js': 'browser/worker.js', 'vite.config.js': 'browser/vite.config.js',
  });
  await runToEnd(join(BIN, 'vite'), ['build', '--logLevel', 'warn'], { cwd: built });
  servers.vite = await servePage(join(built, 'dist'), CSP);

  const mapped = consumerProject('chromium', 'importmap', {
    'index.html': 'browser/importmap.html', 'main.js': 'browser/main.js', 'worker.js': 'browser/importmap-worker.js',
  });
  const importMap = readFileSync(join(mapped, 'index.html'), 'utf8').match(/<script type="importmap">(.*?)<\/script>/s)[1];
  const hash = createHash('sha256').update(importMap).digest('base64');
  servers.importmap = await servePage(mapped, CSP.replace("script-src 'self'", `script-src 'self' 'sha256-${hash}'`));

  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 20_000 });
  node = await nodeReport('chromium', sim.url);
});

after(async () => {
  await browser?.close();
  for (const s of Object.values(servers)) await s.close();
  await sim?.close();
});

for (const [server, what] of [['vite', 'a page built by vite 8'], ['importmap', 'a page with an import map']]) {
  for (const where of ['page', 'worker']) {
    test(`Chromium: ${what}, in the ${where}, under the console's CSP, same as Node`, async (t) => {
      const { report, violations, problems } = await runPage(`${servers[server].url}/${where === 'worker' ? '#worker' : ''}`);
      assert.deepEqual(violations, [], 'the CSP refused nothing');
      assert.deepEqual(problems, [], 'no errors in the console');
      await assertReport(t, report, node);
    });
  }
}

// Chromium logs every 4xx answer to fetch; the scenario asks for a missing node on purpose.
const EXPECTED_404 = 'Failed to load resource: the server responded with a status of 404 (Not Found)';

/** Opens `url`, waits for the scenario's report on <body>; returns it, the CSP violations and console errors. */
async function runPage(url) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && m.text() !== EXPECTED_404 && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  try {
    await page.goto(url);
    await page.waitForFunction(() => document.body?.dataset.report || document.body?.dataset.error, null, { timeout: SCENARIO_TIMEOUT });
    const { report, violations, error } = await page.evaluate(() => ({ ...document.body.dataset }));
    assert.equal(error, undefined, `the scenario failed in the browser: ${error}\n${problems.join('\n')}`);
    return { report: JSON.parse(report), violations: JSON.parse(violations), problems };
  } finally {
    await page.close();
  }
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css; charset=utf-8',
};

/**
 * Serves the files under `root` with `csp` on every answer, and the
 * simulator's /v1 and /__sim on the same origin.
 */
async function servePage(root, csp) {
  const server = http.createServer((req, res) => {
    if (sim.handle(req, res)) return;
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(root, path === '/' ? 'index.html' : path);
    res.setHeader('Content-Security-Policy', csp);
    if (path === '/favicon.ico') return void res.writeHead(204).end(); // no 404 in the console
    try {
      if (!file.startsWith(root) || !TYPES[extname(file)]) throw new Error('not served');
      const body = readFileSync(file);
      res.writeHead(200, { 'Content-Type': TYPES[extname(file)], 'Cache-Control': 'no-store' }).end(body);
    } catch {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
    }
  });
  const listening = await listen(server, 0, '127.0.0.1');
  return { url: `http://127.0.0.1:${listening.port}`, close: () => listening.close() };
}
