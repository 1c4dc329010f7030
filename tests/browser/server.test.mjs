// The console server without a browser: static files with their types and
// the CSP, nothing outside www/ and pkg/, the embedded simulator and its demo
// fleet, and the IRONIC_URL proxy (token added server-side, never shown).
// Its defences against other origins are in security.test.mjs.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { IronicClient, IronicHttpError } from 'ironic-wait';
import { tlsAgent } from '../../cli/tls.mjs';
import { listen } from '../../sim/http.mjs';
import { createSimulator } from '../../sim/server.mjs';
import { demoFleet } from '../../www/demo-fleet.mjs';
import { CSP, startConsoleServer } from '../../www/server.mjs';
import { startIronic } from '../node/harness.mjs';
import { makeCertificates } from '../support/tls.mjs';

const open = [];
after(() => Promise.all(open.map((s) => s.close())));

async function start(options) {
  const server = await startConsoleServer(options);
  open.push(server);
  return server;
}

/** The write token the server put in its page (as the page reads it). */
async function pageToken(url) {
  const html = await (await fetch(url)).text();
  return html.match(/<meta name="console-token" content="([A-Za-z0-9_-]{43})">/)[1];
}

/** A raw GET (fetch would normalise `..` away). */
function rawGet(url, path) {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    http
      .get({ hostname, port, path }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      })
      .on('error', reject);
  });
}

const API = { 'X-OpenStack-Ironic-API-Version': 'latest' };

test('serves the page, its modules and the package with their types and the CSP', async () => {
  const { url } = await start();
  for (const [path, type] of [
    ['/', 'text/html; charset=utf-8'],
    ['/console.css', 'text/css; charset=utf-8'],
    ['/app.js', 'text/javascript; charset=utf-8'],
    ['/favicon.svg', 'image/svg+xml'],
    ['/pkg/web.js', 'text/javascript; charset=utf-8'],
    ['/pkg/ironic_wait_bg.wasm', 'application/wasm'],
  ]) {
    const res = await fetch(url + path);
    assert.equal(res.status, 200, path);
    assert.equal(res.headers.get('content-type'), type, path);
    assert.equal(res.headers.get('content-security-policy'), CSP, path);
    assert.equal(res.headers.get('x-frame-options'), 'DENY', path);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
    await res.arrayBuffer();
  }
  const html = await (await fetch(url)).text();
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  assert.doesNotMatch(html, /\sstyle=|<style/, 'no inline style');
  assert.equal((await fetch(`${url}/`, { method: 'HEAD' })).status, 200);
  assert.equal((await fetch(`${url}/`, { method: 'POST' })).status, 403, 'a write without the token');
  assert.equal((await fetch(`${url}/`, { method: 'POST', headers: { 'X-Console-Token': await pageToken(url) } })).status, 405);
});

test('nothing outside www/ and pkg/, and no server-side sources', async () => {
  const { url } = await start();
  for (const path of ['/server.mjs', '/demo-fleet.mjs', '/nope.js', '/pkg/index.d.ts', '/pkg', '/console.css.map']) {
    assert.equal(await rawGet(url, path), 404, path);
  }
  // Dot segments, encoded or not, separators and invalid escapes never name a file.
  for (const path of [
    '/../package.json',
    '/%2e%2e/package.json',
    '/pkg/../Cargo.toml',
    '/pkg/%2e%2e/Cargo.toml',
    '/..%2fCargo.toml',
    '/%2e%2e%2fCargo.toml',
    '/pkg/%252e%252e/Cargo.toml',
    '/pkg/..%5cCargo.toml',
    '/%00',
    '/%zz',
    '/pkg//web.js',
    '/./index.html',
    '/pkg/%2E%2E/%2E%2E/etc/passwd',
    '/%c0%ae%c0%ae/Cargo.toml',
    '/pkg/web.js%00.html',
  ]) {
    assert.equal(await rawGet(url, path), 400, path);
  }
  const res = await fetch(`${url}/pkg/missing.js`);
  assert.equal(res.status, 404);
  assert.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  assert.match(await res.text(), /npm run build/);
});

test('embedded mode: the simulator answers /v1 and /__sim with the demo fleet', async () => {
  const server = await start();
  const headers = { ...API, 'X-Console-Token': await pageToken(server.url) };
  assert.deepEqual(await (await fetch(`${server.url}/console.json`)).json(), { mode: 'simulator' });
  const { nodes } = await (await fetch(`${server.url}/v1/nodes?fields=name,provision_state,resource_class`, { headers })).json();
  assert.equal(nodes.length, 24);
  const states = new Set(nodes.map((n) => n.provision_state));
  for (const s of ['enroll', 'manageable', 'available', 'active']) assert.ok(states.has(s), s);
  assert.ok(nodes.some((n) => n.provision_state === 'available' && n.resource_class === 'gold'));
  assert.equal((await (await fetch(`${server.url}/__sim`, { headers })).json()).nodes, 24);
  assert.equal((await fetch(`${server.url}/__sim`)).status, 403, 'the API is for the page (with its token) only');
});

