// The control API under /__sim/, the request log, state histories, and
// mounting the simulator on another server.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { createSimulator, startSimulator } from '../server.mjs';
import { client, provision, request } from '../testkit.mjs';

let sim;
let api;
const ctl = (method, path, body) => request(sim.url, method, `/__sim${path}`, { body });
/** Back to SCENARIO, without its fault. */
const fresh = async () => {
  await ctl('POST', '/reset');
  await ctl('DELETE', '/faults');
};

before(async () => {
  sim = await startSimulator({ manualClock: true, nodes: 4, seed: 5 });
  api = client(sim.url);
});
after(() => sim.close());

const SCENARIO = {
  timing: { verifying: 10, cleaning: 20 },
  nodes: [
    { name: 'a', provision_state: 'enroll' },
    { name: 'b', provision_state: 'manageable', resource_class: 'gold' },
  ],
  transitions: [{ node: 'b', action: 'provide', fail: 'nope' }],
  faults: [{ node: 'a', method: 'GET', kind: 'status', status: 503, count: 1 }],
};

test('GET /__sim summarises; POST /__sim/scenario replaces the world', async () => {
  const summary = (await ctl('GET', '')).json;
  assert.equal(summary.nodes, 4);
  assert.equal(summary.seed, 5);
  assert.equal(summary.manualClock, true);
  const loaded = await ctl('POST', '/scenario', SCENARIO);
  assert.equal(loaded.status, 200);
  assert.equal(loaded.json.nodes, 2);
  assert.equal(loaded.json.faults, 1);
  assert.equal(loaded.json.transitions, 1);
  assert.equal(loaded.json.now, 0, 'the clock restarts');
  assert.equal((await api.get('/v1/nodes/a')).status, 503);
  assert.equal((await api.get('/v1/nodes/node-000')).status, 404);
});

test('a bad scenario is refused with 400 and the world stays', async () => {
  for (const bad of [
    { nodes: [{ name: 'x', provision_state: 'floating' }] },
    { timing: { warp: 1 } },
    { transitions: [{ action: 'fly', fail: true }] },
    { transitions: [{ actoin: 'manage', fail: true }] },
    { faults: [{ kind: 'meteor' }] },
    '[1,2]',
  ]) {
    const res = await ctl('POST', '/scenario', bad);
    assert.equal(res.status, 400, JSON.stringify(bad));
    assert.equal(typeof res.json.error, 'string');
  }
  assert.equal((await ctl('POST', '/scenario', '{oops')).status, 400);
  assert.equal((await ctl('GET', '')).json.nodes, 2);
});

test('the request log: method, path, query, status, instants, bytes, request id, node; since and filters', async () => {
  await ctl('POST', '/reset');
  assert.equal((await ctl('GET', '/log')).json.entries.length, 0, 'reset empties the log');
  sim.advance(7);
  const got = await api.get('/v1/nodes/b?fields=uuid');
  await provision(api, 'a', 'manage');
  const { entries, next } = (await ctl('GET', '/log')).json;
  assert.equal(entries.length, 2);
  const [g, p] = entries;
  assert.deepEqual(
    { ...g, id: undefined },
    {
      seq: 1,
      id: undefined,
      method: 'GET',
      path: '/v1/nodes/b',
      query: 'fields=uuid',
      t: 7,
      status: 200,
      tEnd: 7,
      bytes: Buffer.byteLength(got.text),
      fault: null,
      node: got.json.uuid,
    },
  );
  assert.equal(g.id, got.headers['x-openstack-request-id']);
  assert.equal(p.status, 202);
  assert.equal(p.node, sim.node('a').uuid);
  assert.equal(next, 2);
  await api.get('/v1/nodes/a');
  const later = (await ctl('GET', `/log?since=${next}`)).json.entries;
  assert.deepEqual(
    later.map((e) => [e.seq, e.method, e.path]),
    [[3, 'GET', '/v1/nodes/a']],
  );
  assert.equal((await ctl('GET', '/log?method=put')).json.entries.length, 1);
  assert.equal((await ctl('GET', '/log?path=/v1/nodes/*')).json.entries.length, 3);
  assert.equal((await ctl('GET', '/log?node=a')).json.entries.length, 2, 'by name, whatever identifier the client used');
  assert.equal((await ctl('DELETE', '/log')).status, 204);
  const cleared = (await ctl('GET', '/log')).json;
  assert.deepEqual([cleared.entries.length, cleared.dropped], [0, 3]);
});

test('history: the instants of each change; nodes that changed; failures and deletions', async () => {
  await fresh();
  await provision(api, 'a', 'manage');
  await provision(api, 'b', 'provide');
  await ctl('POST', '/clock', { advance: 25 });
  const a = (await ctl('GET', '/history?node=a')).json;
  assert.equal(a.name, 'a');
  assert.deepEqual(
    a.entries.map((e) => [e.t, e.provision_state, e.action]),
    [
      [0, 'enroll', 'load'],
      [0, 'verifying', 'manage'],
      [10, 'manageable', 'manage'],
    ],
  );
  const b = (await ctl('GET', `/history?node=${sim.node('b').uuid}`)).json;
  assert.deepEqual(
    b.entries.slice(1).map((e) => [e.t, e.provision_state, e.last_error]),
    [
      [0, 'cleaning', null],
      [20, 'clean failed', 'nope'],
    ],
  );
  const all = (await ctl('GET', '/history')).json.nodes;
  assert.deepEqual(all.map((h) => h.name).sort(), ['a', 'b']);
  assert.equal((await ctl('DELETE', '/nodes/a')).status, 204);
  assert.equal((await api.get('/v1/nodes/a')).status, 404);
  const gone = (await ctl('GET', '/history?node=a')).json;
  assert.deepEqual(gone.entries.at(-1), { t: 25, deleted: true, action: 'delete' });
  assert.equal((await ctl('GET', '/history?node=zzz')).status, 404);
});

