// The hostile-server fault matrix: each fault of a scriptable server (the
// simulator's fault rules, a second origin, a restarting port) against each
// way of calling the package: one node, list mode (60 nodes), provision with
// wait (the faults hit the PUTs), allocations, and listNodes. Every case
// checks, on the package as built:
//   - the outcome or the error class (and the key part of its message);
//   - that it settles at all (a hang is a case that has not settled 10 times
//     over its contract's bound, timeout + requestTimeout + slack); the
//     bound itself is not judged on the wall clock, which a loaded machine
//     stretches: what would make a call overrun it is judged by order
//     instead (below, and each case's hung-up and attempt checks);
//   - what the client sent: after the deadline nothing is sent twice (a
//     retry, or a new round, would repeat a request; the final check asks
//     for each thing once), nothing after the promise settled, nothing at
//     all to another origin, the attempts the case implies;
//   - that no secret (token, rescue password) is in the error or report;
//   - that the same client still works afterwards (a real wait on a healthy
//     node).
// Lower bounds (a Retry-After honoured, a restart's gap) are read on the
// simulator's clock: a loaded machine only lengthens them.
// A case that fails lists every difference from the contract at once.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  AuthError,
  ConnectionError,
  InvalidArgumentError,
  InvalidResponseError,
  IronicClient,
  IronicHttpError,
  StateTransitionTimeout,
  UnsupportedVersionError,
} from 'ironic-wait';
import { sleep, startIronic, until } from './harness.mjs';
import { MiB, memorySample, recordFetches, startFront, startRecorder, startSimProcess } from './hostile-servers.mjs';

const TIMEOUT = 4; // s, the waits' default timeout here
// s: far past what a request takes on a loaded machine (a drip of 0.8 s, a gzip bomb read); the cases
// about cutting a request set their own.
const REQUEST_TIMEOUT = 5;
const POLL = 0.05; // s
const SLACK = 1.5; // s: a busy 2-core machine (only in the hang detector's bound now)
/** A call not settled by this many times its bound (and 30 s more) has hung. */
const HUNG_FACTOR = 10;
const QUIET = 100; // ms after the end during which no request may start
const TOKEN = 'SECRET-TOKEN-matrix';
const DEFAULT_MAX_RESPONSE = 16 * MiB;
const fetches = recordFetches();

const LIST = Array.from({ length: 60 }, (_, i) => `l${String(i).padStart(2, '0')}`);
const PUT_NODES = ['p0', 'p1', 'p2'];
const HEALTHY = { name: 'ok1', provision_state: 'active' };
const available = (names) => names.map((name) => ({ name, provision_state: 'available' }));

/**
 * The ways of calling the package. `target` is what a case's `fault` hits;
 * `moving` nodes start deploying (through the model, unseen by the request
 * log) when the call starts; `targets` is how many distinct requests the
 * target stands for at once (one per node for the PUTs).
 */
const MODES = {
  single: {
    nodes: available(['s1']),
    moving: ['s1'],
    target: { method: 'GET', path: '/v1/nodes/s1' },
    run: (client, o) => client.waitForProvisionState('s1', 'active', o),
  },
  list: {
    nodes: available(LIST),
    moving: LIST,
    target: { method: 'GET', path: '/v1/nodes' },
    run: (client, o) => client.waitForProvisionState(LIST, 'active', o),
  },
  provision: {
    nodes: available(PUT_NODES),
    target: { method: 'PUT', path: '/v1/nodes/*/states/provision' },
    targets: PUT_NODES.length,
    run: (client, { timeout, ...o }) => client.provision(PUT_NODES, 'deploy', { ...o, wait: true, timeout }),
  },
  allocation: {
    nodes: [{ name: 'g1', provision_state: 'available', resource_class: 'gold' }],
    target: { method: 'GET', path: '/v1/allocations/*' },
    run: (client, { timeout, pollInterval }) => client.createAllocation({ resourceClass: 'gold' }, { wait: true, timeout, pollInterval }),
  },
  // The same call, with the faults on its POST.
  allocationPost: {
    nodes: [{ name: 'g1', provision_state: 'available', resource_class: 'gold' }],
    target: { method: 'POST', path: '/v1/allocations' },
    run: (client, { timeout, pollInterval }) => client.createAllocation({ resourceClass: 'gold' }, { wait: true, timeout, pollInterval }),
  },
  listNodes: {
    nodes: LIST.map((name) => ({ name, provision_state: 'active' })),
    target: { method: 'GET', path: '/v1/nodes' },
    noDeadline: true,
    run: (client) => client.listNodes({ fields: ['uuid', 'name', 'provision_state'] }),
  },
};
const WAITS = ['single', 'list', 'provision', 'allocation'];
const GETS = ['single', 'list', 'allocation'];

// ---------------------------------------------------------------- expectations

const describe = (e) => (e instanceof Error ? `${e.name}${e.status ? ` ${e.status}` : ''}: ${e.message}` : `${typeof e} ${String(e)}`);

/** The call resolved and every node (or the allocation) got there. */
function reached(mode, outcome) {
  if ('error' in outcome) return `expected success, got ${describe(outcome.error)}`;
  const value = outcome.value;
  if (mode.startsWith('allocation')) {
    if (value?.allocation?.state !== 'active' || value?.report?.allocation?.outcome !== 'reached') {
      return `expected an active allocation, got ${JSON.stringify(value?.report?.allocation ?? value)}`;
    }
  } else if (mode === 'listNodes') {
    if (!Array.isArray(value) || value.length !== LIST.length + 1) return `expected ${LIST.length + 1} nodes, got ${value?.length}`;
  } else {
    const off = value.nodes.filter((n) => n.outcome !== 'reached');
    if (!value.ok || off.length)
      return `expected every node reached, got ${off
        .slice(0, 3)
        .map((n) => `${n.node}: ${n.outcome} ${n.error ? describe(n.error) : ''}`)
        .join('; ')}`;
  }
  return undefined;
}

