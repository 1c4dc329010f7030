// Secrets never leave: not for another origin (redirects), not into any
// message, stack, error property, report or progress event, whatever fails.
// Every output a caller can see is captured and searched for every secret.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, test } from 'node:test';
import { InvalidArgumentError, IronicClient, IronicHttpError } from 'ironic-wait';
import { listen } from '../../sim/http.mjs';
import { nodes, startIronic } from './harness.mjs';

const TOKEN = 'tok-SECRET-1f3a';
const FRESH_TOKEN = 'tok-SECRET-fresh-77';
const PASSWORD = 'pw-SECRET-9c2e';
const RESCUE = 'rescue-SECRET-5d1b';
const SECRETS = [TOKEN, FRESH_TOKEN, PASSWORD, RESCUE, Buffer.from(`admin:${PASSWORD}`).toString('base64'), 'SECRET'];

const open = [];
after(() => Promise.all(open.map((s) => s.close())));

/** Everything a caller can see of an outcome, as one text. */
function visible(value) {
  const seen = new Set();
  const parts = [];
  const walk = (v) => {
    if (v === null || v === undefined) return;
    if (typeof v !== 'object' && typeof v !== 'function') return parts.push(String(v));
    if (seen.has(v)) return;
    seen.add(v);
    if (v instanceof Error) parts.push(String(v), v.message, v.stack ?? '');
    for (const key of Reflect.ownKeys(v)) {
      if (typeof key === 'string') parts.push(key);
      walk(v[key]);
    }
  };
  walk(value);
  return parts.join('\n');
}

function assertNoSecret(value, what) {
  const text = visible(value);
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${what} shows a secret: ${text.slice(0, 2000)}`);
}

/** A server on another origin that records what reaches it. */
async function elsewhere() {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"provision_state": "active"}');
    });
  });
  const listening = await listen(server, 0, '127.0.0.1');
  open.push(listening);
  return { url: `http://127.0.0.1:${listening.port}`, seen };
}

async function ironic(scenario = {}) {
  const server = await startIronic({ nodes: nodes({ n1: 'manageable', n2: 'active' }), ...scenario });
  open.push(server);
  return server;
}

test('a redirect to another origin takes neither the token nor a rescue password there', async () => {
  const other = await elsewhere();
  for (const status of [301, 302, 303, 307, 308]) {
    const server = await ironic();
    server.sim.faults.add({ kind: 'redirect', status, location: `${other.url}{path}` });
    const client = new IronicClient({ endpoint: server.url, token: TOKEN, microversion: '1.80' });
    const events = [];
    const outcomes = await Promise.allSettled([
      client.provision('n1', 'rescue', { rescuePassword: RESCUE, wait: true, timeout: 2, onProgress: (e) => events.push(e) }),
      client.getNode('n2'),
      client.listNodes(),
      client.waitForProvisionState('n2', 'active', { timeout: 2 }),
    ]);
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected', `HTTP ${status}`);
      assert.ok(outcome.reason instanceof IronicHttpError, `HTTP ${status}: ${outcome.reason}`);
      assert.equal(outcome.reason.status, status);
      // The status once, where every HTTP error says it.
      assert.match(
        outcome.reason.message,
        new RegExp(
          `^Ironic answered with a redirect to http://127\\.0\\.0\\.1:\\d+, which is not followed \\(HTTP ${status}\\)( \\(Request-ID: [^)]+\\))?$`,
        ),
      );
      assertNoSecret(outcome.reason, `the ${status} redirect's error`);
    }
    assertNoSecret(events, 'progress events');
  }
  assert.deepEqual(other.seen, [], 'nothing was sent to the other origin');
});

test('a same-origin redirect is not followed either, and names only the origin', async () => {
  const server = await ironic();
  server.sim.faults.add({ kind: 'redirect', status: 302, location: `/v1/secret-path?token=${TOKEN}` });
  const client = new IronicClient({ endpoint: server.url, token: TOKEN, microversion: '1.80' });
  const error = await client.getNode('n1').catch((e) => e);
  assert.ok(error instanceof IronicHttpError);
  assert.equal(server.seen.length, 1, 'one request, no hop');
  assert.ok(!error.message.includes('secret-path'));
  assert.match(error.message, /^Ironic answered with a redirect to http:\/\/127\.0\.0\.1:\d+, which is not followed \(HTTP 302\)/);
  assert.equal(error.message.split('(HTTP 302)').length, 2, `the status once: ${error.message}`);
  assertNoSecret(error, 'the error');
});

