// `ironic-wait/cloudflare` under workerd: the example Worker of
// examples/cloudflare/ in a consumer project, bundled by wrangler as a
// Cloudflare user's `wrangler deploy` would, served by bare workerd with the
// Durable Object's storage (SQLite) and alarms on disk, against the
// simulator. The test is the Worker's caller: HTTP with the bearer secret,
// and WebSocket listeners (Node 20's WebSocket: this part runs with
// --experimental-websocket). The Worker is the example's, its object
// extended by one test-only path, /__evict, which evicts the object (a new
// instance on the same storage comes up at the next request or alarm).

import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertSameOutcomes, edgeApi, outcomes, uninterrupted, until } from './edge-api.mjs';
import { consumerProject, ROOT, startSim } from './harness.mjs';
import { bundle, COMPATIBILITY_DATE, installToolchain, startWorkerd, workerdConfig } from './workerd.mjs';

const SECRET = 'waits-secret-5e1f0b7d';

/** The example Worker, its object evicted on /__evict (as the platform evicts an idle one). */
const EVICTABLE = `export { default } from './example.mjs';
import { IronicWaits as Waits } from 'ironic-wait/cloudflare';
export class IronicWaits extends Waits {
  async fetch(request) {
    if (new URL(request.url).pathname === '/__evict') this.ctx.abort('evicted by the test');
    return super.fetch(request);
  }
}
`;
const TOKEN = 'ironic-token-9c2a44e1';

let sim;
let reference; // a second simulator, for the uninterrupted runs in Node
let dir;
let workerd;

before(async () => {
  [sim, reference] = await Promise.all([startSim(), startSim()]);
  installToolchain();
  dir = consumerProject('cloudflare', 'worker', {
    'example.mjs': { text: readFileSync(join(ROOT, 'examples', 'cloudflare', 'worker.mjs'), 'utf8') },
    'worker.mjs': { text: EVICTABLE },
    'wrangler.jsonc': {
      text: JSON.stringify({
        name: 'ironic-waits',
        main: 'worker.mjs',
        compatibility_date: COMPATIBILITY_DATE,
        durable_objects: { bindings: [{ name: 'WAITS', class_name: 'IronicWaits' }] },
        migrations: [{ tag: 'v1', new_sqlite_classes: ['IronicWaits'] }],
      }),
    },
  });
  await bundle(dir);
  const disk = join(dir, 'objects');
  rmSync(disk, { recursive: true, force: true });
  mkdirSync(disk);
  writeFileSync(
    join(dir, 'config.capnp'),
    workerdConfig(readdirSync(join(dir, 'dist')), {
      bindings: [
        '(name = "WAITS", durableObjectNamespace = "IronicWaits")',
        `(name = "IRONIC_URL", text = "${sim.url}")`,
        `(name = "IRONIC_TOKEN", text = "${TOKEN}")`,
        `(name = "WAITS_SECRET", text = "${SECRET}")`,
      ],
      durableObjects: { className: 'IronicWaits', disk },
    }),
  );
  workerd = await startWorkerd(dir);
});

after(async () => {
  workerd?.stop();
  await Promise.all([sim?.close(), reference?.close()]);
});

const { call, post, finished } = edgeApi({ base: () => `${workerd.url}/ironic`, secret: SECRET, output: () => workerd.output() });

/** A WebSocket listener of wait `id`: its messages, and a promise of its close. */
function listen(id) {
  const ws = new WebSocket(`${workerd.url.replace('http', 'ws')}/ironic/waits/${id}/events`, {
    headers: { authorization: `Bearer ${SECRET}` },
  });
  const messages = [];
  ws.onmessage = (m) => messages.push(JSON.parse(m.data));
  const opened = new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error(`the listener of ${id} could not connect`));
  });
  const closed = new Promise((resolve) => {
    ws.onclose = (e) => resolve(e.code);
  });
  return { ws, messages, opened, closed };
}

/** A WebSocket of GET /watch?`query`: its messages, and a promise of its close code. */
function watchSocket(query) {
  const ws = new WebSocket(`${workerd.url.replace('http', 'ws')}/ironic/watch?${query}`, {
    headers: { authorization: `Bearer ${SECRET}` },
  });
  const messages = [];
  ws.onmessage = (m) => messages.push(JSON.parse(m.data));
  const closed = new Promise((resolve) => {
    ws.onclose = (e) => resolve(e.code);
  });
  return { ws, messages, closed };
}