/** The call rejected with one of `kinds`, its message matching `message`, with these fields. */
const fails =
  (kinds, message, fields = {}) =>
  (_mode, outcome) => {
    const list = [kinds].flat();
    const want = `${list.map((k) => k.name).join(' or ')}${fields.status ? ` ${fields.status}` : ''}${message ? ` ${message}` : ''}`;
    if (!('error' in outcome)) return `expected ${want}, got success: ${JSON.stringify(outcome.value)?.slice(0, 200)}`;
    const e = outcome.error;
    if (!list.some((k) => e instanceof k)) return `expected ${want}, got ${describe(e)}`;
    if (message && !message.test(e.message)) return `expected ${want}, got ${describe(e)}`;
    for (const [k, v] of Object.entries(fields)) if (e[k] !== v) return `expected ${want}, got ${describe(e)} with ${k} ${e[k]}`;
    return undefined;
  };

/** settle 'all': these nodes have `outcome` (with an error of `kind`), every other one is reached. */
const settledAll = (nodes, outcome, kind) => (_mode, result) => {
  if ('error' in result) return `expected a report, got ${describe(result.error)}`;
  const problems = [];
  for (const n of result.value.nodes) {
    const want = nodes.includes(n.node) ? outcome : 'reached';
    if (n.outcome !== want) problems.push(`${n.node}: ${n.outcome} (expected ${want})${n.error ? ` ${describe(n.error)}` : ''}`);
    else if (want !== 'reached' && kind && !(n.error instanceof kind))
      problems.push(`${n.node}: error ${describe(n.error)} (expected ${kind.name})`);
  }
  return problems.length ? problems.slice(0, 4).join('; ') : undefined;
};

// ---------------------------------------------------------------- what the server saw

/** Requests on the mode's target: n attempts (for the PUTs, n per node in flight: between n and n per node). */
const attempts =
  (n) =>
  ({ onTarget, targets, mode }) => {
    const ok = targets > 1 ? onTarget.length >= n && onTarget.length <= n * targets : onTarget.length === n;
    return ok
      ? undefined
      : `expected ${n}${targets > 1 ? ` to ${n * targets}` : ''} request(s) on the target in ${mode} mode, the server saw ${onTarget.length}`;
  };

/** The fault acted on `n` requests on the target, and the request after the last of them was answered (a retry). */
const faultedThenServed =
  (n) =>
  ({ onTarget, mode }) => {
    const faulted = onTarget.filter((e) => e.fault !== null && e.fault !== 'latency');
    if (faulted.length !== n) return `expected the fault on ${n} request(s) in ${mode} mode, it acted on ${faulted.length}`;
    const last = faulted.at(-1);
    return onTarget.some((e) => e.seq > last.seq && e.node === last.node && e.status >= 200 && e.status < 300)
      ? undefined
      : 'no successful retry after the faulted requests';
  };

/** The retry of the first faulted answer came at least `min` and less than `max` ms after it (a Retry-After honoured or not). */
const retryGap =
  (min, max) =>
  ({ onTarget }) => {
    const faulted = onTarget.find((e) => e.fault === 'status');
    const retry = faulted && onTarget.find((e) => e.seq > faulted.seq && e.node === faulted.node);
    if (!retry) return 'no retry after the faulted answer';
    const gap = retry.t - faulted.t;
    return gap >= min && gap < max ? undefined : `the retry came ${gap.toFixed(0)} ms after the 503 (expected ${min} to ${max} ms)`;
  };

/**
 * Every request a `hang` or `drip` fault held open was cancelled by the
 * client (the server saw it hang up), within a second of the end.
 */
const hungUpOn =
  (kind) =>
  async ({ seen, log }) => {
    const held = log.filter((e) => e.fault === kind).length;
    if (held === 0) return `no request was held by ${kind} at all`;
    const cancelled = () => seen.filter((r) => r.cancelled).length;
    await until(() => cancelled() >= held, 30_000).catch(() => {});
    return cancelled() >= held
      ? undefined
      : `${held - cancelled()} of ${held} request(s) held by ${kind} were never cancelled by the client`;
  };

/**
 * The wasm memory grew by at most twice the answer cap plus 4 MiB during the
 * call (`measured` cases). The body read up to the cap may sit in a buffer
 * that doubles as it grows, so 2 x cap is what a capped read can take; the
 * growth must not follow the answer's size, which is far above that.
 */
const wasmGrowthCapped =
  (cap) =>
  ({ memory }) => {
    const bound = 2 * cap + 4 * MiB;
    return memory.wasm <= bound
      ? undefined
      : `the wasm memory grew by ${(memory.wasm / MiB).toFixed(1)} MiB (at most ${(bound / MiB).toFixed(0)} MiB for a cap of ${cap / MiB} MiB)`;
  };

const checks =
  (...fns) =>
  async (ctx) =>
    (await Promise.all(fns.map((f) => f(ctx)))).filter(Boolean);

// ---------------------------------------------------------------- the runner

function settleWithin(promise, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ hung: true }), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve({ value });
      },
      (error) => {
        clearTimeout(timer);
        resolve({ error });
      },
    );
  });
}

