// Checkpoints in JS (onCheckpoint, client.checkpoint(), resume(), step()),
// attacked from every side a caller can reach: processes SIGKILLed mid-wait
// and resumed in another process, step loops whose every step is a process
// of its own, checkpoints truncated, garbled and tampered with, credentials
// looked for in every checkpoint, aborts, deadlines already past, callbacks
// that throw, allocations. The simulator's request log is the witness of
// what was sent: no PUT twice, nothing at all for a refused checkpoint.
//
// The kill trials draw some of their instants from a seeded generator:
// CHECKPOINT_TRIAL_SEED=N reruns them with other instants (the seed and the
// instants are printed as diagnostics).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError, IronicClient, StateTransitionFailed, StateTransitionTimeout } from 'ironic-wait';
import { listen } from '../../sim/http.mjs';
import { decodeCheckpoint, outcomeName } from '../support/checkpoint.mjs';
import { nodes, sleep, startIronic, until } from './harness.mjs';

const CHILD = fileURLToPath(new URL('./checkpoint-child.mjs', import.meta.url));
const TMP = mkdtempSync(path.join(os.tmpdir(), 'ironic-wait-checkpoints-'));
const open = [];
after(async () => {
  await Promise.all(open.map((s) => s.close()));
  rmSync(TMP, { recursive: true, force: true });
});

async function sim(scenario) {
  const ironic = await startIronic(scenario);
  open.push(ironic);
  return ironic;
}

/** What must be the same between a call and the same call interrupted and resumed: each node's end. */
const outcomes = (report) => report.nodes.map((n) => [n.node, n.outcome, n.state, n.targetState, n.lastError]);

/** Provision PUTs the simulator received, per node name. */
function putsPerNode(ironic) {
  const counts = {};
  for (const entry of ironic.sim.log({ method: 'PUT' })) {
    const m = /^\/v1\/nodes\/([^/]+)\/states\/provision$/.exec(entry.path);
    if (m) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
  }
  return counts;
}

const once = (names) => Object.fromEntries(names.map((n) => [n, 1]));

/** A small seeded generator (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const SEED = Number(process.env.CHECKPOINT_TRIAL_SEED ?? 20261201);

/**
 * One child process (checkpoint-child.mjs) running `spec`; `killOn(line)`
 * kills it with SIGKILL from inside the stdout handler, the moment a line
 * it likes arrives.
 */
