// The runtime matrix, headless Chromium (Debian's, driven by playwright-core):
// the scenario in two consumer projects, each in the page and in a module
// Web Worker, under the console's Content-Security-Policy:
// - a page built by vite (`vite build`, default settings: minified; only
//   module workers are built as ES modules, see browser/vite.config.js);
// - a page without a bundler, whose import map points `ironic-wait` at the
//   package's pkg/web.js (the CSP then also names the import map's hash:
//   an inline import map is an inline script).
// Each page is served from the same origin as the simulator (the CSP allows
// no other), by a static server that mounts the simulator's handler.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CSP } from '../../www/server.mjs';
import { BIN, startSim, consumerProject, runToEnd, nodeReport, assertReport } from './harness.mjs';
import { launchChromium, allowImportMap, servePage, runPage } from './pages.mjs';

// Chromium logs every 4xx answer to fetch; the scenario asks for a missing node on purpose.
const expected404 = (text) => text === 'Failed to load resource: the server responded with a status of 404 (Not Found)';

let sim;
let browser;
let node;
const servers = {};

before(async () => {
  sim = await startSim();
  const mount = (req, res) => sim.handle(req, res);
  const built = consumerProject('chromium', 'vite', {
    'index.html': 'browser/index.html', 'main.js': 'browser/main.js', 'worker.js': 'browser/worker.js', 'vite.config.js': 'browser/vite.config.js',
  });
  await runToEnd(join(BIN, 'vite'), ['build', '--logLevel', 'warn'], { cwd: built });
  servers.vite = await servePage(join(built, 'dist'), { csp: CSP, mount });

  const mapped = consumerProject('chromium', 'importmap', {
    'index.html': 'browser/importmap.html', 'main.js': 'browser/main.js', 'worker.js': 'browser/importmap-worker.js',
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

for (const [server, what] of [['vite', 'a page built by vite 8'], ['importmap', 'a page with an import map']]) {
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