/** Any secret in the error (message, stack, fields, report) or in the value. */
function secretsIn(outcome, secrets) {
  const e = outcome.error;
  let text;
  try {
    text =
      e instanceof Error
        ? [
            e.message,
            e.stack,
            JSON.stringify({ ...e }, (_k, v) => (v instanceof Error ? { ...v, message: v.message, stack: v.stack } : v)),
          ].join('\n')
        : JSON.stringify(outcome.value ?? String(e));
  } catch (err) {
    return [`cannot serialise the outcome: ${err}`];
  }
  return secrets.filter((s) => text?.includes(s));
}

/**
 * Runs one case in one mode on a fresh simulator and client; returns the
 * list of differences from what the case expects (empty: it passed).
 */
async function runCase(spec, modeName) {
  const mode = MODES[modeName];
  const timeout = spec.timeout ?? TIMEOUT;
  const clientOptions = typeof spec.client === 'function' ? spec.client(modeName) : (spec.client ?? {});
  const requestTimeout = clientOptions.requestTimeout ?? REQUEST_TIMEOUT;
  const hasDeadline = !mode.noDeadline && !spec.noDeadline;
  const bound = spec.bound ?? (spec.fast ? SLACK : hasDeadline ? timeout + requestTimeout + SLACK : SLACK + requestTimeout);
  const recorder = await startRecorder();
  const ironic = await startIronic({
    nodes: [...(spec.nodes?.(modeName) ?? mode.nodes), HEALTHY],
    timing: spec.timing,
    transitions: spec.transitions?.(modeName) ?? [],
  });
  const front = spec.front ? await startFront(ironic.url) : null;
  const ctx = { mode: modeName, ironic, recorder, front, target: mode.target, targets: mode.targets ?? 1, timeout };
  const problems = [];
  let background;
  try {
    const fault = typeof spec.fault === 'function' ? spec.fault(ctx) : spec.fault;
    const rules = spec.faults ? spec.faults(ctx) : [fault ?? []].flat().map((rule) => ({ ...mode.target, ...rule }));
    ironic.sim.faults.add(rules);
    const endpoint = (front ?? ironic).url;
    // This case's requests only: a client of an earlier case that never settled may still be sending.
    const ours = (f) => f.url.startsWith(`${endpoint}/`);
    const client = new IronicClient({
      endpoint,
      ...(clientOptions.getToken ? {} : { token: TOKEN }),
      requestTimeout,
      retryInterval: 0.05,
      ...clientOptions,
    });
    const before = spec.measured ? await memorySample() : null;
    const world = ironic.sim.world;
    for (const name of spec.moving?.(modeName) ?? mode.moving ?? [])
      world.provision(world.findNode(name), { target: 'active' }, 115, world.now());
    const seenFrom = ironic.seen.length;
    const fetchFrom = fetches.length;
    const t0 = ironic.sim.now();
    const started = performance.now();
    background = spec.during?.(ctx)?.catch((e) => problems.push(`the scripted server change failed: ${e.message}`));
    const run = spec.run ?? mode.run;
    const promise = run(client, { timeout, pollInterval: POLL, ...spec.wait }, ctx);
    // The fetches started after the wait's deadline: from when a timer of the timeout, set after the
    // call began (so at or after its deadline), fires. And those started after the promise settled:
    // this callback is the promise's first, so it runs as it settles.
    let afterDeadline = Infinity;
    const deadlineMark = hasDeadline ? setTimeout(() => (afterDeadline = fetches.length), timeout * 1000) : null;
    let afterSettled = Infinity;
    promise.then(
      () => (afterSettled = fetches.length),
      () => (afterSettled = fetches.length),
    );
    const outcome = await settleWithin(promise, (HUNG_FACTOR * bound + 30) * 1000);
    clearTimeout(deadlineMark);
    const settled = performance.now();
    const elapsed = (settled - started) / 1000;
    const starts = fetches.slice(fetchFrom).filter(ours);
    if (before) {
      const now = await memorySample();
      ctx.memory = Object.fromEntries(Object.keys(before).map((k) => [k, now[k] - before[k]]));
    }
    const seen = ironic.seen.slice(seenFrom);
    const log = ironic.sim.log({ since: 0 }).filter((e) => e.t >= t0);
    const targetRe = new RegExp(`^${mode.target.path.replace(/\*/g, '[^?]*')}$`);
    const onTarget = log.filter((e) => e.method === mode.target.method && targetRe.test(e.path));

    if (outcome.hung) {
      problems.push(`did not settle within ${HUNG_FACTOR * bound + 30} s (the contract's bound is ${bound.toFixed(2)} s)`);
    } else {
      const wrong = (spec.expect ?? reached)(modeName, outcome);
      if (wrong) problems.push(wrong);
      // Not sooner than the case allows: on the simulator's clock, the server was still asked that long after the start.
      const lastSeen = Math.max(...log.map((e) => e.t));
      if (spec.atLeast && !(lastSeen - t0 >= spec.atLeast * 1000))
        problems.push(`the last request came ${lastSeen - t0} ms after the start, expected at least ${spec.atLeast} s`);
      const leaked = secretsIn(outcome, [TOKEN, ...(spec.secrets ?? [])]);
      if (leaked.length) problems.push(`secret(s) in the outcome: ${leaked.join(', ')}`);
    }
    if (log.length && !starts.length)
      problems.push('fetch() was never called while the server saw requests: the start-time checks are blind');
    if (hasDeadline) {
      // After the deadline only the final check: it asks for each node (each page) once, and is not retried.
      const late = fetches.slice(afterDeadline, afterSettled).filter(ours);
      const sent = new Map();
      for (const f of late)
        sent.set(
          `${f.method} ${new URL(f.url).pathname}${new URL(f.url).search}`,
          (sent.get(`${f.method} ${new URL(f.url).pathname}${new URL(f.url).search}`) ?? 0) + 1,
        );
      const twice = [...sent].filter(([, n]) => n > 1);
      if (twice.length) {
        problems.push(
          `${twice.length} request(s) sent more than once after the deadline (${timeout} s; a retry or a new round): ${twice
            .slice(0, 3)
            .map(([r, n]) => `${r} x${n}`)
            .join(', ')}`,
        );
      }
    }
    if (recorder.seen.length) {
      const carried = recorder.seen.filter((r) => r.headers['x-auth-token'] || /SECRET/.test(r.body));
      problems.push(
        `${recorder.seen.length} request(s) reached another origin (${recorder.seen
          .map((r) => `${r.method} ${r.url}`)
          .slice(0, 3)
          .join(', ')}), ${carried.length} with credentials`,
      );
    }
    for (const p of (await spec.server?.({ ...ctx, log, seen, onTarget, elapsed, outcome, t0 })) ?? []) problems.push(p);

    if (!outcome.hung) {
      await sleep(QUIET);
      const afterEnd = fetches.slice(afterSettled).filter(ours);
      if (afterEnd.length)
        problems.push(
          `${afterEnd.length} request(s) started after the promise settled: ${afterEnd
            .slice(0, 3)
            .map((f) => `${f.method} ${new URL(f.url).pathname}`)
            .join(', ')}`,
        );
      // The same client keeps working: a real wait on a healthy node, faults off.
      ironic.sim.faults.clear();
      await background;
      const healthy = await settleWithin(client.waitForProvisionState('ok1', 'active', { timeout: 30, pollInterval: POLL }), 60_000);
      if (healthy.hung || healthy.error || healthy.value.nodes[0].outcome !== 'reached') {
        problems.push(
          `the same client no longer works: ${healthy.hung ? 'a wait on a healthy node hung' : healthy.error ? describe(healthy.error) : healthy.value.nodes[0].outcome}`,
        );
      }
    }
  } finally {
    await background?.catch(() => {});
    await front?.close();
    await ironic.close();
    await recorder.close();
  }
  return problems;
}