test('GET and PATCH /__sim/nodes/{id}: the stored node, its plan; set fields at once', async () => {
  await fresh();
  await provision(api, 'a', 'manage');
  const view = (await ctl('GET', '/nodes/a')).json;
  assert.equal(view.provision_state, 'verifying');
  assert.equal(view.plan.action, 'manage');
  assert.deepEqual(
    view.plan.phases.map((p) => p.state),
    ['verifying', 'manageable'],
  );
  const patched = await ctl('PATCH', '/nodes/a', { provision_state: 'clean failed', last_error: 'set by hand', maintenance: true });
  assert.equal(patched.json.plan, null, 'the transition is cancelled');
  const node = (await api.get('/v1/nodes/a?fields=provision_state,target_provision_state,last_error,maintenance')).json;
  assert.deepEqual(
    [node.provision_state, node.target_provision_state, node.last_error, node.maintenance],
    ['clean failed', 'available', 'set by hand', true],
  );
  sim.advance(100);
  assert.equal((await api.get('/v1/nodes/a?fields=provision_state')).json.provision_state, 'clean failed');
  assert.equal((await ctl('PATCH', '/nodes/a', { colour: 'red' })).status, 400);
  assert.equal((await ctl('GET', '/nodes/zzz')).status, 404);
});

test('faults and transitions endpoints add, list and clear rules', async () => {
  await fresh();
  const added = await ctl('POST', '/faults', [{ path: '/v1/nodes', kind: 'empty', count: 2 }]);
  assert.deepEqual(
    added.json.faults.map((f) => [f.kind, f.remaining]),
    [['empty', 2]],
  );
  assert.deepEqual((await api.get('/v1/nodes')).json, {});
  assert.deepEqual((await ctl('DELETE', '/faults')).json, { faults: [] });
  assert.equal((await api.get('/v1/nodes')).json.nodes.length, 2);
  await ctl('POST', '/transitions', { node: 'a', action: 'manage', hold: false, stall: true });
  assert.equal((await ctl('GET', '/transitions')).json.transitions.length, 2);
  await provision(api, 'a', 'manage');
  sim.advance(1000);
  assert.equal((await api.get('/v1/nodes/a?fields=provision_state')).json.provision_state, 'verifying');
  assert.deepEqual((await ctl('DELETE', '/transitions')).json, { transitions: [] });
});

test('the control API is exempt from faults and absent from the log; unknown paths 404, wrong methods 405', async () => {
  await fresh();
  await ctl('POST', '/faults', { kind: 'hang' });
  assert.equal((await ctl('GET', '')).status, 200);
  assert.equal((await ctl('GET', '/log')).json.entries.length, 0);
  assert.equal((await ctl('GET', '/nothing')).status, 404);
  assert.equal((await ctl('PUT', '/log')).status, 405);
  await ctl('DELETE', '/faults');
});

test('the clock: a manual one moves by advance only; a real one refuses', async () => {
  await fresh();
  assert.deepEqual((await ctl('POST', '/clock', { advance: 1500 })).json, { now: 1500, manual: true, timeScale: 1, skew: 0 });
  assert.equal((await ctl('POST', '/clock', { advance: -1 })).status, 400);
  const real = await startSimulator();
  const res = await request(real.url, 'POST', '/__sim/clock', { body: { advance: 10 } });
  assert.equal(res.status, 400);
  assert.match(res.json.error, /manual clock/);
  await real.close();
});

test('handle() mounts the simulator on another server for /v1 and /__sim only', async () => {
  const mounted = createSimulator({ nodes: 3, seed: 2 });
  const host = http.createServer((req, res) => {
    if (mounted.handle(req, res)) return;
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('console page');
  });
  await new Promise((r) => host.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${host.address().port}`;
  try {
    assert.equal((await request(base, 'GET', '/')).text, 'console page');
    const list = await request(base, 'GET', '/v1/nodes?limit=2', { version: '1.115' });
    assert.equal(list.json.nodes.length, 2);
    assert.ok(list.json.next.startsWith(`${base}/v1/nodes?`), 'links use the host the client called');
    assert.equal((await request(base, 'GET', '/__sim')).json.nodes, 3);
    mounted.faults.add({ kind: 'hang' });
    const hung = request(base, 'GET', '/v1/nodes/node-000');
    while (mounted.log({ path: '/v1/nodes/node-000' }).length === 0) await new Promise((r) => setTimeout(r, 5)); // it arrived
    await mounted.close();
    await assert.rejects(hung, { code: 'ECONNRESET' });
  } finally {
    host.closeAllConnections();
    await new Promise((r) => host.close(r));
  }
});
