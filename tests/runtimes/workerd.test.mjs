// The runtime matrix, Cloudflare workerd: a module Worker in a consumer
// project, bundled by wrangler as a Cloudflare user's `wrangler deploy`
// would (`--dry-run --outdir`: the `workerd` export condition, the .wasm as
// a separate compiled module), served by bare workerd (npm `workerd`) whose
// fetch handler runs the scenario; the test asks it over HTTP. The same
// Worker makes one step() of a wait per request (edge-step.mjs), the test
// playing the alarm that brings it the checkpoint again. The Durable Object
// of `ironic-wait/cloudflare` is cloudflare.test.mjs's.

import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertReport, consumerProject, nodeReport, startSim } from './harness.mjs';
import { bundle, COMPATIBILITY_DATE, installToolchain, startWorkerd, workerdConfig } from './workerd.mjs';

let sim;
let workerd;

before(async () => {
  sim = await startSim();
  installToolchain();
  const dir = consumerProject('workerd', 'worker', {
    'worker.mjs': 'worker.mjs',
    'edge-step.mjs': 'edge-step.mjs',
    'wrangler.jsonc': { text: JSON.stringify({ name: 'ironic-wait-matrix', main: 'worker.mjs', compatibility_date: COMPATIBILITY_DATE }) },
  });
  await bundle(dir);
  writeFileSync(join(dir, 'config.capnp'), workerdConfig(readdirSync(join(dir, 'dist'))));
  workerd = await startWorkerd(dir);
});

after(async () => {
  workerd?.stop();
  await sim?.close();
});

test('workerd: the wrangler-bundled Worker runs the scenario, same as Node', async (t) => {
  const node = await nodeReport('workerd', sim.url);
  const res = await fetch(`${workerd.url}/?ironic=${encodeURIComponent(sim.url)}`, { signal: AbortSignal.timeout(300_000) });
  const text = await res.text();
  assert.equal(res.status, 200, `the Worker answered ${res.status}: ${text}\n${workerd.output()}`);
  await assertReport(t, JSON.parse(text), node);
});

test('workerd: a Worker making ONE step per request (as a Durable Object alarm would) drives a deploy to its end: the outcomes, each node one PUT', async () => {
  const TOKEN = 'workerd-edge-token-3b7d20c4'; // edge-step.mjs's clients are made with it
  const NO_IMAGE = 'Deploy step deploy.write_image failed: no image';
  const nodes = ['w1', 'w2', 'w3', 'w4'];
  // The manual clock: where each step stands is exact. w1, w2: deploying (1 s) -> wait call-back (1 s) ->
  // deploying (1 s) -> active; w3 fails at 300 ms; w4 is manageable, so Ironic refuses its PUT.
  sim.load({
    seed: 7,
    manualClock: true,
    epoch: '2026-01-01T00:00:00Z',
    timing: { deploying: 1000, 'wait call-back': 1000 },
    nodes: [
      { name: 'w1', provision_state: 'available' },
      { name: 'w2', provision_state: 'available' },
      { name: 'w3', provision_state: 'available', timing: { deploying: 100, 'wait call-back': 100 } },
      { name: 'w4', provision_state: 'manageable' },
    ],
    transitions: [{ node: 'w3', action: 'deploy', fail: NO_IMAGE }],
  });
  const post = async (path, body) => {
    const res = await fetch(`${workerd.url}${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    assert.equal(res.status, 200, `the Worker answered ${res.status}: ${text}\n${workerd.output()}`);
    return JSON.parse(text);
  };

  const steps = [];
  let answer;
  for (;;) {
    assert.ok(steps.length < 12, `no end after ${steps.length} requests`);
    const since = sim.requests().next;
    answer =
      steps.length === 0
        ? await post('/start', {
            ironic: sim.url,
            nodes,
            action: 'deploy',
            options: { wait: true, timeout: 120, pollInterval: 0.2, settle: 'all' },
          })
        : await post('/step', { ironic: sim.url, checkpoint: answer.checkpoint });
    const sent = sim.log({ since });
    steps.push({
      puts: sent.filter((r) => r.method === 'PUT').map((r) => r.path.split('/')[3]),
      gets: sent.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/')).map((r) => r.path.split('/')[3]),
    });
    if (!answer.checkpoint) break;
    assert.ok(!answer.checkpoint.includes(TOKEN), 'no token in a checkpoint');
    assert.equal(answer.report, null);
    assert.equal(typeof answer.wakeAtMs, 'number');
    // The alarm: at wakeAtMs, with the clock 700 ms on.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, answer.wakeAtMs - Date.now())));
    sim.advance(700);
  }

  // The PUTs in the first request; then one round of checks per request, of the nodes still unsettled:
  // 700 ms w3 failed; 1400, 2100, 2800 w1 and w2 on their way; 3500 both active, the end.
  assert.deepEqual(steps, [
    { puts: nodes, gets: [] },
    { puts: [], gets: ['w1', 'w2', 'w3'] },
    { puts: [], gets: ['w1', 'w2'] },
    { puts: [], gets: ['w1', 'w2'] },
    { puts: [], gets: ['w1', 'w2'] },
    { puts: [], gets: ['w1', 'w2'] },
  ]);
  assert.equal(answer.wakeAtMs, null);
  assert.equal(answer.error, null);
  assert.deepEqual(answer.report, {
    ok: false,
    nodes: [
      ['w1', 'reached', 'active', null],
      ['w2', 'reached', 'active', null],
      ['w3', 'failed', 'deploy failed', NO_IMAGE],
      ['w4', 'error', null, null],
    ],
  });
  const puts = sim.log({ method: 'PUT', path: '/v1/nodes/*/states/provision' }).map((r) => r.path.split('/')[3]);
  assert.deepEqual(puts, nodes, 'each node exactly one provision PUT');
});