/** Registers `spec` as one test per mode. */
function matrix(name, modes, spec) {
  for (const mode of modes) {
    test(`${name} [${mode}]`, async () => {
      const problems = await runCase(spec, mode);
      assert.deepEqual(problems, [], problems.join('\n'));
    });
  }
}

// ---------------------------------------------------------------- 409 and 503, Retry-After

matrix('409 burst, then answers', [...WAITS, 'allocationPost'], {
  fault: { kind: 'status', status: 409, count: 3 },
  server: checks(faultedThenServed(3)),
});

matrix('409 forever: the last error after the retries', WAITS, {
  fault: { kind: 'status', status: 409 },
  expect: fails(IronicHttpError, /\(HTTP 409\)/, { status: 409 }),
  server: checks(attempts(6)),
});

matrix('503 burst with Retry-After: 1 (seconds), honoured', WAITS, {
  fault: { kind: 'status', status: 503, retryAfter: 1, count: 1 },
  atLeast: 0.9,
  server: checks(retryGap(950, Infinity)),
});

matrix('503 burst with Retry-After as an HTTP date: retryInterval instead', WAITS, {
  fault: () => ({ kind: 'status', status: 503, retryAfter: new Date(Date.now() + 120_000).toUTCString(), count: 2 }),
  // The date is 120 s away, past the 4 s wait: that the wait got there at all says it was not honoured.
  server: checks(retryGap(0, Infinity)),
});

// The retry would come after the deadline, so it is not made; a wait may
// still make its final check at the deadline (a new poll, not a retry).
matrix('503 with a huge Retry-After: no retry past the deadline, settles by it', WAITS, {
  timeout: 2,
  fault: { kind: 'status', status: 503, retryAfter: 1e9 },
  expect: (mode, o) =>
    mode === 'provision'
      ? fails(IronicHttpError, /\(HTTP 503\)/, { status: 503 })(mode, o)
      : fails([StateTransitionTimeout, IronicHttpError])(mode, o),
  server: checks(({ mode, onTarget, t0, timeout }) => {
    if (mode === 'provision') return attempts(1)({ mode, onTarget, targets: PUT_NODES.length });
    const between = onTarget.slice(1).filter((e) => e.t - t0 < (timeout - 0.1) * 1000);
    if (between.length)
      return `${between.length} request(s) on the target between the first check and the deadline (a retry before the Retry-After)`;
    return onTarget.length <= 2 ? undefined : `${onTarget.length} requests on the target (the first check, at most one final check)`;
  }),
});

// ---------------------------------------------------------------- connections

matrix('resets, then answers', [...WAITS, 'allocationPost'], {
  fault: { kind: 'reset', count: 2 },
  server: checks(faultedThenServed(2)),
});

matrix('reset forever: ConnectionError after the retries', WAITS, {
  fault: { kind: 'reset' },
  expect: fails(ConnectionError, /^Error contacting Ironic server: /),
  server: checks(attempts(6)),
});

matrix('a hang cut by requestTimeout, then answers', [...WAITS, 'allocationPost'], {
  client: { requestTimeout: 1 },
  fault: { kind: 'hang', count: 1 },
  atLeast: 0.9,
  server: checks(faultedThenServed(1), hungUpOn('hang')),
});

