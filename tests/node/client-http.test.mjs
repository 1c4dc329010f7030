// Ironic's HTTP semantics through the built package: microversions, retries,
// auth headers, path encoding, error bodies.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import {
  AuthError,
  ConnectionError,
  InvalidArgumentError,
  IronicClient,
  IronicHttpError,
  UnsupportedVersionError,
  version,
} from 'ironic-wait';
import { nodes, startIronic } from './harness.mjs';

let ironic;
afterEach(() => ironic?.close());

async function start(scenario = {}, clientOptions = {}) {
  ironic = await startIronic({ nodes: nodes({ n1: 'available', n2: 'manageable' }), ...scenario });
  return new IronicClient({ endpoint: ironic.url, ...clientOptions });
}

test('latest is negotiated once per client, shared by concurrent first calls', async () => {
  const client = await start();
  await Promise.all([client.getNode('n1'), client.getNode('n2'), client.listNodes(), client.microversion()]);
  assert.equal(ironic.requests('GET', '/v1').length, 1);
  assert.equal(ironic.requests('GET', '/v1')[0].headers['x-openstack-ironic-api-version'], undefined);
  const calls = ironic.seen.filter((r) => r.url !== '/v1');
  assert.ok(calls.every((r) => r.headers['x-openstack-ironic-api-version'] === '1.115'));
  assert.equal(await client.microversion(), '1.115');
  await client.getNode('n1');
  assert.equal(ironic.requests('GET', '/v1').length, 1, 'never again');
});

test('latest against an older Ironic is its newest version', async () => {
  const client = await start({ maxVersion: '1.87' });
  assert.equal(await client.microversion(), '1.87');
  await client.getNode('n1');
  assert.equal(ironic.requests('GET', '/v1/nodes/n1')[0].headers['x-openstack-ironic-api-version'], '1.87');
});

test('a 406 after negotiation is renegotiated from its own headers, without another GET /v1', async () => {
  const client = await start();
  await client.getNode('n1');
  // The server is downgraded under the client (a rolled-back upgrade, say).
  ironic.sim.load({ nodes: nodes({ n1: 'available' }), timing: {}, maxVersion: '1.80' });
  const node = await client.getNode('n1');
  assert.equal(node.name, 'n1');
  assert.deepEqual(
    ironic.requests('GET', '/v1/nodes/n1').map((r) => r.headers['x-openstack-ironic-api-version']),
    ['1.115', '1.115', '1.80'],
  );
  assert.equal(ironic.requests('GET', '/v1').length, 1);
  assert.equal(await client.microversion(), '1.80');
});

test('a pinned version is sent as given, with no negotiation', async () => {
  const client = await start({}, { microversion: '1.38' });
  const node = await client.getNode('n1');
  assert.equal(node.name, 'n1');
  assert.equal(ironic.requests('GET', '/v1').length, 0);
  assert.equal(ironic.seen[0].headers['x-openstack-ironic-api-version'], '1.38');
});

test('an unsupported pinned version is a clear error from the 406 alone', async () => {
  const client = await start({}, { microversion: '1.200' });
  await assert.rejects(client.getNode('n1'), (e) => {
    assert.ok(e instanceof UnsupportedVersionError);
    // python-ironicclient's text, with textwrap.fill's line breaks.
    assert.equal(
      e.message,
      'Requested API version 1.200 is not supported by the server, client, or\n' +
        'the requested operation is not supported by the requested version.\n' +
        'Supported version range is 1.1 to 1.115',
    );
    return true;
  });
  assert.equal(ironic.seen.length, 1, 'no extra round trip: the 406 carries the range');
});

test('below 1.8 the wait asks for full nodes, since fields is not allowed', async () => {
  const client = await start({}, { microversion: '1.7' });
  await client.waitForProvisionState('n1', 'available');
  assert.equal(ironic.seen[0].url, '/v1/nodes/n1');
  await assert.rejects(client.listNodes({ fields: ['uuid'] }), UnsupportedVersionError);
});

test('409 and 503 are retried; Retry-After is honoured; retries are counted', async () => {
  const client = await start(
    {
      faults: [
        { kind: 'status', status: 409, method: 'PUT', count: 2 },
        { kind: 'status', status: 503, method: 'GET', path: '/v1/nodes/n1', count: 1, retryAfter: 1 },
      ],
    },
    { retryInterval: 0.05 },
  );
  const report = await client.provision('n1', 'manage', { wait: true, timeout: 10, pollInterval: 0.05 });
  assert.equal(report.ok, true);
  assert.equal(ironic.requests('PUT', '/v1/nodes/n1/states/provision').length, 3);
  assert.equal(report.retries, 3);
  const [busy, retry] = ironic.sim.log({ method: 'GET', path: '/v1/nodes/n1' });
  assert.equal(busy.status, 503);
  assert.ok(retry.t - busy.t >= 950, `Retry-After: 1 waited ${retry.t - busy.t} ms`);
});

