// The client's transport options against the simulator: `fetch` carries
// every request (the endpoint below does not resolve: only the caller's
// fetch knows where Ironic is), abort and time limits reach it through the
// request's signal, what it does wrong is a typed error; `onRequest` sees
// each request's method, path, status, duration and request id, and never a
// header or a body.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConnectionError, InvalidArgumentError, IronicClient } from 'ironic-wait';
import { nodes, startIronic } from './harness.mjs';

const TOKEN = 'tok-\u00e9-SECRET';
const NOWHERE = 'http://ironic.invalid:6385';

let ironic;
before(async () => {
  ironic = await startIronic({
    nodes: nodes({ n1: 'available', n2: 'available' }),
    transitions: [{ node: 'n2', action: 'deploy', fail: 'No deploy steps returned by the driver' }],
  });
});
after(() => ironic?.close());

/** A fetch that sends each request to the simulator instead, recording it. */
function redirected(log = []) {
  return async (request) => {
    assert.ok(request instanceof Request, 'called with a Request');
    log.push({ method: request.method, url: request.url, signal: request.signal });
    return fetch(new Request(request.url.replace(NOWHERE, ironic.url), request));
  };
}

test('fetch carries every request of a wait, with the request as the platform would send it', async () => {
  const log = [];
  const before = ironic.seen.length;
  const client = new IronicClient({ endpoint: NOWHERE, token: TOKEN, fetch: redirected(log) });
  const report = await client.provision(['n1'], 'deploy', { wait: true, timeout: 60, pollInterval: 0.05 });
  assert.equal(report.nodes[0].outcome, 'reached');
  const seen = ironic.seen.slice(before);
  assert.equal(log.length, seen.length, 'each request the simulator saw came through the option');
  assert.deepEqual(
    log.map((r) => `${r.method} ${new URL(r.url).pathname}`),
    seen.map((r) => `${r.method} ${r.url.split('?')[0]}`),
  );
  assert.ok(seen.every((r) => r.headers['x-auth-token'] === TOKEN));
});

test('an abort cancels the request through its signal, and the call rejects with the reason', async () => {
  let seen;
  const hanging = (request) => {
    seen = request.signal;
    return new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)));
  };
  const client = new IronicClient({ endpoint: NOWHERE, fetch: hanging });
  const controller = new AbortController();
  const reason = new Error('stop');
  const call = client.getNode('n1', { signal: controller.signal });
  while (!seen) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(seen.aborted, false);
  controller.abort(reason);
  await assert.rejects(call, (e) => e === reason);
  assert.equal(seen.aborted, true, "the caller's fetch saw the abort");
});

test("requestTimeout cancels a request the caller's fetch holds, as a connection failure", async () => {
  const signals = [];
  const hanging = (request) => {
    signals.push(request.signal);
    return new Promise(() => {});
  };
  const client = new IronicClient({ endpoint: NOWHERE, fetch: hanging, requestTimeout: 0.05, maxRetries: 1, retryInterval: 0 });
  await assert.rejects(client.getNode('n1'), ConnectionError);
  assert.equal(signals.length, 2, 'tried, then retried once');
  assert.ok(signals.every((s) => s.aborted));
});

test("what the caller's fetch throws, rejects with or answers that is no Response is a ConnectionError, retried", async () => {
  const cases = [
    [
      () => {
        throw new TypeError('proxy refused');
      },
      /proxy refused/,
    ],
    [() => Promise.reject(new Error('mTLS handshake failed')), /mTLS handshake failed/],
    [() => 42, /fetch resolved with something that is not a Response/],
    [() => Promise.resolve(null), /fetch resolved with something that is not a Response/],
  ];
  for (const [fetch, message] of cases) {
    let calls = 0;
    const client = new IronicClient({
      endpoint: NOWHERE,
      maxRetries: 2,
      retryInterval: 0,
      fetch: (r) => {
        calls++;
        return fetch(r);
      },
    });
    await assert.rejects(client.getNode('n1'), (e) => e instanceof ConnectionError && message.test(e.message));
    assert.equal(calls, 3, `${message}: tried and retried twice`);
  }
});

test("a Response of another class (undici's, a polyfill's) is read by its members", async () => {
  const lookalike = async (request) => {
    const real = await fetch(new Request(request.url.replace(NOWHERE, ironic.url), request));
    return { status: real.status, type: real.type, headers: real.headers, body: real.body };
  };
  const client = new IronicClient({ endpoint: NOWHERE, fetch: lookalike });
  const node = await client.getNode('n1', { fields: ['name', 'provision_state'] });
  assert.equal(node.name, 'n1');
});