matrix('hangs until the deadline: settles by timeout + requestTimeout, hung requests cancelled', WAITS, {
  timeout: 2,
  client: { requestTimeout: 0.6 },
  fault: { kind: 'hang' },
  expect: fails([ConnectionError, StateTransitionTimeout]),
  server: checks(hungUpOn('hang')),
});

matrix('server restart mid-wait (port closed, then listening again)', ['single', 'list'], {
  front: true,
  timing: { deploying: 500 },
  client: { retryInterval: 0.25 },
  async during({ ironic, front, target }) {
    await until(() => ironic.sim.log({ method: target.method }).length >= 2);
    await front.stop();
    await sleep(700);
    await front.start();
  },
  server: ({ log }) => {
    const gaps = log.slice(1).map((e, i) => e.t - log[i].t);
    return Math.max(...gaps) >= 650 ? [] : [`no gap of the restart's length between requests (largest ${Math.max(...gaps)} ms)`];
  },
});

matrix('a body cut mid-stream (reset after the headers), then answers', GETS, {
  fault: { kind: 'cut', count: 2 },
  server: checks(faultedThenServed(2)),
});

matrix('a Content-Length longer than the body (the body ends early), then answers', GETS, {
  fault: { kind: 'length', by: 64, count: 2 },
  server: checks(faultedThenServed(2)),
});

matrix('a Content-Length shorter than the body: cut JSON, not retried', GETS, {
  fault: { kind: 'length', by: -16 },
  fast: true,
  expect: fails(InvalidResponseError, /must be a JSON object; got bytes/),
  server: checks(attempts(1)),
});

matrix('a slow drip within requestTimeout', GETS, {
  fault: (ctx) => ({ kind: 'drip', chunk: ctx.mode === 'list' ? 1024 : 48, ms: 20 }),
});

matrix('a slow drip past requestTimeout: settles by the deadline, drips cancelled', GETS, {
  timeout: 2,
  client: { requestTimeout: 0.6 },
  fault: { kind: 'drip', chunk: 4, ms: 200 },
  expect: fails([ConnectionError, StateTransitionTimeout]),
  server: checks(hungUpOn('drip')),
});

// ---------------------------------------------------------------- bodies

// python-ironicclient's words: what Python made of the body (raw bytes for
// JSON that does not parse, None for a type that is not JSON).
const BODIES = [
  ['malformed JSON', { kind: 'malformed' }, InvalidResponseError, /must be a JSON object; got bytes/],
  [
    'an HTML page with 200',
    { kind: 'body', body: '<html><body>login</body></html>', contentType: 'text/html' },
    InvalidResponseError,
    /must be a JSON object; got NoneType/,
  ],
  ['an empty 200', { kind: 'body', body: '' }, InvalidResponseError, /must be a JSON object; got bytes/],
  ['null', { kind: 'body', body: 'null' }, InvalidResponseError, /must be a JSON object; got NoneType/],
  ['a list', { kind: 'body', body: '[]' }, InvalidResponseError, /must be a JSON object; got list/],
  ['a string', { kind: 'body', body: '"active"' }, InvalidResponseError, /must be a JSON object/],
  ['a number', { kind: 'body', body: '42' }, InvalidResponseError, /must be a JSON object/],
  ['a deep nest', { kind: 'body', body: '{"a":'.repeat(100_000) }, InvalidResponseError, /must be a JSON object; got bytes/],
  ['an HTML 502 from a proxy', { kind: 'html', status: 502 }, IronicHttpError, /\(HTTP 502\)/],
];
for (const [name, fault, Kind, message] of BODIES) {
  matrix(`${name}: ${Kind.name} at once, not retried`, name === 'malformed JSON' ? [...GETS, 'allocationPost'] : GETS, {
    fault,
    fast: true,
    expect: fails(Kind, message),
    server: checks(attempts(1)),
  });
}

matrix('an honest gzip answer is read', GETS, {
  fault: { kind: 'gzip', bytes: 64 * 1024 },
});

matrix('a gzip bomb (64 MiB inflated): InvalidResponseError, not retried, wasm memory bounded', GETS, {
  // Reading it takes a while on a loaded machine: not long enough to be cut and asked again.
  client: { requestTimeout: 30 },
  fault: { kind: 'gzip', bytes: 64 * MiB },
  fast: true,
  measured: true,
  expect: fails(InvalidResponseError, /maxResponseBytes/),
  server: checks(attempts(1), wasmGrowthCapped(DEFAULT_MAX_RESPONSE)),
});

matrix('a gzip bomb (256 MiB) against maxResponseBytes 1 MiB: memory follows the cap, not the answer', ['single', 'list'], {
  client: { maxResponseBytes: MiB, requestTimeout: 30 },
  fault: { kind: 'gzip', bytes: 256 * MiB },
  fast: true,
  measured: true,
  expect: fails(InvalidResponseError, /maxResponseBytes/),
  server: checks(attempts(1), wasmGrowthCapped(MiB)),
});

matrix('an answer just under maxResponseBytes is read', ['single'], {
  client: { maxResponseBytes: 256 * 1024 },
  fault: { kind: 'gzip', bytes: 250 * 1024 },
});

// ---------------------------------------------------------------- auth

