// Aborts at random instants, in every phase of a call (issue 8): version
// negotiation, getToken(), PUTs (slow, retried after 409/503/a reset, or to
// a refused port), polling, paging, and from inside onProgress; with reasons
// of every kind (an Error, a string, an object, undefined, null, 0, a Symbol,
// a revoked proxy).
//
// Each trial gets its own simulator (faults set per phase) and runs in a
// worker thread (abort-trial.mjs), so a call that freezes its event loop is
// reported instead of freezing the test. Asserted per trial, by the order of
// events rather than by the clock (a loaded machine changes the clock, not
// the order): the promise rejects with the reason itself (===; for
// `undefined` the platform's AbortError, i.e. signal.reason) before the
// event loop's next turn after the abort; no fetch starts after the abort,
// and the server gets no request but those started before it; every fetch
// in flight at the abort is cancelled (its signal aborted: the client hangs
// up, it does not wait for the answer), and every request the server got
// ends; nothing escapes as an uncaught exception or unhandled rejection.
// Then a sample of trials runs in child processes, which must exit by
// themselves: whatever could keep Node alive after the abort (a retry, a
// poll, a request timer, an answer) is minutes away, so a child that exits
// before the watchdog's bound exited because nothing held it, not because
// something let go in time.
//
// ABORT_SEED, ABORT_TRIALS and ABORT_BUDGET_MS (unset: none; the time after
// which no new trial starts) change the run.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { rng } from '../../sim/rng.mjs';
import { nodes, startIronic, until } from './harness.mjs';

const SEED = process.env.ABORT_SEED ?? '1';
const TRIALS = Number(process.env.ABORT_TRIALS ?? 240);
const BUDGET_MS = Number(process.env.ABORT_BUDGET_MS ?? Infinity);
const WORKERS = 4;
/**
 * Watchdogs, not judges: a worker that has not answered this long after its
 * trial should have is frozen; a child process that has not exited this
 * long after it started is held alive. Far past what a loaded machine takes.
 */
const WORKER_SLACK_MS = 30_000;
const CHILD_BOUND_MS = 60_000;
/** Longer than CHILD_BOUND_MS: what would hold a child process that did not let go of it. */
const HOLD_S = 600;
const REASONS = ['error', 'string', 'object', 'undefined', 'null', 'zero', 'symbol', 'revoked-proxy'];
const RUNNER = new URL('./abort-trial.mjs', import.meta.url);

const now = () => performance.timeOrigin + performance.now();

/** A check of one node or allocation: a GET of its own (a round's GETs, `listThreshold` being 50). */
const isCheck = (entry) => entry.method === 'GET' && /^\/v1\/(nodes|allocations)\/[^/?]+(\?|$)/.test(entry.url);

/**
 * The simulator of one trial, whose request log has arrival and close
 * instants (ms since the epoch, as the runner's) on every entry. With
 * `clockPerCheck` its clock is manual and moves that many ms as each check
 * is answered, so that what a check sees depends on the checks before it,
 * not on how fast the machine made them.
 */
async function serve(scenario, clockPerCheck) {
  let sim;
  const onRequest = (entry, res) => {
    if (isCheck(entry)) res.once('finish', () => sim.advance(clockPerCheck));
  };
  const ironic = await startIronic(clockPerCheck ? { ...scenario, manualClock: true } : scenario, clockPerCheck ? { onRequest } : {});
  sim = ironic.sim;
  const push = ironic.seen.push;
  ironic.seen.push = function stamped(...entries) {
    for (const entry of entries) {
      entry.arrivedAt = now();
      // The harness sets `cancelled` once, when the response closes.
      let cancelled = entry.cancelled;
      Object.defineProperty(entry, 'cancelled', {
        enumerable: true,
        get: () => cancelled,
        set(value) {
          cancelled = value;
          entry.closedAt = now();
        },
      });
    }
    return push.apply(this, entries);
  };
  return ironic;
}

/** A port nothing listens on: connections to it are refused. */
async function refusedPort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ---------------------------------------------------------------------------
// Phases. Each draws a trial: a scenario for its simulator, a spec for the
// runner (abort-trial.mjs), and how long to watch for stragglers.