/**
 * The simulator's node requests grouped into rounds (a gap of 150 ms or more between two is a new
 * round). A round slowed by a loaded machine may split in two, which fails nothing below; two
 * rounds never come that close (the host steps every wait due within a second in one).
 */
function rounds(since) {
  const gets = sim.log({ since }).filter((e) => e.method === 'GET' && e.path.startsWith('/v1/nodes'));
  const out = [];
  for (const e of gets) {
    if (!out.length || e.t - out.at(-1).at(-1).t >= 150) out.push([]);
    out.at(-1).push(e);
  }
  return out;
}

test('the Worker refuses a missing or wrong secret, and passes nothing on for it', async () => {
  const since = sim.requests().next;
  for (const secret of [null, 'wrong', `${SECRET}x`, '']) {
    for (const [method, path, body] of [
      ['GET', '/waits'],
      ['POST', '/waits', { method: 'provision', args: ['x', 'deploy'] }],
    ]) {
      const res = await call(method, path, { body, secret });
      assert.equal(res.status, 401, `${method} ${path} with ${JSON.stringify(secret)}: ${res.status}`);
    }
  }
  assert.deepEqual(sim.log({ since }), [], 'nothing reached Ironic');
  assert.equal((await call('GET', '/nowhere')).status, 404);
  const ok = await call('GET', '/waits');
  assert.equal(ok.status, 200);
  assert.ok(Array.isArray(ok.body));
});