matrix('401, then a fresh token from getToken', WAITS, {
  fault: { kind: 'status', status: 401, count: 1 },
  client: () => {
    let issued = 0;
    return { token: undefined, getToken: async () => `SECRET-tok-${++issued}` };
  },
  secrets: ['SECRET-tok-'],
  // As docs/configuration.md says: asked before the first request and once more after the 401.
  server: checks(({ seen, mode }) => {
    const tokens = [...new Set(seen.map((r) => r.headers['x-auth-token']).filter(Boolean))];
    return tokens.join() === 'SECRET-tok-1,SECRET-tok-2'
      ? undefined
      : `${mode}: getToken was asked ${tokens.at(-1)?.slice(11)} times (expected twice: before the first request, after the 401); tokens sent: ${tokens.join(', ')}`;
  }),
});

matrix('401 while getToken throws: AuthError at once, not retried', WAITS, {
  fault: { kind: 'status', status: 401, count: 1 },
  client: () => {
    let calls = 0;
    return {
      token: undefined,
      getToken: () => {
        if (++calls > 1) throw new Error('keystone is down');
        return 'SECRET-first';
      },
    };
  },
  secrets: ['SECRET-first'],
  fast: true,
  expect: fails(AuthError, /keystone is down/),
  server: checks(attempts(1)),
});

matrix('401 while getToken returns a non-string: AuthError at once', ['single', 'provision'], {
  fault: { kind: 'status', status: 401, count: 1 },
  client: () => {
    let calls = 0;
    return { token: undefined, getToken: () => (++calls > 1 ? 42 : 'SECRET-first') };
  },
  secrets: ['SECRET-first'],
  fast: true,
  expect: fails(AuthError),
  server: checks(attempts(1)),
});

// ---------------------------------------------------------------- gone, versions

const DELETED = { single: 's1', list: 'l07', provision: 'p1' };
matrix('404 mid-wait (the node is deleted while deploying)', ['single', 'list', 'provision'], {
  timing: { deploying: 150 },
  transitions: (mode) => [{ node: DELETED[mode], action: 'active', delete: true }],
  expect: fails(IronicHttpError, /could not be found/, { status: 404 }),
});

matrix('404 mid-wait with settle all: that node not-found, the others reached', ['single', 'list'], {
  timing: { deploying: 150 },
  transitions: (mode) => [{ node: DELETED[mode], action: 'active', delete: true }],
  wait: { settle: 'all' },
  expect: (mode, o) => settledAll([DELETED[mode]], 'not-found', IronicHttpError)(mode, o),
});

matrix('406 without version headers: UnsupportedVersionError, not retried', WAITS, {
  fault: { kind: 'status', status: 406, versionHeaders: false },
  fast: true,
  expect: fails(UnsupportedVersionError),
  server: checks(({ onTarget, targets }) => (onTarget.length <= 2 * targets ? undefined : `${onTarget.length} requests on the target`)),
});

// ---------------------------------------------------------------- redirects: never followed, credentials never leave

for (const status of [307, 308]) {
  matrix(`${status} to another origin: not followed, nothing reaches it`, [...WAITS, 'allocationPost'], {
    fault: ({ recorder }) => ({ kind: 'redirect', status, location: `${recorder.url}/hidden-path{path}` }),
    fast: true,
    expect: fails(IronicHttpError, /redirect/i, { status }),
    server: checks(attempts(1), ({ outcome, recorder }) => {
      const m = outcome.error?.message ?? '';
      if (!m.includes(recorder.url)) return `the message does not name the target's origin (${recorder.url}): ${m}`;
      if (m.includes('hidden-path')) return `the message gives more than the target's origin: ${m}`;
      return undefined;
    }),
  });
}
for (const status of [301, 302, 303]) {
  matrix(`${status} to another origin: not followed`, ['single', 'provision'], {
    fault: ({ recorder }) => ({ kind: 'redirect', status, location: `${recorder.url}{path}` }),
    fast: true,
    expect: fails(IronicHttpError, /redirect/i, { status }),
    server: checks(attempts(1)),
  });
}
matrix('307 to the same origin (a loop to itself): not followed, not retried', WAITS, {
  fault: { kind: 'redirect', status: 307, location: '{path}' },
  fast: true,
  expect: fails(IronicHttpError, /redirect/i, { status: 307 }),
  server: checks(attempts(1)),
});
matrix('307 on a rescue PUT: the rescue password never reaches another origin', ['provision'], {
  nodes: () => PUT_NODES.map((name) => ({ name, provision_state: 'active' })),
  fault: ({ recorder }) => ({ kind: 'redirect', status: 307, location: `${recorder.url}{path}` }),
  run: (client, { timeout }) =>
    client.provision(PUT_NODES, 'rescue', { rescuePassword: 'SECRET-RESCUE-PW', wait: true, timeout, pollInterval: POLL }),
  secrets: ['SECRET-RESCUE-PW'],
  fast: true,
  expect: fails(IronicHttpError, /redirect/i, { status: 307 }),
});

// ---------------------------------------------------------------- node lists that do not advance