function runChild(spec, { killOn } = {}) {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  let stderr = '';
  let rest = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    rest += chunk;
    let i;
    while ((i = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, i);
      rest = rest.slice(i + 1);
      lines.push(line);
      if (killOn?.(line)) child.kill('SIGKILL');
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise((resolve) => child.on('close', resolve));
  return {
    child,
    lines,
    exited,
    get stderr() {
      return stderr;
    },
    /** The child's `result` line, once its output is complete (null if it printed none). */
    async result() {
      await closed;
      const line = lines.find((l) => l.startsWith('result '));
      return line ? JSON.parse(line.slice('result '.length)) : null;
    },
  };
}

/** A checkpoint's targets as [ident, [state, target, last error] or null, settled outcome or null]. */
function targetsOf(text) {
  return decodeCheckpoint(text).targets.map((t) => [t.ident, t.seen, outcomeName(t.outcome)]);
}

// ---------------------------------------------------------------------------
// 1. onCheckpoint: when it is called, what it gives; checkpoint() sends nothing

/**
 * The instants (simulator ms, in order) at which `names` will move by their plans, read once (the plans
 * are drawn when the PUTs are accepted): on a manual clock nothing moves until the clock is moved on.
 */
function plannedMoves(ironic, names) {
  const moves = new Set();
  for (const node of names.map((n) => ironic.sim.node(n))) {
    if (!node.plan) continue;
    let at = node.provision_updated_at;
    for (const phase of node.plan.phases.slice(node.plan.phase)) {
      if (!Number.isFinite(phase.ms)) break;
      at += phase.ms;
      moves.add(at);
    }
  }
  return [...moves].sort((a, b) => a - b);
}

/** The clock moved on to the next of `moves` still ahead; returns it, or null when none is. */
function moveOn(ironic, moves) {
  const at = moves.find((t) => t > ironic.sim.now()) ?? null;
  if (at !== null) ironic.sim.advance(at - ironic.sim.now());
  return at;
}

/**
 * An onCheckpoint for a provision of `names` on a manual clock: it calls `then`, having moved the clock
 * on to the nodes' next move (from the second checkpoint on: the first round sees the deploys begun),
 * so that each round sees one instant's moves, between rounds.
 */
function movingOn(ironic, names, then) {
  let calls = 0;
  let planned;
  return (c) => {
    calls += 1;
    if (calls === 1) planned = plannedMoves(ironic, names);
    else moveOn(ironic, planned);
    return then(c);
  };
}

test('onCheckpoint: first once every PUT is answered, then only after a round that changed something, each a JSON checkpoint of it', async () => {
  // A manual clock, moved only from onCheckpoint (called between rounds, after one that changed
  // something) to the nodes' next move: each round after the first sees exactly the changes of one
  // instant, whatever the machine's speed (on the wall clock a loaded machine's rounds came late and saw
  // several at once: fewer checkpoints).
  const ironic = await sim({
    manualClock: true,
    nodes: [
      { name: 'a', provision_state: 'available' },
      { name: 'b', provision_state: 'available', timing: { deploying: 300 } },
      { name: 'c', provision_state: 'available' },
    ],
    timing: { deploying: 120, 'wait call-back': 80 },
    transitions: [{ node: 'c', action: 'deploy', fail: 'Deploy step deploy.write_image failed: no image' }],
  });
  const client = new IronicClient({ endpoint: ironic.url });
  const log = [];
  const moves = [];
  let planned;
  const report = await client.provision(['a', 'b', 'c'], 'deploy', {
    wait: true,
    timeout: 30,
    pollInterval: 0.03,
    settle: 'all',
    onProgress: (e) => log.push({ kind: 'progress', ...e }),
    onCheckpoint: (text) => {
      log.push({
        kind: 'checkpoint',
        text,
        puts: ironic.sim.log({ method: 'PUT' }),
        gets: ironic.requests('GET', '/v1/nodes/*').length,
      });
      // After the PUTs' checkpoint, the first round sees the deploys begun; after each later one, on.
      const n = log.filter((e) => e.kind === 'checkpoint').length;
      if (n === 1) planned = plannedMoves(ironic, ['a', 'b', 'c']);
      const at = n >= 2 && moveOn(ironic, planned);
      if (at) moves.push(at);
    },
  });
  assert.deepEqual(outcomes(report), [
    ['a', 'reached', 'active', null, null],
    ['b', 'reached', 'active', null, null],
    ['c', 'failed', 'deploy failed', 'active', 'Deploy step deploy.write_image failed: no image'],
  ]);
  const checkpoints = log.filter((e) => e.kind === 'checkpoint');
  // The moves: a and c to wait call-back (120), deploying (200), active and deploy failed (320); b at
  // 300, 380 and 680 (active: the round that sees it ends the call, with no checkpoint).
  assert.deepEqual(moves, [120, 200, 300, 320, 380, 680]);
  assert.equal(checkpoints.length, 2 + moves.length - 1, 'after the PUTs, after the first round, after each move but the last');
  assert.equal(log[0].kind, 'checkpoint', 'the first thing a caller hears of is the checkpoint after the PUTs');

  // The first: every PUT sent and answered, no node checked yet.
  const first = checkpoints[0];
  assert.equal(first.puts.length, 3);
  assert.ok(
    first.puts.every((p) => p.status === 202 && p.tEnd !== null),
    'every PUT answered',
  );
  assert.equal(first.gets, 0, 'before the first round');
  const firstCp = decodeCheckpoint(first.text);
  assert.deepEqual(
    firstCp.puts,
    ['a', 'b', 'c'].map((node) => ({ node, outcome: 'accepted' })),
    'each PUT accepted, its body gone',
  );
  assert.deepEqual(
    firstCp.targets.map((t) => t.ident),
    ['a', 'b', 'c'],
  );

  for (const { text } of checkpoints) {
    assert.equal(typeof text, 'string');
    const cp = JSON.parse(text);
    assert.equal(cp.ironicWaitCheckpoint, 2);
    assert.equal(cp.endpoint, ironic.url);
    assert.equal(cp.method, 'provision');
    assert.equal(cp.action, 'deploy');
  }

  // Only rounds that changed something: no two checkpoints in a row say the same of the targets.
  for (let i = 1; i < checkpoints.length; i++) {
    assert.notDeepEqual(targetsOf(checkpoints[i].text), targetsOf(checkpoints[i - 1].text), `checkpoint ${i} repeats ${i - 1}`);
  }
  // Every change a caller was told of is in the checkpoint that follows it (the round's).
  log.forEach((event, i) => {
    if (event.kind !== 'progress') return;
    const next = log.slice(i + 1).find((e) => e.kind === 'checkpoint');
    if (!next) {
      assert.equal(event.done, true, 'only the round that ends the call has no checkpoint after it');
      return;
    }
    const [, seen, settled] = targetsOf(next.text).find(([ident]) => ident === event.node);
    assert.deepEqual(seen, [event.state, event.targetState, event.lastError], `${event.node} ${event.state}`);
    assert.equal(settled, event.done ? event.outcome : null);
  });
});

test('onCheckpoint: a round in which nothing changed makes no checkpoint', async () => {
  // Deploying at once and for ever: the first round sees it, no round after sees anything new.
  const ironic = await sim({
    nodes: nodes({ s1: 'available', s2: 'available' }),
    timing: { 'wait call-back': 0 },
    transitions: [{ action: 'deploy', stall: true }],
  });
  const client = new IronicClient({ endpoint: ironic.url });
  const checkpoints = [];
  // Eight rounds at least, counted, then an abort ends the wait (a timeout would end it after a time in
  // which a loaded machine makes fewer rounds: it once made 3 in 0.6 s).
  const controller = new AbortController();
  const waiting = client.provision(['s1', 's2'], 'deploy', {
    wait: true,
    timeout: 60,
    pollInterval: 0.03,
    signal: controller.signal,
    onCheckpoint: (c) => checkpoints.push(c),
  });
  await until(() => ironic.requests('GET', '/v1/nodes/s1').length >= 8);
  controller.abort();
  await assert.rejects(waiting, (e) => e.name === 'AbortError');
  const rounds = ironic.requests('GET', '/v1/nodes/s1').length;
  assert.ok(rounds >= 8, `${rounds} rounds`);
  assert.equal(checkpoints.length, 2, `after the PUTs and after the first round, none of the ${rounds - 1} rounds after`);
  assert.deepEqual(
    targetsOf(checkpoints[1]).map(([, seen]) => seen),
    [
      ['deploying', 'active', null],
      ['deploying', 'active', null],
    ],
  );
});

test('checkpoint() is synchronous, sends nothing, and refuses what the method would refuse', async () => {
  const ironic = await sim({ nodes: nodes({ n1: 'available', n2: 'active' }) });
  const client = new IronicClient({ endpoint: ironic.url });
  const madeFrom = Date.now();
  const texts = [
    client.checkpoint('provision', ['n1'], 'deploy', { wait: true, timeout: 30, pollInterval: 1, configDrive: { user_data: 'x' } }),
    client.checkpoint('provision', 'n1', 'deploy'),
    client.checkpoint('waitForProvisionState', ['n1', 'n2'], 'ACTIVE', { timeout: 5 }),
    client.checkpoint('createAllocation', { resourceClass: 'gold', traits: ['CUSTOM_X'] }, { wait: true, timeout: 5 }),
    client.checkpoint('createAllocation', { resourceClass: 'gold' }),
    client.checkpoint('waitForAllocation', 'alloc-1', { timeout: 5 }),
  ];
  const madeBy = Date.now();
  for (const text of texts) {
    assert.equal(typeof text, 'string');
    const cp = JSON.parse(text);
    assert.equal(cp.ironicWaitCheckpoint, 2);
    assert.equal(cp.requests, 0);
    assert.equal(cp.microversion, null, 'not even the version was asked for');
    // Started now, by the wall clock: between the instants read around the calls (by order, not by a
    // margin; a few ms either way for the wall clock the client keeps beside its monotonic one).
    assert.ok(cp.startedAt >= madeFrom - 50 && cp.startedAt <= madeBy + 50, `startedAt ${cp.startedAt}, made in [${madeFrom}, ${madeBy}]`);
  }
  assert.equal(decodeCheckpoint(texts[0]).puts[0].body.configdrive.user_data, 'x', 'the PUT body, unsent, is in the plan');
  assert.equal(JSON.parse(texts[3]).post.resource_class, 'gold');

  const refused = [
    [
      () => client.checkpoint('getNode', 'n1'),
      /method must be one of provision, waitForProvisionState, setPowerState, waitForPowerState, waitForReservation, createAllocation, waitForAllocation/,
    ],
    [() => client.checkpoint(undefined), /method must be/],
    [() => client.checkpoint('resume', texts[0]), /method must be/],
    [() => client.checkpoint('provision', 'n1', 'abort', { wait: true }), /Action abort cannot be waited on/],
    [() => client.checkpoint('provision', 'n1', 'fly'), /fly/],
    [() => client.checkpoint('provision', 'n1', 'deploy', { wait: true, timeout: -1 }), /^Option timeout must be a positive number/],
    [() => client.checkpoint('provision', 'n1', 'deploy', { wait: true, timeout: 0 }), /^Option timeout must be a positive number/],
    [() => client.checkpoint('provision', 'n1', 'deploy', { wait: 5 }), /^Option wait must be true or false/],
    [() => client.checkpoint('provision', 'n1', 'deploy', { timeout: 5 }), /^Option timeout needs wait: true$/],
    [() => client.checkpoint('provision', 'n1', 'rescue', { wait: true, timeout: 5 }), /rescue/i],
    [() => client.checkpoint('waitForProvisionState', 'n1', 'active', { timeout: 'soon' }), /timeout/],
    [() => client.checkpoint('provision', 'n1', 'deploy', { bogus: 1 }), /bogus/],
    [() => client.checkpoint('createAllocation', {}, { wait: true, timeout: 5 }), /resource_class|resourceClass/],
    [() => client.checkpoint('waitForAllocation', 42), /id must be a string/],
  ];
  for (const [call, message] of refused) {
    assert.throws(call, (e) => e instanceof InvalidArgumentError && message.test(e.message), String(call));
  }
  await sleep(150);
  assert.equal(ironic.seen.length, 0, 'the simulator heard nothing');
});

// A provision of 1,000 nodes named like node-0001, every checkpoint kept (one run for the two tests below).
let thousand;
function thousandNodes() {
  thousand ??= (async () => {
    const names = Array.from({ length: 1000 }, (_, i) => `node-${String(i).padStart(4, '0')}`);
    const ironic = await sim({
      // Deploys of 2-9 s (two deploying phases; the last node's 12 s, so that a checkpoint comes with all
      // the others settled: the largest), on a manual clock moved only from onCheckpoint (between rounds)
      // to the nodes' next move: every deploy begins at the same instant however long a loaded machine
      // takes over the PUTs, and each round after the first sees the moves of one instant (a tenth of
      // the nodes at a time), so the checkpoints are the same in every run.
      manualClock: true,
      nodes: names.map((name, i) => ({
        name,
        provision_state: 'available',
        timing: { deploying: i === names.length - 1 ? 6000 : 1000 + (i % 10) * 400 },
      })),
      transitions: [{ node: names.filter((_, i) => i % 97 === 5), action: 'deploy', fail: 'Deploy step failed: no image' }],
    });
    const client = new IronicClient({ endpoint: ironic.url });
    // A deadline far past what a loaded machine takes over the PUTs and the rounds (33 of them).
    const plan = client.checkpoint('provision', names, 'deploy', { wait: true, timeout: 600, pollInterval: 0.1, settle: 'all' });
    const checkpoints = [];
    let planned;
    const report = await client.provision(names, 'deploy', {
      wait: true,
      timeout: 600,
      pollInterval: 0.1,
      settle: 'all',
      onCheckpoint: (c) => {
        checkpoints.push(c);
        // After the PUTs' checkpoint, the first round sees the deploys begun; after each later one, on.
        if (checkpoints.length === 1) planned = plannedMoves(ironic, names);
        else moveOn(ironic, planned);
      },
    });
    return { names, ironic, plan, checkpoints, report };
  })();
  return thousand;
}

const KB = 1024;
const settledShare = (text) => decodeCheckpoint(text).settled.length / 1000;

test('1,000 nodes: checkpoints are JSON and under 40 KB from the PUTs until three quarters of the nodes have settled', async (t) => {
  const { names, ironic, plan, checkpoints, report } = await thousandNodes();
  assert.equal(report.nodes.filter((n) => n.outcome === 'reached').length, 1000 - 11);
  assert.deepEqual(putsPerNode(ironic), once(names));
  t.diagnostic(
    `plan ${(plan.length / KB).toFixed(1)} KB; checkpoints (KB, share settled): ${checkpoints
      .map((c) => `${(c.length / KB).toFixed(1)}/${settledShare(c).toFixed(2)}`)
      .join(' ')}`,
  );
  assert.ok(checkpoints.length >= 3);
  assert.deepEqual(decodeCheckpoint(checkpoints[0]).targets.length, 1000);
  for (const c of checkpoints) JSON.parse(c);
  const early = checkpoints.filter((c) => settledShare(c) <= 0.75);
  assert.ok(early.length >= 2);
  for (const c of early) assert.ok(c.length < 40 * KB, `${c.length} bytes with ${settledShare(c)} settled`);
});

test('1,000 nodes: every checkpoint of the wait is under 40 KB, late ones included', async () => {
  const { checkpoints } = await thousandNodes();
  for (const c of checkpoints) assert.ok(c.length < 40 * KB, `${c.length} bytes with ${settledShare(c)} settled`);
});

// ---------------------------------------------------------------------------
// 2. SIGKILL mid-wait, resumed in another process

const KILL_NODES = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
const KILL_OPTIONS = { wait: true, timeout: 60, pollInterval: 0.1, settle: 'all', concurrency: 2 };
const killScenario = () => ({
  nodes: KILL_NODES.map((name) => ({ name, provision_state: 'available' })),
  timing: { deploying: [500, 1100], 'wait call-back': [300, 700] },
  transitions: [{ node: 'n4', action: 'deploy', fail: 'Deploy step deploy.write_image failed: no image' }],
  // The PUTs take a while, so that a process can die among them.
  faults: [{ kind: 'latency', ms: 80, method: 'PUT' }],
});

let baseline;
/** The uninterrupted run's outcomes, on a simulator of its own. */
function uninterrupted() {
  baseline ??= (async () => {
    const ironic = await sim(killScenario());
    const report = await new IronicClient({ endpoint: ironic.url }).provision(KILL_NODES, 'deploy', KILL_OPTIONS);
    assert.deepEqual(putsPerNode(ironic), once(KILL_NODES));
    return outcomes(report);
  })();
  return baseline;
}

test('uninterrupted run of the kill scenario (the reference)', async () => {
  const expected = await uninterrupted();
  assert.deepEqual(
    expected.map((o) => o[1]),
    ['reached', 'reached', 'reached', 'failed', 'reached', 'reached'],
  );
});

test('SIGKILL at any moment of a provision wait, then resume in a new process: same outcomes, one PUT per node', {
  concurrency: true,
}, async (t) => {
  const expected = await uninterrupted();
  const rand = random(SEED);
  // One instant drawn in each third of the wait (about 2 s after the first checkpoint).
  const delays = [0, 1, 2].map((k) => Math.round((k + rand()) * 700));
  t.diagnostic(`CHECKPOINT_TRIAL_SEED=${SEED}: kills ${delays.join(', ')} ms after the first checkpoint`);
  const trials = [
    { label: 'before the process started its call', when: 'spawn' },
    { label: 'among the PUTs (before any checkpoint)', when: 'first-put' },
    { label: 'right after the PUTs (at the first checkpoint)', when: { line: 1 } },
    { label: 'at the third checkpoint', when: { line: 3 } },
    { label: 'at the first checkpoint with 2 nodes settled', when: { settled: 2 } },
    { label: 'at the first checkpoint with 4 nodes settled', when: { settled: 4 } },
    ...delays.map((ms) => ({ label: `${ms} ms after the first checkpoint`, when: { after: ms } })),
  ];
  await Promise.all(
    trials.map((trial, i) =>
      t.test(trial.label, async (tt) => {
        const ironic = await sim(killScenario());
        const file = path.join(TMP, `kill-${i}.json`);
        const spec = { mode: 'provision', url: ironic.url, file, nodes: KILL_NODES, action: 'deploy', options: KILL_OPTIONS };
        const { line, settled } = trial.when;
        const killOn = (l) => {
          const [word, n, s] = l.split(' ');
          return word === 'checkpoint' && (Number(n) === line || Number(s) >= settled);
        };
        const run = runChild(spec, { killOn });
        if (trial.when === 'spawn') run.child.kill('SIGKILL');
        if (trial.when === 'first-put') {
          await until(() => ironic.requests('PUT', '/v1/nodes/*/states/provision').length >= 1 || run.child.exitCode !== null);
          run.child.kill('SIGKILL');
        }
        if (trial.when.after !== undefined) {
          // A bound for a process that never gets there (a loaded machine took more than 20 s to).
          await until(() => run.lines.some((l) => l.startsWith('checkpoint ')) || run.child.exitCode !== null, 120_000);
          await sleep(trial.when.after);
          run.child.kill('SIGKILL');
        }
        const { signal } = await run.exited;
        const own = await run.result();
        if (own) {
          // It finished before the kill came: its own report is the reference's.
          tt.diagnostic('the process finished before the kill');
          assert.equal(own.ok, true, run.stderr);
          assert.deepEqual(outcomes(own.value), expected);
          assert.deepEqual(putsPerNode(ironic), once(KILL_NODES));
          return;
        }
        assert.equal(signal, 'SIGKILL', run.stderr);
        const written = run.lines.filter((l) => l.startsWith('checkpoint ')).length;
        if (!existsSync(file)) {
          tt.diagnostic('killed before its first checkpoint: the command would be run again from the start');
          assert.equal(written, 0, 'a checkpoint it said it wrote is missing');
          assert.ok(
            Object.values(putsPerNode(ironic)).every((n) => n === 1),
            'at most one PUT per node so far',
          );
          assert.ok(trial.when === 'spawn' || trial.when === 'first-put', 'every later kill finds a checkpoint');
          return;
        }
        const text = readFileSync(file, 'utf8');
        const cp = decodeCheckpoint(text); // never half-written
        assert.equal(cp.puts.length, KILL_NODES.length);
        assert.ok(
          cp.puts.every((p) => p.outcome === 'accepted' && p.body === undefined),
          'written after every PUT was answered',
        );
        if (settled) assert.ok(cp.settled.length >= settled);
        tt.diagnostic(`killed after ${written} checkpoint(s); the last one has ${cp.settled.length} node(s) settled`);

        const resumed = runChild({ mode: 'resume', url: ironic.url, file });
        const result = await resumed.result();
        assert.deepEqual((await resumed.exited).code, 0, resumed.stderr);
        assert.equal(result?.ok, true, `${JSON.stringify(result)} ${resumed.stderr}`);
        assert.deepEqual(outcomes(result.value), expected);
        assert.deepEqual(putsPerNode(ironic), once(KILL_NODES), 'no PUT sent twice');
        assert.ok(result.value.requests >= cp.requests, 'the counters go on from the checkpoint');
      }),
    ),
  );
});

test('settled outcomes survive a checkpoint exactly: a refused PUT, a node gone, an unusable answer, with their errors', async () => {
  // A manual clock moved from onCheckpoint to the nodes' next move, so that ok, gone and broken settle in
  // rounds of their own before the deadline, the last of them with a checkpoint after it, however few
  // rounds a loaded machine makes (on the wall clock one made too few in 1.5 s: the last checkpoint had
  // 2 settled). slow stalls: the wait ends at its deadline, a bound that four rounds cannot reach.
  const ironic = await sim({
    manualClock: true,
    nodes: nodes({ ok: 'available', refused: 'active', gone: 'available', broken: 'available', slow: 'available' }),
    timing: { deploying: 100 },
    transitions: [
      { node: 'gone', action: 'deploy', delete: true, at: 'deploying' },
      { node: 'slow', action: 'deploy', stall: true },
    ],
    faults: [{ node: 'broken', method: 'GET', kind: 'omit', omit: ['provision_state'], skip: 1 }],
  });
  const names = ['ok', 'refused', 'gone', 'broken', 'slow'];
  const checkpoints = [];
  let planned;
  const original = await new IronicClient({ endpoint: ironic.url }).provision(names, 'deploy', {
    wait: true,
    timeout: 8,
    pollInterval: 0.05,
    settle: 'all',
    onCheckpoint: (c) => {
      checkpoints.push(c);
      if (checkpoints.length === 1) planned = plannedMoves(ironic, names);
      else moveOn(ironic, planned);
    },
  });
  const entry = (n, all) => ({
    node: n.node,
    outcome: n.outcome,
    state: n.state,
    targetState: n.targetState,
    lastError: n.lastError,
    ...(all ? { polls: n.polls, elapsed: n.elapsed } : {}),
    error: n.error && {
      class: n.error.constructor.name,
      message: n.error.message,
      status: n.error.status,
      requestId: n.error.requestId,
      detail: n.error.detail,
      target: n.error.target,
      field: n.error.field,
    },
  });
  assert.deepEqual(
    original.nodes.map((n) => [n.node, n.outcome, n.error?.constructor.name]),
    [
      ['ok', 'reached', undefined],
      ['refused', 'error', 'IronicHttpError'],
      ['gone', 'not-found', 'IronicHttpError'],
      ['broken', 'error', 'InvalidResponseError'],
      ['slow', 'timed-out', undefined],
    ],
  );
  const last = checkpoints.at(-1);
  assert.equal(decodeCheckpoint(last).settled.length, 3, last);
  const resumed = await new IronicClient({ endpoint: ironic.url }).resume(last);
  // Settled before the checkpoint: everything the same, polls, times, request ids and messages included.
  assert.deepEqual(
    resumed.nodes.slice(0, 4).map((n) => entry(n, true)),
    original.nodes.slice(0, 4).map((n) => entry(n, true)),
  );
  assert.deepEqual(entry(resumed.nodes[4]), entry(original.nodes[4]));
  // From the first checkpoint, each node's end is found again (the errors are new answers, of the same kinds).
  const fromFirst = await new IronicClient({ endpoint: ironic.url }).resume(checkpoints[0]);
  assert.deepEqual(entry(fromFirst.nodes[1], true), entry(original.nodes[1], true), 'the refused PUT, kept from the PUTs');
  assert.deepEqual(
    fromFirst.nodes.map((n) => [n.node, n.outcome, n.error?.constructor.name, n.error?.status, n.error?.field]),
    original.nodes.map((n) => [n.node, n.outcome, n.error?.constructor.name, n.error?.status, n.error?.field]),
  );
  assert.deepEqual(putsPerNode(ironic), once(names));
});

// ---------------------------------------------------------------------------
// 3. step loops

test('a step loop, each step in a new process, sleeping until wakeAtMs: the same outcomes, no PUT twice', async () => {
  const expected = await uninterrupted();
  // Deploys of 4-6.5 s, on a manual clock moved a second between steps: the same steps however long a
  // loaded machine takes to start each step's process (on the wall clock a slow start could leave only
  // two or three).
  const ironic = await sim({ ...killScenario(), manualClock: true, timing: { deploying: [1500, 2500], 'wait call-back': [1000, 1500] } });
  const file = path.join(TMP, 'steps.json');
  const options = { ...KILL_OPTIONS, pollInterval: 0.25 };
  let checkpoint = new IronicClient({ endpoint: ironic.url }).checkpoint('provision', KILL_NODES, 'deploy', options);
  assert.equal(ironic.seen.length, 0);
  const steps = [];
  for (let i = 0; i < 100 && checkpoint; i++) {
    writeFileSync(file, checkpoint);
    const before = ironic.sim.log().length;
    const stepFrom = Date.now();
    const run = runChild({ mode: 'step', url: ironic.url, file });
    const result = await run.result();
    const stepBy = Date.now();
    assert.equal(result?.ok, true, `step ${i}: ${JSON.stringify(result)} ${run.stderr}`);
    const answer = result.value;
    const sent = ironic.sim
      .log()
      .slice(before)
      .map((e) => `${e.method} ${e.path}`);
    steps.push({ answer, sent, at: Date.now() });
    checkpoint = answer.checkpoint;
    if (checkpoint) {
      assert.equal(typeof answer.wakeAtMs, 'number');
      // Due after the step began and no later than one interval after it ended (by order, not by a margin).
      assert.ok(
        answer.wakeAtMs >= stepFrom - 50 && answer.wakeAtMs <= stepBy + options.pollInterval * 1000 + 50,
        `wakeAtMs ${answer.wakeAtMs - stepFrom} ms after the step began, which took ${stepBy - stepFrom} ms`,
      );
      await sleep(Math.max(0, answer.wakeAtMs - Date.now()));
      ironic.sim.advance(1000);
    }
  }
  const last = steps.at(-1).answer;
  assert.equal(last.checkpoint, null);
  assert.equal(last.wakeAtMs, null);
  assert.equal(last.error, null, 'settle all: the call resolves');
  assert.deepEqual(outcomes(last.report), expected);
  assert.deepEqual(putsPerNode(ironic), once(KILL_NODES));

  // The first step: the PUTs (and the version), nothing else; then one round of checks per step, no PUT.
  assert.deepEqual(
    steps[0].sent.filter((s) => !s.startsWith('PUT ')),
    ['GET /v1'],
  );
  assert.equal(steps[0].sent.filter((s) => s.startsWith('PUT ')).length, KILL_NODES.length);
  for (const { sent } of steps.slice(1)) {
    assert.ok(
      sent.every((s) => s.startsWith('GET /v1/nodes/')),
      sent.join(', '),
    );
    assert.ok(sent.length <= KILL_NODES.length, 'one round: at most one GET per node');
    assert.ok(new Set(sent).size === sent.length, 'no node checked twice in a step');
  }
  // The PUTs, then a round a simulated second until the last deploy (4 s at least) ended.
  assert.ok(steps.length >= 5, `${steps.length} steps`);
});

test("a step loop with a new client each step: a failure ends in the answer's error, never thrown; onProgress has the events", async () => {
  // Manual clocks moved to the nodes' next move after each checkpoint (the call) and each step (the
  // loop): both see the same states, bad's failure while ok1 still deploys (on the wall clock a round
  // late by 0.9 s would also have seen ok1 reached, in one of them).
  const scenario = {
    manualClock: true,
    nodes: [
      { name: 'ok1', provision_state: 'available' },
      { name: 'bad', provision_state: 'available', timing: { deploying: 60 } },
    ],
    timing: { deploying: 400, 'wait call-back': 100 },
    transitions: [{ node: 'bad', action: 'deploy', fail: 'Deploy step deploy.write_image failed: no image', at: 'deploying', after: 30 }],
  };
  const options = { wait: true, timeout: 10, pollInterval: 0.05 };
  const reference = await sim(scenario);
  const settled = (events) => events.filter((e) => e.done).map((e) => [e.node, e.outcome, e.state]);
  const waited = [];
  const original = await new IronicClient({ endpoint: reference.url })
    .provision(['ok1', 'bad'], 'deploy', {
      ...options,
      onProgress: (e) => waited.push(e),
      onCheckpoint: movingOn(reference, ['ok1', 'bad'], () => {}),
    })
    .catch((e) => e);
  assert.ok(original instanceof StateTransitionFailed);

  const ironic = await sim(scenario);
  let checkpoint = new IronicClient({ endpoint: ironic.url }).checkpoint('provision', ['ok1', 'bad'], 'deploy', options);
  let answer;
  const stepped = [];
  const stepOn = movingOn(ironic, ['ok1', 'bad'], () => {});
  for (let i = 0; i < 100 && checkpoint; i++) {
    answer = await new IronicClient({ endpoint: ironic.url }).step(checkpoint, { onProgress: (e) => stepped.push(e) });
    checkpoint = answer.checkpoint;
    if (checkpoint) {
      stepOn(checkpoint);
      await sleep(Math.max(0, answer.wakeAtMs - Date.now()));
    }
  }
  assert.equal(answer.checkpoint, null);
  assert.equal(answer.wakeAtMs, null);
  assert.ok(answer.error instanceof StateTransitionFailed, String(answer.error));
  assert.equal(answer.error.message, original.message);
  assert.deepEqual([answer.error.node, answer.error.state, answer.error.lastError], [original.node, original.state, original.lastError]);
  assert.equal(answer.report.ok, false);
  assert.deepEqual(outcomes(answer.report), outcomes(original.report));
  assert.deepEqual(putsPerNode(ironic), once(['ok1', 'bad']));
  // The steps' events: each node's settling, as the uninterrupted wait told it.
  assert.deepEqual(settled(stepped), settled(waited));
});

// ---------------------------------------------------------------------------
// 4. Hostile checkpoints: each an InvalidArgumentError saying what is wrong, nothing sent

/**
 * A rich checkpoint: a provision mid-wait with a node reached, one failed, one still deploying. On a
 * manual clock moved, after the PUTs, past every move but n2's (it stalls): the first round sees n1
 * reached and bad failed, and its checkpoint is taken, then the call aborted (on the wall clock a
 * loaded machine's rounds had not seen them within the wait's 1 s). Resumed, the wait is past its
 * deadline (10 s after the call) or gets there.
 */
async function richCheckpoint() {
  const ironic = await sim({
    manualClock: true,
    nodes: nodes({ n1: 'available', n2: 'available', bad: 'available' }),
    timing: { deploying: 100, 'wait call-back': 50 },
    transitions: [
      { node: 'bad', action: 'deploy', fail: 'no image', at: 'deploying', after: 10 },
      { node: 'n2', action: 'deploy', stall: true },
    ],
  });
  const checkpoints = [];
  const controller = new AbortController();
  await new IronicClient({ endpoint: ironic.url })
    .provision(['n1', 'n2', 'bad'], 'deploy', {
      wait: true,
      timeout: 10,
      pollInterval: 0.03,
      settle: 'all',
      signal: controller.signal,
      onCheckpoint: (c) => {
        checkpoints.push(c);
        if (checkpoints.length === 1) ironic.sim.advance(plannedMoves(ironic, ['n1', 'bad']).at(-1) - ironic.sim.now());
        else controller.abort();
      },
    })
    .catch(() => {});
  const text = checkpoints.at(-1);
  const cp = JSON.parse(text);
  assert.equal(decodeCheckpoint(cp).settled.length, 2, text);
  return { ironic, text, cp };
}

/** Each checkpoint must be refused by resume and by step with `message`, and nothing sent. */
async function assertRefused(client, ironic, cases) {
  const before = ironic.seen.length;
  for (const [label, checkpoint, message] of cases) {
    for (const method of ['resume', 'step']) {
      await assert.rejects(
        client[method](checkpoint),
        (e) => {
          assert.ok(e instanceof InvalidArgumentError, `${method} ${label}: ${e?.name} ${e?.message}`);
          assert.match(e.message, message, `${method} ${label}`);
          return true;
        },
        `${method} ${label}: accepted`,
      );
    }
  }
  await sleep(50);
  assert.equal(ironic.seen.length, before, 'nothing was sent');
}

test('hostile checkpoints: not a string, not JSON, random bytes, ill-formed Unicode', async () => {
  const { ironic, text, cp } = await richCheckpoint();
  const client = new IronicClient({ endpoint: ironic.url });
  const notString = /checkpoint must be a string/;
  const notJson = /^Invalid checkpoint: it is not JSON$/;
  const cases = [
    ...[undefined, null, 0, 42, true, {}, [], cp, [text], new String(text), Symbol('cp'), 10n, () => text].map((v) => [
      `a ${typeof v}`,
      v,
      notString,
    ]),
    ['empty', '', notJson],
    ['blank', ' \n\t', notJson],
    ['text plus junk', `${text}x`, notJson],
    ['two checkpoints', `${text}${text}`, notJson],
    ['single quotes', text.replaceAll('"', "'"), notJson],
    ['NaN', text.replace(/"requests":\d+/, '"requests":NaN'), notJson],
    ['null', 'null', /Invalid checkpoint: not a JSON object/],
    ['a list', `[${text}]`, /Invalid checkpoint: not a JSON object/],
    ['a number', '1', /Invalid checkpoint: not a JSON object/],
    ['a string', JSON.stringify(text), /Invalid checkpoint: not a JSON object/],
    ['an empty object', '{}', /ironicWaitCheckpoint is missing: not a checkpoint/],
    ['a lone surrogate', `${text.slice(0, -1)},"x":"\uD800"}`, /not well-formed Unicode/],
    ['a lone low surrogate', `\uDC00${text}`, /not well-formed Unicode/],
  ];
  const rand = random(SEED + 1);
  for (let i = 0; i < 40; i++) {
    const bytes = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 300) }, () => Math.floor(rand() * 256)));
    cases.push([`random bytes ${i} as latin1`, bytes.toString('latin1'), /not JSON|not a JSON object/]);
    cases.push([`random bytes ${i} as UTF-8`, bytes.toString('utf8'), /not JSON|not a JSON object/]);
  }
  // A checkpoint with random bytes in place of some of its own.
  for (let i = 0; i < 40; i++) {
    const at = Math.floor(rand() * text.length);
    const garbled =
      text.slice(0, at) + String.fromCharCode(...Array.from({ length: 4 }, () => Math.floor(rand() * 128))) + text.slice(at + 4);
    cases.push([`garbled at ${at}`, garbled, /^Invalid checkpoint: |^This checkpoint /]);
  }
  // Garbling may leave a checkpoint that still holds together (a digit for a digit): only those that do not are cases.
  const checked = [];
  for (const c of cases) {
    if (c[0].startsWith('garbled')) {
      try {
        JSON.parse(c[1]);
        continue; // still JSON: the type tests below cover the parts
      } catch {
        c[2] = notJson;
      }
    }
    checked.push(c);
  }
  await assertRefused(client, ironic, checked);
});

