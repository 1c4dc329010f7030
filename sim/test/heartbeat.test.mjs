// Agent heartbeats: while a node waits on its agent (wait call-back, clean
// wait, service wait) the agent heartbeats every heartbeatTimeout * 0.3..0.6
// and the conductor touches provision_updated_at, state unchanged. All on a
// manual clock: touches are counted over simulated time, never timed.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HEARTBEAT_TIMEOUT } from '../ironic.mjs';
import { createSimulator } from '../server.mjs';
import { provision } from '../testkit.mjs';
import { EPOCH, FEED, start } from './manual.mjs';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/**
 * Advances `sim` by `ms` in steps of `step` (shorter than any interval, so
 * no touch is missed) and returns each touch seen: { name, at } with `at`
 * the stamp written (sim ms), in order. A change of state is a failure
 * unless `moves` allows it.
 */
function touches(sim, names, ms, { step = SECOND, moves = false } = {}) {
  const last = new Map(names.map((n) => [n, sim.node(n)]));
  const seen = [];
  for (let t = 0; t < ms; t += step) {
    sim.advance(step);
    for (const name of names) {
      const now = sim.node(name);
      const before = last.get(name);
      if (now.provision_updated_at !== before.provision_updated_at && now.provision_state === before.provision_state) {
        seen.push({ name, at: now.provision_updated_at, state: now.provision_state });
      } else if (!moves) {
        assert.equal(now.provision_state, before.provision_state, `${name} changed state`);
      }
      last.set(name, now);
    }
  }
  return seen;
}

/** The gaps (sim ms) between one node's successive touches. */
const gaps = (seen, name) => {
  const at = seen.filter((s) => s.name === name).map((s) => s.at);
  return at.slice(1).map((t, i) => t - at[i]);
};

const waiting = (count, state = 'wait call-back') =>
  Array.from({ length: count }, (_, i) => ({ name: `w${String(i).padStart(2, '0')}`, provision_state: state }));

test("Ironic's figures: [api]ramdisk_heartbeat_timeout 300 s, IPA's jitter 0.3-0.6 of it", () => {
  assert.equal(HEARTBEAT_TIMEOUT, 300);
  const sim = createSimulator({ manualClock: true, epoch: EPOCH });
  assert.equal(sim.summary().heartbeatTimeout, 300, 'on by default');
});

test('a heartbeat stamps provision_updated_at and updated_at with its instant, and changes nothing else', async () => {
  const { sim, api } = await start({ scenario: { nodes: [{ name: 'w', provision_state: 'wait call-back' }] } });
  const before = (await api.get('/v1/nodes/w')).json;
  // The loaded node's agent is part of the way through an interval: its first heartbeat comes within 180 s.
  let now = before;
  let t = 0;
  while (now.provision_updated_at === before.provision_updated_at && t < 180 * SECOND) {
    sim.advance(SECOND);
    t += SECOND;
    now = (await api.get('/v1/nodes/w')).json;
  }
  assert.notEqual(now.provision_updated_at, before.provision_updated_at, 'a heartbeat within 180 s');
  const changed = Object.keys(now).filter((k) => JSON.stringify(now[k]) !== JSON.stringify(before[k]));
  assert.deepEqual(changed.sort(), ['provision_updated_at', 'updated_at']);
  assert.equal(now.updated_at, now.provision_updated_at, 'one write stamps both');
  // Stamped at the heartbeat's instant, in the last step, as Ironic renders it.
  const stamped = Date.parse(now.provision_updated_at) - Date.parse(EPOCH);
  assert.ok(stamped > t - SECOND - 1 && stamped <= t, `${now.provision_updated_at} within the last step before ${t} ms`);
  assert.match(now.provision_updated_at, /^2026-01-01T00:0\d:\d\d(\.\d{6})?\+00:00$/);
  assert.equal(now.provision_state, 'wait call-back');
  assert.equal(now.target_provision_state, 'active');
  // Not a state change: neither history has a row for it.
  assert.deepEqual(
    sim.history('w').entries.map((e) => e.action),
    ['load'],
  );
  assert.deepEqual(sim.events('w'), []);
  assert.equal(sim.summary().heartbeats, 1);
});

