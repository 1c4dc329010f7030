// What goes wrong, against a real Ironic 39, with python-ironicclient 6.3 as
// the oracle for every message: the deterministic provisioning failures (each
// run by ironic-wait, the node put back as it was, then run by
// python-ironicclient on the same node, so that the texts must be identical),
// a failed allocation, Ironic's HTTP errors with their request ids, and
// microversions.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IronicClient, IronicHttpError, StateTransitionFailed, UnsupportedVersionError } from 'ironic-wait';
import { realIronic, withRequestId } from './support.mjs';

let ironic;
before(async () => {
  ironic = await realIronic('failures');
});
after(() => ironic?.close());

const client = () => new IronicClient({ endpoint: ironic.url });

/** Resolves to the error `promise` rejects with; fails if it resolves. */
async function rejection(promise) {
  try {
    const value = await promise;
    assert.fail(`expected a rejection, got ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    return e;
  }
}

/**
 * ironic-wait fails (`ours()`), the node is put back (`recover()`), then
 * python-ironicclient fails the same way (`theirs`, one oracle step): the
 * messages must be equal. Returns ironic-wait's error.
 */
async function sameFailure({ ours, recover, theirs, during }) {
  const duringOurs = during?.();
  const error = await rejection(ours());
  await duringOurs;
  await recover();
  const duringTheirs = during?.();
  const [result] = await Promise.all([ironic.oracle([theirs]).then((r) => r[0]), duringTheirs]);
  assert.equal(result.ok, false, 'python-ironicclient failed too');
  assert.equal(result.type, 'StateTransitionFailed');
  assert.ok(error instanceof StateTransitionFailed, `${error.name}: ${error.message}`);
  assert.equal(error.name, 'StateTransitionFailed');
  assert.equal(error.message, result.message);
  return error;
}

const wait = { wait: true, timeout: 300, pollInterval: 0.5 };
// Nodes that need no automated cleaning reach available (and come back from a failed deploy) sooner.
const NO_CLEANING = { automated_clean: false };
const pyWait = { wait: 300, poll_interval: 0.5 };

describe('provisioning failures, message for message', { concurrency: true }, () => {
  test('deploy failed (the only deploy step disabled)', async () => {
    await ironic.nodeIn('available', { name: 'deploy-fails', ...NO_CLEANING });
    const deploySteps = [{ interface: 'deploy', step: 'deploy', args: {}, priority: 0 }];
    const e = await sameFailure({
      ours: () => client().provision('deploy-fails', 'deploy', { ...wait, deploySteps }),
      recover: async () => {
        await ironic.setState('deploy-fails', 'deleted');
        await ironic.reach('deploy-fails', 'available');
      },
      theirs: { op: 'provision', nodes: ['deploy-fails'], target: 'active', deploy_steps: deploySteps, ...pyWait },
    });
    assert.equal(
      e.message,
      "Node deploy-fails failed to reach state active. It's in state deploy failed, and has error: No deploy steps returned by the driver",
    );
    assert.deepEqual(
      [e.node, e.expected, e.state, e.lastError],
      ['deploy-fails', 'active', 'deploy failed', 'No deploy steps returned by the driver'],
    );
  });

  test('clean failed: a step the node does not have', async () => {
    const { uuid } = await ironic.nodeIn('manageable', { name: 'clean-unknown' });
    const cleanSteps = [{ interface: 'bios', step: 'no_such_step' }];
    const e = await sameFailure({
      ours: () => client().provision('clean-unknown', 'clean', { ...wait, cleanSteps }),
      recover: async () => {
        await ironic.setState('clean-unknown', 'manage');
        await ironic.reach('clean-unknown', 'manageable');
      },
      theirs: { op: 'provision', nodes: ['clean-unknown'], target: 'clean', clean_steps: cleanSteps, ...pyWait },
    });
    assert.equal(
      e.message,
      "Node clean-unknown failed to reach state manageable. It's in state clean failed, and has error: " +
        `Cannot clean node ${uuid}: node does not support this clean step: {'interface': 'bios', 'step': 'no_such_step'}`,
    );
  });

  test('clean failed: a step that raises (and sets maintenance)', async () => {
    const { uuid } = await ironic.nodeIn('manageable', { name: 'clean-raises' });
    const cleanSteps = [{ interface: 'bios', step: 'apply_configuration', args: { settings: [{ bogus: 1 }] } }];
    const e = await sameFailure({
      ours: () => client().provision('clean-raises', 'clean', { ...wait, cleanSteps }),
      recover: async () => {
        await ironic.setState('clean-raises', 'manage');
        await ironic.reach('clean-raises', 'manageable');
        assert.equal((await ironic.api('DELETE', '/v1/nodes/clean-raises/maintenance')).status, 202);
      },
      theirs: { op: 'provision', nodes: ['clean-raises'], target: 'clean', clean_steps: cleanSteps, ...pyWait },
    });
    assert.equal(
      e.message,
      "Node clean-raises failed to reach state manageable. It's in state clean failed, and has error: " +
        `Node ${uuid} failed step {'interface': 'bios', 'step': 'apply_configuration', 'args': {'settings': [{'bogus': 1}]}, 'abortable': False, 'priority': 0}: 'name'`,
    );
  });

  test('inspect failed: the ramdisk reports an error', async () => {
    const { uuid } = await ironic.nodeIn('manageable', { name: 'inspect-fails', inspect_interface: 'agent' });
    // The "ramdisk" answers once the node waits for it.
    const ramdisk = async () => {
      await ironic.reach('inspect-fails', null, { until: (n) => n.provision_state === 'inspect wait' });
      const r = await ironic.api('POST', `/v1/continue_inspection?node_uuid=${uuid}`, {
        inventory: { interfaces: [{ mac_address: '52:54:00:00:00:01' }] },
        error: 'simulated ramdisk failure',
      });
      assert.equal(r.status, 202, r.text);
    };
    const e = await sameFailure({
      ours: () => client().provision('inspect-fails', 'inspect', wait),
      during: ramdisk,
      recover: async () => {
        await ironic.setState('inspect-fails', 'manage');
        await ironic.reach('inspect-fails', 'manageable');
      },
      theirs: { op: 'provision', nodes: ['inspect-fails'], target: 'inspect', ...pyWait },
    });
    assert.equal(e.state, 'inspect failed');
    assert.match(
      e.message,
      /^Node inspect-fails failed to reach state manageable\. It's in state inspect failed, and has error: Failed to finish inspection: .*Ramdisk reported error: simulated ramdisk failure\n/s,
    );
  });

  test('service failed: a step the node does not have', async () => {
    const { uuid } = await ironic.nodeIn('active', { name: 'service-fails' });
    const serviceSteps = [{ interface: 'bios', step: 'no_such_step' }];
    const e = await sameFailure({
      ours: () => client().provision('service-fails', 'service', { ...wait, serviceSteps }),
      recover: async () => {
        // Out of maintenance, then abort: back to active.
        assert.equal((await ironic.api('DELETE', '/v1/nodes/service-fails/maintenance')).status, 202);
        await ironic.setState('service-fails', 'abort');
        await ironic.reach('service-fails', 'active');
      },
      theirs: { op: 'provision', nodes: ['service-fails'], target: 'service', service_steps: serviceSteps, ...pyWait },
    });
    assert.equal(
      e.message,
      "Node service-fails failed to reach state active. It's in state service failed, and has error: " +
        `Node ${uuid} failed step {'interface': 'bios', 'step': 'no_such_step'}: 'FakeBIOS' object has no attribute 'no_such_step'`,
    );
  });
});

// Alone: Ironic on SQLite can fail to record an allocation's failure while other
// writes are under way ("database is locked"), and the allocation then stays allocating.
describe('allocation failures', () => {
  test('a failed allocation (no node of that resource class)', async () => {
    // The same UUID on both sides (the first allocation is deleted in between), so the texts compare exactly.
    const uuid = '5e1ec7ed-0000-4000-8000-00000000a11c';
    const e = await sameFailure({
      ours: () =>
        client().createAllocation(
          { resourceClass: 'no-such-class', uuid, name: 'alloc-fails' },
          { wait: true, timeout: 300, pollInterval: 0.5 },
        ),
      recover: async () => {
        assert.equal((await ironic.api('DELETE', `/v1/allocations/${uuid}`)).status, 204);
      },
      theirs: { op: 'allocation', fields: { resource_class: 'no-such-class', uuid, name: 'alloc-fails' }, wait: 300, poll_interval: 0.5 },
    });
    assert.equal(
      e.message,
      `Allocation ${uuid} failed: Failed to process allocation ${uuid}: no available nodes match the resource class no-such-class.`,
    );
    assert.equal(e.allocation, uuid);
  });
});

/** The request ids Ironic gave the proxied requests matching method and glob, in order. */
const requestIds = (method, glob) => ironic.requests(method, glob).map((r) => r.requestId);

/** ironic-wait's IronicHttpError, checked against python-ironicclient's text and the request id Ironic sent. */
function sameHttpError(e, theirs, { status, method, glob }) {
  assert.ok(e instanceof IronicHttpError, `${e.name}: ${e.message}`);
  assert.equal(e.name, 'IronicHttpError');
  assert.equal(e.status, status);
  assert.match(e.requestId, /^req-[0-9a-f-]{36}$/);
  assert.equal(e.requestId, requestIds(method, glob).at(-1), 'the request id of the last answer');
  assert.equal(theirs.ok, false);
  assert.equal(e.message, withRequestId(theirs.message, e.requestId));
}

describe('HTTP errors from Ironic, with request ids', { concurrency: true }, () => {
  test('404: a node that does not exist (get, wait)', async () => {
    const c = client();
    const get = await rejection(c.getNode('no-such-node'));
    const waited = await rejection(c.waitForProvisionState('no-such-node', 'active', { timeout: 10 }));
    const [pyGet, pyWait] = await ironic.oracle([
      { op: 'get', node: 'no-such-node' },
      { op: 'wait', nodes: ['no-such-node'], expected: 'active', timeout: 10 },
    ]);
    assert.deepEqual([pyGet.type, pyWait.type], ['NotFound', 'NotFound']);
    for (const e of [get, waited]) {
      assert.ok(e.message.startsWith('Node no-such-node could not be found. (HTTP 404) (Request-ID: req-'), e.message);
      assert.equal(e.detail, 'Node no-such-node could not be found.');
    }
    // Each error carries the id of its own answer: the get's is the first of the two.
    sameHttpError(waited, pyWait, { status: 404, method: 'GET', glob: '/v1/nodes/no-such-node' });
    assert.equal(get.requestId, requestIds('GET', '/v1/nodes/no-such-node')[0]);
    assert.equal(get.message, withRequestId(pyGet.message, get.requestId));
  });

  test('400: an action the node cannot take in its state; the wait is skipped', async () => {
    const { uuid } = await ironic.nodeIn('enroll', { name: 'refuses' });
    const e = await rejection(client().provision('refuses', 'provide', { wait: true, timeout: 10 }));
    const [theirs] = await ironic.oracle([{ op: 'provision', nodes: ['refuses'], target: 'provide', wait: 10 }]);
    assert.equal(theirs.type, 'BadRequest');
    sameHttpError(e, theirs, { status: 400, method: 'PUT', glob: '/v1/nodes/refuses/states/provision' });
    assert.equal(
      e.message,
      `The requested action "provide" can not be performed on node "${uuid}" while it is in state "enroll". (HTTP 400) (Request-ID: ${e.requestId})`,
    );
    assert.equal(ironic.requests('GET', '/v1/nodes/refuses').length, 0, 'no wait after a refused PUT');
  });

  test('409: a node locked by another conductor, after the retries', async () => {
    const { uuid } = await ironic.nodeIn('enroll', { name: 'locked' });
    // What a conductor busy with the node leaves in the database.
    assert.equal(await ironic.sql("UPDATE nodes SET reservation = 'other-host' WHERE name = 'locked'"), 1);
    try {
      const c = new IronicClient({ endpoint: ironic.url, maxRetries: 2, retryInterval: 0.2 });
      const e = await rejection(c.provision('locked', 'manage', { wait: true, timeout: 10 }));
      const puts = ironic.requests('PUT', '/v1/nodes/locked/states/provision');
      assert.equal(puts.length, 3, 'one try and two retries');
      assert.ok(puts.every((r) => r.status === 409));
      assert.equal(new Set(puts.map((r) => r.requestId)).size, 3);
      const [theirs] = await ironic.oracle([{ op: 'provision', nodes: ['locked'], target: 'manage', wait: 10 }], { maxRetries: 2 });
      assert.equal(theirs.type, 'Conflict');
      sameHttpError(e, theirs, { status: 409, method: 'PUT', glob: '/v1/nodes/locked/states/provision' });
      assert.equal(
        e.message,
        `Node ${uuid} is locked by host other-host, please retry after the current operation is completed. (HTTP 409) (Request-ID: ${e.requestId})`,
      );
    } finally {
      await ironic.sql("UPDATE nodes SET reservation = NULL WHERE name = 'locked'");
    }
  });

  test('500: Ironic fails on a node row it cannot read (get, wait, provision), never retried', async () => {
    await ironic.createNode({ name: 'broken' });
    // A column Ironic stores as JSON, made unreadable: every read of the node raises inside Ironic.
    assert.equal(await ironic.sql("UPDATE nodes SET extra = '{broken' WHERE name = 'broken'"), 1);
    const c = client();
    const get = await rejection(c.getNode('broken'));
    const before = ironic.requests('GET', '/v1/nodes/broken').length;
    const waited = await rejection(c.waitForProvisionState('broken', 'manageable', { timeout: 20 }));
    assert.equal(ironic.requests('GET', '/v1/nodes/broken').length, before + 1, 'one GET: a 500 is not retried');
    const sent = await rejection(c.provision('broken', 'manage', { wait: true, timeout: 10 }));
    const [pyGet, pyWait, pySent] = await ironic.oracle([
      { op: 'get', node: 'broken' },
      { op: 'wait', nodes: ['broken'], expected: 'manageable', timeout: 20 },
      { op: 'provision', nodes: ['broken'], target: 'manage', wait: 10 },
    ]);
    assert.deepEqual([pyGet.type, pyWait.type, pySent.type], ['InternalServerError', 'InternalServerError', 'InternalServerError']);
    const text = 'Expecting property name enclosed in double quotes: line 1 column 2 (char 1) (HTTP 500)';
    for (const [e, theirs] of [
      [get, pyGet],
      [waited, pyWait],
      [sent, pySent],
    ]) {
      assert.ok(e instanceof IronicHttpError);
      assert.equal(e.status, 500);
      assert.equal(e.message, `${text} (Request-ID: ${e.requestId})`);
      assert.equal(e.message, withRequestId(theirs.message, e.requestId));
    }
    sameHttpError(sent, pySent, { status: 500, method: 'PUT', glob: '/v1/nodes/broken/states/provision' });
  });
});

describe('microversions', () => {
  test("'latest' is Ironic's newest version, as python-ironicclient negotiates it", async () => {
    const c = client();
    const version = await c.microversion();
    const v1 = await ironic.api('GET', '/v1', undefined, { 'X-OpenStack-Ironic-API-Version': '1.1' });
    assert.equal(version, v1.headers.get('x-openstack-ironic-api-maximum-version'));
    assert.equal(version, '1.115');
    const [theirs] = await ironic.oracle([{ op: 'version' }]);
    assert.deepEqual(theirs, { ok: true, value: version });
    const start = ironic.seen.length;
    await c.listNodes({ limit: 1 });
    assert.deepEqual(
      ironic.seen.slice(start).map((r) => r.version),
      [version],
      'sent on every call, no second negotiation',
    );
  });

  test('a pinned version Ironic does not have (1.999): the same words as python-ironicclient, in get, wait and provision', async () => {
    await ironic.createNode({ name: 'pinned' });
    const c = new IronicClient({ endpoint: ironic.url, microversion: '1.999' });
    const errors = [
      await rejection(c.getNode('pinned')),
      await rejection(c.waitForProvisionState('pinned', 'enroll', { timeout: 10 })),
      await rejection(c.provision('pinned', 'manage', { wait: true, timeout: 10 })),
    ];
    const theirs = await ironic.oracle(
      [
        { op: 'get', node: 'pinned' },
        { op: 'wait', nodes: ['pinned'], expected: 'enroll', timeout: 10 },
        { op: 'provision', nodes: ['pinned'], target: 'manage', wait: 10 },
      ],
      { version: '1.999' },
    );
    // python-ironicclient wraps it with textwrap.fill (70 columns).
    const expected =
      'Requested API version 1.999 is not supported by the server, client, or\n' +
      'the requested operation is not supported by the requested version.\n' +
      'Supported version range is 1.1 to 1.115';
    for (const [i, what] of ['get', 'wait', 'provision'].entries()) {
      assert.deepEqual([theirs[i].type, theirs[i].message], ['UnsupportedVersion', expected], `python, ${what}`);
      assert.ok(errors[i] instanceof UnsupportedVersionError, `${what}: ${errors[i].name}: ${errors[i].message}`);
      assert.equal(errors[i].name, 'UnsupportedVersionError');
      assert.equal(errors[i].message, expected, what);
    }
    assert.equal((await ironic.node('pinned')).provision_state, 'enroll', 'nothing was done');
  });
});