test('hostile checkpoints: every truncation of a real one', async () => {
  const { ironic, text } = await richCheckpoint();
  const client = new IronicClient({ endpoint: ironic.url });
  const cases = [];
  for (let n = 0; n < text.length; n++) cases.push([`first ${n} characters`, text.slice(0, n), /^Invalid checkpoint: it is not JSON$/]);
  for (let n = 1; n < text.length; n += 7) cases.push([`without its first ${n}`, text.slice(n), /^Invalid checkpoint: /]);
  await assertRefused(client, ironic, cases);
});

/** Values of each JSON type, huge and negative numbers among them. */
const VALUES = ['x', '', 0, 1, -1, 1.5, 1e308, 2 ** 64, -(2 ** 64), 2 ** 53 + 2, true, false, null, [], [1], {}, { a: 1 }];
const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
/** The type each top-level field has; `null` too where it may be null (or absent). */
const FIELD_TYPES = {
  ironicWaitCheckpoint: ['number'],
  endpoint: ['string'],
  method: ['string'],
  startedAt: ['number'],
  microversion: ['string', 'null'],
  requests: ['number'],
  retries: ['number'],
  action: ['string'],
  putTable: ['array'],
  puts: ['string'],
  wait: ['object'],
  targets: ['array'],
  seen: ['array'],
  outcomes: ['array'],
  states: ['string'],
  polls: ['string'],
  settled: ['string'],
  elapsed: ['string'],
};
/** Columns whose absence reads as all 0 (nothing seen or polled yet, settled at once): a checkpoint still. */
const ZERO_WHEN_ABSENT = new Set(['states', 'polls', 'elapsed']);