test('hostile requests are refused with a clear 4xx, and nothing is sent', async () => {
  const since = sim.requests().next;
  const cases = [
    [{ method: 'eval', args: [] }, /method must be one of/],
    [{ method: 'provision', args: 'n1' }, /args must be an array/],
    [[1, 2], /must be a JSON object/],
    [{ method: 'provision', args: ['n1', 'explode'] }, /InvalidArgumentError/],
    [{ method: 'provision', args: [[], 'deploy'] }, /InvalidArgumentError/],
    [{ method: 'waitForProvisionState', args: ['n1', 'active', { timeout: -1 }] }, /InvalidArgumentError/],
    [{ method: 'provision', args: ['n1', 'deploy', { onProgress: 'x' }] }, /InvalidArgumentError/],
  ];
  for (const [body, message] of cases) {
    const res = await call('POST', '/waits', { body });
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.status} ${res.text}`);
    assert.match(res.body.error, message);
  }
  const garbage = await fetch(`${workerd.url}/ironic/waits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SECRET}` },
    body: '{"method":',
  });
  assert.equal(garbage.status, 400);
  const huge = await call('POST', '/waits', {
    body: { method: 'provision', args: ['n1', 'deploy', { configDrive: 'x'.repeat(2 * 1024 * 1024) }] },
  });
  assert.equal(huge.status, 400);
  assert.equal((await call('GET', '/waits/no-such-wait')).status, 404);
  assert.equal((await call('DELETE', '/waits/no-such-wait')).status, 404);
  assert.equal((await call('PUT', '/waits')).status, 405);
  assert.deepEqual(sim.log({ since }), [], 'nothing reached Ironic');
});

const NO_IMAGE = 'Deploy step deploy.write_image failed: no image';
const SCENARIO = {
  seed: 7,
  timing: { deploying: 3000, 'wait call-back': 1000 },
  nodes: [
    { name: 'a1', provision_state: 'available' },
    { name: 'a2', provision_state: 'available' },
    { name: 'b1', provision_state: 'available' },
    { name: 'c1', provision_state: 'deploying' },
  ],
  transitions: [
    { node: 'b1', action: 'deploy', fail: NO_IMAGE },
    { node: 'c1', action: 'deploy', stall: true },
  ],
};

test('waits that succeed, fail and time out end as in Node; 50 WebSocket listeners on overlapping waits cost one loop', async () => {
  // Deploys of 4 s and rounds every 2 s: a few rounds each.
  const calls = [
    ['provision', ['a1', 'a2'], 'deploy', { wait: true, timeout: 60, pollInterval: 2 }],
    ['provision', ['b1'], 'deploy', { wait: true, timeout: 60, pollInterval: 2 }],
    ['waitForProvisionState', ['c1'], 'active', { timeout: 5, pollInterval: 2 }],
    ['waitForProvisionState', ['a1', 'a2', 'b1'], 'active', { timeout: 60, pollInterval: 2, settle: 'all' }],
  ];
  const expected = await uninterrupted(reference, TOKEN, SCENARIO, calls);

  sim.load(SCENARIO);
  const ids = [];
  for (const [method, ...args] of calls) ids.push(await post(method, ...args));
  const listeners = Array.from({ length: 50 }, (_, i) => listen(ids[i % ids.length]));
  await Promise.all(listeners.map((l) => l.opened));
  // Waits begun within a quarter of their interval of each other come to
  // share rounds (the client's rule): from the first round after the last.
  // The host steps every wait due within a second in one round: once their
  // next wakes are that close, every round from the next on is shared.
  await until(async () => {
    const wakes = [];
    for (const id of ids) {
      const { done, wakeAtMs } = (await call('GET', `/waits/${id}`)).body;
      if (!done) wakes.push(wakeAtMs);
    }
    return Math.max(...wakes) - Math.min(...wakes) < 1000;
  }, 'the waits due together');
  const shared = sim.requests().next;
  const done = [];
  for (const id of ids) done.push(await finished(id));
  await Promise.all(listeners.map((l) => l.closed));

  assertSameOutcomes(done, expected);
  assert.equal(done[0].report.ok, true);
  assert.equal(done[1].error.name, 'StateTransitionFailed');
  assert.equal(done[2].error.name, 'StateTransitionTimeout');

  // Every listener: the end of its wait, as GET tells it, last.
  for (const [i, l] of listeners.entries()) {
    const end = l.messages.at(-1);
    assert.equal(end?.type, 'done', `listener ${i}: ${JSON.stringify(l.messages)}`);
    assert.deepEqual(end.report, done[i % ids.length].report);
  }
  // Settling events reached the listeners of the waits that polled.
  const settled = listeners[0].messages
    .filter((m) => m.type === 'progress' && m.event.done)
    .map((m) => m.event.node)
    .sort();
  assert.deepEqual(settled, ['a1', 'a2']);

  // One loop: in each round no node is asked for twice, whichever waits want it.
  const all = rounds(shared);
  assert.ok(all.length >= 3, `${all.length} rounds`);
  for (const round of all) {
    const paths = round.map((e) => e.path);
    assert.equal(new Set(paths).size, paths.length, `a node asked for twice in one round: ${paths.join(', ')}`);
    assert.ok(round.length <= 50, `${round.length} subrequests in a round`);
  }
  assertNoToken(done, listeners);
});

test('DELETE stops a wait: nothing more is sent for it, its listeners are told', async () => {
  sim.load(SCENARIO);
  // A watch of another scope (its lists name the state), on the object's one client and at the
  // wait's interval: its rounds are the clock below. None of the wait's nodes is in its scope.
  const witness = watchSocket(`pollInterval=0.3&scope=${encodeURIComponent(JSON.stringify({ provisionState: 'active' }))}`);
  const ofWitness = (e) => e.query.includes('provision_state=active');
  const nodeRequests = (since) => sim.log({ since }).filter((e) => e.path.startsWith('/v1/nodes'));
  const since = sim.requests().next;
  const id = await post('waitForProvisionState', ['c1'], 'active', { timeout: 60, pollInterval: 0.3 });
  const listener = listen(id);
  await listener.opened;
  // It polls a few times, so the check below means something.
  await until(() => nodeRequests(since).filter((e) => !ofWitness(e)).length >= 3, 'three checks of the wait');
  assert.equal((await call('DELETE', `/waits/${id}`)).status, 204);
  const at = sim.requests().next;
  await until(() => listener.messages.at(-1)?.type === 'deleted', 'the listener told');
  // Three rounds of the watch: nothing but its lists.
  await until(() => nodeRequests(at).filter(ofWitness).length >= 3, 'three rounds of the watch');
  witness.ws.close();
  await witness.closed;
  // (The object's close of the listener completes once no watch runs on it.)
  assert.equal(await listener.closed, 1000);
  assert.deepEqual(
    nodeRequests(at).filter((e) => !ofWitness(e)),
    [],
    'nothing sent after DELETE',
  );
  assert.equal((await call('GET', `/waits/${id}`)).status, 404);
});

test('GET /watch: the nodes of the scope, then each change, as client.watch() yields them; a bad option is a clear error', async () => {
  sim.load(SCENARIO);
  const watcher = watchSocket('pollInterval=0.5');
  const changes = () => watcher.messages.filter((m) => m.type === 'change').map((m) => m.change);
  const seen = (what) => () => `${what}: ${JSON.stringify(watcher.messages)}\n${workerd.output()}`;
  await until(() => changes().length >= 4, seen('the nodes at the start'));
  assert.deepEqual(
    changes()
      .map((c) => [c.type, c.node.name, c.node.provision_state])
      .sort(),
    [
      ['added', 'a1', 'available'],
      ['added', 'a2', 'available'],
      ['added', 'b1', 'available'],
      ['added', 'c1', 'deploying'],
    ],
  );
  // a1 deploys: the watcher sees it move.
  await post('provision', ['a1'], 'deploy', { wait: false });
  await until(() => changes().some((c) => c.type === 'modified' && c.node.name === 'a1'), seen('a1 deploying'));
  assert.notEqual(changes().findLast((c) => c.node.name === 'a1').node.provision_state, 'available');
  watcher.ws.close();
  await watcher.closed;

  const bad = watchSocket(`scope=${encodeURIComponent(JSON.stringify({ color: 'red' }))}`);
  assert.equal(await bad.closed, 1011);
  assert.equal(bad.messages[0].type, 'error');
  assert.match(bad.messages[0].error.message, /color/);
  const res = await fetch(`${workerd.url}/ironic/watch?scope=%7B`, {
    headers: { authorization: `Bearer ${SECRET}`, upgrade: 'websocket' },
  }).catch((e) => e);
  assert.ok(res instanceof Error || res.status === 400, 'a scope that is not JSON is refused');
});

test('Ironic down mid-wait: the wait goes on when it is back (its listeners told of each round lost); one whose deadline passes meanwhile ends by it', async () => {
  sim.load({
    seed: 7,
    timing: { deploying: 8000, 'wait call-back': 500 },
    nodes: [
      { name: 'o1', provision_state: 'available' },
      { name: 'o2', provision_state: 'deploying' },
    ],
    transitions: [{ node: 'o2', action: 'deploy', stall: true }],
  });
  const since = sim.requests().next;
  const id = await post('provision', ['o1'], 'deploy', { wait: true, timeout: 120, pollInterval: 0.5 });
  const short = await post('waitForProvisionState', ['o2'], 'active', { timeout: 8, pollInterval: 0.5 });
  const listener = listen(id);
  await listener.opened;
  // Down once the wait has had a check answered, and until its listeners have been told of a
  // round lost (the client's retries, 5 two seconds apart, spent) and the short wait has ended
  // (its deadline passed meanwhile).
  await until(() => sim.log({ since, node: 'o1' }).some((e) => e.method === 'GET' && e.status === 200), 'a check of o1');
  sim.faults.add([{ kind: 'reset', path: '/v1/nodes*' }]);
  await until(() => listener.messages.some((m) => m.type === 'outage'), 'a round lost');
  // Its deadline held: no retry starts past it, and the last check could not be made.
  const ended = await finished(short);
  sim.faults.clear();
  assert.ok(['StateTransitionTimeout', 'ConnectionError'].includes(ended.error?.name), JSON.stringify(ended));
  assert.equal(ended.report.nodes[0].outcome === 'timed-out' || ended.error.name === 'ConnectionError', true);
  const got = await finished(id);
  assert.equal(got.error, null, JSON.stringify(got));
  assert.deepEqual(
    got.report.nodes.map((n) => [n.node, n.outcome, n.state]),
    [['o1', 'reached', 'active']],
  );
  assert.equal(got.outages, 0, 'none lost in a row at the end');
  await listener.closed;
  const types = listener.messages.map((m) => m.type);
  assert.ok(types.includes('outage'), types.join(', '));
  assert.equal(types.at(-1), 'done');
  assert.equal(listener.messages.find((m) => m.type === 'outage').error.name, 'ConnectionError');
});

test('the object keeps its waits in memory between alarms, and after an eviction reads them once from storage: every wait ends as an uninterrupted one', async () => {
  const scenario = {
    seed: 7,
    timing: { deploying: 6000, 'wait call-back': 500 },
    nodes: ['e1', 'e2', 'e3'].map((name) => ({ name, provision_state: 'available' })),
    transitions: [{ node: 'e3', action: 'deploy', fail: NO_IMAGE, at: 'deploying', after: 3000 }],
  };
  const args = [['e1', 'e2', 'e3'], 'deploy', { wait: true, timeout: 60, pollInterval: 0.4, settle: 'all' }];
  const [want] = await uninterrupted(reference, TOKEN, scenario, [['provision', ...args]]);
  const stats = async () => (await call('GET', '/stats')).body;

  sim.load(scenario);
  const since = sim.requests().next;
  const id = await post('provision', ...args);
  // (The records are read by the first request or alarm of an instance: the POST at the latest.)
  const before = await stats();
  assert.ok(before.loads >= 1, JSON.stringify(before));
  await until(() => rounds(since).length >= 6, 'six rounds');
  // Its rounds stepped the wait from memory: no read of the storage, and rounds that moved
  // nothing (the nodes deploying for 6 s) wrote no checkpoint.
  const during = await stats();
  assert.equal(during.loads, before.loads, 'the records were read from storage again');
  const stepped = during.rounds - before.rounds;
  assert.ok(stepped >= 4, `${stepped} rounds`);
  assert.ok(during.checkpointWrites - before.checkpointWrites < stepped, JSON.stringify({ before, during }));

  // Evicted mid-wait: a new instance on the same storage, whose alarm goes on from the checkpoint stored.
  const evicted = await call('GET', '/__evict');
  assert.notEqual(evicted.status, 200);
  const fresh = await stats();
  assert.ok(fresh.rounds < during.rounds, `a new instance: ${JSON.stringify({ during, fresh })}`);
  const got = await finished(id);
  assert.deepEqual(outcomes(got.report), outcomes(want.report));
  assert.equal(got.error?.name ?? null, want.error?.name ?? null);
  const after = await stats();
  assert.equal(after.loads, 1, `the new instance read the storage once in ${after.rounds} rounds`);
  assert.ok(after.rounds >= 2, JSON.stringify(after));
  const puts = sim.log({ since, method: 'PUT' }).map((e) => e.path.split('/')[3]);
  assert.deepEqual(puts.sort(), ['e1', 'e2', 'e3'], 'each node one PUT');
});

test('a fleet of 60,000 nodes (61 pages a listing): no alarm sends more than 45 requests, the change feed fills over alarms, and the waits end as in Node', async () => {
  const fleet = Array.from({ length: 60_000 }, (_, i) => ({ name: `f${i}`, provision_state: 'available' }));
  const scenario = (deploying) => ({ seed: 7, timing: { deploying, 'wait call-back': 500 }, nodes: fleet });
  const targets = Array.from({ length: 12 }, (_, k) => `f${k * 5000 + 17}`);
  const args = [targets, 'deploy', { wait: true, timeout: 300, pollInterval: 2, settle: 'all' }];
  const [want] = await uninterrupted(reference, TOKEN, scenario(7000), [['provision', ...args]]);

  // The nodes stay in deploying until the test ends it, once the feed is full and has had quiet
  // rounds: however slow the machine, the rounds below are the same.
  sim.load(scenario(3_600_000));
  const since = sim.requests().next;
  const id = await post('provision', ...args);
  // Rounds are 2 s apart; the requests of one come back to back.
  const perRound = () => {
    const out = [];
    for (const e of sim.log({ since }).filter((e) => e.method === 'GET' && e.path === '/v1/nodes')) {
      if (!out.length || e.t - out.at(-1).last >= 1000) out.push({ n: 0, feed: 0, listed: 0 });
      const round = out.at(-1);
      round.n += 1;
      round.feed += e.query.includes('sort_key=') ? 1 : 0;
      round.listed += e.query.includes('sort_key=') ? 0 : 1;
      round.last = e.t;
    }
    return out;
  };
  const afterListing = (rounds) => rounds.slice(rounds.findLastIndex((r) => r.listed > 0) + 1);
  await until(
    () => afterListing(perRound()).length >= 2,
    () => `two rounds after the listing: ${JSON.stringify(perRound())}`,
  );
  for (const node of targets) sim.setNode(node, { provision_state: 'active' });
  const got = await finished(id);
  assert.deepEqual(outcomes(got.report), outcomes(want.report));
  assert.equal(got.report.ok, true);

  const rounds = perRound();
  const counts = rounds.map((r) => r.n);
  assert.ok(Math.max(...counts) <= 45, `requests a round: ${counts}`);
  assert.ok(counts.filter((n) => n === 45).length >= 2, `the first listings reach the cap: ${counts}`);
  const listed = rounds.reduce((sum, r) => sum + r.listed, 0);
  assert.ok(listed >= 61, `${listed} pages listed`);
  // Once the feed is full, a round is one request of the changes (two when the nodes moved).
  const last = afterListing(rounds);
  assert.ok(last.length >= 3, `rounds after the listing: ${JSON.stringify(rounds)}`);
  assert.ok(
    last.every((r) => r.n === r.feed && r.n <= 2),
    `the rounds after the listing: ${JSON.stringify(last)}`,
  );
});

test('workerd killed (SIGKILL) mid-wait and started again: the waits end as uninterrupted ones, no PUT sent twice', async () => {
  const scenario = {
    seed: 7,
    timing: { deploying: 2500, 'wait call-back': 500 },
    nodes: ['k1', 'k2', 'k3'].map((name) => ({ name, provision_state: 'available' })),
    transitions: [{ node: 'k3', action: 'deploy', fail: NO_IMAGE, at: 'deploying', after: 1500 }],
  };
  const args = [['k1', 'k2', 'k3'], 'deploy', { wait: true, timeout: 60, pollInterval: 0.4, settle: 'all' }];
  const [want] = await uninterrupted(reference, TOKEN, scenario, [['provision', ...args]]);

  sim.load(scenario);
  const since = sim.requests().next;
  const id = await post('provision', ...args);
  const alsoId = await post('waitForProvisionState', ['k1'], 'active', { timeout: 60, pollInterval: 0.4 });
  // A few rounds in, the process dies with nothing flushed.
  await until(() => rounds(since).length >= 3, 'three rounds');
  await workerd.kill();
  workerd = await startWorkerd(dir);

  // No request reaches the object until the waits are done: the alarm alone took them up.
  const got = await finished(id);
  assert.deepEqual(outcomes(got.report), outcomes(want.report));
  assert.equal(got.error?.name ?? null, want.error?.name ?? null);
  const also = await finished(alsoId);
  assert.equal(also.report.nodes[0].outcome, 'reached');
  // The new process read the records from storage once, and stepped them from memory after.
  const stats = (await call('GET', '/stats')).body;
  assert.equal(stats.loads, 1, JSON.stringify(stats));
  assert.ok(stats.rounds >= 2, JSON.stringify(stats));
  const puts = sim.log({ since, method: 'PUT' }).map((e) => e.path.split('/')[3]);
  assert.deepEqual(puts.sort(), ['k1', 'k2', 'k3'], 'each node one PUT');
  assertNoToken([got, also], []);
});

/** The token is in no answer, no message and no file of the objects' storage. */
function assertNoToken(answers, listeners) {
  assert.ok(!JSON.stringify(answers).includes(TOKEN), 'no token in an answer');
  for (const l of listeners) assert.ok(!JSON.stringify(l.messages).includes(TOKEN), 'no token in a message');
  const files = readdirSync(join(dir, 'objects'), { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
  assert.ok(files.length > 0, 'the objects have storage on disk');
  for (const f of files) {
    const bytes = readFileSync(join(f.parentPath ?? f.path, f.name));
    assert.ok(!bytes.includes(TOKEN), `the token is in ${f.name}`);
  }
}
