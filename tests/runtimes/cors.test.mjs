// A page on one loopback origin calling a real Ironic 39 (scripts/real-ironic.mjs)
// on another, in Chromium: once with Ironic's stock `[cors]` (only
// `allowed_origin`), once with the settings the README documents. The page
// (browser/cors.js, the package through an import map) runs under the
// console's CSP plus its import map's hash and Ironic's origin in connect-src.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startIronic } from '../../scripts/real-ironic.mjs';
import { CSP } from '../../www/server.mjs';
import { consumerProject } from './harness.mjs';
import { allowImportMap, launchChromium, runPage, servePage } from './pages.mjs';

// What the README's "Browsers and CORS" section tells Ironic operators to set.
const DOCUMENTED_CORS = {
  expose_headers:
    'X-OpenStack-Ironic-API-Minimum-Version,X-OpenStack-Ironic-API-Maximum-Version,X-OpenStack-Ironic-API-Version,' +
    'X-OpenStack-Request-Id,OpenStack-Request-Id,Retry-After',
  allow_headers: 'Authorization,X-Auth-Token,X-OpenStack-Ironic-API-Version,X-OpenStack-Request-Id,Content-Type',
};

let browser;
let dir;

before(async () => {
  dir = consumerProject('cors', 'page', { 'index.html': 'browser/cors.html', 'cors.js': 'browser/cors.js' });
  browser = await launchChromium();
});

after(() => browser?.close());

/**
 * A real Ironic whose `[cors]` allows the page's origin (plus `settings`),
 * with one node `cors-1` in enroll; the page's report against it.
 */
async function reportWith(name, settings = {}) {
  // The page's origin goes into Ironic's [cors]; Ironic's origin into the page's CSP.
  let csp;
  const page = await servePage(dir, { csp: () => csp });
  // startIronic writes `allowed_origin = <cors>` into [cors]; lines after the first are more [cors] settings.
  const cors = [page.url, ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`)].join('\n');
  const ironic = await startIronic({ name: `cors-${name}`, cors });
  try {
    csp = `${allowImportMap(CSP, readFileSync(join(dir, 'index.html'), 'utf8'))}; connect-src 'self' ${ironic.url}`;
    const made = await fetch(`${ironic.url}/v1/nodes`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-OpenStack-Ironic-API-Version': 'latest' },
      body: JSON.stringify({ name: 'cors-1', driver: 'fake-hardware' }),
    });
    assert.equal(made.status, 201, await made.text());
    // The settings took: what a page may read is what they expose.
    const probe = await fetch(`${ironic.url}/v1`, { headers: { Origin: page.url } });
    assert.equal(probe.headers.get('access-control-allow-origin'), page.url);
    assert.equal(probe.headers.get('access-control-expose-headers') ?? '', settings.expose_headers ?? '');
    const { report, violations, problems } = await runPage(browser, `${page.url}/?ironic=${encodeURIComponent(ironic.url)}`, {
      // Chromium logs refused preflights and 404s; the report says what they did.
      expected: (text) => /blocked by CORS policy|Failed to load resource/.test(text),
    });
    assert.deepEqual(violations, []);
    assert.deepEqual(problems, []);
    return report;
  } finally {
    await Promise.all([ironic.stop(), page.close()]);
  }
}

// A refused preflight is a plain network failure to the page; the message says it may be CORS.
const FAILED_FETCH = {
  error: 'ConnectionError',
  message:
    "Error contacting Ironic server: Failed to fetch (in a browser this is also how a request refused by CORS looks: see the README's Browsers and CORS)",
};
const WORKS = {
  microversion: { value: '1.115' },
  listNodes: { value: [['cors-1', 'enroll']] },
  getNode: { value: 'enroll' },
  manage: { value: [['cors-1', 'reached', 'manageable']] },
  token: { value: 'cors-1' },
};

test('stock [cors] (only allowed_origin): the API works, negotiated from the GET /v1 body; no request ids; Authorization and X-OpenStack-Request-Id refused', async () => {
  assert.deepEqual(await reportWith('stock'), {
    ...WORKS,
    missing: { error: 'IronicHttpError', message: 'Node ghost could not be found. (HTTP 404)', requestId: null },
    basicAuth: FAILED_FETCH,
    requestIdHeader: FAILED_FETCH,
  });
});

test('the documented [cors] settings: everything works, request ids included', async () => {
  assert.deepEqual(await reportWith('documented', DOCUMENTED_CORS), {
    ...WORKS,
    missing: {
      error: 'IronicHttpError',
      message: 'Node ghost could not be found. (HTTP 404) (Request-ID: req-<uuid>)',
      requestId: 'req-<uuid>',
    },
    basicAuth: { value: 'cors-1' },
    requestIdHeader: { value: 'cors-1' },
  });
});