/** The whole numbers each numeric field holds: the format is 2, an instant a u64, counters a u32. */
const whole = (limit) => (v) => Number.isInteger(v) && v >= 0 && v < limit;
const WHOLE = { ironicWaitCheckpoint: (v) => v === 2, startedAt: whole(2 ** 64), requests: whole(2 ** 32), retries: whole(2 ** 32) };

test('hostile checkpoints: each top-level field of another type, absent, huge or negative, or swapped with another', async () => {
  const { ironic, cp } = await richCheckpoint();
  const client = new IronicClient({ endpoint: ironic.url });
  assert.deepEqual(Object.keys(cp).sort(), Object.keys(FIELD_TYPES).sort(), 'the fields this test knows');
  const with_ = (changes) => JSON.stringify({ ...cp, ...changes });
  const cases = [];
  for (const [key, types] of Object.entries(FIELD_TYPES)) {
    // The message names the field (or, for the format, what it is).
    const named = key === 'ironicWaitCheckpoint' ? /ironicWaitCheckpoint|format/ : key === 'endpoint' ? /endpoint/ : new RegExp(key);
    for (const value of VALUES) {
      const wrongType = !types.includes(typeOf(value));
      const badNumber = typeOf(value) === 'number' && types.includes('number') && !WHOLE[key](value);
      // A null wait is no wait, which a provision with targets cannot be: refused, in other words.
      const message = key === 'wait' && value === null ? /^Invalid checkpoint: / : named;
      if (wrongType || badNumber) cases.push([`${key} = ${JSON.stringify(value)}`, with_({ [key]: value }), message]);
    }
    // Without states, polls or elapsed is a checkpoint whose column is all 0: not a case.
    if (!types.includes('null') && !ZERO_WHEN_ABSENT.has(key))
      cases.push([`without ${key}`, with_({ [key]: undefined }), /^Invalid checkpoint: /]);
  }
  // Numbers past what a field holds: JSON text, not JS numbers.
  for (const key of ['startedAt', 'requests', 'retries']) {
    for (const big of ['1e308', '18446744073709551616', '99999999999999999999999999', '-0.5', '1E400', '4294967296']) {
      if (key === 'startedAt' && big === '4294967296') continue; // a valid instant (1970)
      cases.push([`${key} = ${big}`, JSON.stringify(cp).replace(new RegExp(`"${key}":\\d+`), `"${key}":${big}`), new RegExp(key)]);
    }
  }
  // Swaps of two fields of different types.
  const keys = Object.keys(cp);
  for (const a of keys) {
    for (const b of keys) {
      if (a < b && typeOf(cp[a]) !== typeOf(cp[b]))
        cases.push([`${a} swapped with ${b}`, with_({ [a]: cp[b], [b]: cp[a] }), /^Invalid checkpoint: /]);
    }
  }
  await assertRefused(client, ironic, cases);
});

