// One abort trial of tests/node/abort-trials.test.mjs, run away from the
// test's own thread so that a call which freezes its event loop cannot
// freeze the test:
// - in a worker thread (the test sends specs, this answers results), or
// - as a child process (`node abort-trial.mjs '<spec JSON>'`), which runs
//   one trial, prints its result as one JSON line, and must then exit by
//   itself: nothing of an aborted call may keep Node alive.
// A spec is plain JSON (see runTrial); the client, its callbacks, the signal
// and the abort reason are made here.
import { isMainThread, parentPort } from 'node:worker_threads';
import { IronicClient } from 'ironic-wait';

const now = () => performance.timeOrigin + performance.now();

// Every fetch the package starts, with the instant it started: a fetch that
// starts after the abort is a request sent after the abort, however fast the
// server is. (The package calls the global fetch at each request, with a
// Request object.) Each also keeps the signal it was made with and whether
// its promise had settled: a fetch still unsettled at the abort is a request
// in flight, which the abort must cancel (its signal aborted: Node's fetch
// then hangs up on the server). The settling is seen in order, not timed:
// this callback is the promise's first, so it runs before the package sees
// the answer.
const fetches = [];
const platformFetch = globalThis.fetch;
globalThis.fetch = function recordedFetch(input, init) {
  const entry = {
    t: now(),
    url: String(input?.url ?? input),
    method: init?.method ?? input?.method ?? 'GET',
    signal: init?.signal ?? input?.signal ?? null,
    settled: false,
  };
  fetches.push(entry);
  const promise = Reflect.apply(platformFetch, this, [input, init]);
  Promise.resolve(promise).then(
    () => {
      entry.settled = true;
    },
    () => {
      entry.settled = true;
    },
  );
  return promise;
};
/** A fetch as the result carries it (plain JSON). */
const plain = ({ t, url, method }) => ({ t, url, method });

const escaped = [];
process.on('uncaughtException', (e) => escaped.push(`uncaught exception: ${text(e)}`));
process.on('unhandledRejection', (e) => escaped.push(`unhandled rejection: ${text(e)}`));

function text(value) {
  try {
    if (typeof value === 'symbol') return value.toString();
    if (value instanceof Error || value instanceof DOMException) return `${value.name}: ${value.message}`;
    return typeof value === 'object' && value !== null ? `object ${JSON.stringify(value)}` : `${typeof value} ${String(value)}`;
  } catch {
    return 'unprintable value';
  }
}

