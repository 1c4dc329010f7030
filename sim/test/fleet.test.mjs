// The console's large demo fleet (www/demo-fleet.mjs demoFleet({ size })) in
// the simulator: a seeded data centre, the list filters a console uses on it,
// the background churn of provision actions (about 1 % of the fleet a round,
// the mix of states holding), and the speed of listing 100,000 nodes.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { demoFleet } from '../../www/demo-fleet.mjs';
import { startSimulator } from '../server.mjs';
import { client, faultstring } from '../testkit.mjs';

let sim;
let api;
async function start(scenario, options = {}) {
  sim = await startSimulator({ manualClock: true, epoch: '2026-01-01T00:00:00Z', ...options, scenario });
  api = client(sim.url);
}
afterEach(() => sim?.close());

const count = (list, pred) => list.reduce((n, x) => n + (pred(x) ? 1 : 0), 0);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with `condition()`'s value once it is truthy, checking every 10 ms; fails after `ms`. */
async function until(condition, ms) {
  const deadline = performance.now() + ms;
  for (let value = condition(); ; value = condition()) {
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`condition not met in ${ms} ms: ${condition}`);
    await sleep(10);
  }
}
const FEED = 'sort_key=provision_updated_at&sort_dir=desc';

/** Every node of a listing, following `next` and adding the filters back (Ironic drops them from it). */
async function listAll(query) {
  const out = [];
  let path = `/v1/nodes?${query}`;
  for (;;) {
    const res = await api.get(path);
    assert.equal(res.status, 200, res.text);
    out.push(...res.json.nodes);
    if (!res.json.next) return out;
    const next = new URL(res.json.next);
    path = `${next.pathname}${next.search}&${query}`;
  }
}

test('demoFleet() without a size is the 24-node fleet, byte for byte as before', () => {
  const text = JSON.stringify(demoFleet());
  assert.equal(createHash('sha256').update(text).digest('hex'), '4f04b493e645c4c4f91a6f197b7d4f3a0d7f88ebf9fe147ae07c36e3c04bbf25');
  assert.equal(JSON.stringify(demoFleet({})), text);
  assert.notEqual(demoFleet().nodes, demoFleet().nodes, 'a fresh object each call');
});

test('demoFleet({ size }): racks of 40 named rackNN-nodeNNN, spread over groups, shards, owners and classes, seeded', () => {
  const { nodes, churn, timing } = demoFleet({ size: 2000 });
  assert.equal(nodes.length, 2000);
  assert.deepEqual(churn, { every: 2000, fraction: 0.01 });
  assert.deepEqual(timing.power, [1000, 3000]);
  assert.deepEqual(
    [nodes[0].name, nodes[33].name, nodes[40].name, nodes[1999].name],
    ['rack01-node001', 'rack01-node034', 'rack02-node001', 'rack50-node040'],
  );
  assert.equal(new Set(nodes.map((n) => n.name)).size, 2000);
  assert.equal(demoFleet({ size: 100_001 }).nodes[100_000].name, 'rack2501-node001', 'the rack number widens with the fleet');
  const by = (field) => {
    const m = {};
    for (const n of nodes) m[n[field]] = (m[n[field]] ?? 0) + 1;
    return m;
  };
  assert.deepEqual(by('conductor_group'), { dc1: 520, dc2: 480, dc3: 520, dc4: 480 }, 'whole racks, by position');
  assert.deepEqual(Object.keys(by('resource_class')).sort(), ['compute', 'gpu', 'highmem', 'storage']);
  assert.equal(by('shard').null, 40, 'one rack in 50 has no shard');
  assert.equal(Object.keys(by('shard')).length, 17);
  const owners = by('owner');
  assert.ok(owners.null >= 200 && owners.null <= 700, `unowned: ${owners.null}`);
  assert.ok(Object.keys(owners).length >= 8, 'most of the 12 projects own racks');
  for (let r = 0; r < 50; r++) assert.equal(new Set(nodes.slice(r * 40, r * 40 + 40).map((n) => n.owner)).size, 1, 'a rack has one owner');
  const states = by('provision_state');
  const share = (s) => (states[s] ?? 0) / 2000;
  assert.ok(share('active') > 0.5 && share('active') < 0.62, JSON.stringify(states));
  assert.ok(share('available') > 0.24 && share('available') < 0.34, JSON.stringify(states));
  assert.ok(share('manageable') > 0.04 && share('enroll') > 0.03, JSON.stringify(states));
  const failed = nodes.filter((n) => n.last_error);
  assert.ok(failed.length >= 40 && failed.length <= 130, `failed: ${failed.length}`);
  for (const n of failed) {
    assert.ok(['deploy failed', 'clean failed', 'active', 'error'].includes(n.provision_state), n.provision_state);
    if (n.provision_state === 'clean failed') assert.deepEqual([n.maintenance, n.fault], [true, 'clean failure']);
    if (n.provision_state === 'active') {
      assert.deepEqual([n.maintenance, n.fault, n.power_state], [true, 'power failure', null], 'the power sync wrote what it read');
      assert.ok(n.last_error.includes(`for node ${n.uuid},`), n.last_error);
    }
  }
  assert.equal(JSON.stringify(demoFleet({ size: 2000 })), JSON.stringify({ timing, nodes, churn }), 'the same seed, the same fleet');
  assert.notEqual(JSON.stringify(demoFleet({ size: 2000, seed: 2 }).nodes), JSON.stringify(nodes));
  assert.equal(demoFleet({ size: 10, churn: 0 }).churn, undefined);
  assert.deepEqual(demoFleet({ size: 10, churn: 0.05, every: 500 }).churn, { every: 500, fraction: 0.05 });
});