test("hostile checkpoints: the wait's fields, the rows, the outcomes, the PUT bodies", async () => {
  const { ironic, cp } = await richCheckpoint();
  const client = new IronicClient({ endpoint: ironic.url });
  const edit = (f) => {
    const c = structuredClone(cp);
    f(c);
    return JSON.stringify(c);
  };
  const cases = [];
  const WAIT_TYPES = {
    expected: 'string',
    timeoutUs: 'number',
    pollIntervalUs: 'number',
    settle: 'string',
    failOnUnexpectedState: 'boolean',
    holdIsTerminal: 'boolean',
    concurrency: 'number',
    listThreshold: 'number',
    listMode: 'string',
    scope: 'array',
    auto: 'boolean',
    budget: 'number',
    diagnose: 'boolean',
  };
  // Absent from checkpoints made before they were options: their defaults.
  const OPTIONAL = new Set(['listMode', 'scope', 'auto', 'budget', 'diagnose']);
  assert.deepEqual(Object.keys(cp.wait).sort(), Object.keys(WAIT_TYPES).sort());
  for (const [key, type] of Object.entries(WAIT_TYPES)) {
    for (const value of [...VALUES, undefined]) {
      if (value === undefined && OPTIONAL.has(key)) continue;
      // Numbers: those that are no whole number at all (ranges have cases of their own below).
      const bad = typeOf(value) !== type || (type === 'number' && !(Number.isInteger(value) && value >= 0 && value < 2 ** 53));
      if (bad)
        cases.push([
          `wait.${key} = ${JSON.stringify(value)}`,
          edit((c) => {
            c.wait[key] = value;
          }),
          new RegExp(`wait|${key}`),
        ]);
    }
  }
  cases.push(
    [
      'wait.settle unknown',
      edit((c) => {
        c.wait.settle = 'some';
      }),
      /settle must be first-failure or all/,
    ],
    [
      "wait.expected not the action's",
      edit((c) => {
        c.wait.expected = 'available';
      }),
      /expected state is not the action's/,
    ],
    [
      'wait.pollIntervalUs 0',
      edit((c) => {
        c.wait.pollIntervalUs = 0;
      }),
      /Poll interval must be a positive number/,
    ],
    [
      'wait.pollIntervalUs past 24.8 days',
      edit((c) => {
        c.wait.pollIntervalUs = 2147484 * 1e6;
      }),
      /pollInterval is out of range/,
    ],
    [
      'wait.timeoutUs past 24.8 days',
      edit((c) => {
        c.wait.timeoutUs = 2147484 * 1e6;
      }),
      /timeout is out of range/,
    ],
    [
      'wait.concurrency 0',
      edit((c) => {
        c.wait.concurrency = 0;
      }),
      /wait\.concurrency must be a whole number from 1/,
    ],
    [
      'wait.listMode unknown',
      edit((c) => {
        c.wait.listMode = 'fast';
      }),
      /wait\.listMode must be 'changes' or 'list'/,
    ],
    [
      'wait.budget without auto',
      edit((c) => {
        c.wait.auto = false;
        c.wait.budget = 10;
      }),
      /Budget must be a whole number of requests a minute, with pollInterval 'auto'/,
    ],
    [
      'wait.scope of an unknown filter',
      edit((c) => {
        c.wait.scope = [['nosuch', 'x']];
      }),
      /wait\.scope\.nosuch is not known/,
    ],
    [
      'wait.scope not pairs',
      edit((c) => {
        c.wait.scope = [['owner']];
      }),
      /wait\.scope has pairs of strings/,
    ],
    [
      'wait.scope a pair of a number',
      edit((c) => {
        c.wait.scope = [['owner', 5]];
      }),
      /wait\.scope has pairs of strings/,
    ],
    [
      'action unknown',
      edit((c) => {
        c.action = 'explode';
      }),
      /Unknown provision action: explode/,
    ],
    [
      'action another',
      edit((c) => {
        c.action = 'undeploy';
      }),
      /expected state is not the action's/,
    ],
    [
      'method unknown',
      edit((c) => {
        c.method = 'deleteNode';
      }),
      /unknown method deleteNode/,
    ],
    [
      'a provision made a power action',
      edit((c) => {
        c.method = 'setPowerState';
      }),
      /Unknown power action "deploy"/,
    ],
    [
      'a power action with a provision body',
      edit((c) => {
        c.method = 'setPowerState';
        c.action = 'power on';
      }),
      /expected state is not the action's/,
    ],
    [
      'a power wait of a provision state',
      edit((c) => {
        c.method = 'waitForPowerState';
      }),
      /^Invalid checkpoint: /,
    ],
    [
      'method of another kind',
      edit((c) => {
        c.method = 'waitForAllocation';
      }),
      /^Invalid checkpoint: /,
    ],
    [
      'microversion not 1.N',
      edit((c) => {
        c.microversion = '2.0; DROP';
      }),
      /microversion must be 1\.N/,
    ],
    [
      'seen row of two',
      edit((c) => {
        c.seen[0] = ['active', null];
      }),
      /seen has rows of three/,
    ],
    [
      'seen state a number',
      edit((c) => {
        c.seen[0][0] = 7;
      }),
      /seen must be a string or null/,
    ],
    [
      'target a list of two',
      edit((c) => {
        c.targets[0] = ['n1', 1];
      }),
      /targets has identifiers, and UUIDs packed in base64/,
    ],
    [
      'target ident a number',
      edit((c) => {
        c.targets[0] = 7;
      }),
      /targets has identifiers, and UUIDs packed in base64/,
    ],
    [
      'target ident empty',
      edit((c) => {
        c.targets[1] = '';
      }),
      /Invalid identifier "": expected a UUID or a name/,
    ],
    // Packed UUIDs: whole ones (16 bytes each), in base64 as the core writes it, and nothing else.
    ...[
      ['not whole UUIDs', ['AAAA']],
      ['empty', ['']],
      ['not base64', ['!!!!!!!!!!!!!!!!!!!!!!']],
      ['padded', ['AAAAAAAAAAAAAAAAAAAAAA==']],
      ['with bits left over', ['AAAAAAAAAAAAAAAAAAAAAB']],
      ['a number', [7]],
      ['a list in a list', [['AAAAAAAAAAAAAAAAAAAAAA']]],
    ].map(([label, packed]) => [
      `packed UUIDs ${label}`,
      edit((c) => {
        c.targets[0] = packed;
      }),
      /targets has identifiers, and UUIDs packed in base64/,
    ]),
    [
      'packed UUIDs in place of the nodes accepted',
      edit((c) => {
        // The PUTs' nodes written out, not taken from the targets.
        c.putTable = [{ outcome: 'accepted' }];
        c.nodes = ['n1', 'n2', 'bad'];
        c.targets = [['AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']];
      }),
      /the wait's targets are not the nodes whose PUT was accepted/,
    ],
    [
      'seen index past the table',
      edit((c) => {
        c.states = '99,2,3';
      }),
      /seen index is out of range/,
    ],
    // Columns: one whole number a target, in range, as the core writes them.
    ...[
      ['states', '18446744073709551616,2,3', 'a seen index past 2**64'],
      ['states', '4294967296,2,3', 'a seen index past 2**32'],
      ['polls', '-1,1,1', 'polls negative'],
      ['polls', '4294967296,1,1', 'polls 2**32'],
      ['polls', '1.5,1,1', 'polls not whole'],
      ['polls', '1*4', 'a run past the targets'],
      ['polls', '1*99999999999', 'a run of a hundred billion'],
      ['polls', '1,,1,1', 'an empty item'],
      ['polls', '1*', 'a run without its count'],
      ['polls', '*3', 'a run without its number'],
      ['polls', '1*2*1', 'a run of a run'],
      ['polls', ' 1*3', 'a space'],
      ['polls', 'x', 'a word'],
      ['settled', '1,0,2,1', 'settled past the targets'],
      ['settled', '1,0,3', 'an outcome past the table'],
      ['elapsed', '-5,321', 'a settled time negative'],
      ['elapsed', '1e308,321', 'a settled time 1e308'],
      ['elapsed', '18446744073709551616,321', 'a settled time past 2**64'],
    ].map(([key, value, label]) => [
      `${key} "${value}": ${label}`,
      edit((c) => {
        c[key] = value;
      }),
      new RegExp(`${key} must be a string of numbers`),
    ]),
    [
      'states of two targets of three',
      edit((c) => {
        c.states = '1,2';
      }),
      /states has 2 numbers, not 3/,
    ],
    [
      'a settled time short',
      edit((c) => {
        c.elapsed = '308';
      }),
      /elapsed has 1 numbers, not 2/,
    ],
    [
      'settled without times',
      edit((c) => {
        c.elapsed = '';
      }),
      /elapsed has 0 numbers, not 2/,
    ],
    [
      'a settled time past the longest wait',
      edit((c) => {
        c.elapsed = '1000000000000,321';
      }),
      /settled target's time is out of range/,
    ],
    [
      'settled without its outcomes',
      edit((c) => {
        delete c.outcomes;
      }),
      /settled must be a string of numbers/,
    ],
    [
      'every target settled',
      edit((c) => {
        c.settled = c.settled.replace(/\b0\b/, '1');
        c.elapsed = '308,310,321';
      }),
      /every target is settled: the wait has ended/,
    ],
    [
      'settled outcome unknown',
      edit((c) => {
        c.outcomes[0] = 'won';
      }),
      /not one of the outcome names/,
    ],
    [
      'error outcome without message',
      edit((c) => {
        c.outcomes[0] = { is: 'error', kind: 'Http' };
      }),
      /an error has its message/,
    ],
    [
      'error outcome of unknown kind',
      edit((c) => {
        c.outcomes[0] = { is: 'error', kind: 'Pwned', message: 'm' };
      }),
      /unknown error kind/,
    ],
    [
      'HTTP status 1000',
      edit((c) => {
        c.outcomes[0] = { is: 'error', kind: 'Http', message: 'm', status: 1000 };
      }),
      /a status is not one/,
    ],
    [
      'not-found without HTTP',
      edit((c) => {
        c.outcomes[0] = { is: 'not-found', kind: 'Connection', message: 'm' };
      }),
      /not-found outcome carries an HTTP error/,
    ],
    [
      'more PUTs than nodes and targets',
      edit((c) => {
        c.puts = '1*4';
      }),
      /puts must be a string of numbers/,
    ],
    [
      'more accepted PUTs than targets',
      edit((c) => {
        c.puts = '1*4';
        c.nodes = ['n4'];
      }),
      /more PUTs than nodes and targets/,
    ],
    [
      'a PUT number 0',
      edit((c) => {
        c.puts = '0,1*2';
      }),
      /a PUT's number is not one of putTable's/,
    ],
    [
      'a PUT number past the table',
      edit((c) => {
        c.puts = '1*2,2';
      }),
      /puts must be a string of numbers/,
    ],
    [
      'a PUT unknown outcome',
      edit((c) => {
        c.putTable[0] = 'won';
        c.nodes = ['n1', 'n2', 'bad'];
      }),
      /not one of the outcome names/,
    ],
    [
      'more nodes than PUTs',
      edit((c) => {
        c.nodes = ['n4'];
      }),
      /more nodes than PUTs/,
    ],
    [
      'a PUT body back mid-wait',
      edit((c) => {
        c.putTable.push({ body: { target: 'active' } });
        c.puts = '1*2,2';
        c.nodes = ['bad'];
      }),
      /targets before every PUT was sent/,
    ],
    [
      'a PUT node not a string',
      edit((c) => {
        c.putTable.push({ outcome: 'accepted' });
        c.puts = '1*2,2';
        c.nodes = [1];
      }),
      /nodes has identifiers, and UUIDs packed in base64/,
    ],
  );
  await assertRefused(client, ironic, cases);
});