test('no failure shows a secret: HTTP errors, unreachable, timeouts, bad bodies, token refresh, abort', async () => {
  const server = await ironic();
  const closed = await elsewhere();
  await open.pop().close(); // a port nobody listens on any more
  const cases = [
    ['401 without getToken', { kind: 'status', status: 401 }, {}],
    ['403', { kind: 'status', status: 403 }, {}],
    ['500 on the PUT', { kind: 'status', status: 500, method: 'PUT' }, {}],
    ['503 forever', { kind: 'status', status: 503 }, { maxRetries: 1, retryInterval: 0.01 }],
    ['HTML from a proxy', { kind: 'html' }, {}],
    ['malformed JSON', { kind: 'malformed' }, {}],
    ['a hang past requestTimeout', { kind: 'hang' }, { requestTimeout: 0.2, maxRetries: 0 }],
    ['a reset', { kind: 'reset' }, { maxRetries: 0 }],
    ['an answer too large', { kind: 'large', bytes: 200_000 }, { maxResponseBytes: 100_000 }],
  ];
  for (const [what, fault, options] of cases) {
    server.sim.faults.clear();
    server.sim.faults.add(fault);
    for (const auth of [{ token: TOKEN }, { basicAuth: { username: 'admin', password: PASSWORD } }]) {
      const client = new IronicClient({ endpoint: server.url, microversion: '1.80', ...auth, ...options });
      const events = [];
      const results = await Promise.allSettled([
        client.provision(['n1'], 'rescue', {
          rescuePassword: RESCUE,
          wait: true,
          timeout: 1,
          pollInterval: 0.1,
          settle: 'all',
          onProgress: (e) => events.push(e),
        }),
        client.getNode('n1'),
        client.listNodes({ fields: ['uuid'] }),
      ]);
      assert.ok(
        results.some((r) => r.status === 'rejected' || r.value?.ok === false),
        what,
      );
      assertNoSecret(results, what);
      assertNoSecret(events, `${what}: progress events`);
    }
  }
  const unreachable = new IronicClient({ endpoint: closed.url, token: TOKEN, maxRetries: 0, microversion: '1.80' });
  assertNoSecret(await unreachable.getNode('n1').catch((e) => e), 'unreachable');

  server.sim.faults.clear();
  server.sim.faults.add({ kind: 'status', status: 401, path: '/v1/nodes/n1', count: 1 });
  let asked = 0;
  const refreshing = new IronicClient({
    endpoint: server.url,
    token: TOKEN,
    getToken: () => {
      asked += 1;
      return FRESH_TOKEN;
    },
  });
  assertNoSecret(await refreshing.getNode('n1'), 'a node fetched after a token refresh');
  assert.equal(asked, 1);
  const failing = new IronicClient({ endpoint: server.url, getToken: () => `${FRESH_TOKEN}\r\nX-Injected: 1` });
  const refused = await failing.getNode('n1').catch((e) => e);
  assert.equal(refused.name, 'AuthError');
  assertNoSecret(refused, 'a token with a line break');

  const controller = new AbortController();
  const waiting = refreshing.waitForProvisionState('n1', 'active', { signal: controller.signal, pollInterval: 0.05 });
  setTimeout(() => controller.abort(), 100);
  assertNoSecret(await waiting.catch((e) => e), 'an aborted wait');
});

test('invalid options are refused without quoting the secret in them', () => {
  const attempts = [
    { endpoint: `http://admin:${PASSWORD}@127.0.0.1:6385` },
    { endpoint: `https://${TOKEN}@ironic.example/v1` },
    { endpoint: 'http://127.0.0.1:6385', token: `${TOKEN}\n` },
    { endpoint: 'http://127.0.0.1:6385', token: `${TOKEN}\u2028` },
    { endpoint: 'http://127.0.0.1:6385', headers: { 'X-Auth-Token': `${TOKEN}\r\nEvil: 1` } },
    { endpoint: 'http://127.0.0.1:6385', headers: { [`bad name ${TOKEN}`]: 'x' } },
    { endpoint: 'http://127.0.0.1:6385', basicAuth: { username: `admin:${PASSWORD}`, password: PASSWORD } },
    { endpoint: 'http://127.0.0.1:6385', basicAuth: { username: 'admin', password: `${PASSWORD}\n` } },
  ];
  for (const options of attempts) {
    let error;
    try {
      new IronicClient(options);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof InvalidArgumentError, `refused: ${Object.keys(options)}`);
    assertNoSecret(error, `the error for ${Object.keys(options)}`);
  }
});