test('demoFleet refuses a size that is not a whole number from 1 to 1,000,000', () => {
  for (const size of [0, -1, 1.5, '100', 1_000_001, NaN, null]) {
    assert.throws(() => demoFleet({ size }), /size must be a whole number from 1 to 1000000/, String(size));
  }
  assert.throws(() => demoFleet({ size: 10, churn: 2 }), /churn is a share of the fleet/);
});

test('the filters a console uses select what Ironic would, across pages', async () => {
  await start(demoFleet({ size: 4000, churn: 0 }));
  const all = sim.world.order.map((n) => n.rec);
  const cases = [
    ['conductor_group=dc3', (r) => r.conductor_group === 'dc3'],
    ['shard=shard-05,SHARD-09', (r) => r.shard === 'shard-05' || r.shard === 'shard-09'],
    ['sharded=false', (r) => r.shard === null],
    ['owner=project-04', (r) => r.owner === 'project-04'],
    ['resource_class=gpu', (r) => r.resource_class === 'gpu'],
    ['provision_state=deploy%20failed', (r) => r.provision_state === 'deploy failed'],
    ['fault=power%20failure', (r) => r.fault === 'power failure'],
    ['maintenance=true&resource_class=storage', (r) => r.maintenance && r.resource_class === 'storage'],
  ];
  for (const [query, pred] of cases) {
    const listed = await listAll(`${query}&fields=name&limit=300`);
    const expected = all.filter(pred).map((r) => r.name);
    assert.ok(expected.length > 0, query);
    assert.deepEqual(
      listed.map((n) => n.name),
      expected,
      query,
    );
  }
  // `conductor` filters the page the database gave, as Ironic does: dc1's racks come first, so a
  // page of 300 for conductor-dc2 comes back empty, without next, and the listing ends there.
  assert.deepEqual((await api.get('/v1/nodes?conductor=conductor-dc2&limit=300&fields=name')).json, { nodes: [] });
  assert.equal((await listAll('conductor=conductor-dc1&fields=name&limit=300')).length, 1000, 'dc1 is racks 1 to 25');
  const old = await api.get('/v1/nodes?conductor_group=dc1', { version: '1.45' });
  assert.deepEqual([old.status, faultstring(old)], [406, 'Request not acceptable. The minimal required API version should be 1.46']);
});