test('onRequest sees each request: method, path, status, duration and request id, never a header or a body', async () => {
  const records = [];
  const before = ironic.seen.length;
  const client = new IronicClient({ endpoint: ironic.url, token: TOKEN, onRequest: (r) => records.push(r) });
  await assert.rejects(client.provision(['n2'], 'deploy', { wait: true, pollInterval: 0.05, rescuePassword: undefined }));
  await assert.rejects(client.getNode('no-such-node'));
  const seen = ironic.seen.slice(before);
  assert.equal(records.length, seen.length);
  for (const [i, r] of records.entries()) {
    assert.deepEqual(Object.keys(r).sort(), ['duration', 'method', 'path', 'requestId', 'status']);
    assert.equal(`${r.method} ${r.path}`, `${seen[i].method} ${seen[i].url}`);
    assert.ok(r.duration >= 0 && r.duration < 60, `${r.duration} s`);
    assert.match(r.requestId, /^req-/);
  }
  assert.deepEqual(records.map((r) => `${r.method} ${r.path.split('?')[0]} ${r.status}`).slice(0, 2), [
    'GET /v1 200',
    'PUT /v1/nodes/n2/states/provision 202',
  ]);
  assert.equal(records.at(-1).status, 404);
  assert.ok(!JSON.stringify(records).includes(TOKEN), 'no credential in what the hook sees');
});

test('onRequest: a failed connection has no status; a hook that throws changes nothing', async () => {
  const records = [];
  const failing = new IronicClient({
    endpoint: 'http://127.0.0.1:9',
    maxRetries: 1,
    retryInterval: 0,
    onRequest: (r) => records.push(r),
  });
  await assert.rejects(failing.getNode('n1'), ConnectionError);
  assert.deepEqual(
    records.map((r) => [r.method, r.path, r.status, r.requestId]),
    [
      ['GET', '/v1', null, null],
      ['GET', '/v1', null, null],
    ],
  );
  const throwing = new IronicClient({
    endpoint: ironic.url,
    onRequest: () => {
      throw new Error('hook failed');
    },
  });
  assert.equal((await throwing.getNode('n1')).name, 'n1');
});

test('fetch and onRequest must be functions', () => {
  for (const option of ['fetch', 'onRequest']) {
    assert.throws(
      () => new IronicClient({ endpoint: ironic.url, [option]: 'yes' }),
      (e) => e instanceof InvalidArgumentError && e.message === `Option ${option} must be a function`,
    );
  }
});

test('a ConnectionError chains what fetch threw as its cause; an AuthError what getToken() threw', async () => {
  const refused = new IronicClient({ endpoint: 'http://127.0.0.1:9', maxRetries: 0 });
  const e = await refused.getNode('n1').catch((e) => e);
  assert.ok(e instanceof ConnectionError);
  assert.ok(e.cause instanceof TypeError, 'the runtime fetch failure');
  assert.equal(e.cause.message, 'fetch failed');
  assert.ok(!Object.keys(e).includes('cause'), 'a cause as the platform sets it: not enumerable');

  const thrown = new Error('mTLS handshake failed');
  const own = new IronicClient({ endpoint: NOWHERE, maxRetries: 1, retryInterval: 0, fetch: () => Promise.reject(thrown) });
  assert.equal((await own.getNode('n1').catch((e) => e)).cause, thrown, 'the very value the last attempt rejected with');

  const sealed = new RangeError('vault sealed');
  const tokenless = new IronicClient({
    endpoint: ironic.url,
    getToken: async () => {
      throw sealed;
    },
  });
  const auth = await tokenless.getNode('n1').catch((e) => e);
  assert.equal(auth.name, 'AuthError');
  assert.equal(auth.message, 'Authentication failed: getToken() failed: vault sealed');
  assert.equal(auth.cause, sealed);

  // step() keeps its error in its answer: chained the same way.
  const checkpoint = own.checkpoint('waitForProvisionState', ['n1'], 'active');
  const { error } = await own.step(checkpoint);
  assert.ok(error instanceof ConnectionError);
  assert.equal(error.cause, thrown);
});

test('step with retryOutages: a round lost to an outage gives its checkpoint back, due later, and says why', async () => {
  let down = true;
  const flaky = (request) => (down ? Promise.reject(new TypeError('fetch failed')) : redirected()(request));
  const client = new IronicClient({ endpoint: NOWHERE, fetch: flaky, maxRetries: 1, retryInterval: 0 });
  const planned = client.checkpoint('waitForProvisionState', ['n1'], 'active', { timeout: 600 });
  const lost = await client.step(planned, { retryOutages: true });
  assert.ok(lost.outage instanceof ConnectionError, 'the outage');
  assert.equal(lost.outage.cause.message, 'fetch failed');
  assert.equal(lost.error, null);
  assert.deepEqual({ ...JSON.parse(lost.checkpoint), outages: undefined }, { ...JSON.parse(planned), outages: undefined });
  assert.equal(JSON.parse(lost.checkpoint).outages, 1);
  const again = await client.step(lost.checkpoint, { retryOutages: true });
  assert.equal(JSON.parse(again.checkpoint).outages, 2, 'counted in a row');
  assert.ok(again.wakeAtMs - lost.wakeAtMs >= 1000, 'later and later');
  // Without it, the step ends the call with the error, as python-ironicclient's wait would.
  const ended = await client.step(planned);
  assert.equal(ended.checkpoint, null);
  assert.ok(ended.error instanceof ConnectionError);
  // Ironic back: the wait goes on from the checkpoint it was given back.
  down = false;
  const done = await client.step(again.checkpoint, { retryOutages: true });
  assert.equal(done.checkpoint, null);
  assert.equal(done.report.nodes[0].outcome, 'reached');
});