test('the demo fleet: readable failures, seeded phases of a few seconds, gold allocations succeed', async () => {
  const { sim, url } = await start({ scenario: { ...demoFleet(), manualClock: true } });
  const token = await pageToken(url);
  const client = new IronicClient({ endpoint: url, headers: { 'X-Console-Token': token } });
  await client.provision(['compute-08', 'compute-05'], 'deploy');
  await client.provision('edge-03', 'manage');
  sim.advance(60_000);
  assert.equal(sim.node('compute-05').provision_state, 'active');
  assert.equal(sim.node('compute-08').provision_state, 'deploy failed');
  assert.match(sim.node('compute-08').last_error, /^Deploy step deploy\.write_image failed: Image checksum mismatch/);
  assert.equal(sim.node('edge-03').provision_state, 'enroll');
  assert.match(sim.node('edge-03').last_error, /IPMI call failed/);
  // A deploy walks deploying -> wait call-back -> deploying -> active in a few seconds.
  const walk = sim.history('compute-05').entries.map((e) => [e.provision_state, e.t]);
  assert.deepEqual(
    walk.map(([s]) => s),
    ['available', 'deploying', 'wait call-back', 'deploying', 'active'],
  );
  const total = walk.at(-1)[1] - walk[1][1];
  assert.ok(total >= 4000 && total <= 12000, `deploy took ${total} ms`);

  const { report } = await client.createAllocation({ resourceClass: 'gold' }, { wait: false });
  assert.equal(report, null);
  sim.advance(2000);
  const allocations = await (await fetch(`${url}/v1/allocations`, { headers: { ...API, 'X-Console-Token': token } })).json();
  assert.equal(allocations.allocations[0].state, 'active');
});

test('proxy mode: /v1 goes to IRONIC_URL with the token added; the token never reaches the page', async () => {
  const ironic = await startIronic({ nodes: [{ name: 'n1', provision_state: 'available' }] });
  open.push(ironic);
  const server = await start({ ironicUrl: `${ironic.url}/v1/`, ironicToken: 'sekret-token' });
  assert.equal(server.sim, null);
  const token = await pageToken(server.url);

  const res = await fetch(`${server.url}/v1/nodes/n1?fields=name`, {
    headers: { ...API, 'X-Console-Token': token, 'X-Auth-Token': 'from-the-page', Cookie: 'a=b', Origin: server.url, 'X-Other': 'x' },
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).name, 'n1');
  assert.match(res.headers.get('x-openstack-request-id'), /^req-/);
  const seen = ironic.seen.at(-1);
  assert.equal(seen.url, '/v1/nodes/n1?fields=name');
  assert.equal(seen.headers['x-auth-token'], 'sekret-token');
  assert.equal(seen.headers['x-openstack-ironic-api-version'], 'latest');
  for (const name of ['cookie', 'origin', 'x-other', 'x-console-token']) assert.equal(seen.headers[name], undefined, name);

  // The package's own client through the proxy, with the page's token: a wait works end to end.
  const client = new IronicClient({ endpoint: server.url, headers: { 'X-Console-Token': token } });
  const report = await client.provision('n1', 'deploy', { wait: true, timeout: 10, pollInterval: 0.02 });
  assert.equal(report.ok, true);
  assert.ok(ironic.seen.every((r) => r.headers['x-auth-token'] === 'sekret-token'));

  const config = await (await fetch(`${server.url}/console.json`)).text();
  assert.deepEqual(JSON.parse(config), { mode: 'proxy', ironic: ironic.url });
  assert.doesNotMatch(config, /sekret/);
  assert.doesNotMatch(await (await fetch(server.url)).text(), /sekret/);
  assert.equal(
    (await fetch(`${server.url}/__sim`, { headers: { 'X-Console-Token': token } })).status,
    404,
    'no simulator control API in proxy mode',
  );
});