test('churn: every 2 s about 1 % of the fleet starts a provision action, by shares, walking real working states', async () => {
  await start(demoFleet({ size: 5000 }));
  sim.advance(1999);
  assert.equal(sim.world.churnMoveRounds, 0);
  const before = sim.summary().byState;
  sim.advance(1);
  assert.equal(sim.world.churnMoveRounds, 1);
  const page = (await api.get(`/v1/nodes?${FEED}&fields=name,provision_state,target_provision_state,provision_updated_at&limit=100`)).json
    .nodes;
  const moved = page.filter((n) => n.provision_updated_at === '2026-01-01T00:00:02+00:00');
  assert.equal(moved.length, 50, '1 % of 5000 at the round instant');
  const states = Object.fromEntries(
    ['deploying', 'deleting', 'manageable', 'cleaning'].map((s) => [s, count(moved, (n) => n.provision_state === s)]),
  );
  // 0.42 / 0.42 / 0.05 / 0.05 / 0.03 / 0.03 of 50, remainders to the earlier moves: 21 deploys and 1 that
  // will fail, 21 undeploys and 1 of a failed node, 3 manage (available -> manageable at once), 3 provide
  assert.deepEqual(states, { deploying: 22, deleting: 22, manageable: 3, cleaning: 3 });
  assert.ok(
    moved.every((n) => n.provision_state === 'manageable' || n.target_provision_state),
    'working states carry their target',
  );
  const deployed = moved.find((n) => n.provision_state === 'deploying').name;
  sim.advance(2000);
  assert.equal(sim.world.churnMoveRounds, 2);
  const events = sim.events(deployed).map((e) => e.event_type);
  assert.equal(events[0], 'deployment_start', 'churned actions write node history');
  assert.ok(sim.node(deployed).instance_uuid, 'a deploy gets an instance, as Nova sets one');
  // Over 60 rounds the mix holds, failures come and go.
  sim.advance(60 * 2000);
  const after = sim.summary().byState;
  for (const s of ['active', 'available']) {
    // a few rounds' actions are under way at any time
    assert.ok(Math.abs(after[s] - before[s]) < 0.06 * 5000, `${s}: ${before[s]} -> ${after[s]} (${JSON.stringify(after)})`);
  }
  assert.ok(
    Math.abs((after['deploy failed'] ?? 0) - before['deploy failed']) <= 10,
    `deploy failed: ${before['deploy failed']} -> ${after['deploy failed']}`,
  );
  const rows = sim.world.order.flatMap((n) => n.events ?? []);
  // The nodes loaded failed have the ERROR row Ironic wrote then (churn leaves error, clean failed and power failures alone).
  const loaded = rows.filter((e) => e.created_at < 0);
  assert.deepEqual(new Set(loaded.map((e) => e.event_type)), new Set(['deploying', 'cleaning', 'monitoring', 'unprovision']));
  for (const n of sim.world.order.filter(
    (x) => ['clean failed', 'error'].includes(x.rec.provision_state) || x.rec.fault === 'power failure',
  )) {
    assert.deepEqual(
      n.events.filter((e) => e.created_at < 0).map((e) => [e.severity, e.event]),
      [['ERROR', n.rec.last_error]],
      n.rec.name,
    );
  }
  const errors = rows.filter((e) => e.severity === 'ERROR' && e.created_at > 0);
  assert.ok(errors.length >= 50 && errors.every((e) => e.event_type === 'deploying'), `${errors.length} deploy failures journaled`);
});

test('churn is deterministic: the same seed and clock give the same feed, byte for byte', async () => {
  const feed = async (seed) => {
    await start(demoFleet({ size: 3000 }), { seed });
    sim.advance(20_000);
    const text = (await api.get(`/v1/nodes?${FEED}&fields=uuid,name,provision_state,provision_updated_at&limit=500`)).text.replaceAll(
      sim.url,
      'BASE',
    );
    await sim.close();
    sim = null;
    return text;
  };
  const a = await feed(5);
  assert.equal(await feed(5), a);
  assert.notEqual(await feed(6), a);
});

test('churn rules are checked; churn moves are also there on demand, in JS and over /__sim/churn', async () => {
  for (const [churn, message] of [
    [{ every: 0, fraction: 0.01 }, /"every" must be a positive/],
    [{ fraction: 0 }, /"fraction" must be in \(0, 1\]/],
    [{ fraction: 0.1, count: 3 }, /one of "fraction" and "count"/],
    [{ rate: 1 }, /unknown key "rate" in churn/],
  ]) {
    await assert.rejects(startSimulator({ scenario: { nodes: 3, churn } }), message);
  }
  await start({ nodes: 200, churn: { every: 1000, count: 7 } });
  sim.advance(3000);
  assert.equal(sim.world.churnMoveRounds, 3);
  const { started } = sim.churn({ moves: true, count: 10 });
  assert.equal(started.length, 10);
  assert.ok(
    started.every((s) => ['active', 'deleted', 'manage', 'provide'].includes(s.action)),
    JSON.stringify(started),
  );
  const res = await fetch(`${sim.url}/__sim/churn`, { method: 'POST', body: JSON.stringify({ moves: true, count: 4 }) });
  assert.equal((await res.json()).started.length, 4);
  assert.throws(() => sim.churn({ moves: true, count: 1, states: ['available'] }), /takes only count/);
});