test('hostile checkpoints: a plan whose PUT bodies were tampered with is refused before any PUT', async () => {
  const ironic = await sim({ nodes: nodes({ n1: 'active', n2: 'available' }) });
  const client = new IronicClient({ endpoint: ironic.url });
  const plan = JSON.parse(client.checkpoint('provision', ['n1', 'n2'], 'deploy', { wait: true, timeout: 5, pollInterval: 0.05 }));
  const edit = (f) => {
    const c = structuredClone(plan);
    f(c);
    return JSON.stringify(c);
  };
  await assertRefused(client, ironic, [
    [
      'another target in a body',
      edit((c) => {
        c.putTable[0].body.target = 'deleted';
      }),
      /a PUT's body is not the action's/,
    ],
    [
      'a body that is not an object',
      edit((c) => {
        c.putTable[0].body = 'target=active';
      }),
      /a PUT's body is not the action's/,
    ],
    [
      'a body with a rescue password',
      edit((c) => {
        c.putTable.push({ body: { ...c.putTable[0].body, rescue_password: 'x' } });
        c.puts = '1,2';
      }),
      /rescuePassword cannot be used with deploy/,
    ],
    [
      'a body and an outcome',
      edit((c) => {
        c.putTable[0].outcome = 'accepted';
      }),
      /either its body or its outcome/,
    ],
    [
      'an empty node',
      edit((c) => {
        c.nodes[0] = '';
      }),
      /node: Invalid identifier/,
    ],
    [
      'a node packed that is no UUID',
      edit((c) => {
        c.nodes[0] = ['bjE'];
      }),
      /nodes has identifiers, and UUIDs packed in base64/,
    ],
    [
      'no nodes',
      edit((c) => {
        delete c.putTable;
        delete c.puts;
        delete c.nodes;
      }),
      /a provision has its nodes/,
    ],
    [
      'no PUTs for the nodes',
      edit((c) => {
        c.puts = '';
      }),
      /more nodes than PUTs/,
    ],
    [
      'PUTs without nodes',
      edit((c) => {
        delete c.nodes;
      }),
      /puts must be a string of numbers/,
    ],
    [
      'settle unknown',
      edit((c) => {
        c.settle = 'never';
      }),
      /settle must be first-failure or all/,
    ],
    [
      'concurrency 2**32',
      edit((c) => {
        c.concurrency = 2 ** 32;
      }),
      /concurrency is out of range/,
    ],
    [
      'targets before the PUTs',
      edit((c) => {
        c.targets = ['n1', 'n2'];
      }),
      /targets before every PUT was sent/,
    ],
  ]);
});

test('hostile checkpoints: an earlier or a later format, another endpoint', async () => {
  const { ironic, cp, text } = await richCheckpoint();
  const client = new IronicClient({ endpoint: ironic.url });
  const port = new URL(ironic.url).port;
  await assertRefused(client, ironic, [
    [
      'format 1, the one before',
      JSON.stringify({ ...cp, ironicWaitCheckpoint: 1 }),
      /^This checkpoint has format 1; this version of ironic-wait reads format 2$/,
    ],
    [
      'format 3',
      JSON.stringify({ ...cp, ironicWaitCheckpoint: 3 }),
      /^This checkpoint has format 3; this version of ironic-wait reads format 2$/,
    ],
    [
      'format 99 with fields of its own',
      JSON.stringify({ ironicWaitCheckpoint: 99, future: true }),
      /has format 99; this version of ironic-wait reads format 2/,
    ],
    ['format 0', JSON.stringify({ ...cp, ironicWaitCheckpoint: 0 }), /has format 0/],
  ]);
  const others = [`http://localhost:${port}`, 'http://127.0.0.1:1', `${ironic.url}/prefix`, `https://127.0.0.1:${port}`];
  for (const endpoint of others) {
    await assertRefused(new IronicClient({ endpoint }), ironic, [
      [`a client of ${endpoint}`, text, new RegExp(`^This checkpoint is of another endpoint \\(${ironic.url}\\), not this client's`)],
    ]);
  }
  // The same endpoint written otherwise is the same endpoint: accepted.
  const report = await new IronicClient({ endpoint: `${ironic.url}/v1/` }).resume(text);
  assert.deepEqual(
    report.nodes.map((n) => n.outcome),
    ['reached', 'timed-out', 'failed'],
  );
});

test('hostile checkpoints: values the options refuse are refused in a checkpoint too', async () => {
  const ironic = await sim({ nodes: nodes({ n1: 'available', n2: 'available' }) });
  const client = new IronicClient({ endpoint: ironic.url });
  await assert.rejects(
    client.waitForProvisionState('n1', 'available', { listThreshold: 0 }),
    /listThreshold must be a whole number from 1/,
  );
  await assert.rejects(
    client.provision('n1', 'deploy', { wait: true, timeout: 5, concurrency: 0 }),
    /concurrency must be a whole number from 1/,
  );
  assert.equal(ironic.seen.length, 0);
  const plan = (node) => JSON.parse(client.checkpoint('provision', [node], 'deploy', { wait: true, timeout: 5, pollInterval: 0.05 }));
  const [p1, p2] = [plan('n1'), plan('n2')];
  const accepted = [];
  for (const [label, c] of [
    ['wait.listThreshold 0', { ...p1, wait: { ...p1.wait, listThreshold: 0 } }],
    ['concurrency 0', { ...p2, concurrency: 0 }],
  ]) {
    const before = ironic.seen.length;
    const answer = await client.step(JSON.stringify(c)).catch((e) => e);
    if (!(answer instanceof InvalidArgumentError)) accepted.push(`${label}: ${ironic.seen.length - before} request(s) sent`);
  }
  assert.deepEqual(accepted, []);
});

// ---------------------------------------------------------------------------
// 5. No credential in any checkpoint; a rescue password only until its PUT is answered

const TOKEN = 'tok-SECRET-5a1f';
const GOT_TOKEN = 'got-SECRET-77c0';
const BASIC_PASSWORD = 'basic-SECRET-pw';
const KEYSTONE_PASSWORD = 'ks-SECRET-pw-\u00e9';
const APP_SECRET = 'app-SECRET-3e9d';
const KEYSTONE_TOKEN = 'gAAAA-ks-SECRET-token';
const RESCUE = 'rescue-SECRET-0b7e';
const SECRETS = [
  TOKEN,
  GOT_TOKEN,
  BASIC_PASSWORD,
  KEYSTONE_PASSWORD,
  APP_SECRET,
  KEYSTONE_TOKEN,
  RESCUE,
  Buffer.from(`admin:${BASIC_PASSWORD}`).toString('base64'),
  'SECRET',
];

/** A Keystone on loopback whose every login answers a token with `ironicUrl` in its catalog. */
async function startKeystone(ironicUrl) {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, body });
      const issued = new Date();
      res.writeHead(201, { 'Content-Type': 'application/json', 'X-Subject-Token': KEYSTONE_TOKEN });
      res.end(
        JSON.stringify({
          token: {
            methods: ['password'],
            issued_at: issued.toISOString(),
            expires_at: new Date(issued.getTime() + 3600_000).toISOString(),
            catalog: [
              {
                type: 'baremetal',
                name: 'ironic',
                endpoints: [{ interface: 'public', region_id: 'RegionOne', region: 'RegionOne', url: ironicUrl }],
              },
            ],
          },
        }),
      );
    });
  });
  const listening = await listen(server, 0, '127.0.0.1');
  open.push(listening);
  return { url: `http://127.0.0.1:${listening.port}/v3`, seen };
}

test('no credential in any checkpoint: token, basicAuth, getToken, Keystone password and application credential', async () => {
  const names = Array.from({ length: 24 }, (_, i) => `c${i}`);
  // A manual clock moved 40 ms (a phase) after each checkpoint and between steps, so that every round
  // sees one phase more: the same checkpoints in every run (a loaded machine's late rounds saw fewer
  // phases on the wall clock, and fewer than 8 checkpoints). Each kind: the provision's after its PUTs,
  // wait call-back and deploying again (3), the allocation's after its POST (1), three made by
  // checkpoint(), the step loop's after its PUTs, wait call-back and deploying again (3).
  const ironic = await sim({
    manualClock: true,
    nodes: [
      ...names.map((name) => ({ name, provision_state: 'available' })),
      { name: 'g1', provision_state: 'available', resource_class: 'gold' },
    ],
  });
  const keystone = await startKeystone(ironic.url);
  const password = {
    type: 'password',
    authUrl: keystone.url,
    username: 'alice',
    password: KEYSTONE_PASSWORD,
    userDomainName: 'Default',
    projectName: 'demo',
    projectDomainId: 'default',
  };
  const appCredential = {
    type: 'v3applicationcredential',
    authUrl: keystone.url,
    applicationCredentialId: 'ac-1',
    applicationCredentialSecret: APP_SECRET,
  };
  const kinds = {
    token: { endpoint: ironic.url, token: TOKEN },
    basicAuth: { endpoint: ironic.url, basicAuth: { username: 'admin', password: BASIC_PASSWORD } },
    getToken: { endpoint: ironic.url, getToken: async () => GOT_TOKEN },
    'Keystone password, endpoint given': { endpoint: ironic.url, auth: password },
    'Keystone password, endpoint from the catalog': { auth: password },
    'Keystone application credential': { auth: appCredential },
  };
  const free = [...names];
  for (const [kind, options] of Object.entries(kinds)) {
    const client = new IronicClient(options);
    const checkpoints = [];
    const keep = (c) => checkpoints.push(c);
    const keepAndMove = (c) => {
      keep(c);
      ironic.sim.advance(40);
    };
    const [a, b, c] = free.splice(0, 3);
    if (!options.endpoint) {
      // Before the login, no endpoint: no checkpoint can be made yet.
      assert.throws(
        () => client.checkpoint('waitForProvisionState', a, 'available'),
        (e) => e instanceof InvalidArgumentError && /No checkpoint yet: the endpoint comes from Keystone's catalog/.test(e.message),
      );
    }
    await client.provision([a, b], 'deploy', { wait: true, timeout: 60, pollInterval: 0.02, onCheckpoint: keepAndMove });
    await client.waitForProvisionState([a, b], 'active', { timeout: 60, onCheckpoint: keepAndMove });
    await client
      .createAllocation(
        { resourceClass: 'gold', name: `al-${kind.length}-${a}` },
        { wait: true, timeout: 60, pollInterval: 0.02, onCheckpoint: keepAndMove },
      )
      .catch(() => {});
    const plan = client.checkpoint('provision', c, 'deploy', { wait: true, timeout: 60, pollInterval: 0.02 });
    keep(plan);
    keep(client.checkpoint('waitForAllocation', 'x', { timeout: 1 }));
    keep(client.checkpoint('createAllocation', { resourceClass: 'gold' }, { wait: true, timeout: 1 }));
    let next = plan;
    while (next) {
      const answer = await client.step(next);
      next = answer.checkpoint;
      if (next) keep(next);
      ironic.sim.advance(40);
      await sleep(20);
    }
    const resumed = [];
    await client.resume(client.checkpoint('waitForProvisionState', c, 'active', { timeout: 60 }), { onCheckpoint: (x) => resumed.push(x) });
    checkpoints.push(...resumed);
    assert.equal(checkpoints.length, 10, kind);
    for (const text of checkpoints) {
      assert.equal(JSON.parse(text).endpoint, ironic.url, kind);
      for (const secret of SECRETS) assert.ok(!text.includes(secret), `${kind}: a checkpoint holds a secret: ${text}`);
    }
  }
  assert.ok(keystone.seen.length >= 3, 'the Keystone clients logged in');
});