const between = (rand, min, max) => Math.floor(min + rand() * (max - min + 1));
const pick = (rand, list) => list[Math.floor(rand() * list.length)];
const names = (prefix, count) => Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`);

const READS = [
  { call: 'getNode', args: ['n1'] },
  { call: 'listNodes', options: { limit: 5 } },
  { call: 'waitForProvisionState', args: [['n1'], 'active'], options: { timeout: 10, pollInterval: 0.05 } },
  { call: 'microversion' },
];
const WRITES = [
  { call: 'createAllocation', args: [{ resourceClass: 'gold' }] },
  { call: 'provision', args: [['e1'], 'manage'], options: { wait: true, timeout: 10, pollInterval: 0.05 } },
];
const FLEET = [
  ...nodes({ n1: 'active', e1: 'enroll', m1: 'manageable' }),
  { name: 'g1', provision_state: 'available', resource_class: 'gold' },
];

const PHASES = {
  negotiation(rand) {
    const latency = between(rand, 150, 400);
    const retried = rand() < 0.4;
    const faults = [{ kind: 'latency', ms: latency, method: 'GET', path: '/v1' }];
    // Without version headers: a 503 that carries them is a usable answer to a negotiation.
    if (retried) faults.push({ kind: 'status', status: 503, versionHeaders: false, method: 'GET', path: '/v1', count: 3 });
    return {
      variant: retried ? 'GET /v1 slow, 503 and retried' : 'GET /v1 slow',
      scenario: { nodes: FLEET, faults },
      spec: {
        client: { retryInterval: 0.1, maxRetries: 5 },
        ...pick(rand, READS),
        abortAfter: between(rand, 0, (retried ? 3 : 1) * (latency + 100)),
      },
      grace: 250,
    };
  },
  token(rand) {
    const never = rand() < 0.25;
    const delay = never ? 'never' : between(rand, 50, 300);
    const refresh = rand() < 0.3;
    return {
      variant: `${never ? 'getToken never answers' : 'getToken slow'}${refresh ? ', asked again after a 401' : ''}`,
      scenario: {
        nodes: FLEET,
        faults: refresh ? [{ kind: 'status', status: 401, method: 'GET', path: '/v1/nodes/n1', count: 1 }] : [],
      },
      spec: {
        client: rand() < 0.5 ? { microversion: '1.80' } : {},
        tokenDelay: delay,
        tokenFromCall: refresh ? 2 : 1,
        ...(refresh ? READS[0] : pick(rand, [...READS, ...WRITES])),
        abortAfter: between(rand, 0, never ? 300 : delay + 100),
      },
    };
  },
  put(rand) {
    const count = between(rand, 1, 4);
    const retryInterval = between(rand, 5, 20) / 100;
    const variant = pick(rand, [
      'slow PUT',
      'PUT answered 409 and retried',
      'PUT answered 503 with Retry-After',
      'PUT connection reset and retried',
      'PUT to a refused port',
    ]);
    const put = { method: 'PUT', path: '/v1/nodes/*/states/provision' };
    const latency = between(rand, 150, 400);
    const faults = {
      'slow PUT': [{ kind: 'latency', ms: latency, ...put }],
      'PUT answered 409 and retried': [{ kind: 'status', status: 409, count: between(rand, 2, 6), ...put }],
      'PUT answered 503 with Retry-After': [{ kind: 'status', status: 503, retryAfter: 1, count: 2, ...put }],
      'PUT connection reset and retried': [{ kind: 'reset', count: 3, ...put }],
      'PUT to a refused port': [],
    }[variant];
    const length = {
      'slow PUT': latency * count + 100,
      'PUT answered 409 and retried': 6 * retryInterval * 1000 + 100,
      'PUT answered 503 with Retry-After': 2200,
      'PUT connection reset and retried': 3 * retryInterval * 1000 + 100,
      'PUT to a refused port': 5 * retryInterval * 1000,
    }[variant];
    return {
      variant,
      refused: variant === 'PUT to a refused port',
      scenario: { nodes: [...FLEET, ...nodes(Object.fromEntries(names('p', 4).map((n) => [n, 'enroll'])))], faults },
      spec: {
        client: { retryInterval, maxRetries: 8, ...(rand() < 0.5 ? { microversion: '1.80' } : {}) },
        call: 'provision',
        args: [names('p', count), 'manage'],
        options: {
          ...pick(rand, [{ wait: false }, { wait: true, timeout: 10 }]),
          pollInterval: 0.05,
          concurrency: between(rand, 1, 4),
          settle: pick(rand, ['first-failure', 'all']),
        },
        abortAfter: between(rand, 0, length),
      },
      // A retry the abort failed to stop would come this much later.
      grace: variant === 'PUT answered 503 with Retry-After' ? 1200 : retryInterval * 1000 + 150,
    };
  },
  polling(rand) {
    const count = between(rand, 1, 6);
    const latency = rand() < 0.5 ? between(rand, 1, 60) : 0;
    const pollInterval = between(rand, 2, 10) / 100;
    return {
      variant: latency ? 'slow GETs' : 'prompt GETs',
      scenario: {
        nodes: nodes(Object.fromEntries(names('m', count).map((n) => [n, 'manageable']))),
        faults: latency ? [{ kind: 'latency', ms: latency, method: 'GET', path: '/v1/nodes*' }] : [],
      },
      spec: {
        call: 'waitForProvisionState',
        args: [names('m', count), 'active'],
        options: { failOnUnexpectedState: false, pollInterval, ...pick(rand, [{}, { timeout: 10 }]), concurrency: between(rand, 1, 8) },
        abortAfter: between(rand, 0, 600),
      },
      grace: pollInterval * 1000 + 150,
    };
  },
  paging(rand) {
    const latency = between(rand, 5, 30);
    const fleet = names('q', 150);
    const listing = rand() < 0.5;
    return {
      variant: listing ? 'listNodes over 15 slow pages' : 'a list-mode wait over 15 slow pages',
      scenario: {
        nodes: nodes(Object.fromEntries(fleet.map((n) => [n, 'manageable']))),
        faults: ['/v1/nodes', '/v1/nodes/detail'].flatMap((list) => [
          { kind: 'page', limit: 10, method: 'GET', path: list },
          { kind: 'latency', ms: latency, method: 'GET', path: list },
        ]),
      },
      spec: listing
        ? { call: 'listNodes', abortAfter: between(rand, 0, 15 * (latency + 10) + 100) }
        : {
            call: 'waitForProvisionState',
            args: [fleet, 'active'],
            options: { failOnUnexpectedState: false, listThreshold: 10, pollInterval: 0.05 },
            abortAfter: between(rand, 0, 15 * (latency + 10) + 100),
          },
    };
  },
  progress(rand) {
    const count = between(rand, 1, 3);
    const allocation = rand() < 0.3;
    return {
      variant: allocation ? 'createAllocation with wait, abort in onProgress' : 'provision with wait, abort in onProgress',
      scenario: { nodes: [...FLEET, ...nodes(Object.fromEntries(names('p', 3).map((n) => [n, 'enroll'])))] },
      // Two events a target, each node seen verifying (40 ms) then manageable, the allocation allocating
      // (30 ms) then active: the clock moves 10 ms a check answered, so a first round (at most three
      // checks) sees the first state and a later one the end, and every trial's event comes. On the wall
      // clock a loaded machine's first round could come after verifying, one event a node: then only the
      // 18 trials whose event is at most one a target would abort, fewer than the half asserted below.
      clockPerCheck: 10,
      spec: allocation
        ? {
            call: 'createAllocation',
            args: [{ resourceClass: 'gold' }],
            options: { wait: true, timeout: 10, pollInterval: 0.02 },
            abortAtEvent: between(rand, 1, 2),
          }
        : {
            call: 'provision',
            args: [names('p', count), 'manage'],
            options: { wait: true, timeout: 10, pollInterval: 0.02, settle: pick(rand, ['first-failure', 'all']) },
            abortAtEvent: between(rand, 1, 2 * count),
          },
    };
  },
};

/** Trial `i` of the seeded schedule: the phases take turns. */
function drawTrial(i) {
  const rand = rng(SEED, 'abort-trials', i);
  const phase = Object.keys(PHASES)[i % Object.keys(PHASES).length];
  const trial = PHASES[phase](rand);
  // Now and then the signal is aborted before the call is even made.
  if (trial.spec.abortAfter !== undefined && rand() < 0.05) trial.spec.abortAfter = -1;
  trial.spec.reason = pick(rand, REASONS);
  trial.spec.id = i;
  return { phase, ...trial };
}

// ---------------------------------------------------------------------------
// Workers, with a watchdog: a worker that does not answer in time is frozen
// (a microtask spin, say); it is terminated and replaced.

class TrialWorker {
  constructor() {
    this.spawn();
  }

  spawn() {
    this.worker = new Worker(RUNNER);
    this.worker.on('error', (e) => this.finish({ crashed: `${e?.name}: ${e?.message}` }));
    this.worker.on('message', (message) => {
      if (message.type === 'aborting') {
        this.abortAt = message.at;
        this.arm(this.spec.settleWithin + (this.spec.grace ?? 150) + WORKER_SLACK_MS);
      } else if (message.type === 'result') {
        this.finish({ result: message.result });
      }
    });
  }

  arm(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const abortAt = this.abortAt;
      this.worker.terminate();
      this.spawn();
      this.finish({ frozen: true, abortAt });
    }, ms);
  }

  finish(outcome) {
    clearTimeout(this.timer);
    const resolve = this.resolve;
    this.resolve = null;
    resolve?.(outcome);
  }

  run(spec) {
    this.spec = spec;
    this.abortAt = null;
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.arm((spec.abortAfter ?? 3000) + spec.settleWithin + (spec.grace ?? 150) + 5000 + WORKER_SLACK_MS);
      this.worker.postMessage(spec);
    });
  }

  close() {
    return this.worker.terminate();
  }
}

// ---------------------------------------------------------------------------
// Judging one trial.

const path = (url) => url.replace(/^https?:\/\/[^/]+/, '');

/** What went wrong in a finished trial: [kind, detail] pairs (kind has no numbers, to group by). */
async function judge(outcome, ironic) {
  if (outcome.crashed) return [['the worker crashed', outcome.crashed]];
  if (outcome.frozen) {
    return [[outcome.abortAt === null ? 'no answer, and no abort happened' : 'the event loop froze after the abort (no answer)', '']];
  }
  const r = outcome.result;
  const problems = r.escaped.map((e) => ['something escaped', e]);
  if (r.abortAt === null) return problems;
  if (!r.settledFirst) {
    const after = r.settledAt === null ? '' : `${Math.round(r.settledAt - r.abortAt)} ms after the abort`;
    if (r.outcome === 'pending') problems.push(['did not settle after the abort', '']);
    else if (r.outcome === 'resolved') problems.push(['resolved after the abort', '']);
    else if (!r.reasonMatches) problems.push(['rejected with something other than the reason', r.error]);
    else if (!r.settledInTurn) problems.push(["settled after the event loop's next turn, not in the abort's own", after]);
  }
  const lateFetches = r.fetches.filter((f) => f.t >= r.abortAt);
  if (lateFetches.length) {
    const first = lateFetches[0];
    problems.push([
      'a fetch started after the abort',
      `${lateFetches.length}, the first ${Math.round(first.t - r.abortAt)} ms after: ${first.method} ${path(first.url)}`,
    ]);
  }
  for (const f of r.inFlight.filter((x) => !x.hungUp)) {
    problems.push(['a request in flight at the abort was not cancelled (its signal never aborted)', `${f.method} ${path(f.url)}`]);
  }
  if (ironic) {
    // Each fetch is at most one request (redirects are not followed), so the
    // server may see at most the requests started before the abort, however
    // late they reach it.
    const started = r.fetches.length - lateFetches.length;
    if (ironic.seen.length > started) {
      const extra = ironic.seen.slice(started);
      problems.push([
        'the server got more requests than were started before the abort',
        `${extra.length} more, the first ${extra[0].method} ${extra[0].url}`,
      ]);
    }
    // Each request ends, answered before the abort or hung up by it; the server may learn of a hang-up
    // late on a loaded machine, so it is waited for.
    await until(() => ironic.seen.every((e) => e.closedAt !== undefined), 30_000).catch(() => {});
    for (const e of ironic.seen.filter((entry) => entry.closedAt === undefined)) {
      problems.push(['a request in flight at the abort is still open', `${e.method} ${e.url}`]);
    }
  }
  return problems;
}

const describeTrial = (t) =>
  `${t.phase} / ${t.variant}: ${t.spec.call}(${JSON.stringify(t.spec.args ?? [])}, ${JSON.stringify(t.spec.options ?? {})})` +
  ` client ${JSON.stringify(t.spec.client ?? {})}${t.spec.tokenDelay !== undefined ? ` tokenDelay ${t.spec.tokenDelay}` : ''}` +
  `, abort ${t.spec.abortAtEvent ? `at progress event ${t.spec.abortAtEvent}` : `after ${t.spec.abortAfter} ms`}, reason ${t.spec.reason}`;

// ---------------------------------------------------------------------------
// The schedule runs once, in `before`; each phase's test judges its trials.

const results = []; // { trial, outcome, problems }
let scheduleEnd;

before(async () => {
  const refused = `http://127.0.0.1:${await refusedPort()}`;
  const workers = Array.from({ length: WORKERS }, () => new TrialWorker());
  const started = now();
  let next = 0;
  const lane = async (worker) => {
    while (next < TRIALS && now() - started < BUDGET_MS) {
      const trial = drawTrial(next++);
      const ironic = trial.refused ? null : await serve(trial.scenario, trial.clockPerCheck);
      const spec = { ...trial.spec, url: ironic?.url ?? refused, settleWithin: 1000, grace: trial.grace ?? 150 };
      const outcome = await worker.run(spec);
      results.push({ trial, outcome, problems: await judge(outcome, ironic) });
      await ironic?.close();
    }
    // The worker that ran all those trials still finishes a call.
    const ironic = await serve({ nodes: FLEET });
    const outcome = await worker.run({
      id: 'control',
      url: ironic.url,
      call: 'waitForProvisionState',
      args: [['n1'], 'active'],
      options: { timeout: 5 },
      reason: 'error',
      settleWithin: 1000,
    });
    results.push({
      trial: { phase: 'control', variant: 'a wait after the trials', spec: { call: 'waitForProvisionState', reason: 'none' } },
      outcome,
      problems:
        outcome.result?.outcome === 'resolved'
          ? []
          : [['the worker cannot finish a wait after the trials', outcome.result?.error ?? JSON.stringify(outcome)]],
    });
    await ironic.close();
  };
  await Promise.all(workers.map(lane));
  await Promise.all(workers.map((w) => w.close()));
  scheduleEnd = { trials: next, ms: now() - started };
});