test('on a real clock a timer keeps the churn going without requests, and close() stops it', async () => {
  sim = await startSimulator({ scenario: { nodes: 300, churn: { every: 40, count: 3 } } });
  // Read without a request, which would catch up by itself: only the timer can move the count. Three
  // rounds take 120 ms; the bound is there for a broken timer, far past what a loaded machine lags.
  const rounds = await until(() => sim.world.churnMoveRounds >= 3 && sim.world.churnMoveRounds, 60_000);
  await sim.close();
  const closed = sim.world.churnMoveRounds;
  assert.ok(closed >= rounds);
  await sleep(150); // several periods of the timer, had close() left it running
  assert.equal(sim.world.churnMoveRounds, closed);
  sim = null;
});

/**
 * How many node entries the lists of `fn` read: the nodes in creation order
 * (`world.order`, which the default sort pages by marker with a binary
 * search) and the sorted index of each other key (its pages walk it from a
 * bound). The cost of a page in work done, which a loaded machine does not
 * change, where its time in milliseconds it does.
 */
async function entriesRead(fn) {
  const world = sim.world;
  const order = world.order;
  let read = 0;
  world.order = new Proxy(order, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) read++;
      return Reflect.get(target, key, receiver);
    },
  });
  const walks = [...world.indexes.values()].map((index) => {
    index.walk = (pos, dir, visit) =>
      Object.getPrototypeOf(index).walk.call(index, pos, dir, (e) => {
        read++;
        return visit(e);
      });
    return index;
  });
  try {
    await fn();
  } finally {
    world.order = order;
    for (const index of walks) delete index.walk;
  }
  return read;
}

test('100,000 nodes: built and loaded, listed whole in pages of 1000, a change feed page stays cheap during churn', async (t) => {
  const t0 = performance.now();
  await start(demoFleet({ size: 100_000 }), { manualClock: true });
  const loaded = performance.now() - t0;
  const fields =
    'uuid,name,provision_state,target_provision_state,power_state,last_error,maintenance,conductor_group,resource_class,owner,provision_updated_at';
  let all;
  let t1 = performance.now();
  const listingRead = await entriesRead(async () => {
    all = await listAll(`fields=${fields}&limit=1000`);
  });
  const listing = performance.now() - t1;
  assert.equal(all.length, 100_000);
  assert.equal(new Set(all.map((n) => n.uuid)).size, 100_000, 'every node once');
  assert.equal(sim.log({ path: '/v1/nodes' }).length, 101, '100 full pages and the empty one their last next leads to');
  // Each page starts at its marker by a binary search: every node read once, plus ~17 reads a page.
  assert.ok(listingRead <= 100_000 + 101 * 40, `the listing read ${listingRead} entries`);
  const feed = `/v1/nodes?${FEED}&fields=${fields}&limit=50`;
  await api.get(feed); // the feed's index, built once
  const index = sim.world.indexes.get('provision_updated_at');
  t1 = performance.now();
  sim.advance(2000);
  const round = performance.now() - t1;
  assert.equal(sim.world.indexes.get('provision_updated_at'), index, 'the round moved nodes within the index, not a new sort');
  t1 = performance.now();
  const feedRead = await entriesRead(async () => {
    for (let i = 0; i < 20; i++) await api.get(feed);
  });
  const perPage = (performance.now() - t1) / 20;
  assert.equal(feedRead, 20 * 50, 'a feed page reads its 50 entries of the index, whatever the fleet');
  const moved = (await api.get(`/v1/nodes?${FEED}&fields=provision_updated_at&limit=1000`)).json.nodes;
  assert.equal(
    count(moved, (n) => n.provision_updated_at === '2026-01-01T00:00:02+00:00'),
    1000,
    '1 % of the fleet moved in the round',
  );
  // For the record only (a loaded machine makes them anything).
  t.diagnostic(
    `loaded in ${loaded.toFixed(0)} ms, listed in ${listing.toFixed(0)} ms, a round of 1000 actions in ${round.toFixed(0)} ms, a feed page in ${perPage.toFixed(1)} ms`,
  );
});

test('npm start -- --fleet refuses a bad number before building anything', () => {
  const script = fileURLToPath(new URL('../../scripts/start.mjs', import.meta.url));
  for (const [args, text] of [
    [['--fleet', 'abc'], 'start: --fleet needs a whole number of nodes from 1 to 1000000, not "abc"'],
    [['--fleet=0'], 'start: --fleet needs a whole number of nodes from 1 to 1000000, not "0"'],
    [['--fleet'], 'start: --fleet needs a number of nodes, e.g. --fleet 100000'],
    [['--nodes', '5'], 'start: unknown argument --nodes (known: --fleet N)'],
  ]) {
    const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH }, timeout: 20_000 });
    assert.equal(r.status, 1, args.join(' '));
    assert.equal(r.stderr.trim(), text);
    assert.equal(r.stdout, '', 'no build was started');
  }
});