test('at the default timeout a waiting node is touched every 90 to 180 s of sim time, 135 s on average', () => {
  const sim = createSimulator({ manualClock: true, epoch: EPOCH, scenario: { nodes: waiting(20) } });
  const names = waiting(20).map((n) => n.name);
  const hour = 60 * MINUTE;
  const seen = touches(sim, names, 2 * hour);
  const all = names.flatMap((n) => gaps(seen, n));
  for (const gap of all) assert.ok(gap >= 90 * SECOND - 0.001 && gap <= 180 * SECOND + 0.001, `a gap of ${gap} ms`);
  const mean = all.reduce((a, b) => a + b, 0) / all.length;
  assert.ok(Math.abs(mean - 135 * SECOND) < 5 * SECOND, `mean gap ${mean} ms`);
  // Each node is touched 2 h / 180 s .. 2 h / 90 s times, give or take the first (mid-interval) one.
  for (const name of names) {
    const count = seen.filter((s) => s.name === name).length;
    assert.ok(count >= 40 && count <= 81, `${name}: ${count} touches in 2 h`);
  }
  assert.equal(sim.summary().heartbeats, seen.length);
  // Each node has an agent of its own: their heartbeats do not fall together.
  assert.ok(new Set(seen.map((s) => s.at)).size === seen.length, 'no two touches at one instant');
});

test('the seed decides every heartbeat: the same seed, the same instants; another seed, others', () => {
  const run = (seed) => {
    const sim = createSimulator({ manualClock: true, epoch: EPOCH, seed, scenario: { nodes: waiting(5, 'clean wait') } });
    return touches(
      sim,
      waiting(5).map((n) => n.name),
      20 * MINUTE,
      { step: 10 * SECOND },
    );
  };
  const first = run(3);
  assert.ok(first.length > 20);
  assert.deepEqual(run(3), first);
  assert.notDeepEqual(run(4), first);
});

test('wait call-back, clean wait and service wait heartbeat; no other state does, inspect and rescue wait included', () => {
  const states = [
    'enroll',
    'manageable',
    'available',
    'active',
    'deploying',
    'cleaning',
    'deploy hold',
    'clean hold',
    'service hold',
    'deploy failed',
    'clean failed',
    'inspect wait',
    'rescue wait',
    'rescue',
    'error',
  ];
  const nodes = [...states, 'wait call-back', 'clean wait', 'service wait'].map((s) => ({ name: s, provision_state: s }));
  const sim = createSimulator({ manualClock: true, epoch: EPOCH, scenario: { nodes } });
  const updated = states.map((name) => sim.node(name).updated_at);
  const seen = touches(
    sim,
    nodes.map((n) => n.name),
    30 * MINUTE,
    { step: 10 * SECOND },
  );
  assert.deepEqual([...new Set(seen.map((s) => s.name))].sort(), ['clean wait', 'service wait', 'wait call-back']);
  assert.deepEqual(
    states.map((name) => sim.node(name).updated_at),
    updated,
    'no heartbeat saved either',
  );
});

test('a deploy heartbeats only while in wait call-back, and the stamps of its state changes are untouched', async () => {
  // A wait of 10 minutes: an agent writing a large image.
  const { sim, api } = await start({
    scenario: {
      timing: { deploying: 1000, 'wait call-back': 10 * MINUTE },
      nodes: [{ name: 'n1', provision_state: 'available' }],
    },
  });
  assert.equal((await provision(api, 'n1', 'active')).status, 202);
  const seen = touches(sim, ['n1'], 15 * MINUTE, { moves: true });
  assert.deepEqual(
    sim
      .history('n1')
      .entries.slice(1)
      .map((e) => [e.t, e.provision_state]),
    [
      [0, 'deploying'],
      [1000, 'wait call-back'],
      [601_000, 'deploying'],
      [602_000, 'active'],
    ],
  );
  // 600 s of waiting: at least 600 / 180 - 1 and at most 600 / 90 touches, each inside the wait.
  assert.ok(seen.length >= 3 && seen.length <= 6, `${seen.length} touches`);
  for (const { at, state } of seen) {
    assert.equal(state, 'wait call-back');
    assert.ok(at > 1000 + 90 * SECOND - 0.001 && at < 601_000, `a touch at ${at}`);
  }
  const n1 = (await api.get('/v1/nodes/n1?fields=provision_state,provision_updated_at')).json;
  assert.equal(n1.provision_state, 'active');
  assert.equal(Date.parse(n1.provision_updated_at) - Date.parse(EPOCH), 602_000, 'the last stamp is the arrival in active');
});

test("a wait shorter than an interval puts nothing on the heap: a busy fleet's short waits cost nothing", () => {
  const sim = createSimulator({ manualClock: true, epoch: EPOCH, scenario: { nodes: 50, timing: { 'wait call-back': 1000 } } });
  const free = sim.world.order.filter((n) => n.rec.provision_state === 'available');
  for (const node of free) sim.world.provision(node, { target: 'active' }, 115, sim.now());
  sim.advance(1600); // every node in wait call-back
  assert.equal(sim.summary().byState['wait call-back'], free.length);
  assert.equal(sim.summary().pending, free.length, 'one entry a node: the end of its wait');
  sim.advance(10 * SECOND);
  assert.equal(sim.summary().pending, 0);
  assert.equal(sim.summary().heartbeats, 0);
});