test('a Keystone client without an endpoint refuses a checkpoint of another endpoint once its catalog names its own, nothing sent to Ironic', async () => {
  const ironic = await sim({ nodes: nodes({ n1: 'available' }) });
  const other = await sim({ nodes: nodes({ n1: 'available' }) });
  const keystone = await startKeystone(ironic.url);
  const text = new IronicClient({ endpoint: other.url }).checkpoint('waitForProvisionState', 'n1', 'available', { timeout: 5 });
  const client = new IronicClient({ auth: { type: 'password', authUrl: keystone.url, userId: 'u1', password: KEYSTONE_PASSWORD } });
  for (const method of ['resume', 'step']) {
    await assert.rejects(
      client[method](text),
      (e) =>
        e instanceof InvalidArgumentError &&
        e.message === `This checkpoint is of another endpoint (${other.url}), not this client's (${ironic.url})`,
    );
  }
  assert.equal(ironic.seen.length, 0);
  assert.equal(other.seen.length, 0);
  // A checkpoint of the catalog's endpoint: a new client logs in, then goes on with it.
  const ours = new IronicClient({ endpoint: ironic.url }).checkpoint('waitForProvisionState', 'n1', 'available', { timeout: 5 });
  const report = await new IronicClient({
    auth: { type: 'password', authUrl: keystone.url, userId: 'u1', password: KEYSTONE_PASSWORD },
  }).resume(ours);
  assert.deepEqual(outcomes(report), [['n1', 'reached', 'available', null, null]]);
  assert.equal(ironic.requests('GET', '/v1/nodes/n1')[0].headers['x-auth-token'], KEYSTONE_TOKEN);
});

test('a rescue password is in the plan until its PUT is answered, and in no checkpoint after', async () => {
  // A manual clock moved 100 ms between steps and after each checkpoint: each rescue (150 ms) is seen
  // rescuing once, then in rescue, so there are 4 checkpoints after the plan in every run (a loaded
  // machine's late rounds on the wall clock could miss rescuing, and leave fewer).
  const ironic = await sim({ manualClock: true, nodes: nodes({ r1: 'active', r2: 'active', r3: 'active' }), timing: { rescuing: 150 } });
  const client = new IronicClient({ endpoint: ironic.url });
  const options = { rescuePassword: RESCUE, wait: true, timeout: 10, pollInterval: 0.03 };
  const plan = client.checkpoint('provision', ['r1', 'r2'], 'rescue', options);
  assert.deepEqual(
    decodeCheckpoint(plan).puts.map((p) => p.body.rescue_password),
    [RESCUE, RESCUE],
    'unsent: the body, password included',
  );
  assert.equal(ironic.seen.length, 0);

  // Stepped: the first step sends the PUTs; from its answer on, the password is gone.
  const later = [];
  let next = plan;
  let answer;
  while (next) {
    answer = await new IronicClient({ endpoint: ironic.url }).step(next);
    next = answer.checkpoint;
    if (next) later.push(next);
    await sleep(Math.max(0, (answer.wakeAtMs ?? 0) - Date.now()));
    ironic.sim.advance(100);
  }
  assert.deepEqual(
    outcomes(answer.report).map((o) => o.slice(0, 3)),
    [
      ['r1', 'reached', 'rescue'],
      ['r2', 'reached', 'rescue'],
    ],
    'the PUT carried the password (the simulator refuses a rescue without one)',
  );
  // Called directly with onCheckpoint.
  await client.provision('r3', 'rescue', {
    ...options,
    onCheckpoint: (c) => {
      later.push(c);
      ironic.sim.advance(100);
    },
  });
  // The steps' after their PUTs and after rescuing; the call's after its PUT and after rescuing.
  assert.equal(later.length, 4);
  for (const text of later) assert.ok(!text.includes(RESCUE), text);
  assert.deepEqual(putsPerNode(ironic), once(['r1', 'r2', 'r3']));
});

// ---------------------------------------------------------------------------
// 6. Abort

test('resume and step with a signal already aborted reject with its reason and send nothing', async () => {
  const { ironic, text } = await richCheckpoint();
  const client = new IronicClient({ endpoint: ironic.url });
  const plan = client.checkpoint('provision', 'n1', 'deploy', { wait: true, timeout: 5 });
  const before = ironic.seen.length;
  for (const reason of [new Error('stop'), 'stop', { why: 'stop' }, 0]) {
    const controller = new AbortController();
    controller.abort(reason);
    for (const checkpoint of [text, plan]) {
      for (const method of ['resume', 'step']) {
        await assert.rejects(client[method](checkpoint, { signal: controller.signal }), (e) => {
          assert.equal(e, reason, method);
          return true;
        });
      }
    }
  }
  await sleep(100);
  assert.equal(ironic.seen.length, before);
});

test('aborting mid-resume rejects with the reason, and nothing more is sent', async () => {
  const ironic = await sim({ nodes: nodes({ n1: 'available', n2: 'available' }), transitions: [{ action: 'deploy', stall: true }] });
  const client = new IronicClient({ endpoint: ironic.url });
  const checkpoints = [];
  await client
    .provision(['n1', 'n2'], 'deploy', { wait: true, timeout: 0.3, pollInterval: 0.03, onCheckpoint: (c) => checkpoints.push(c) })
    .catch(() => {});
  const controller = new AbortController();
  const reason = new Error('enough');
  const events = [];
  const resumed = new IronicClient({ endpoint: ironic.url });
  // The checkpoint's wait had 0.3 s: a new one of 30 s, made of the same nodes.
  const text = JSON.stringify({
    ...JSON.parse(checkpoints[0]),
    startedAt: Date.now(),
    wait: { ...JSON.parse(checkpoints[0]).wait, timeoutUs: 30e6 },
  });
  const checked = ironic.requests('GET', '/v1/nodes/n1').length;
  const running = resumed.resume(text, { signal: controller.signal, onProgress: (e) => events.push(e) });
  await until(() => ironic.requests('GET', '/v1/nodes/n1').length >= checked + 3);
  controller.abort(reason);
  const atAbort = ironic.seen.length;
  await assert.rejects(running, (e) => e === reason);
  await sleep(300);
  assert.equal(ironic.seen.length, atAbort, 'nothing sent after the abort');
  assert.ok(events.filter((e) => e.done).every((e) => e.outcome === 'aborted'));
  assert.equal(ironic.requests('PUT', '/v1/nodes/*').length, 2, 'no PUT sent again');
});

test('aborting a step mid-round, or a resumed plan among its PUTs, rejects with the reason and sends no more', async () => {
  const ironic = await sim({
    nodes: nodes({ p1: 'available', p2: 'available', p3: 'available', p4: 'available', q1: 'deploying' }),
    faults: [
      { kind: 'latency', ms: 300, method: 'PUT' },
      { kind: 'latency', ms: 300, method: 'GET', node: 'q1' },
    ],
  });
  const client = new IronicClient({ endpoint: ironic.url });
  await client.microversion();

  const plan = client.checkpoint('provision', ['p1', 'p2', 'p3', 'p4'], 'deploy', { wait: true, timeout: 10, concurrency: 1 });
  const controller = new AbortController();
  const reason = new Error('stop the PUTs');
  const running = client.resume(plan, { signal: controller.signal });
  await until(() => ironic.requests('PUT', '/v1/nodes/*').length >= 1);
  controller.abort(reason);
  await assert.rejects(running, (e) => e === reason);
  await sleep(700);
  assert.equal(ironic.requests('PUT', '/v1/nodes/*').length, 1, 'one PUT at a time: the second never went');

  const wait = client.checkpoint('waitForProvisionState', 'q1', 'active', { timeout: 10 });
  const stepController = new AbortController();
  const stepping = client.step(wait, { signal: stepController.signal });
  await until(() => ironic.requests('GET', '/v1/nodes/q1').length >= 1);
  const atAbort = ironic.seen.length;
  stepController.abort('no more');
  await assert.rejects(stepping, (e) => e === 'no more');
  await sleep(500);
  assert.equal(ironic.seen.length, atAbort);
  await until(() => ironic.requests('GET', '/v1/nodes/q1')[0].cancelled);
});

// ---------------------------------------------------------------------------
// 7. A deadline already past: one last check, then the timeout, as the call itself would end

test("a checkpoint resumed past its deadline: one last check, then the call's own timeout", async () => {
  const scenario = { nodes: nodes({ t1: 'available', t2: 'available' }), transitions: [{ action: 'deploy', stall: true }] };
  const ironic = await sim(scenario);
  const client = new IronicClient({ endpoint: ironic.url });
  // The call itself, to the end.
  const original = await client.provision(['t1', 't2'], 'deploy', { wait: true, timeout: 1, pollInterval: 0.2 }).catch((e) => e);
  assert.ok(original instanceof StateTransitionTimeout);

  for (const method of ['resume', 'step']) {
    const again = await sim(scenario);
    // The same call, cut short right after its PUTs (the process died).
    const controller = new AbortController();
    let checkpoint;
    await new IronicClient({ endpoint: again.url })
      .provision(['t1', 't2'], 'deploy', {
        wait: true,
        timeout: 1,
        pollInterval: 0.2,
        signal: controller.signal,
        onCheckpoint: (c) => {
          checkpoint ??= c;
          controller.abort();
        },
      })
      .catch(() => {});
    await sleep(JSON.parse(checkpoint).startedAt + 1500 - Date.now());
    const before = again.seen.length;
    const fresh = new IronicClient({ endpoint: again.url });
    let error;
    if (method === 'resume') {
      error = await fresh.resume(checkpoint).catch((e) => e);
    } else {
      const answer = await fresh.step(checkpoint);
      assert.deepEqual([answer.checkpoint, answer.wakeAtMs], [null, null]);
      error = answer.error;
      // The step's answer carries the report beside the error.
      if (error && !error.report) error.report = answer.report;
    }
    assert.ok(error instanceof StateTransitionTimeout, `${method}: ${error}`);
    assert.equal(error.message, original.message);
    assert.deepEqual([error.nodes, error.expected, error.timeout], [original.nodes, original.expected, original.timeout]);
    assert.deepEqual(outcomes(error.report), outcomes(original.report));
    const sent = again.seen.slice(before).map((r) => `${r.method} ${r.url.split('?')[0]}`);
    assert.deepEqual(sent.sort(), ['GET /v1/nodes/t1', 'GET /v1/nodes/t2'], `${method}: exactly one last check`);
    assert.deepEqual(putsPerNode(again), once(['t1', 't2']));
  }
});

test('a plan of a wait resumed past its deadline by a client that has its version: one check, then the answer it gives', async () => {
  const ironic = await sim({ nodes: nodes({ w1: 'deploying', w2: 'active' }) });
  ironic.sim.setNode('w1', { provision_state: 'deploying', target_provision_state: 'active' });
  const client = new IronicClient({ endpoint: ironic.url });
  const stalled = client.checkpoint('waitForProvisionState', 'w1', 'active', { timeout: 1, pollInterval: 0.1 });
  const there = client.checkpoint('waitForProvisionState', 'w2', 'active', { timeout: 1, pollInterval: 0.1 });
  const original = await client.waitForProvisionState('w1', 'active', { timeout: 1, pollInterval: 0.1 }).catch((e) => e);
  await sleep(JSON.parse(stalled).startedAt + 1500 - Date.now());
  for (const resuming of [client, new IronicClient({ endpoint: ironic.url, microversion: '1.80' })]) {
    const before = ironic.requests('GET', '/v1/nodes/w1').length;
    const error = await resuming.resume(stalled).catch((e) => e);
    assert.ok(error instanceof StateTransitionTimeout);
    assert.equal(error.message, original.message);
    assert.equal(ironic.requests('GET', '/v1/nodes/w1').length - before, 1, 'one last check');
    assert.deepEqual(outcomes(error.report), [['w1', 'timed-out', 'deploying', 'active', null]]);
    assert.ok(error.report.elapsed >= 1.5, 'the time since the call began');
    const report = await resuming.resume(there);
    assert.deepEqual(outcomes(report), [['w2', 'reached', 'active', null, null]], 'the last check finds it there');
  }
});

