// Browser helpers of the runtime matrix: Debian's Chromium through
// playwright-core, a static page server, and a page's report.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup.mjs';
import { listen } from '../../sim/http.mjs';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
// Bounds, not budgets: a page's scenario takes seconds; other suites run beside this one on a loaded machine.
const REPORT_TIMEOUT = 300_000;

export const launchChromium = () => chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });

/** `csp` with the hash of `html`'s inline import map allowed in script-src (an inline import map is an inline script). */
export function allowImportMap(csp, html) {
  const importMap = html.match(/<script type="importmap">(.*?)<\/script>/s)[1];
  const hash = createHash('sha256').update(importMap).digest('base64');
  return csp.replace("script-src 'self'", `script-src 'self' 'sha256-${hash}'`);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/**
 * Serves the files under `root` (`/` is `index`) with `csp` (a string, or a
 * function giving it) on every answer; requests `mount(req, res)` takes
 * (returns true) are its own.
 */
export async function servePage(root, { csp, index = 'index.html', mount = () => false }) {
  const server = http.createServer((req, res) => {
    if (mount(req, res)) return;
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(root, path === '/' ? index : path);
    res.setHeader('Content-Security-Policy', typeof csp === 'function' ? csp() : csp);
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
  return { url: `http://127.0.0.1:${listening.port}`, port: listening.port, close: () => listening.close() };
}

/** Collects a page's console errors, page errors and dialogs (each dismissed) in `page.problems`; returns the page. */
export function collectProblems(page) {
  page.problems = [];
  page.on('console', (m) => m.type() === 'error' && page.problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    page.problems.push(`dialog: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  return page;
}

/**
 * Opens `url` and waits for <body data-report> (or data-error, a failure);
 * returns the report, the CSP violations the page saw and the console
 * errors, less those `expected` matches.
 */
export async function runPage(browser, url, { expected = () => false } = {}) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && !expected(m.text()) && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  try {
    await page.goto(url);
    await page.waitForFunction(() => document.body?.dataset.report || document.body?.dataset.error, null, { timeout: REPORT_TIMEOUT });
    const { report, violations = '[]', error } = await page.evaluate(() => ({ ...document.body.dataset }));
    assert.equal(error, undefined, `the page failed: ${error}\n${problems.join('\n')}`);
    return { report: JSON.parse(report), violations: JSON.parse(violations), problems };
  } finally {
    await page.close();
  }
}
