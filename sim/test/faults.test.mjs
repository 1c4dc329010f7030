// Fault injection: each kind, how rules address requests, and their counters.

import assert from 'node:assert/strict';
import http from 'node:http';
import { afterEach, beforeEach, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { startSimulator } from '../server.mjs';
import { client, faultstring, provision, request } from '../testkit.mjs';

let sim;
let api;
beforeEach(async () => {
  sim = await startSimulator({
    manualClock: true,
    scenario: { nodes: ['n1', 'n2', 'n3', 'n5', 'n7'].map((name) => ({ name, provision_state: 'available' })) },
  });
  api = client(sim.url);
});
afterEach(() => sim.close());

const statuses = async (path, n) => {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await api.get(path)).status);
  return out;
};

test('"the next 3 GETs of node n2 answer 503 with Retry-After: 1", by name or UUID', async () => {
  sim.faults.add({ node: 'n2', method: 'GET', kind: 'status', status: 503, retryAfter: 1, count: 3 });
  const first = await api.get('/v1/nodes/n2');
  assert.equal(first.status, 503);
  assert.equal(first.headers['retry-after'], '1');
  assert.equal(first.headers['x-openstack-ironic-api-version'], '1.115');
  assert.equal(faultstring(first), 'Resource temporarily unavailable, please retry.');
  assert.equal(JSON.parse(first.json.error_message).faultcode, 'Server');
  assert.deepEqual(await statuses(`/v1/nodes/${sim.node('n2').uuid}`, 3), [503, 503, 200]);
  assert.deepEqual(await statuses('/v1/nodes/n1', 1), [200], 'other nodes are untouched');
  assert.equal(sim.faults.list()[0].remaining, 0);
});

test('409 bursts on PUT default to NodeLocked, refuse the action, and count; 503 without Retry-After', async () => {
  sim.faults.add([
    { node: 'n1', method: 'PUT', kind: 'status', status: 409, count: 2 },
    { node: 'n3', kind: 'status', status: 503 },
  ]);
  const locked = await provision(api, 'n1', 'manage');
  assert.equal(locked.status, 409);
  assert.equal(
    faultstring(locked),
    `Node ${sim.node('n1').uuid} is locked by host localhost, please retry after the current operation is completed.`,
  );
  assert.equal((await provision(api, 'n1', 'manage')).status, 409);
  assert.equal((await api.get('/v1/nodes/n1?fields=provision_state')).json.provision_state, 'available', 'a refused PUT changes nothing');
  assert.equal((await provision(api, 'n1', 'manage')).status, 202);
  const unavailable = await api.get('/v1/nodes/n3');
  assert.equal(unavailable.status, 503);
  assert.equal(unavailable.headers['retry-after'], undefined);
});

test('added latency delays the answer, and stacks with another fault', async () => {
  sim.faults.add([
    { path: '/v1/nodes/n1', kind: 'latency', ms: 120 },
    { path: '/v1/nodes/n1', kind: 'status', status: 500, message: 'kaboom', count: 1 },
  ]);
  // Timers fire in the order they fall due: one of 100 ms started before the request fires before the
  // simulator's 120 ms that starts when the request arrives, however late a loaded machine runs both.
  const marks = [];
  setTimeout(() => marks.push('100 ms'), 100);
  const slow = await api.get('/v1/nodes/n1');
  assert.deepEqual(marks, ['100 ms'], 'the latency was added');
  assert.equal(slow.status, 500);
  assert.equal(faultstring(slow), 'kaboom');
  assert.equal((await api.get('/v1/nodes/n1')).status, 200);
  assert.deepEqual(
    sim.log({ path: '/v1/nodes/n1' }).map((e) => e.fault),
    ['status', 'latency'],
  );
});

test('hang: no answer until the client gives up; close() ends hung sockets', async () => {
  sim.faults.add({ path: '/v1/nodes*', kind: 'hang' });
  await assert.rejects(api.get('/v1/nodes', { timeout: 150 }), { code: 'TIMEOUT' });
  await assert.rejects(api.get('/v1/nodes/n1', { timeout: 150 }), { code: 'TIMEOUT' });
  assert.equal((await api.get('/v1')).status, 200, 'other paths still answer');
  const pending = api.get('/v1/nodes/n2');
  while (sim.log({ node: 'n2' }).length === 0) await new Promise((r) => setTimeout(r, 5)); // it arrived
  await sim.close();
  await assert.rejects(pending, { code: 'ECONNRESET' });
  const [entry] = sim.log({ node: 'n2' });
  assert.equal(entry.fault, 'hang');
  assert.equal(entry.status, null);
});