test('proxy mode with a token source (OS_CLOUD): asked per request, again after a 401 naming the refused token, then resent', async () => {
  const ironic = await startIronic({
    nodes: [{ name: 'n1', provision_state: 'available' }],
    faults: [{ kind: 'status', status: 401, method: 'PUT', path: '/v1/nodes/n1/states/provision', count: 1 }],
  });
  open.push(ironic);
  const asked = [];
  let issued = 0;
  const ironicToken = async (refused) => {
    asked.push(refused);
    if (refused === undefined && issued > 0) return `tok-${issued}`;
    return `tok-${++issued}`;
  };
  const server = await start({ ironicUrl: ironic.url, ironicToken });
  const client = new IronicClient({ endpoint: server.url, headers: { 'X-Console-Token': await pageToken(server.url) } });
  const report = await client.provision('n1', 'manage', { wait: true, timeout: 10, pollInterval: 0.02 });
  assert.equal(report.ok, true);
  const puts = ironic.requests('PUT', '/v1/nodes/n1/states/provision');
  assert.deepEqual(
    puts.map((r) => r.headers['x-auth-token']),
    ['tok-1', 'tok-2'],
    'the PUT (and its body) sent again with the new token',
  );
  assert.ok(asked.includes('tok-1'), 'the source was told which token was refused');
  // A source that fails is a generic 502, its error text stays on the server.
  const failing = await start({
    ironicUrl: ironic.url,
    ironicToken: async () => {
      throw new Error('keystone says no: hunter2');
    },
  });
  const res = await fetch(`${failing.url}/v1/nodes`, { headers: { ...API, 'X-Console-Token': await pageToken(failing.url) } });
  assert.equal(res.status, 502);
  const text = await res.text();
  assert.match(text, /The console server cannot log in to Keystone\./);
  assert.doesNotMatch(text, /hunter2/);
});

test('proxy mode to an https Ironic with a private CA: trusted through the given Agent (OS_CACERT), refused without it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-console-tls-'));
  const { ca, key, cert } = makeCertificates(dir);
  const sim = createSimulator({ seed: 3, scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
  const ironic = await listen(
    https.createServer({ key, cert }, (req, res) => sim.handle(req, res) || res.writeHead(404).end()),
    0,
    '127.0.0.1',
  );
  open.push({
    close: () =>
      ironic
        .close()
        .then(() => sim.close())
        .then(() => rmSync(dir, { recursive: true, force: true })),
  });
  const ironicUrl = `https://127.0.0.1:${ironic.port}`;
  const node = async (server) => {
    const client = new IronicClient({ endpoint: server.url, maxRetries: 0, headers: { 'X-Console-Token': await pageToken(server.url) } });
    return client.getNode('n1');
  };
  const trusting = await start({ ironicUrl, ironicAgent: await tlsAgent({ cacert: ca, verify: true }) });
  assert.equal((await node(trusting)).name, 'n1');
  const unchecked = await start({ ironicUrl, ironicAgent: await tlsAgent({ verify: false }) });
  assert.equal((await node(unchecked)).name, 'n1');
  // The system's CAs do not know it: a generic 502, nothing from the TLS error on the page.
  const refusing = await start({ ironicUrl });
  await assert.rejects(node(refusing), (e) => e instanceof IronicHttpError && e.status === 502 && !/certificate/i.test(e.message));
  const reached = sim.requestLog.entries.map((e) => `${e.method} ${e.path}`);
  assert.deepEqual(reached, ['GET /v1', 'GET /v1/nodes/n1', 'GET /v1', 'GET /v1/nodes/n1'], 'only the trusting servers reached Ironic');
});

test('proxy mode: credentials in IRONIC_URL become HTTP Basic; an unreachable Ironic is a generic 502', async () => {
  const ironic = await startIronic({ nodes: [{ name: 'n1', provision_state: 'available' }] });
  open.push(ironic);
  const withBasic = await start({ ironicUrl: ironic.url.replace('http://', 'http://admin:p%40ss@') });
  await (await fetch(`${withBasic.url}/v1`, { headers: { 'X-Console-Token': await pageToken(withBasic.url) } })).arrayBuffer();
  assert.equal(ironic.seen.at(-1).headers.authorization, `Basic ${Buffer.from('admin:p@ss').toString('base64')}`);
  assert.equal((await (await fetch(`${withBasic.url}/console.json`)).json()).ironic, ironic.url);

  const closed = await start();
  const deadUrl = closed.url;
  await closed.close();
  open.splice(open.indexOf(closed), 1);
  const server = await start({ ironicUrl: deadUrl });
  const client = new IronicClient({ endpoint: server.url, maxRetries: 0, headers: { 'X-Console-Token': await pageToken(server.url) } });
  await assert.rejects(client.getNode('n1'), (e) => {
    assert.ok(e instanceof IronicHttpError);
    assert.equal(e.status, 502);
    assert.equal(e.detail, 'The console server cannot reach Ironic.');
    return true;
  });
  // Configuration errors do not repeat the URL (it may hold a password).
  await assert.rejects(startConsoleServer({ ironicUrl: 'ftp://admin:hunter2@x' }), (e) => {
    assert.equal(e.message, 'IRONIC_URL must be http(s), not ftp:');
    return true;
  });
  await assert.rejects(startConsoleServer({ ironicUrl: 'http://admin:hunter2@[x' }), (e) => {
    assert.equal(e.message, 'IRONIC_URL is not a URL');
    return true;
  });
  await assert.rejects(startConsoleServer({ host: '0.0.0.0' }), /loopback address only/);
});