function assertPhase(phase) {
  const mine = results.filter((r) => r.trial.phase === phase);
  assert.ok(mine.length > 0, `no ${phase} trial ran`);
  // Group the problems by kind, with one reproduction each.
  const kinds = new Map();
  for (const { trial, problems } of mine) {
    for (const [kind, detail] of problems) {
      const key = `${trial.variant}: ${kind}`;
      const entry = kinds.get(key) ?? { count: 0, example: `${detail ? `${detail}; ` : ''}${describeTrial(trial)}` };
      entry.count += 1;
      kinds.set(key, entry);
    }
  }
  const failed = [...kinds].map(([key, { count, example }]) => `${count}x ${key} -- e.g. ${example}`);
  const aborted =
    mine.filter((r) => r.outcome.result && r.outcome.result.abortAt !== null && !r.outcome.result.settledFirst).length +
    mine.filter((r) => r.outcome.frozen && r.outcome.abortAt !== null).length;
  const summary = `${mine.length} trials, ${aborted} aborted mid-call (seed ${SEED}; schedule: ${scheduleEnd?.trials} trials in ${Math.round(scheduleEnd?.ms ?? 0)} ms)`;
  assert.deepEqual(failed, [], summary);
  // Independent of the machine's speed: in each phase's draw, at least half of the trials abort before
  // the earliest instant their call could settle by the delays the server and getToken impose (seed 1:
  // negotiation 33, token 23, put 26, polling 40 and paging 30 of 40), and the progress trials abort at
  // an event that always comes (40). A slower machine only makes calls longer: more aborts mid-call.
  if (phase !== 'control') assert.ok(aborted >= mine.length / 2, `too few trials aborted a call in flight: ${summary}`);
}