const PAGES = ['list', 'listNodes'];
matrix('pages of 10 (a server max_limit): followed to the end', PAGES, {
  fault: { kind: 'page', limit: 10 },
});
matrix('a list cut short (no next after 10): the rest by per-node GETs', ['list'], {
  fault: { kind: 'page', limit: 10, next: 'none' },
  // Rounds of a listing and 50 GETs each: on a loaded machine 4 s of wall
  // clock may not see all 60 nodes arrive. The case is about which
  // requests are made, not how fast, so its deadline is far away.
  timeout: 60,
  server: checks(({ log }) => {
    const singles = new Set(log.filter((e) => e.method === 'GET' && e.path.startsWith('/v1/nodes/l')).map((e) => e.path.slice(10)));
    const missing = LIST.slice(10).filter((n) => !singles.has(n));
    return missing.length ? `${missing.length} of the 50 unlisted nodes were never fetched one by one` : undefined;
  }),
});
// [name, rules (the first that fires decides; pages of 10 otherwise), list requests at most]
const TENS = { kind: 'page', limit: 10 };
const NOT_ADVANCING = [
  ['next repeats its own marker', [{ kind: 'page', limit: 10, next: 'same', skip: 1 }, TENS], 2],
  ['the server ignores marker (the first page again)', [{ kind: 'page', limit: 10, ignoreMarker: true }], 2],
  ['next goes back to an earlier marker', [{ kind: 'page', limit: 10, next: 'l09', skip: 2 }, TENS], 3],
  ['an empty page whose next says there is more', [{ kind: 'page', fake: 0, next: 'fake', skip: 1 }, TENS], 2],
];
for (const [name, fault, pages] of NOT_ADVANCING) {
  matrix(`${name}: InvalidResponseError, paging stops`, PAGES, {
    fault,
    expect: fails(InvalidResponseError, /does not advance|seen before|no new node/),
    server: checks(({ onTarget }) =>
      onTarget.length <= pages ? undefined : `${onTarget.length} list requests (expected at most ${pages})`,
    ),
  });
}
// Which nodes the broken listing affects is left open by the contract: at
// least the nodes it never reached (l10 on) must end in error; the ones
// seen on the first page may still be reached.
matrix('non-advancing pages with settle all: the nodes never listed get error', ['list'], {
  fault: [{ kind: 'page', limit: 10, next: 'same', skip: 1 }, TENS],
  wait: { settle: 'all' },
  expect: (_mode, o) => {
    if ('error' in o) return `expected a report, got ${describe(o.error)}`;
    const wrong = o.value.nodes.filter((n) =>
      LIST.indexOf(n.node) < 10 && n.outcome === 'reached' ? false : n.outcome !== 'error' || !(n.error instanceof InvalidResponseError),
    );
    return wrong.length
      ? `${wrong.length} node(s) not in error with InvalidResponseError: ${wrong
          .slice(0, 3)
          .map((n) => `${n.node} ${n.outcome}`)
          .join(', ')}`
      : undefined;
  },
});
matrix('an endless list of fresh made-up nodes: stopped at 1000 pages', PAGES, {
  timeout: 20,
  bound: 20 + SLACK,
  fault: { kind: 'page', fake: 5, next: 'fake' },
  expect: fails(InvalidResponseError, /1000 pages/),
  server: checks(({ onTarget }) => (onTarget.length <= 1001 ? undefined : `${onTarget.length} list requests`)),
});

// ---------------------------------------------------------------- deadlines

matrix('GET /v1 hanging, requestTimeout 0.6: the negotiation is bounded by the wait', ['single', 'list'], {
  timeout: 2,
  client: { requestTimeout: 0.6 },
  faults: () => [{ method: 'GET', path: '/v1', kind: 'hang' }],
  expect: fails([ConnectionError, StateTransitionTimeout]),
  server: checks(hungUpOn('hang')),
});

// The contract's bound would be timeout + requestTimeout (62 s) here; the
// issue's case is exactly this one (ended after 17 s for a 3 s wait): a
// demanding user expects the wait's own deadline, so the in-flight
// negotiation is cut at it.
matrix("GET /v1 hanging, default requestTimeout: settles at the wait's deadline", ['single'], {
  timeout: 2,
  client: { requestTimeout: 60 },
  faults: () => [{ method: 'GET', path: '/v1', kind: 'hang' }],
  fast: true,
  bound: 2 + SLACK,
  expect: fails([ConnectionError, StateTransitionTimeout]),
  server: checks(hungUpOn('hang')),
});

const SLOW = Array.from({ length: 40 }, (_, i) => `w${String(i).padStart(2, '0')}`);
matrix('40 nodes with slow GETs, timeout 1, concurrency 8: no request starts after the deadline', ['single'], {
  timeout: 1,
  client: { requestTimeout: 2 },
  nodes: () => available(SLOW),
  moving: () => SLOW,
  transitions: () => [{ action: 'active', stall: true }],
  faults: () => [{ method: 'GET', path: '/v1/nodes/w*', kind: 'latency', ms: 600 }],
  run: (client, o) => client.waitForProvisionState(SLOW, 'active', { ...o, concurrency: 8 }),
  expect: fails(StateTransitionTimeout, /failed to reach state active in 1 seconds/),
});

matrix('a list cut short with slow per-node fallback GETs, timeout 1: no request starts after the deadline', ['list'], {
  timeout: 1,
  client: { requestTimeout: 2 },
  transitions: () => [{ action: 'active', stall: true }],
  faults: () => [
    { method: 'GET', path: '/v1/nodes/l*', kind: 'latency', ms: 400 },
    { method: 'GET', path: '/v1/nodes', kind: 'page', limit: 10, next: 'none' },
  ],
  expect: fails(StateTransitionTimeout),
});