test('reset drops the connection; with process:true the PUT took effect first', async () => {
  sim.faults.add([
    { node: 'n1', method: 'GET', kind: 'reset', count: 1 },
    { node: 'n5', method: 'PUT', kind: 'reset', process: true, count: 1 },
  ]);
  await assert.rejects(api.get('/v1/nodes/n1'), { code: 'ECONNRESET' });
  assert.equal((await api.get('/v1/nodes/n1')).status, 200);
  await assert.rejects(provision(api, 'n5', 'manage'), { code: 'ECONNRESET' });
  assert.equal((await api.get('/v1/nodes/n5?fields=provision_state')).json.provision_state, 'manageable');
});

test('malformed JSON once on the list endpoint', async () => {
  sim.faults.add({ path: '/v1/nodes', method: 'GET', kind: 'malformed', count: 1 });
  const bad = await api.get('/v1/nodes');
  assert.equal(bad.status, 200);
  assert.equal(bad.headers['content-type'], 'application/json');
  assert.equal(bad.json, undefined);
  assert.throws(() => JSON.parse(bad.text));
  assert.ok(bad.text.startsWith('{"nodes":['));
  assert.equal((await api.get('/v1/nodes')).json.nodes.length, 5);
});

test('an HTML error page', async () => {
  sim.faults.add({ kind: 'html', status: 502, count: 1 });
  const res = await api.get('/v1/nodes/n1');
  assert.equal(res.status, 502);
  assert.equal(res.headers['content-type'], 'text/html');
  assert.match(res.text, /<h1>502 Bad Gateway<\/h1>/);
  assert.equal(res.headers['x-openstack-ironic-api-maximum-version'], undefined, 'a proxy answered, not Ironic');
});

test('"node n5\'s GETs answer {}"; a body of null; an empty 200', async () => {
  sim.faults.add([
    { node: 'n5', method: 'GET', kind: 'empty' },
    { node: 'n3', kind: 'body', body: null },
    { node: 'n2', kind: 'body', body: '', status: 200 },
  ]);
  for (let i = 0; i < 2; i++) assert.deepEqual((await api.get('/v1/nodes/n5')).json, {});
  const nullBody = await api.get('/v1/nodes/n3');
  assert.equal(nullBody.text, 'null');
  assert.equal(nullBody.headers['x-openstack-ironic-api-version'], '1.115', 'still answered as Ironic');
  const empty = await api.get('/v1/nodes/n2');
  assert.equal(empty.text, '');
  assert.equal(empty.headers['content-length'], '0');
});

test('"node n7 provision_state null"; missing fields; the list gets them too', async () => {
  sim.faults.add([
    { node: 'n7', kind: 'set', set: { provision_state: null } },
    { node: 'n1', kind: 'omit', omit: ['provision_state'] },
    { node: 'n2', kind: 'omit', omit: ['target_provision_state', 'last_error'] },
    { path: '/v1/nodes', kind: 'set', set: { maintenance: 'weird' }, count: 1 },
  ]);
  const n7 = (await api.get('/v1/nodes/n7')).json;
  assert.equal(n7.provision_state, null);
  assert.equal(n7.name, 'n7');
  assert.equal('provision_state' in (await api.get('/v1/nodes/n1')).json, false);
  const n2 = (await api.get('/v1/nodes/n2')).json;
  assert.equal('target_provision_state' in n2 || 'last_error' in n2, false);
  assert.equal(n2.provision_state, 'available');
  const list = (await api.get('/v1/nodes')).json;
  assert.ok(list.nodes.every((n) => n.maintenance === 'weird'));
});

test('a very large body', async () => {
  sim.faults.add({ node: 'n1', kind: 'large', bytes: 3_000_000 });
  const res = await api.get('/v1/nodes/n1');
  assert.ok(res.text.length >= 2_900_000 && res.text.length <= 3_000_100, String(res.text.length));
  assert.equal(res.json.name, 'n1');
});

test('fraction: a seeded share of matching requests, the same on every run', async () => {
  const run = async () => {
    sim.reset();
    sim.faults.add({ path: '/v1/nodes/*', kind: 'status', status: 503, fraction: 0.3 });
    return statuses('/v1/nodes/n1', 60);
  };
  const a = await run();
  const b = await run();
  assert.deepEqual(a, b);
  const failed = a.filter((s) => s === 503).length;
  assert.ok(failed > 5 && failed < 35, `${failed} of 60`);
});