for (const phase of [...Object.keys(PHASES), 'control']) {
  test(`abort at random instants: ${phase}`, () => assertPhase(phase));
}

// ---------------------------------------------------------------------------
// Child processes: after the abort, nothing may keep Node alive.

// Every holder is HOLD_S (10 minutes) away, and so is every request's own
// time limit (requestTimeout, added to each client below).
const CHILD_TRIALS = [
  [
    'negotiation: GET /v1 never answers',
    { nodes: FLEET, faults: [{ kind: 'hang', method: 'GET', path: '/v1' }] },
    { call: 'getNode', args: ['n1'] },
  ],
  [
    `negotiation: GET /v1 answers 503, retried every ${HOLD_S} s`,
    { nodes: FLEET, faults: [{ kind: 'status', status: 503, versionHeaders: false, method: 'GET', path: '/v1' }] },
    { client: { retryInterval: HOLD_S }, call: 'listNodes' },
  ],
  ['getToken never answers', { nodes: FLEET }, { tokenDelay: 'never', call: 'getNode', args: ['n1'] }],
  [
    `a PUT answered after ${HOLD_S} s`,
    { nodes: FLEET, faults: [{ kind: 'latency', ms: HOLD_S * 1000, method: 'PUT' }] },
    { client: { microversion: '1.80' }, call: 'provision', args: [['e1'], 'manage'] },
  ],
  [
    `a PUT answered 409, retried every ${HOLD_S} s`,
    { nodes: FLEET, faults: [{ kind: 'status', status: 409, method: 'PUT' }] },
    { client: { retryInterval: HOLD_S }, call: 'provision', args: [['e1'], 'manage'], options: { wait: true } },
  ],
  [
    `a PUT to a refused port, retried every ${HOLD_S} s`,
    null,
    { client: { microversion: '1.80', retryInterval: HOLD_S }, call: 'provision', args: [['e1'], 'manage'] },
  ],
  [
    `polling every ${HOLD_S} s`,
    { nodes: FLEET },
    { call: 'waitForProvisionState', args: [['m1'], 'active'], options: { failOnUnexpectedState: false, pollInterval: HOLD_S } },
  ],
  [
    `a list page answered after ${HOLD_S} s`,
    { nodes: FLEET, faults: [{ kind: 'latency', ms: HOLD_S * 1000, method: 'GET', path: '/v1/nodes/detail' }] },
    { call: 'listNodes' },
  ],
  [
    `from inside onProgress, polling every ${HOLD_S} s`,
    { nodes: FLEET },
    { call: 'provision', args: [['e1'], 'manage'], options: { wait: true, pollInterval: HOLD_S }, abortAtEvent: 1 },
  ],
];

