// Every malformed answer the simulator can give ends in a rejected promise
// with a typed error, and the same module instance keeps working after it:
// no panic reaches JS.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ConnectionError,
  InvalidResponseError,
  IronicClient,
  IronicHttpError,
  StateTransitionFailed,
  StateTransitionTimeout,
} from 'ironic-wait';
import { nodes, startIronic } from './harness.mjs';

let ironic;
let client;
before(async () => {
  ironic = await startIronic({ nodes: nodes({ n1: 'deploying', ok: 'active', n2: 'deploy failed' }) });
  // One client for the whole file: each case must leave it working.
  client = new IronicClient({ endpoint: ironic.url, retryInterval: 0.01, maxRetries: 1, requestTimeout: 1 });
});
after(() => ironic.close());

const wait = (node = 'n1', timeout = 2) => client.waitForProvisionState(node, 'active', { timeout, pollInterval: 0.05 });

// [name, fault on GET /v1/nodes/n1, what the wait (2 s, or 5 s where given) rejects with]
const CASES = [
  // python-ironicclient's words for a body that is not an object, naming what Python made of it.
  ['malformed JSON', { kind: 'malformed' }, InvalidResponseError, /^API response body must be a JSON object; got bytes$/],
  ['an HTML error page', { kind: 'html' }, IronicHttpError, /^Bad Gateway \(HTTP 502\)/],
  [
    'an HTML page with 200',
    { kind: 'body', status: 200, body: '<html><body>proxy login</body></html>', contentType: 'text/html' },
    InvalidResponseError,
    /^API response body must be a JSON object; got NoneType$/,
  ],
  ['an empty body', { kind: 'body', status: 200, body: '' }, InvalidResponseError, /got bytes$/],
  ['null', { kind: 'body', status: 200, body: 'null' }, InvalidResponseError, /^API response body must be a JSON object; got NoneType$/],
  ['a list', { kind: 'body', status: 200, body: '[1, 2]' }, InvalidResponseError, /got list$/],
  // The runtime parses; Python's type names come from what JSON.parse made.
  ['a string', { kind: 'body', status: 200, body: '"active"' }, InvalidResponseError, /got str$/],
  ['a whole number', { kind: 'body', status: 200, body: '3' }, InvalidResponseError, /got int$/],
  ['a fraction', { kind: 'body', status: 200, body: '1.5' }, InvalidResponseError, /got float$/],
  ['a boolean', { kind: 'body', status: 200, body: 'true' }, InvalidResponseError, /got bool$/],
  [
    'a list as provision_state',
    { kind: 'set', set: { provision_state: ['active'] } },
    InvalidResponseError,
    /provision_state is not a string$/,
  ],
  ['a deep nest', { kind: 'body', status: 200, body: '['.repeat(5000) }, InvalidResponseError, /got bytes$/],
  [
    'null provision_state',
    { kind: 'set', set: { provision_state: null } },
    InvalidResponseError,
    /^Invalid response for node n1: provision_state is null$/,
  ],
  ['a number provision_state', { kind: 'set', set: { provision_state: 3 } }, InvalidResponseError, /provision_state is not a string$/],
  ['no provision_state', { kind: 'omit', omit: ['provision_state'] }, InvalidResponseError, /provision_state is missing$/],
  [
    'no target_provision_state',
    { kind: 'omit', omit: ['target_provision_state'] },
    InvalidResponseError,
    /^Invalid response for node n1: target_provision_state is missing$/,
  ],
  ['a connection reset', { kind: 'reset' }, ConnectionError, /^Error contacting Ironic server: /],
  // Two attempts of 1 s each, within a 5 s wait.
  ['no answer at all', { kind: 'hang' }, ConnectionError, /^Error contacting Ironic server: the request timed out$/, 5],
  ['{} until the deadline', { kind: 'empty' }, StateTransitionTimeout, /^Node\(s\) n1 failed to reach state active in 2 seconds$/],
];

for (const [name, fault, Kind, message, timeout] of CASES) {
  test(`${name}: ${Kind.name}, and the client keeps working`, async () => {
    ironic.sim.faults.rules = [];
    ironic.sim.faults.add({ ...fault, method: 'GET', path: '/v1/nodes/n1' });
    await assert.rejects(wait('n1', timeout), (e) => {
      assert.ok(e instanceof Kind, `${e}`);
      assert.match(e.message, message);
      return true;
    });
    ironic.sim.faults.rules = [];
    const report = await wait('ok');
    assert.equal(report.nodes[0].outcome, 'reached');
  });
}

test('a missing last_error on a failed node is typed', async () => {
  ironic.sim.faults.rules = [];
  ironic.sim.faults.add({ kind: 'omit', omit: ['last_error'], method: 'GET', path: '/v1/nodes/n2' });
  await assert.rejects(
    wait('n2'),
    (e) =>
      e instanceof InvalidResponseError && e.message === 'Invalid response for node n2: last_error is missing' && e.field === 'last_error',
  );
  ironic.sim.faults.rules = [];
  await assert.rejects(wait('n2'), StateTransitionFailed);
});

test("Python's truthiness and %s of what JSON.parse made", async () => {
  // An empty list or object as target_provision_state is falsy in Python: the
  // node rests, and its last_error (an object) is shown as JSON text.
  for (const target of [[], {}, 0, '']) {
    ironic.sim.faults.rules = [];
    ironic.sim.faults.add({
      kind: 'set',
      set: { provision_state: 'manageable', target_provision_state: target, last_error: { code: 7 } },
      method: 'GET',
      path: '/v1/nodes/n1',
    });
    await assert.rejects(wait('n1'), (e) => {
      assert.ok(e instanceof StateTransitionFailed, `${e}`);
      assert.equal(e.state, 'manageable');
      assert.equal(e.lastError, '{"code":7}');
      return true;
    });
  }
  // A non-empty one is truthy: the node is moving, and the wait goes on.
  ironic.sim.faults.rules = [];
  ironic.sim.faults.add({
    kind: 'set',
    set: { provision_state: 'manageable', target_provision_state: [0] },
    method: 'GET',
    path: '/v1/nodes/n1',
  });
  await assert.rejects(wait('n1', 0.3), StateTransitionTimeout);
  ironic.sim.faults.rules = [];
});

test('a very large body is read whole', async () => {
  ironic.sim.faults.rules = [];
  ironic.sim.faults.add({ kind: 'large', bytes: 4 << 20, method: 'GET', path: '/v1/nodes/ok' });
  // Time limits generous enough for 4 MiB on a busy machine.
  const patient = new IronicClient({ endpoint: ironic.url, requestTimeout: 30 });
  const report = await patient.waitForProvisionState('ok', 'active', { timeout: 30 });
  assert.equal(report.nodes[0].outcome, 'reached');
  ironic.sim.faults.rules = [];
});

test('a malformed node list page is typed too', async () => {
  const fleet = Array.from({ length: 60 }, (_, i) => ({ name: `l${i}`, provision_state: 'deploying' }));
  const many = await startIronic({ nodes: fleet, faults: [{ kind: 'malformed', method: 'GET', path: '/v1/nodes' }] });
  try {
    const c = new IronicClient({ endpoint: many.url });
    await assert.rejects(
      c.waitForProvisionState(
        fleet.map((n) => n.name),
        'active',
      ),
      InvalidResponseError,
    );
    assert.equal(many.requests('GET', '/v1/nodes').length, 1);
  } finally {
    await many.close();
  }
});
