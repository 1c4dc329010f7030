// A seed makes every run the same: UUIDs, request ids, drawn durations,
// histories and bodies, for the same requests at the same instants.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startSimulator } from '../server.mjs';
import { client, provision } from '../testkit.mjs';

const SCENARIO = {
  epoch: '2026-03-01T12:00:00Z',
  timing: { deploying: [100, 900], 'wait call-back': [0, 300], cleaning: [50, 500], deleting: [10, 20] },
  faults: [{ path: '/v1/nodes/*', method: 'GET', kind: 'status', status: 503, fraction: 0.25 }],
};

/** One scripted session; returns everything a client or a test could observe. */
async function session(seed) {
  const sim = await startSimulator({ manualClock: true, nodes: 40, seed, scenario: SCENARIO });
  const api = client(sim.url);
  const bodies = [];
  try {
    const { json } = await api.get('/v1/nodes?provision_state=available&fields=name');
    const names = json.nodes.map((n) => n.name).slice(0, 5);
    for (const name of names) await provision(api, name, 'active');
    for (let step = 0; step < 50; step++) {
      // 2500 ms: the longest deploy draws 2100
      sim.advance(50);
      for (const name of names) bodies.push((await api.get(`/v1/nodes/${name}`)).text.replaceAll(sim.url, 'SIM'));
    }
    for (const name of names) await provision(api, name, 'deleted');
    sim.advance(2000);
    const strip = (e) => ({ ...e, tEnd: undefined });
    return {
      names,
      bodies,
      log: sim.log().map(strip),
      histories: names.map((n) => sim.history(n)),
      uuids: sim.world.order.map((n) => n.rec.uuid),
    };
  } finally {
    await sim.close();
  }
}

test('the same seed and requests give the same run, byte for byte', async () => {
  const a = await session(42);
  const b = await session(42);
  assert.deepEqual(a, b);
  assert.ok(a.log.some((e) => e.status === 503) && a.log.some((e) => e.status === 200), 'the fault fraction fired on some requests only');
  for (const h of a.histories) assert.equal(h.entries.at(-1).provision_state, 'available');
});

test('another seed gives other UUIDs, fleet and durations', async () => {
  const a = await session(42);
  const c = await session(43);
  assert.notDeepEqual(a.uuids, c.uuids);
  const instants = (s) => s.histories.map((h) => h.entries.map((e) => e.t));
  assert.notDeepEqual(instants(a), instants(c));
});

test('drawn durations stay within their ranges', async () => {
  const { histories } = await session(7);
  for (const { entries } of histories) {
    const phases = entries.slice(1);
    for (let i = 0; i + 1 < phases.length; i++) {
      const lasted = phases[i + 1].t - phases[i].t;
      const range = { deploying: [100, 900], 'wait call-back': [0, 300], cleaning: [50, 500], deleting: [10, 20] }[
        phases[i].provision_state
      ];
      if (range && phases[i + 1].action === phases[i].action) {
        assert.ok(lasted >= range[0] && lasted <= range[1], `${phases[i].provision_state} lasted ${lasted}`);
      }
    }
  }
});