test('retries give up after maxRetries with the last error', async () => {
  const client = await start({ faults: [{ kind: 'status', status: 503, method: 'GET' }] }, { retryInterval: 0.01, maxRetries: 2 });
  await assert.rejects(client.getNode('n1'), (e) => {
    assert.ok(e instanceof IronicHttpError);
    assert.equal(e.status, 503);
    assert.match(e.requestId, /^req-/);
    assert.equal(e.message, `Resource temporarily unavailable, please retry. (HTTP 503) (Request-ID: ${e.requestId})`);
    return true;
  });
  assert.equal(ironic.requests('GET', '/v1/nodes/n1').length, 3);
});

test("other errors are not retried, and carry Ironic's message", async () => {
  const client = await start({}, { retryInterval: 0.01 });
  await assert.rejects(client.provision('n1', 'provide'), (e) => {
    assert.ok(e instanceof IronicHttpError);
    assert.equal(e.status, 400);
    assert.match(e.detail, /can not be performed on node .* while it is in state "available"/);
    return true;
  });
  assert.equal(ironic.requests('PUT', '/v1/nodes/n1/states/provision').length, 1);
});

test('an unreachable endpoint is a ConnectionError after the retries', async () => {
  const client = new IronicClient({ endpoint: 'http://127.0.0.1:9', retryInterval: 0.01, maxRetries: 1 });
  await assert.rejects(client.getNode('n1'), (e) => {
    assert.ok(e instanceof ConnectionError);
    assert.match(e.message, /^Error contacting Ironic server: /);
    return true;
  });
});

test('auth: token, getToken (again after a 401), basic', async () => {
  let client = await start({}, { token: 'tok-1' });
  await client.getNode('n1');
  assert.ok(ironic.seen.every((r) => r.headers['x-auth-token'] === 'tok-1'));
  await ironic.close();

  let issued = 0;
  client = await start(
    { faults: [{ kind: 'status', status: 401, method: 'GET', path: '/v1/nodes/n1', count: 1 }] },
    {
      getToken: async () => `tok-${++issued}`,
    },
  );
  const node = await client.getNode('n1');
  assert.equal(node.name, 'n1');
  assert.equal(issued, 2, 'asked once, then again after the 401');
  assert.deepEqual(
    ironic.requests('GET', '/v1/nodes/n1').map((r) => r.headers['x-auth-token']),
    ['tok-1', 'tok-2'],
  );
  await ironic.close();

  client = await start({}, { basicAuth: { username: 'admin', password: 'pässword' } });
  await client.getNode('n1');
  const expected = `Basic ${Buffer.from('admin:pässword').toString('base64')}`;
  assert.ok(ironic.seen.every((r) => r.headers.authorization === expected));
  await ironic.close();

  client = await start(
    {},
    {
      getToken: () => {
        throw new Error('keystone is down');
      },
    },
  );
  await assert.rejects(client.getNode('n1'), (e) => e instanceof AuthError && /keystone is down/.test(e.message));
});

test('secrets never appear in URLs, errors or reports', async () => {
  const client = await start({ faults: [{ kind: 'status', status: 500, method: 'PUT' }] }, { token: 'SECRET-TOKEN' });
  const error = await client.provision('n1', 'rescue', { rescuePassword: 'SECRET-PW' }).catch((e) => e);
  assert.ok(error instanceof IronicHttpError);
  const text = JSON.stringify({ ...error, message: error.message, urls: ironic.seen.map((r) => r.url) });
  assert.ok(!text.includes('SECRET'), text);
});

test('standard headers: Accept, User-Agent, extra headers', async () => {
  const client = await start({}, { headers: { 'X-OpenStack-Request-Id': 'req-global-1' } });
  await client.getNode('n1');
  for (const r of ironic.seen) {
    assert.equal(r.headers.accept, 'application/json');
    assert.equal(r.headers['user-agent'], `ironic-wait/${version()}`);
    assert.equal(r.headers['x-openstack-request-id'], 'req-global-1');
  }
});

test('identifiers are one path segment; . and .. are refused', async () => {
  const client = await start();
  for (const ident of ['../x', 'a/b', 'q?x=1', 'h#f', '100%', 'sp ace']) {
    await assert.rejects(client.getNode(ident), (e) => e instanceof IronicHttpError && e.status === 404);
  }
  assert.deepEqual(
    ironic.seen.filter((r) => r.url !== '/v1').map((r) => r.url),
    ['/v1/nodes/..%2Fx', '/v1/nodes/a%2Fb', '/v1/nodes/q%3Fx%3D1', '/v1/nodes/h%23f', '/v1/nodes/100%25', '/v1/nodes/sp%20ace'],
  );
  const before = ironic.seen.length;
  for (const ident of ['.', '..', '', 7]) {
    await assert.rejects(client.getNode(ident), InvalidArgumentError);
  }
  await assert.rejects(client.provision(['n1', '..'], 'manage'), InvalidArgumentError);
  assert.equal(ironic.seen.length, before, 'nothing sent for invalid identifiers');
});