test('skip lets the first matching requests through; path globs; methods', async () => {
  sim.faults.add({ path: '/v1/nodes/*/states/provision', method: 'put', kind: 'status', status: 409, skip: 1, count: 1 });
  assert.equal((await provision(api, 'n1', 'manage')).status, 202);
  assert.equal((await provision(api, 'n2', 'manage')).status, 409);
  assert.equal((await provision(api, 'n2', 'manage')).status, 202);
});

test('bad fault rules are refused as a whole', async () => {
  assert.throws(() => sim.faults.add([{ kind: 'status', status: 503 }, { kind: 'explode' }]), /unknown kind/);
  assert.throws(() => sim.faults.add({ kind: 'status' }), /HTTP error status/);
  assert.throws(() => sim.faults.add({ kind: 'latency', ms: 5, colour: 'red' }), /unknown key "colour"/);
  assert.equal(sim.faults.list().length, 0);
  const res = await request(sim.url, 'POST', '/__sim/faults', { body: { kind: 'nope' } });
  assert.equal(res.status, 400);
  assert.match(res.json.error, /unknown kind/);
});

// ---------------------------------------------------------------- a hostile server's transport

/**
 * GET with the raw bytes as they came (no decompression) and what went wrong
 * after the headers, if anything: `{ status, headers, body, error, chunks }`.
 */
function rawGet(path, { signal } = {}) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let done = reject; // until the headers came
    const req = http.get(
      new URL(path, sim.url),
      { headers: { 'X-OpenStack-Ironic-API-Version': '1.115' }, agent: false, signal },
      (res) => {
        done = (error) =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(chunks.map((c) => c.data)),
            error,
            chunks,
          });
        res.on('data', (data) => chunks.push({ data, at: performance.now() }));
        res.on('end', () => setImmediate(() => done(null))); // an error right after the body still counts
        res.on('error', (e) => done(e));
        res.on('aborted', () => done(new Error('aborted')));
      },
    );
    req.on('error', (e) => done(e));
  });
}

test('redirect: a 3xx to another origin or path, as a proxy sends it; nothing is processed', async () => {
  sim.faults.add([
    { node: 'n1', method: 'GET', kind: 'redirect', location: 'http://127.0.0.1:9{path}', count: 1 },
    { node: 'n2', method: 'PUT', kind: 'redirect', status: 301, location: '/elsewhere' },
  ]);
  const moved = await api.get('/v1/nodes/n1?fields=uuid,name');
  assert.equal(moved.status, 307);
  assert.equal(moved.headers.location, 'http://127.0.0.1:9/v1/nodes/n1?fields=uuid,name');
  assert.equal(moved.headers['x-openstack-ironic-api-maximum-version'], undefined, 'a proxy answered, not Ironic');
  assert.equal((await api.get('/v1/nodes/n1')).status, 200, 'count: 1');
  const put = await provision(api, 'n2', 'manage');
  assert.equal(put.status, 301);
  assert.equal(put.headers.location, '/elsewhere');
  assert.equal((await api.get('/v1/nodes/n2?fields=provision_state')).json.provision_state, 'available', 'the PUT was not carried out');
  assert.throws(() => sim.faults.add({ kind: 'redirect', location: '/x', status: 200 }), /3xx status/);
  assert.throws(() => sim.faults.add({ kind: 'redirect' }), /"location" must be/);
  assert.throws(() => sim.faults.add({ kind: 'redirect', location: '/x\r\nSet-Cookie: a=b' }), /"location" must be/);
});

test('drip: the real answer a few bytes at a time; the dripping stops when the client hangs up', async () => {
  const whole = (await api.get('/v1/nodes/n1')).text;
  sim.faults.add({ node: 'n1', kind: 'drip', chunk: 200, ms: 30 });
  // The writes are chained 30 ms timers: a timer started now for all but the last gap falls due first.
  const marks = [];
  const writes = Math.ceil(Buffer.byteLength(whole) / 200);
  setTimeout(() => marks.push('spaced'), (writes - 1) * 30 - 10);
  const slow = await rawGet('/v1/nodes/n1');
  assert.equal(slow.error, null);
  assert.equal(slow.body.toString(), whole);
  assert.equal(Number(slow.headers['content-length']), Buffer.byteLength(whole), 'the true length, announced at once');
  assert.ok(writes >= 5, `${writes} writes`);
  assert.ok(slow.chunks.length >= 3, `${slow.chunks.length} chunks arrived apart`);
  assert.deepEqual(marks, ['spaced'], 'spaced by ms');
  // A client that gives up mid-body: the simulator stops writing to it.
  sim.faults.clear();
  sim.faults.add({ node: 'n1', kind: 'drip', chunk: 10, ms: 20 });
  const controller = new AbortController();
  const aborted = rawGet('/v1/nodes/n1', { signal: controller.signal }).catch((e) => e);
  while (sim.timers.size === 0) await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  await aborted;
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(sim.timers.size, 0, 'no write scheduled after the client left');
  assert.throws(() => sim.faults.add({ kind: 'drip', chunk: 0 }), /"chunk"/);
  assert.throws(() => sim.faults.add({ kind: 'drip', ms: 2 ** 31 }), /"ms"/);
});