const MANY = Array.from({ length: 20 }, (_, i) => `c${String(i).padStart(2, '0')}`);
matrix('20 concurrent waits on one client, with random 503s, resets and latency', ['single'], {
  timeout: 8,
  nodes: () => available(MANY),
  moving: () => MANY,
  faults: () => [
    { method: 'GET', path: '/v1/nodes/c*', kind: 'latency', ms: 30, fraction: 0.3 },
    { method: 'GET', path: '/v1/nodes/c*', kind: 'status', status: 503, fraction: 0.2 },
    { method: 'GET', path: '/v1/nodes/c*', kind: 'reset', fraction: 0.05 },
  ],
  run: (client, o) => Promise.all(MANY.map((name) => client.waitForProvisionState(name, 'active', o))),
  expect: (_mode, o) => {
    if ('error' in o) return `expected 20 reports, got ${describe(o.error)}`;
    const off = o.value.filter((r) => !r.ok);
    return off.length ? `${off.length} of 20 waits not ok` : undefined;
  },
  server: checks(({ log }) => {
    const negotiations = log.filter((e) => e.path === '/v1').length;
    return negotiations === 1 ? undefined : `${negotiations} version negotiations (one shared by the client)`;
  }),
});

// 100,000 identifiers (none exists): refused up front, or handled within
// the deadline; never a hang.
const HUGE = Array.from({ length: 100_000 }, (_, i) => `x${i}`);
matrix('100k identifiers, first-failure', ['single'], {
  timeout: 2,
  run: (client, o) => client.waitForProvisionState(HUGE, 'active', o),
  expect: fails([InvalidArgumentError, IronicHttpError, StateTransitionTimeout]),
});
matrix('100k identifiers, settle all', ['single'], {
  timeout: 2,
  run: (client, o) => client.waitForProvisionState(HUGE, 'active', { ...o, settle: 'all' }),
  expect: (_mode, o) => {
    if ('error' in o)
      return o.error instanceof InvalidArgumentError ? undefined : `expected a report or InvalidArgumentError, got ${describe(o.error)}`;
    const nodes = o.value.nodes;
    if (nodes.length !== HUGE.length) return `${nodes.length} nodes in the report`;
    const odd = nodes.filter((n) => !['not-found', 'timed-out'].includes(n.outcome));
    return odd.length ? `${odd.length} nodes neither not-found nor timed-out (${odd[0].outcome})` : undefined;
  },
});
matrix('100k identifiers to provision', ['single'], {
  timeout: 2,
  run: (client, o) => client.provision(HUGE, 'deploy', { wait: true, timeout: o.timeout, pollInterval: o.pollInterval }),
  expect: fails([InvalidArgumentError, IronicHttpError]),
});

// ---------------------------------------------------------------- 50 MB

// The simulator runs in a child process here, so that the memory measured is the client's.
test('a 50 MB answer: InvalidResponseError at once, not retried, memory bounded', async () => {
  const sim = await startSimProcess({
    nodes: [...LIST.map((name) => ({ name, provision_state: 'active' })), { name: 'big', provision_state: 'active' }, HEALTHY],
    faults: [
      { method: 'GET', path: '/v1/nodes/big', kind: 'large', bytes: 50_000_000 },
      { method: 'GET', path: '/v1/nodes', kind: 'large', bytes: 50_000_000 },
      { method: 'GET', path: '/v1/nodes/detail', kind: 'large', bytes: 50_000_000 },
    ],
  });
  const problems = [];
  try {
    const client = new IronicClient({ endpoint: sim.url, token: TOKEN, requestTimeout: 30, retryInterval: 0.05 });
    await client.getNode('ok1'); // warm: negotiated, the first buffers made
    const before = await memorySample();
    const calls = [
      ['getNode', () => client.getNode('big')],
      ['a wait on one node', () => client.waitForProvisionState('big', 'active', { timeout: 20, pollInterval: POLL })],
      ['a wait in list mode', () => client.waitForProvisionState(LIST, 'active', { timeout: 20, pollInterval: POLL })],
      ['listNodes', () => client.listNodes()],
    ];
    for (const [name, call] of calls) {
      const started = performance.now();
      const outcome = await settleWithin(call(), 120_000);
      const elapsed = (performance.now() - started) / 1000;
      // At once: one request (counted below), its answer refused as it came, not waited out (a 20 s wait
      // would end in a StateTransitionTimeout, a 30 s requestTimeout in a ConnectionError).
      const wrong = outcome.hung ? `did not settle in 120 s` : fails(InvalidResponseError)('single', outcome);
      if (wrong) problems.push(`${name}: ${wrong} (after ${elapsed.toFixed(1)} s)`);
    }
    const after = await memorySample();
    const grown = (k) => (after[k] - before[k]) / MiB;
    const figures = `wasm +${grown('wasm').toFixed(1)} MiB, arrayBuffers +${grown('arrayBuffers').toFixed(1)} MiB, rss +${grown('rss').toFixed(1)} MiB, heap +${grown('heapUsed').toFixed(1)} MiB`;
    console.log(`50 MB answers: ${figures}`);
    if (grown('wasm') > 24) problems.push(`the wasm memory grew: ${figures}`);
    if (grown('arrayBuffers') > 24) problems.push(`array buffers grew: ${figures}`);
    if (grown('rss') > 128) problems.push(`rss grew: ${figures}`);
    const log = await sim.log();
    const big = log.filter((e) => e.fault === 'large');
    if (big.length !== calls.length) problems.push(`${big.length} requests for the 4 large answers (not retried: 4)`);
    await sim.clearFaults();
    const healthy = await settleWithin(client.waitForProvisionState('ok1', 'active', { timeout: 30 }), 60_000);
    if (!healthy.value?.ok) problems.push(`the same client no longer works: ${healthy.error ? describe(healthy.error) : 'hung'}`);
  } finally {
    await sim.close();
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

after(() => {
  // Nothing the package keeps (a timer, a socket) may hold the process after the last test.
  setTimeout(() => {
    console.error('fault-matrix: the process is still alive 10 s after the last test: something keeps the event loop busy');
    process.exit(1);
  }, 10_000).unref();
});