/** Runs one trial in a child process; resolves with its result and when it exited, or kills it after `ms`. */
function runChild(spec, ms = CHILD_BOUND_MS) {
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--test'));
  const child = spawn(process.execPath, [...execArgv, fileURLToPath(RUNNER), JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let result = null;
      try {
        result = JSON.parse(stdout.trim().split('\n').at(-1));
      } catch {
        // no result line: it was killed
      }
      resolve({ result, killed: signal === 'SIGKILL', code, stderr: stderr.slice(0, 500) });
    });
  });
}

test('an aborted call lets Node exit by itself: nothing holds it (child processes)', async () => {
  const rand = rng(SEED, 'abort-children');
  const refused = `http://127.0.0.1:${await refusedPort()}`;
  const problems = [];
  const runOne = async ([name, scenario, spec], control = false) => {
    const ironic = scenario && (await serve(scenario));
    const full = {
      id: name,
      url: ironic?.url ?? refused,
      reason: pick(rand, REASONS),
      settleWithin: 1000,
      ...spec,
      client: { requestTimeout: HOLD_S, ...spec.client },
      ...(control || spec.abortAtEvent ? {} : { abortAfter: between(rand, 50, 250) }),
    };
    const { result, killed, stderr } = await runChild(full);
    await ironic?.close();
    const label = `${name} (${control ? 'no abort' : `abort ${full.abortAtEvent ? 'in onProgress' : `after ${full.abortAfter} ms`}, reason ${full.reason}`})`;
    // Exited by itself at all: what could hold it is HOLD_S away, past the watchdog (the times are for the message).
    if (killed || !result) {
      return problems.push(
        `${label}: did not exit by itself within ${CHILD_BOUND_MS / 1000} s (something held it)${stderr ? `; stderr: ${stderr}` : ''}`,
      );
    }
    if (control) {
      if (result.outcome !== 'resolved') problems.push(`${label}: ${result.outcome} ${result.error ?? ''}`);
      return;
    }
    if (result.abortAt === null) return problems.push(`${label}: the abort never happened (${result.outcome})`);
    if (result.outcome !== 'rejected' || !result.reasonMatches)
      problems.push(`${label}: ${result.outcome} ${result.error ?? ''}, not rejected with the reason`);
    if (!result.settledFirst && !result.settledInTurn) problems.push(`${label}: settled after the event loop's next turn after the abort`);
    for (const f of (result.inFlight ?? []).filter((x) => !x.hungUp)) {
      problems.push(`${label}: ${f.method} ${path(f.url)}, in flight at the abort, was not cancelled`);
    }
    const late = result.fetches.filter((f) => f.t >= result.abortAt);
    if (late.length) problems.push(`${label}: ${late.length} fetch(es) after the abort, the first ${late[0].method} ${path(late[0].url)}`);
    if (result.escaped.length) problems.push(`${label}: ${result.escaped.join('; ')}`);
  };
  const queue = [
    [['control: a read that succeeds', { nodes: FLEET }, { call: 'getNode', args: ['n1'] }], true],
    [
      [
        'control: a wait that succeeds',
        { nodes: FLEET },
        { call: 'waitForProvisionState', args: [['n1'], 'active'], options: { timeout: HOLD_S } },
      ],
      true,
    ],
    ...CHILD_TRIALS.map((t) => [t, false]),
  ];
  // Two at a time.
  const lane = async () => {
    for (let item = queue.shift(); item; item = queue.shift()) await runOne(...item);
  };
  await Promise.all([lane(), lane()]);
  assert.deepEqual(problems, []);
});

after(() => {
  // Printed for the record (docs/reliability.md takes its figures from runs like this).
  const counted = results.filter((r) => r.trial.phase !== 'control');
  const byPhase = Object.fromEntries(Object.keys(PHASES).map((p) => [p, counted.filter((r) => r.trial.phase === p).length]));
  const failedTrials = counted.filter((r) => r.problems.length).length;
  // ABORT_DEBUG=1: every trial, for a closer look.
  for (const r of process.env.ABORT_DEBUG ? results : []) {
    const result = r.outcome.result && { ...r.outcome.result, fetches: r.outcome.result.fetches.length };
    console.log(JSON.stringify({ ...r.trial, scenario: undefined, outcome: { ...r.outcome, result }, problems: r.problems }));
  }
  const midCall = Object.fromEntries(
    Object.keys(PHASES).map((p) => [
      p,
      counted.filter((r) => r.trial.phase === p && r.outcome.result && r.outcome.result.abortAt !== null && !r.outcome.result.settledFirst)
        .length,
    ]),
  );
  console.log(
    `abort trials: ${counted.length} (${JSON.stringify(byPhase)}), aborted mid-call ${JSON.stringify(midCall)}, ${failedTrials} with problems, seed ${SEED}`,
  );
});
