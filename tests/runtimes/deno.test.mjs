// The runtime matrix, Deno (npm `deno`): the scenario from a consumer
// project (Deno reads its package.json and node_modules, and picks the
// `deno` export condition), with no permission but --allow-net for the
// simulator's host:port: the package's wasm needs no --allow-read. And a
// wait's checkpoint carried from one Deno process to the next
// (resume-runner.mjs): resume() and a step() loop.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertReport, BIN, CACHE, consumerProject, lastJsonLine, nodeReport, runToEnd, startSim } from './harness.mjs';

const DENO = join(BIN, 'deno');
// Deno's caches stay in the git-ignored folder; no update check.
const env = { DENO_DIR: join(CACHE, 'deno', 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };

let sim;
let dir;
before(async () => {
  sim = await startSim();
  dir = consumerProject('deno', 'deno', {
    'cli.mjs': 'cli.mjs',
    'deno-permission.mjs': 'deno-permission.mjs',
    'resume-runner.mjs': 'resume-runner.mjs',
  });
});
after(() => sim?.close());

const deno = (args) => runToEnd(DENO, ['run', `--allow-net=${sim.host}:${sim.port}`, ...args], { cwd: dir, env });

test('Deno: the scenario with --allow-net=<simulator> only, same as Node', async (t) => {
  const node = await nodeReport('deno', sim.url);
  await assertReport(t, lastJsonLine(await deno(['cli.mjs', sim.url])), node);
});

test('Deno: a fetch refused for lack of permission is a ConnectionError at once, not retried', async () => {
  // A port the permission does not cover (nothing listens there either).
  const elsewhere = `http://${sim.host}:${sim.port === 65535 ? 65534 : sim.port + 1}`;
  const out = lastJsonLine(await deno(['deno-permission.mjs', elsewhere]));
  assert.deepEqual(out, {
    name: 'ConnectionError',
    isConnectionError: true,
    message: `Error contacting Ironic server: Requires net access to "${new URL(elsewhere).host}", run again with the --allow-net flag`,
    retried: false,
  });
});

// Checkpoints across Deno processes (resume-runner.mjs): the simulator on its
// manual clock, so that where each call stands when it is cut is exact.
const TOKEN = 'deno-resume-token-5a0c9e1f'; // resume-runner.mjs's clients are made with it
const resumeRunner = async (mode, arg) =>
  lastJsonLine(await deno(['resume-runner.mjs', mode, sim.url, typeof arg === 'string' ? arg : JSON.stringify(arg)]));
const NO_IMAGE = 'Deploy step deploy.write_image failed: no image';
/** d1, d2 walk deploying (1 s) -> wait call-back (1 s) -> deploying (1 s) -> active; `failing` fails at the end of its own walk. */
const loadResume = (names, failing, failingTiming) =>
  sim.load({
    seed: 7,
    manualClock: true,
    epoch: '2026-01-01T00:00:00Z',
    timing: { deploying: 1000, 'wait call-back': 1000 },
    nodes: names.map((name) => ({ name, provision_state: 'available', ...(name === failing ? { timing: failingTiming } : {}) })),
    transitions: [{ node: failing, action: 'deploy', fail: NO_IMAGE }],
  });
const putsByNode = () => {
  const counts = {};
  for (const r of sim.log({ method: 'PUT', path: '/v1/nodes/*/states/provision' }))
    counts[r.path.split('/')[3]] = (counts[r.path.split('/')[3]] ?? 0) + 1;
  return counts;
};

test('Deno: a wait checkpointed mid-wait, its process aborted and gone, resumed by a new client in a new Deno process: the uninterrupted outcome, no PUT twice', async () => {
  const nodes = ['d1', 'd2', 'd3'];
  const spec = { nodes, action: 'deploy', options: { wait: true, timeout: 60, pollInterval: 0.2, settle: 'all' } };
  const load = () => loadResume(nodes, 'd3', { deploying: 100, 'wait call-back': 100 }); // d3 fails at 300 ms
  const expected = {
    ok: false,
    nodes: [
      ['d1', 'reached', 'active', null],
      ['d2', 'reached', 'active', null],
      ['d3', 'failed', 'deploy failed', NO_IMAGE],
    ],
  };

  // Uninterrupted: once the PUTs are sent, time jumps past every transition.
  load();
  const whole = await resumeRunner('run', { ...spec, advance: 10_000 });
  assert.deepEqual(whole.result, expected);
  assert.equal(whole.tokenInCheckpoints, false);

  // Cut: at 500 ms d3 has failed, d1 and d2 are deploying; the checkpoint after d3 settled is kept and the call aborted.
  load();
  const first = await resumeRunner('start', { ...spec, advance: 500 });
  assert.equal(first.rejection, 'AbortError');
  assert.equal(first.isSignalReason, true);
  assert.deepEqual(first.settledBeforeCheckpoint, [['d3', 'failed']]);
  assert.equal(typeof first.checkpoint, 'string');
  assert.ok(!first.checkpoint.includes(TOKEN), 'the checkpoint holds no token');
  assert.deepEqual(
    nodes.map((n) => sim.node(n).provision_state),
    ['deploying', 'deploying', 'deploy failed'],
    'cut mid-wait',
  );
  assert.deepEqual(putsByNode(), { d1: 1, d2: 1, d3: 1 });

  // That process is gone; time goes on; a new client in a new process takes the checkpoint up.
  const since = sim.requests().next;
  sim.advance(10_000);
  const resumed = await resumeRunner('resume', first.checkpoint);
  assert.deepEqual(resumed.result, whole.result, 'the same outcome as the uninterrupted call');
  assert.deepEqual(putsByNode(), { d1: 1, d2: 1, d3: 1 }, 'no PUT sent twice');
  assert.equal(sim.log({ since, method: 'PUT' }).length, 0);
  assert.deepEqual(
    sim.log({ since, node: 'd3' }).map((r) => `${r.method} ${r.path}`),
    [],
    'd3, settled in the checkpoint, is not asked again',
  );
  for (const n of ['d1', 'd2'])
    assert.ok(
      resumed.progress.some(([node, state, done, outcome]) => node === n && state === 'active' && done && outcome === 'reached'),
      n,
    );
  assert.equal(resumed.tokenInCheckpoints, false);
});

test('Deno: a step loop, each step by a new client in a new Deno process, ends as the uninterrupted call: PUTs in the first step, one round a step', async () => {
  const nodes = ['s1', 's2', 's3'];
  const spec = { nodes, action: 'deploy', options: { wait: true, timeout: 60, pollInterval: 0.2 } }; // settle: first failure
  const load = () => loadResume(nodes, 's3', { deploying: 1500, 'wait call-back': 1000 }); // s3 fails at 4000 ms
  const message = `Node s3 failed to reach state active. It's in state deploy failed, and has error: ${NO_IMAGE}`;
  const nodesAtEnd = [
    ['s1', 'reached', 'active', null],
    ['s2', 'reached', 'active', null],
    ['s3', 'failed', 'deploy failed', NO_IMAGE],
  ];

  load();
  const whole = await resumeRunner('run', { ...spec, advance: 10_000 });
  assert.deepEqual(whole.result, { error: 'StateTransitionFailed', message, nodes: nodesAtEnd });

  load();
  let { checkpoint } = await resumeRunner('checkpoint', spec);
  assert.equal(sim.log().length, 0, 'checkpoint() sends nothing');
  const steps = [];
  let last;
  for (;;) {
    assert.ok(steps.length < 12, `no end after ${steps.length} steps`);
    const since = sim.requests().next;
    last = await resumeRunner('step', checkpoint);
    const sent = sim.log({ since });
    steps.push({
      puts: sent.filter((r) => r.method === 'PUT').length,
      gets: sent.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/')).length,
    });
    if (!last.checkpoint) break;
    assert.ok(!last.checkpoint.includes(TOKEN), 'no token in a checkpoint');
    assert.equal(typeof last.wakeAtMs, 'number');
    assert.ok(last.wakeAtMs <= Date.now() + 200, `wakeAtMs within a poll interval (${last.wakeAtMs - Date.now()} ms)`);
    assert.equal(last.report, null);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, last.wakeAtMs - Date.now())));
    sim.advance(700);
    checkpoint = last.checkpoint;
  }
  // Rounds at 700, 1400, 2100, 2800 ms; 3500: s1 and s2 active; 4200: s3 failed, which ends the call.
  assert.deepEqual(steps, [
    { puts: 3, gets: 0 },
    { puts: 0, gets: 3 },
    { puts: 0, gets: 3 },
    { puts: 0, gets: 3 },
    { puts: 0, gets: 3 },
    { puts: 0, gets: 3 },
    { puts: 0, gets: 1 },
  ]);
  assert.equal(last.wakeAtMs, null);
  assert.deepEqual(last.error, { name: 'StateTransitionFailed', message, isError: true });
  assert.deepEqual(last.report, { ok: false, nodes: nodesAtEnd });
  assert.deepEqual(putsByNode(), { s1: 1, s2: 1, s3: 1 });
});