test('a wait stalled by a transition rule heartbeats for as long as it lasts', () => {
  const sim = createSimulator({
    manualClock: true,
    epoch: EPOCH,
    scenario: {
      nodes: [{ name: 'n1', provision_state: 'manageable' }],
      timing: { 'clean wait': 1000 },
      transitions: [{ node: 'n1', action: 'provide', at: 'clean wait', stall: true }],
    },
  });
  sim.world.provision(sim.world.findNode('n1'), { target: 'provide' }, 115, sim.now());
  sim.advance(5 * SECOND);
  assert.equal(sim.node('n1').provision_state, 'clean wait');
  const seen = touches(sim, ['n1'], 60 * MINUTE, { step: 5 * SECOND });
  assert.ok(seen.length >= 19 && seen.length <= 40, `${seen.length} touches in an hour`);
});

test('heartbeatTimeout sets the interval (sim seconds, a scenario key or a start option); 0 and false turn heartbeats off', () => {
  const measure = (options, ms) => {
    const sim = createSimulator({ manualClock: true, epoch: EPOCH, ...options });
    const names = sim.world.order.map((n) => n.rec.name);
    const seen = touches(sim, names, ms, { step: 100 });
    return { sim, seen, gaps: names.flatMap((n) => gaps(seen, n)) };
  };
  const nodes = waiting(4, 'service wait');
  // 10 s: every 3 to 6 s.
  for (const options of [{ scenario: { nodes, heartbeatTimeout: 10 } }, { heartbeatTimeout: 10, scenario: { nodes } }]) {
    const { sim, seen, gaps: all } = measure(options, 2 * MINUTE);
    assert.equal(sim.summary().heartbeatTimeout, 10);
    assert.ok(seen.length >= 4 * 19 && seen.length <= 4 * 40, `${seen.length} touches`);
    for (const gap of all) assert.ok(gap >= 3000 - 0.001 && gap <= 6000 + 0.001, `a gap of ${gap} ms`);
  }
  // The scenario's key wins over the start option.
  assert.equal(measure({ heartbeatTimeout: 10, scenario: { nodes, heartbeatTimeout: 20 } }, 0).sim.summary().heartbeatTimeout, 20);
  // A time scale of 10 runs them ten times as often on the clock, as every duration.
  const scaled = measure({ timeScale: 10, scenario: { nodes, heartbeatTimeout: 10 } }, 12 * SECOND);
  for (const gap of scaled.gaps) assert.ok(gap >= 300 - 0.001 && gap <= 600 + 0.001, `a gap of ${gap} clock ms`);
  for (const off of [0, false]) {
    for (const options of [{ scenario: { nodes, heartbeatTimeout: off } }, { heartbeatTimeout: off, scenario: { nodes } }]) {
      const { sim, seen } = measure(options, 30 * MINUTE);
      assert.deepEqual(seen, [], `heartbeatTimeout ${off}`);
      assert.equal(sim.summary().heartbeats, 0);
      assert.equal(sim.summary().heartbeatTimeout, 0);
    }
  }
  for (const bad of [-1, 'often', Number.POSITIVE_INFINITY, Number.NaN, {}]) {
    assert.throws(() => createSimulator({ scenario: { nodes, heartbeatTimeout: bad } }), /heartbeatTimeout must be a positive number/);
  }
});

test('a node in maintenance stamps only updated_at; a node a power action locks skips its heartbeats', async () => {
  const { sim, api } = await start({
    scenario: {
      heartbeatTimeout: 10,
      timing: { power: 60 * SECOND },
      nodes: [
        { name: 'maint', provision_state: 'wait call-back', maintenance: true },
        { name: 'powered', provision_state: 'wait call-back', power_state: 'power off' },
      ],
    },
  });
  const before = sim.node('maint');
  sim.advance(30 * SECOND);
  const after = sim.node('maint');
  assert.equal(after.provision_updated_at, before.provision_updated_at, '_heartbeat_in_maintenance touches nothing');
  assert.ok(after.updated_at > 20 * SECOND, 'the heartbeat itself is saved');

  assert.equal((await api.put('/v1/nodes/powered/states/power', { body: { target: 'power on' } })).status, 202);
  const locked = sim.node('powered');
  assert.equal(locked.reservation, 'localhost');
  sim.advance(59 * SECOND);
  assert.equal(sim.node('powered').provision_updated_at, locked.provision_updated_at, 'no touch while the power action holds the lock');
  assert.equal(sim.node('powered').updated_at, locked.updated_at);
  sim.advance(10 * SECOND);
  assert.equal(sim.node('powered').power_state, 'power on');
  assert.ok(sim.node('powered').provision_updated_at > 60 * SECOND, 'touched again once the lock is gone');
});