/** The abort reasons trials use: any value at all may be a reason. */
function makeReason(kind) {
  switch (kind) {
    case 'error':
      return new Error('trial abort');
    case 'string':
      return 'trial abort';
    case 'object':
      return { trial: 'abort' };
    case 'null':
      return null;
    case 'zero':
      return 0;
    case 'symbol':
      return Symbol('trial abort');
    case 'revoked-proxy': {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    }
    case 'undefined':
      return undefined;
    default:
      throw new Error(`unknown reason kind ${kind}`);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs one trial. `spec`:
 * - `url`; `client`: client options; `tokenDelay`: getToken answers after
 *   this many ms, or `'never'` (absent: no getToken); `tokenFromCall`: the
 *   first calls before this one answer at once (a refresh after a 401);
 * - `call`, `args`, `options`: the method, its leading arguments and options
 *   (the signal, and an onProgress when `abortAtEvent`, are added here);
 * - `abortAfter`: ms after the call (-1: before it); or `abortAtEvent`: the
 *   k-th progress event aborts, from inside onProgress;
 * - `reason`: see makeReason; `settleWithin`: ms to wait after the abort.
 * `hooks.aborting(at)` is told the instant just before the abort.
 * Judged by order, not by time: `settledInTurn` says the promise had settled
 * when the event loop's next turn began after the abort (the package
 * rejects within the abort's own task); `inFlight` are the fetches to
 * `spec.url` unsettled at the abort, each with whether its signal was
 * aborted by the end of the trial.
 * @returns the result, plain JSON: instants are ms since the epoch.
 */
export async function runTrial(spec, hooks = {}) {
  const controller = new AbortController();
  const reason = makeReason(spec.reason);
  const result = {
    id: spec.id,
    abortAt: null,
    settledAt: null,
    outcome: 'pending',
    settledFirst: false,
    reasonMatches: false,
    error: null,
    settledInTurn: null,
    fetches: [],
    inFlight: [],
    escaped: [],
  };
  let inFlight = [];
  const abort = () => {
    if (result.abortAt !== null) return;
    result.settledFirst = result.outcome !== 'pending';
    result.abortAt = now();
    inFlight = fetchesTo(spec.url).filter((f) => !f.settled);
    hooks.aborting?.(result.abortAt);
    if (spec.reason === 'undefined') controller.abort();
    else controller.abort(reason);
    // After this task and its microtasks, before anything else the loop does.
    setImmediate(() => {
      result.settledInTurn = result.outcome !== 'pending';
    });
  };

  const clientOptions = { endpoint: spec.url, ...spec.client };
  if (spec.tokenDelay !== undefined) {
    let asked = 0;
    clientOptions.getToken = () => {
      asked += 1;
      if (asked < (spec.tokenFromCall ?? 1)) return `token-${asked}`;
      if (spec.tokenDelay === 'never') return new Promise(() => {});
      return sleep(spec.tokenDelay).then(() => `token-${asked}`);
    };
  }
  const client = new IronicClient(clientOptions);
  const options = { ...spec.options, signal: controller.signal };
  if (spec.abortAtEvent !== undefined) {
    let events = 0;
    options.onProgress = () => {
      events += 1;
      if (events === spec.abortAtEvent) abort();
    };
  }

  if (spec.abortAfter === -1) abort();
  let settle;
  const settled = new Promise((resolve) => {
    settle = resolve;
  });
  const promise = client[spec.call](...(spec.args ?? []), options);
  promise.then(
    () => {
      result.outcome = 'resolved';
      result.settledAt = now();
      settle();
    },
    (error) => {
      result.outcome = 'rejected';
      result.settledAt = now();
      result.error = text(error);
      const expected = controller.signal.reason;
      result.reasonMatches =
        controller.signal.aborted &&
        error === expected &&
        (spec.reason !== 'undefined' || (error instanceof DOMException && error.name === 'AbortError'));
      settle();
    },
  );
  if (spec.abortAfter !== undefined && spec.abortAfter >= 0) setTimeout(abort, spec.abortAfter);

  // Wait for the end, but never keep the process alive for it: that is the
  // client's doing or nobody's.
  const limit = (spec.abortAfter ?? 0) + (spec.settleWithin ?? 1000) + 5000;
  await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, limit).unref())]);
  if (result.abortAt !== null && result.outcome === 'pending') {
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, spec.settleWithin ?? 1000).unref())]);
  }
  if (result.abortAt !== null && result.settledInTurn === null) await new Promise((resolve) => setImmediate(resolve));
  result.inFlight = inFlight.map((f) => ({ ...plain(f), hungUp: f.signal?.aborted === true }));
  return result;
}

/** The fetches to `url` (this trial's own server) so far. */
const fetchesTo = (url) => fetches.filter((f) => f.url.startsWith(`${url}/`));

if (!isMainThread && parentPort) {
  parentPort.on('message', async (spec) => {
    const mark = escaped.length;
    const result = await runTrial(spec, { aborting: (at) => parentPort.postMessage({ type: 'aborting', id: spec.id, at }) });
    // What the call still does after settling (a late fetch, a stray
    // rejection) is this trial's too.
    await sleep(spec.grace ?? 150);
    result.fetches = fetchesTo(spec.url).map(plain);
    result.escaped = escaped.slice(mark);
    parentPort.postMessage({ type: 'result', result });
  });
} else if (process.argv[2]) {
  const spec = JSON.parse(process.argv[2]);
  const result = { id: spec.id, outcome: 'pending at exit', abortAt: null };
  runTrial(spec, {
    aborting: (at) => {
      result.abortAt = at;
    },
  }).then((settled) => Object.assign(result, settled));
  // Reported when Node exits by itself (stdout is synchronous for a pipe).
  process.on('exit', () => {
    Object.assign(result, { fetches: fetchesTo(spec.url).map(plain), escaped, exitAt: now() });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  });
}