test('gzip: the real body gzipped and padded with spaces to inflate to `bytes` (a bomb), still valid JSON', async () => {
  sim.faults.add({ node: 'n1', kind: 'gzip', bytes: 20 * 1024 * 1024 });
  const bomb = await rawGet('/v1/nodes/n1');
  assert.equal(bomb.headers['content-encoding'], 'gzip');
  assert.ok(bomb.body.length < 64 * 1024, `${bomb.body.length} bytes on the wire`);
  const inflated = gunzipSync(bomb.body);
  assert.equal(inflated.length, 20 * 1024 * 1024);
  assert.equal(JSON.parse(inflated.toString()).name, 'n1');
  // fetch inflates it like any gzip answer: the concatenated members are standard gzip.
  const text = await (await fetch(`${sim.url}/v1/nodes/n1`, { headers: { 'X-OpenStack-Ironic-API-Version': '1.115' } })).text();
  assert.equal(text.length, 20 * 1024 * 1024);
  assert.throws(() => sim.faults.add({ kind: 'gzip', bytes: -1 }), /"bytes"/);
});

test('length: a Content-Length shorter or longer than the body, then the connection closes', async () => {
  const whole = (await api.get('/v1/nodes/n1')).text;
  const size = Buffer.byteLength(whole);
  sim.faults.add([
    { node: 'n1', kind: 'length', by: -7, count: 1 },
    { node: 'n1', kind: 'length', by: 100, count: 1 },
  ]);
  // fetch reads what was announced (Node's http parser refuses the excess outright).
  const short = await fetch(`${sim.url}/v1/nodes/n1`, { headers: { 'X-OpenStack-Ironic-API-Version': '1.115' } });
  assert.equal(Number(short.headers.get('content-length')), size - 7);
  assert.equal(short.headers.get('connection'), 'close');
  assert.equal(await short.text(), whole.slice(0, -7), 'JSON cut short');
  const long = await rawGet('/v1/nodes/n1');
  assert.equal(Number(long.headers['content-length']), size + 100);
  assert.equal(long.body.toString(), whole);
  assert.ok(long.error, 'the body ends before the announced length');
  assert.throws(() => sim.faults.add({ kind: 'length', by: 0 }), /"by"/);
});

test('cut: the headers and the start of the body, then a reset', async () => {
  const whole = (await api.get('/v1/nodes/n1')).text;
  sim.faults.add([
    { node: 'n1', kind: 'cut', count: 1 },
    { node: 'n1', kind: 'cut', bytes: 0, count: 1 },
  ]);
  const half = await rawGet('/v1/nodes/n1');
  assert.equal(half.status, 200);
  assert.equal(Number(half.headers['content-length']), Buffer.byteLength(whole), 'the full length is announced');
  assert.ok(half.error, 'the body ends in an error');
  assert.ok(whole.startsWith(half.body.toString()) && half.body.length < Buffer.byteLength(whole));
  const none = await rawGet('/v1/nodes/n1');
  assert.equal(none.status, 200);
  assert.equal(none.body.length, 0);
  assert.ok(none.error);
  assert.deepEqual(
    sim
      .log({ node: 'n1' })
      .slice(1)
      .map((e) => [e.fault, e.status]),
    [
      ['cut', 200],
      ['cut', 200],
    ],
  );
});

