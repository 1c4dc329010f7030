// Options are read in the core by declared tables (src/options.rs):
// an unknown key or a value of the wrong type, on the constructor and on
// every method, is an InvalidArgumentError naming the option, and nothing
// is sent (the simulator's request log says so). Hostile objects are still
// refused by js/index.js before the wasm sees anything.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { InvalidArgumentError, IronicClient } from 'ironic-wait';
import { nodes, startIronic } from './harness.mjs';

let ironic;
let client;
before(async () => {
  ironic = await startIronic({ nodes: nodes({ n1: 'active', e1: 'enroll' }) });
  client = new IronicClient({ endpoint: ironic.url, maxRetries: 0 });
  await client.microversion(); // negotiated now: a refused call below must send nothing at all
});
after(() => ironic?.close());

/** Each method called with `options`, everything else valid. */
const METHODS = {
  provision: (o) => client.provision('e1', 'manage', o),
  waitForProvisionState: (o) => client.waitForProvisionState('n1', 'active', o),
  createAllocation: (o) => client.createAllocation({ resourceClass: 'gold' }, o),
  waitForAllocation: (o) => client.waitForAllocation('a1', o),
  getNode: (o) => client.getNode('n1', o),
  listNodes: (o) => client.listNodes(o),
  microversion: (o) => client.microversion(o),
};

/** Per method: an option it takes, and a value of the wrong type for it with the message's ending. */
const MISTYPED = {
  provision: ['disableRamdisk', 'yes', 'must be a boolean'],
  waitForProvisionState: ['timeout', '5', 'must be a positive number of seconds (leave it out to wait without limit)'],
  createAllocation: ['wait', 'soon', "must be true or false (the wait's time limit is timeout, in seconds)"],
  waitForAllocation: ['pollInterval', true, "must be a number of seconds or 'auto'"],
  getNode: ['fields', [1, 2], 'must be a string or a list of strings'],
  listNodes: ['scope', 'active', 'must be an object'],
  microversion: ['signal', 'now', 'must be an AbortSignal'],
};

async function refusedUnsent(call, message) {
  const sent = ironic.seen.length;
  await assert.rejects(call(), (e) => {
    assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`);
    assert.equal(e.message, message);
    return true;
  });
  assert.equal(ironic.seen.length, sent, 'nothing is sent');
}

for (const [method, call] of Object.entries(METHODS)) {
  test(`${method}: an unknown option is refused by name, nothing sent`, async () => {
    await refusedUnsent(() => call({ pollIntervall: 1 }), 'Option pollIntervall is not known');
    // Absent is absent, whatever the key: undefined and null are dropped.
    const sent = ironic.seen.length;
    await call({ pollIntervall: undefined, bogus: null }).catch((e) => assert.ok(!(e instanceof InvalidArgumentError), e.message));
    if (method !== 'microversion') assert.ok(ironic.seen.length > sent, 'a call with only absent options goes through');
  });

  test(`${method}: a mistyped option is refused by name, its value not quoted, nothing sent`, async () => {
    const [key, value, problem] = MISTYPED[method];
    await refusedUnsent(() => call({ [key]: value }), `Option ${key} ${problem}`);
  });
}

test("listNodes: the filters are its scope's, as the waits' and watch's; a top-level provisionState is refused, nothing sent", async () => {
  await refusedUnsent(() => client.listNodes({ provisionState: 'active' }), 'Option provisionState is not known');
  await refusedUnsent(() => client.listNodes({ scope: { provisionState: 7 } }), 'Option scope.provisionState must be a string');
  const active = await client.listNodes({ scope: { provisionState: 'active' }, fields: ['name'] });
  assert.deepEqual(
    active.map((n) => n.name),
    ['n1'],
  );
});

test('the constructor: an unknown or mistyped option throws InvalidArgumentError naming it', () => {
  const make = (options) => () => new IronicClient({ endpoint: ironic.url, ...options });
  const cases = [
    [{ endPoint: 'http://x' }, 'Option endPoint is not known'],
    [{ maxRetries: '3' }, 'Option maxRetries must be a number'],
    [{ userAgent: 42 }, 'Option userAgent must be a string'],
    [{ basicAuth: { username: 'u', pasword: 'p' } }, 'Option basicAuth.pasword is not known'],
    [{ basicAuth: { username: 1 } }, 'Option basicAuth.username must be a string'],
    [{ headers: { 'X-A': 1 } }, 'Option headers: the value of X-A must be a string'],
    [{ headers: ['X-A'] }, 'Option headers must be an object'],
    [{ requestTimeout: new Date(0) }, 'Option requestTimeout must be a number'],
    // No value means "no limit" by accident.
    ...[0, -1, Number.NaN, Number.POSITIVE_INFINITY].map((v) => [
      { requestTimeout: v },
      'Option requestTimeout must be a positive number of seconds (60 if left out)',
    ]),
    [{ token: () => 'S3CRET' }, 'Option token must be a string'],
    ...[0, 1.5, -3, 1e7].map((v) => [{ maxRoundRequests: v }, 'Option maxRoundRequests must be a whole number from 1 to 1000000']),
  ];
  for (const [options, message] of cases) {
    assert.throws(make(options), (e) => e instanceof InvalidArgumentError && e.message === message, message);
  }
});

test('a wrong value is never quoted, even where serde would', async () => {
  const secret = 'S3CRET, expected a trap';
  for (const call of [() => client.getNode('n1', { fields: { secret } }), () => client.listNodes({ limit: secret })]) {
    await assert.rejects(call(), (e) => e instanceof InvalidArgumentError && !e.message.includes('S3CRET'));
  }
  assert.throws(
    () => new IronicClient({ endpoint: ironic.url, token: 12345678 }),
    (e) => !e.message.includes('12345678'),
  );
});

test('hostile option objects are still refused before the wasm, nothing sent', async () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const getter = {};
  Object.defineProperty(getter, 'timeout', { enumerable: true, get: () => 5 });
  const nested = { fields: ['uuid'] };
  Object.defineProperty(nested.fields, 1, { enumerable: true, get: () => 'name' });
  const cases = [
    [proxy, 'options could not be read'],
    [getter, 'Option timeout must be a value, not a getter'],
    [Object.create({ timeout: 1 }), 'options must be a plain object'],
    [{ timeout: 5, 'bad\uD800': 1 }, 'A key of options is not well-formed Unicode (it has a lone UTF-16 surrogate)'],
    [{ settle: 'all\uDC00' }, 'Option settle is not well-formed Unicode (it has a lone UTF-16 surrogate)'],
    [{ signal: new Proxy(new AbortController().signal, {}) }, 'Option signal must be an AbortSignal'],
    [{ onProgress: 'log' }, 'Option onProgress must be a function'],
  ];
  for (const [options, message] of cases) {
    await refusedUnsent(() => client.waitForProvisionState('n1', 'active', options), message);
  }
  await refusedUnsent(() => client.getNode('n1', nested), 'Option fields[1] must be a value, not a getter');
  // A key named __proto__ is an unknown option like any other, not a prototype.
  await refusedUnsent(() => client.getNode('n1', JSON.parse('{"__proto__": {"fields": ["uuid"]}}')), 'Option __proto__ is not known');
});