test("setNode into a wait state starts the agent's heartbeats, out of it stops them; a deleted node's stop", () => {
  const sim = createSimulator({
    manualClock: true,
    epoch: EPOCH,
    scenario: {
      heartbeatTimeout: 10,
      nodes: [
        { name: 'a', provision_state: 'available' },
        { name: 'b', provision_state: 'clean wait' },
      ],
    },
  });
  sim.setNode('a', { provision_state: 'wait call-back' });
  const set = sim.node('a').provision_updated_at;
  sim.advance(6 * SECOND);
  assert.ok(sim.node('a').provision_updated_at > set, 'touched within 6 s');
  sim.setNode('a', { provision_state: 'active' });
  sim.setNode('b', { provision_state: 'manageable' });
  const stamps = ['a', 'b'].map((n) => sim.node(n).provision_updated_at);
  sim.advance(60 * SECOND);
  assert.deepEqual(
    ['a', 'b'].map((n) => sim.node(n).provision_updated_at),
    stamps,
  );
  // Setting other fields of a waiting node leaves its agent running.
  sim.setNode('b', { provision_state: 'service wait' });
  sim.setNode('b', { description: 'busy' });
  const kept = sim.node('b').provision_updated_at;
  sim.advance(6 * SECOND);
  assert.ok(sim.node('b').provision_updated_at > kept);
  const count = sim.summary().heartbeats;
  sim.deleteNode('b');
  sim.advance(60 * SECOND);
  assert.equal(sim.summary().heartbeats, count);
});

test('the change feed lists the touched nodes newest first, paged, and a round after a watermark reads only them', async () => {
  // 30 nodes: 6 waiting (a fifth of the fleet), the others idle; all last moved before the epoch.
  const nodes = [
    ...Array.from({ length: 24 }, (_, i) => ({ name: `idle${String(i).padStart(2, '0')}`, provision_state: 'available' })),
    ...waiting(6),
  ];
  const { sim, api } = await start({ scenario: { nodes, heartbeatTimeout: 60 } });
  const feed = async (limit, stopBelow) => {
    const out = [];
    for (let url = `/v1/nodes?${FEED}&fields=name,provision_state,provision_updated_at&limit=${limit}`; url; ) {
      const res = await api.get(url);
      assert.equal(res.status, 200, res.text);
      const page = res.json.nodes;
      out.push(...page);
      // A change feed stops paging at the first entry older than what it already read.
      if (stopBelow !== undefined && page.some((n) => n.provision_updated_at === null || Date.parse(n.provision_updated_at) < stopBelow))
        break;
      url = res.json.next?.slice(sim.url.length);
    }
    return out;
  };
  const first = await feed(1000);
  const watermark = Math.max(...first.map((n) => Date.parse(n.provision_updated_at)));
  assert.ok(watermark < Date.parse(EPOCH), 'nothing moved yet');
  // Within 36 s (0.6 of 60) every waiting node's agent has heartbeated.
  sim.advance(36 * SECOND);
  const round = await feed(2, watermark);
  const newer = round.filter((n) => Date.parse(n.provision_updated_at) > watermark);
  assert.deepEqual(
    newer.map((n) => n.name).sort(),
    waiting(6).map((n) => n.name),
  );
  assert.ok(
    newer.every((n) => n.provision_state === 'wait call-back'),
    'touched, not moved',
  );
  const stamps = newer.map((n) => Date.parse(n.provision_updated_at));
  assert.deepEqual(
    stamps,
    [...stamps].sort((a, b) => b - a),
    'newest first',
  );
  // Pages of 2: the 6 touched nodes in 3 pages, and a fourth that reaches the old stamps.
  assert.equal(round.length, 8);
  // The whole list, paged, is every node once, touched ones first.
  const all = await feed(4);
  assert.equal(all.length, 30);
  assert.equal(new Set(all.map((n) => n.name)).size, 30);
  assert.deepEqual(
    all
      .slice(0, 6)
      .map((n) => n.name)
      .sort(),
    waiting(6).map((n) => n.name),
  );
});
