// A page in Chromium logging in to a real Keystone 30 on another origin and
// driving the real Ironic 39 its catalog names (behind Keystone) on a third:
// the package's login works in a browser when Keystone's and Ironic's CORS
// allow the page, as the README's "Browsers and CORS" says.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ironicApi, issueToken, passwordAuth, startIronicBehindKeystone, startKeystone } from '../../scripts/real-keystone.mjs';
import { CSP } from '../../www/server.mjs';
import { consumerProject } from '../runtimes/harness.mjs';
import { allowImportMap, launchChromium, runPage, servePage } from '../runtimes/pages.mjs';

const PROJECT = 'browser';
const USER = 'frank';
const PASSWORD = 'frank-secret-9';

let browser;
const started = []; // what to stop, whatever fails
before(async () => {
  browser = await launchChromium();
  started.push(() => browser.close());
});
after(() => Promise.allSettled(started.map((stop) => stop())));

// A bound, not a budget: 20 s alone, 140 s beside other suites at a load average of 18.
test('a page logs in to Keystone through CORS, finds Ironic in the catalog and waits; a wrong password is an AuthError with its request id', {
  timeout: 900_000,
}, async () => {
  const dir = consumerProject('keystone', 'page', { 'index.html': 'browser/keystone.html', 'keystone.js': 'browser/keystone.js' });
  let csp;
  const page = await servePage(dir, { csp: () => csp });
  started.push(() => page.close());
  const keystone = await startKeystone({ name: 'browser', corsOrigin: page.url });
  started.push(() => keystone.stop());
  const ironic = await startIronicBehindKeystone(keystone, {
    name: 'browser-ironic',
    cors: [
      page.url,
      'allow_headers = X-Auth-Token,X-OpenStack-Ironic-API-Version,Content-Type',
      'expose_headers = X-OpenStack-Ironic-API-Minimum-Version,X-OpenStack-Ironic-API-Maximum-Version,X-OpenStack-Request-Id',
    ].join('\n'),
  });
  started.push(() => ironic.stop());
  await keystone.createProjectUser({ project: PROJECT, user: USER, password: PASSWORD, role: 'admin' });
  const { token } = await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }));
  await ironicApi(ironic.url, token)('POST', '/v1/nodes', { name: 'kb-1', driver: 'fake-hardware' });

  csp = `${allowImportMap(CSP, readFileSync(join(dir, 'index.html'), 'utf8'))}; connect-src 'self' ${keystone.root} ${ironic.url}`;
  const query = new URLSearchParams({ auth: keystone.url, user: USER, password: PASSWORD, project: PROJECT });
  const { report, violations, problems } = await runPage(browser, `${page.url}/?${query}`, {
    // Chromium logs the refused login's 401 as a failed resource.
    expected: (text) => /Failed to load resource/.test(text),
  });
  assert.deepEqual(violations, []);
  assert.deepEqual(problems, []);
  assert.deepEqual(report.manage, { value: [['kb-1', 'reached', 'manageable']] });
  assert.deepEqual(report.endpoint, { value: ironic.url });
  assert.equal(report.wrongPassword.error, 'AuthError');
  assert.equal(report.wrongPassword.status, 401);
  assert.match(report.wrongPassword.requestId, /^req-[0-9a-f-]{36}$/);
  assert.equal(
    report.wrongPassword.message,
    `The request you have made requires authentication. (HTTP 401) (Request-ID: ${report.wrongPassword.requestId})`,
  );
});