test('a plan of a wait resumed past its deadline by a new client (a new process) makes its one last check', async () => {
  const ironic = await sim({ nodes: nodes({ w2: 'active' }) });
  const plan = new IronicClient({ endpoint: ironic.url }).checkpoint('waitForProvisionState', 'w2', 'active', { timeout: 1 });
  await sleep(JSON.parse(plan).startedAt + 1500 - Date.now());
  for (const method of ['resume', 'step']) {
    const before = ironic.requests('GET', '/v1/nodes/w2').length;
    const answer = await new IronicClient({ endpoint: ironic.url })[method](plan).catch((e) => e);
    const report = method === 'step' ? answer.report : answer instanceof Error ? answer.report : answer;
    assert.equal(ironic.requests('GET', '/v1/nodes/w2').length - before, 1, `${method}: one last check`);
    assert.deepEqual(outcomes(report), [['w2', 'reached', 'active', null, null]], method);
  }
});

// ---------------------------------------------------------------------------
// 8. onCheckpoint that throws or rejects does not break the wait

test('an onCheckpoint that throws, rejects, never settles or is re-entrant leaves the wait as it would be', async () => {
  const escaped = [];
  const onEscape = (e) => escaped.push(e);
  process.on('unhandledRejection', onEscape);
  process.on('uncaughtException', onEscape);
  try {
    // A manual clock moved from onCheckpoint (movingOn) to the nodes' next move: 4 checkpoints a call
    // (after the PUTs, deploying, wait call-back, deploying again) in every run, where a loaded
    // machine's late rounds on the wall clock could see the end at once (one checkpoint).
    const scenario = {
      manualClock: true,
      nodes: nodes({ a: 'available', b: 'available', f: 'available' }),
      timing: { deploying: 80, 'wait call-back': 40 },
      transitions: [{ node: 'f', action: 'deploy', fail: 'no image' }],
    };
    const names = ['a', 'b', 'f'];
    const options = { wait: true, timeout: 60, pollInterval: 0.02, settle: 'all' };
    const reference = await sim(scenario);
    const expected = outcomes(
      await new IronicClient({ endpoint: reference.url }).provision(names, 'deploy', {
        ...options,
        onCheckpoint: movingOn(reference, names, () => {}),
      }),
    );
    let client;
    const callbacks = {
      'throws an Error': () => {
        throw new Error('disk full');
      },
      'throws a string': () => {
        throw 'disk full';
      },
      'throws undefined': () => {
        throw undefined;
      },
      'returns a rejecting promise': async () => {
        throw new Error('disk full');
      },
      'returns Promise.reject(undefined)': () => Promise.reject(undefined),
      'returns a promise that never settles': () => new Promise(() => {}),
      'returns a thenable whose then throws': () => ({
        then() {
          throw new Error('then');
        },
      }),
      'returns a revoked proxy': () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
      'is re-entrant (checkpoint(), step(), resume() from inside)': (c) => {
        client.checkpoint('waitForProvisionState', 'a', 'active');
        client.step(c).catch(() => {});
        client.resume(c).catch(() => {});
        throw new Error('and throws');
      },
    };
    for (const [label, callback] of Object.entries(callbacks)) {
      const ironic = await sim(scenario);
      client = new IronicClient({ endpoint: ironic.url });
      let calls = 0;
      const report = await client.provision(names, 'deploy', {
        ...options,
        onCheckpoint: movingOn(ironic, names, (c) => {
          calls++;
          return callback(c);
        }),
      });
      assert.deepEqual(outcomes(report), expected, label);
      assert.ok(calls >= 2, `${label}: called ${calls} times, and again after it failed`);
      assert.deepEqual(putsPerNode(ironic), once(['a', 'b', 'f']), label);
      // And on resume.
      const ironic2 = await sim(scenario);
      client = new IronicClient({ endpoint: ironic2.url });
      let resumedCalls = 0;
      const resumed = await client.resume(client.checkpoint('provision', names, 'deploy', options), {
        onCheckpoint: movingOn(ironic2, names, (c) => {
          resumedCalls++;
          return callback(c);
        }),
        onProgress: () => {
          throw new Error('progress too');
        },
      });
      assert.deepEqual(outcomes(resumed), expected, `resume: ${label}`);
      assert.ok(resumedCalls >= 2, `resume: ${label}: called ${resumedCalls} times`);
      await sleep(100); // what the re-entrant calls started winds down
    }
    await sleep(50);
    assert.deepEqual(escaped, [], 'nothing escaped as an unhandled rejection or exception');
  } finally {
    process.off('unhandledRejection', onEscape);
    process.off('uncaughtException', onEscape);
  }
});

test("an onCheckpoint that aborts the call's own signal ends it with the reason, nothing more sent", async () => {
  const ironic = await sim({ nodes: nodes({ a: 'available', b: 'available' }), timing: { deploying: 200 } });
  const client = new IronicClient({ endpoint: ironic.url });
  const controller = new AbortController();
  let atAbort;
  await assert.rejects(
    client.provision(['a', 'b'], 'deploy', {
      wait: true,
      timeout: 10,
      pollInterval: 0.02,
      signal: controller.signal,
      onCheckpoint: () => {
        atAbort = ironic.seen.length;
        controller.abort('from the callback');
      },
    }),
    (e) => e === 'from the callback',
  );
  await sleep(200);
  assert.equal(ironic.seen.length, atAbort);
});

// ---------------------------------------------------------------------------
// 9. Allocations: resumed, the same shapes as the methods' own answers

/** A value's shape: the types and keys of everything in it. */
function shape(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return [...new Set(value.map((v) => JSON.stringify(shape(v))))].map((s) => JSON.parse(s));
  if (typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, shape(value[k])]),
    );
  return typeof value;
}

test('createAllocation and waitForAllocation, resumed or stepped from any checkpoint, answer as the methods do', async () => {
  const ironic = await sim({
    nodes: Array.from({ length: 8 }, (_, i) => ({ name: `g${i}`, provision_state: 'available', resource_class: 'gold' })),
    timing: { allocating: 200 },
  });
  const client = new IronicClient({ endpoint: ironic.url });
  const posts = () => ironic.requests('POST', '/v1/allocations').length;
  const options = { wait: true, timeout: 10, pollInterval: 0.03 };

  // The methods themselves.
  const checkpoints = [];
  const created = await client.createAllocation(
    { resourceClass: 'gold', name: 'a-orig' },
    { ...options, onCheckpoint: (c) => checkpoints.push(c) },
  );
  assert.equal(created.report.allocation.outcome, 'reached');
  const createdShape = shape(created);
  assert.ok(checkpoints.length >= 1);
  assert.ok(!('post' in JSON.parse(checkpoints[0])), 'after the POST, its body is gone');
  const waited = await client.waitForAllocation('a-orig', { timeout: 5 });
  const sent = await client.createAllocation({ resourceClass: 'gold', name: 'a-nowait' });
  assert.equal(sent.report, null);

  // A plan (the POST still due), resumed and stepped.
  const plan = client.checkpoint('createAllocation', { resourceClass: 'gold', name: 'a-plan' }, options);
  const fromPlan = await new IronicClient({ endpoint: ironic.url }).resume(plan);
  assert.deepEqual(shape(fromPlan), createdShape);
  assert.equal(fromPlan.allocation.name, 'a-plan');
  assert.equal(fromPlan.report.allocation.outcome, 'reached');
  let next = client.checkpoint('createAllocation', { resourceClass: 'gold', name: 'a-step' }, options);
  let answer;
  while (next) {
    answer = await new IronicClient({ endpoint: ironic.url }).step(next);
    next = answer.checkpoint;
    await sleep(Math.max(0, (answer.wakeAtMs ?? 0) - Date.now()));
  }
  assert.equal(answer.error, null);
  assert.deepEqual(shape(answer.report), createdShape);
  assert.equal(answer.report.allocation.name, 'a-step');

  // After the POST: the same allocation, no second POST.
  const postsBefore = posts();
  const fromMid = await new IronicClient({ endpoint: ironic.url }).resume(checkpoints[0]);
  assert.deepEqual(shape(fromMid), createdShape);
  assert.equal(fromMid.allocation.uuid, created.allocation.uuid);
  assert.equal(posts(), postsBefore, 'no POST sent again');

  // Without wait.
  const noWait = await new IronicClient({ endpoint: ironic.url }).resume(
    client.checkpoint('createAllocation', { resourceClass: 'gold', name: 'a-nowait2' }),
  );
  assert.deepEqual(shape(noWait), shape(sent));
  assert.equal(noWait.report, null);

  // waitForAllocation: the plan and a checkpoint of it.
  const waitPlan = client.checkpoint('waitForAllocation', 'a-orig', { timeout: 5 });
  assert.deepEqual(shape(await new IronicClient({ endpoint: ironic.url }).resume(waitPlan)), shape(waited));
  assert.deepEqual(shape((await new IronicClient({ endpoint: ironic.url }).step(waitPlan)).report), shape(waited));
  assert.equal(posts(), 5, 'one POST per allocation: a-orig, a-nowait, a-plan, a-step, a-nowait2');
});

test('a failing allocation, resumed, fails as the method does', async () => {
  const ironic = await sim({ nodes: [{ name: 'g1', provision_state: 'available', resource_class: 'gold' }], timing: { allocating: 100 } });
  const client = new IronicClient({ endpoint: ironic.url });
  const options = { wait: true, timeout: 5, pollInterval: 0.03 };
  const checkpoints = [];
  const original = await client
    .createAllocation({ resourceClass: 'silver', name: 's-orig' }, { ...options, onCheckpoint: (c) => checkpoints.push(c) })
    .catch((e) => e);
  assert.ok(original instanceof StateTransitionFailed);
  const uuid = (e) => e.allocation;
  const same = (e) => {
    assert.ok(e instanceof StateTransitionFailed, String(e));
    assert.deepEqual(Object.keys(e).sort(), Object.keys(original).sort());
    assert.equal(e.message.replaceAll(uuid(e), 'U'), original.message.replaceAll(uuid(original), 'U'));
    assert.deepEqual([e.expected, e.state], [original.expected, original.state]);
    assert.deepEqual(shape(e.report), shape(original.report));
  };
  same(await new IronicClient({ endpoint: ironic.url }).resume(checkpoints[0]).catch((e) => e));
  same(
    await new IronicClient({ endpoint: ironic.url })
      .resume(client.checkpoint('createAllocation', { resourceClass: 'silver', name: 's-plan' }, options))
      .catch((e) => e),
  );
  const byWait = await client.waitForAllocation('s-orig', { timeout: 5 }).catch((e) => e);
  const byWaitResumed = await new IronicClient({ endpoint: ironic.url })
    .resume(client.checkpoint('waitForAllocation', 's-orig', { timeout: 5 }))
    .catch((e) => e);
  assert.ok(byWaitResumed instanceof StateTransitionFailed);
  assert.equal(byWaitResumed.message, byWait.message);
  assert.deepEqual(shape(byWaitResumed.report), shape(byWait.report));
});