test('invalid options are typed errors, raised before anything is sent', async () => {
  assert.throws(() => new IronicClient({ endpoint: 'ftp://x' }), InvalidArgumentError);
  assert.throws(() => new IronicClient({}), InvalidArgumentError);
  assert.throws(() => new IronicClient({ endpoint: 'http://x', microversion: '2' }), InvalidArgumentError);
  assert.throws(() => new IronicClient({ endpoint: 'http://x', maxRetries: -1 }), InvalidArgumentError);
  assert.throws(() => new IronicClient({ endpoint: 'http://x', headers: { 'bad header': 'x' } }), InvalidArgumentError);
  const client = await start();
  // Each call is made only when its turn comes, so no rejection goes unhandled.
  const cases = [
    [
      () => client.provision('n1', 'deploy', { wait: true, timeout: -1 }),
      'Option timeout must be a positive number of seconds (leave it out to wait without limit)',
    ],
    [
      () => client.provision('n1', 'deploy', { wait: 5 }),
      "Option wait must be true or false (the wait's time limit is timeout, in seconds)",
    ],
    [
      () => client.provision('n1', 'deploy', { wait: 0 }),
      "Option wait must be true or false (the wait's time limit is timeout, in seconds)",
    ],
    [
      () => client.provision('n1', 'deploy', { wait: 'soon' }),
      "Option wait must be true or false (the wait's time limit is timeout, in seconds)",
    ],
    [() => client.provision('n1', 'deploy', { timeout: 5 }), 'Option timeout needs wait: true'],
    [() => client.setPowerState('n1', 'power off', { wait: false, timeout: 5 }), 'Option timeout needs wait: true'],
    [() => client.provision('n1', 'fly'), 'Unknown provision action: fly'],
    [() => client.provision('n1', 'clean', { wait: true }), '"clean_steps" is required when setting target provision state to clean'],
    [() => client.provision('n1', 'rescue'), 'A non-empty "rescue_password" is required when setting target provision state to rescue'],
    [
      () => client.waitForProvisionState('n1', 'active', { timeout: NaN }),
      'Option timeout must be a positive number of seconds (leave it out to wait without limit)',
    ],
    [
      () => client.waitForProvisionState('n1', 'active', { timeout: Infinity }),
      'Option timeout must be a positive number of seconds (leave it out to wait without limit)',
    ],
    [
      () => client.waitForProvisionState('n1', 'active', { timeout: 0 }),
      'Option timeout must be a positive number of seconds (leave it out to wait without limit)',
    ],
    [
      () => client.waitForProvisionState('n1', 'active', { timeout: 2147484 }),
      'Option timeout must be at most 2147483 seconds (about 24.8 days; leave it out to wait without limit)',
    ],
    [() => client.waitForProvisionState('n1', 'active', { pollInterval: 0 }), 'Poll interval must be a positive number'],
    [
      () => client.waitForProvisionState('n1', 'active', { settle: 'some' }),
      "Option settle must be 'first-failure' or 'all', got \"some\"",
    ],
    [() => client.waitForProvisionState([], 'active'), 'Nothing to wait for: no identifiers given'],
    [() => client.waitForProvisionState('n1', 'active', 'not options'), 'options must be an object'],
    [() => client.getNode('n1', { fields: ['uuid&limit=1'] }), 'fields must be a non-empty list of field names'],
    [() => client.listNodes({ limit: 0 }), 'Option limit must be a whole number from 1'],
    [() => client.createAllocation({ resourceClass: 'gold' }, { wait: true, pollInterval: -1 }), 'Poll interval must be a positive number'],
    [() => client.createAllocation({ resourceClass: 'gold', colour: 'red' }), 'Unknown allocation field colour'],
  ];
  for (const [call, message] of cases) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${message}: ${e}`);
      assert.equal(e.message, message);
      return true;
    });
  }
  assert.deepEqual(ironic.seen, [], 'nothing was sent, not even a version negotiation');
});

test('listNodes follows pages and keeps the provision_state filter', async () => {
  const fleet = Array.from({ length: 25 }, (_, i) => ({ name: `m${i}`, provision_state: i % 5 ? 'available' : 'active' }));
  const client = await start({ nodes: fleet });
  const all = await client.listNodes({ fields: ['uuid', 'name'] });
  assert.equal(all.length, 25);
  const page = await client.listNodes({ limit: 10 });
  assert.equal(page.length, 10);
  assert.ok('target_provision_state' in page[0], 'without fields, full (detail) nodes');
  const active = await client.listNodes({ scope: { provisionState: 'active' }, fields: ['name', 'provision_state'] });
  assert.deepEqual(
    active.map((n) => n.name),
    ['m0', 'm5', 'm10', 'm15', 'm20'],
  );
});