test('status: Retry-After as an HTTP date or a huge number; an answer without version headers', async () => {
  const date = new Date(Date.now() + 5000).toUTCString();
  sim.faults.add([
    { node: 'n1', kind: 'status', status: 503, retryAfter: date, count: 1 },
    { node: 'n1', kind: 'status', status: 409, retryAfter: 1e12, count: 1 },
    { node: 'n2', kind: 'status', status: 406, versionHeaders: false },
  ]);
  assert.equal((await api.get('/v1/nodes/n1')).headers['retry-after'], date);
  assert.equal((await api.get('/v1/nodes/n1')).headers['retry-after'], '1000000000000');
  const bare = await api.get('/v1/nodes/n2');
  assert.equal(bare.status, 406);
  assert.equal(bare.headers['x-openstack-ironic-api-version'], undefined);
  assert.equal(bare.headers['x-openstack-ironic-api-minimum-version'], undefined);
  assert.equal(bare.headers['x-openstack-ironic-api-maximum-version'], undefined);
  assert.equal(faultstring(bare), 'Not Acceptable');
  assert.throws(() => sim.faults.add({ kind: 'status', status: 503, retryAfter: -1 }), /"retryAfter"/);
  assert.throws(() => sim.faults.add({ kind: 'status', status: 503, retryAfter: '1\r\nX: y' }), /"retryAfter"/);
  assert.throws(() => sim.faults.add({ kind: 'status', status: 503, versionHeaders: 'no' }), /"versionHeaders"/);
});

test('page: a server page size, a marker ignored, next links that repeat or lead nowhere, endless fake nodes', async () => {
  sim.load({ nodes: Array.from({ length: 25 }, (_, i) => ({ name: `m${i}`, provision_state: 'available' })) });
  const uuid = (name) => sim.node(name).uuid;
  const marker = (page) => new URL(page.json.next).searchParams.get('marker');
  const names = (page) => page.json.nodes.map((n) => n.name);
  const list = '/v1/nodes?fields=uuid,name&limit=1000';

  sim.faults.add({ path: '/v1/nodes', kind: 'page', limit: 10 });
  const first = await api.get(list);
  assert.deepEqual(names(first), ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9']);
  assert.match(first.json.next, /^http:\/\/127\.0\.0\.1:\d+\/v1\/nodes\?.*limit=10&marker=/);
  assert.equal(marker(first), uuid('m9'));
  const second = await api.get(`${list.replace('1000', '10')}&marker=${marker(first)}`);
  assert.deepEqual(names(second).slice(0, 2), ['m10', 'm11']);

  sim.faults.clear();
  sim.faults.add({ path: '/v1/nodes', kind: 'page', limit: 10, ignoreMarker: true });
  const again = await api.get(`${list}&marker=${uuid('m9')}`);
  assert.deepEqual(names(again), names(first), 'the marker is ignored: the first page again');
  assert.equal(marker(again), uuid('m9'));

  sim.faults.clear();
  sim.faults.add({ path: '/v1/nodes', kind: 'page', limit: 10, next: 'same' });
  const self = await api.get(`${list}&marker=${uuid('m9')}`);
  assert.deepEqual(names(self).slice(0, 1), ['m10']);
  assert.equal(marker(self), uuid('m9'), 'next points to this very page');

  sim.faults.clear();
  sim.faults.add({ path: '/v1/nodes', kind: 'page', limit: 10, next: 'm4' });
  const back = await api.get(`${list}&marker=${uuid('m9')}`);
  assert.equal(marker(back), uuid('m4'), 'a marker from an earlier page');

  sim.faults.clear();
  sim.faults.add({ path: '/v1/nodes', kind: 'page', limit: 10, next: 'none' });
  const cut = await api.get(list);
  assert.equal(cut.json.nodes.length, 10);
  assert.equal(cut.json.next, undefined, 'a full page, but the list ends early');

  sim.faults.clear();
  sim.faults.add({ path: '/v1/nodes', kind: 'page', fake: 5, next: 'fake' });
  const seen = new Set();
  let at = list;
  for (let i = 0; i < 4; i++) {
    const fake = await api.get(at);
    assert.equal(fake.status, 200, 'a made-up marker is answered too');
    assert.equal(fake.json.nodes.length, 5);
    for (const n of fake.json.nodes) {
      assert.ok(!seen.has(n.uuid));
      seen.add(n.uuid);
      assert.deepEqual([n.provision_state, n.target_provision_state, n.last_error], ['deploying', 'active', null]);
    }
    assert.ok(!seen.has(marker(fake)));
    seen.add(marker(fake));
    at = `${list}&marker=${marker(fake)}`;
  }

  sim.faults.clear();
  sim.faults.add({ path: '/v1/nodes', kind: 'page', fake: 0, next: 'fake' });
  const empty = await api.get(list);
  assert.deepEqual(empty.json.nodes, []);
  assert.ok(marker(empty), 'an empty page that still says there is more');

  assert.throws(() => sim.faults.add({ kind: 'page', limit: 0 }), /"limit"/);
  assert.throws(() => sim.faults.add({ kind: 'page', fake: 1001 }), /"fake"/);
  assert.throws(() => sim.faults.add({ kind: 'page', next: 3 }), /"next"/);
});
