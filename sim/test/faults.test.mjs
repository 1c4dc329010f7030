// Fault injection: each kind, how rules address requests, and their counters.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../server.mjs';
import { client, provision, faultstring, request } from '../testkit.mjs';

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
  assert.equal(faultstring(locked), `Node ${sim.node('n1').uuid} is locked by host localhost, please retry after the current operation is completed.`);
  assert.equal((await provision(api, 'n1', 'manage')).status, 409);
  assert.equal((await api.get('/v1/nodes/n1?fields=provision_state')).json.provision_state, 'available', 'a refused PUT changes nothing');
  assert.equal((await provision(api, 'n1', 'manage')).status, 202);
  const unavailable = await api.get('/v1/nodes/n3');
  assert.equal(unavailable.status, 503);
  assert.equal(unavailable.headers['retry-after'], undefined);
});

test('added latency delays the answer, and stacks with another fault', async () => {
  sim.faults.add([{ path: '/v1/nodes/n1', kind: 'latency', ms: 120 }, { path: '/v1/nodes/n1', kind: 'status', status: 500, message: 'kaboom', count: 1 }]);
  const t0 = performance.now();
  const slow = await api.get('/v1/nodes/n1');
  assert.ok(performance.now() - t0 >= 115, 'the latency was added');
  assert.equal(slow.status, 500);
  assert.equal(faultstring(slow), 'kaboom');
  assert.equal((await api.get('/v1/nodes/n1')).status, 200);
  assert.deepEqual(sim.log({ path: '/v1/nodes/n1' }).map((e) => e.fault), ['status', 'latency']);
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
  sim.faults.add([{ node: 'n1', method: 'GET', kind: 'reset', count: 1 }, { node: 'n5', method: 'PUT', kind: 'reset', process: true, count: 1 }]);
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
