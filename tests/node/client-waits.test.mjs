// The built package against the simulator: provision actions with wait,
// failures, timeouts, aborts, allocations, settle modes and many nodes.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { InvalidArgumentError, IronicClient, IronicHttpError, StateTransitionFailed, StateTransitionTimeout } from 'ironic-wait';
import { nodes, sleep, startIronic, until } from './harness.mjs';

let ironic;
afterEach(() => ironic?.close());

async function start(scenario) {
  ironic = await startIronic(scenario);
  return new IronicClient({ endpoint: ironic.url });
}

const STEPS = [{ interface: 'bios', step: 'factory_reset' }];

// action, starting state, options, expected final state, an intermediate state Ironic walks through
const ACTIONS = [
  ['manage', 'enroll', {}, 'manageable', 'verifying'],
  ['provide', 'manageable', {}, 'available', 'cleaning'],
  ['deploy', 'available', {}, 'active', 'deploying'],
  ['active', 'available', { configDrive: { user_data: 'x' } }, 'active', 'deploying'],
  ['undeploy', 'active', {}, 'available', 'deleting'],
  ['deleted', 'active', {}, 'available', 'cleaning'],
  ['rebuild', 'active', {}, 'active', 'deploying'],
  ['inspect', 'manageable', {}, 'manageable', 'inspecting'],
  ['clean', 'manageable', { cleanSteps: STEPS }, 'manageable', 'cleaning'],
  ['adopt', 'manageable', {}, 'active', 'adopting'],
  ['rescue', 'active', { rescuePassword: 'pw' }, 'rescue', 'rescuing'],
  ['unrescue', 'rescue', {}, 'active', 'unrescuing'],
  ['service', 'active', { serviceSteps: STEPS }, 'active', 'servicing'],
];

for (const [action, from, extra, expected, via] of ACTIONS) {
  test(`${action} with wait reaches ${expected}`, async () => {
    const client = await start({ nodes: nodes({ n1: from }) });
    const seen = [];
    const report = await client.provision('n1', action, {
      ...extra,
      wait: true,
      timeout: 10,
      pollInterval: 0.02,
      onProgress: (e) => seen.push(e.state),
    });
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.nodes.map((n) => [n.node, n.outcome, n.state]),
      [['n1', 'reached', expected]],
    );
    const walked = ironic.sim.history('n1').entries.map((e) => e.provision_state);
    assert.ok(walked.includes(via), `Ironic walked ${walked}`);
    assert.equal(seen.at(-1), expected, 'the last progress event is the settled state');
    assert.equal(ironic.requests('PUT', '/v1/nodes/n1/states/provision').length, 1);
  });
}

test('PUTs go out concurrently, within the cap', async () => {
  const names = Array.from({ length: 20 }, (_, i) => `p${i}`);
  const client = await start({
    nodes: names.map((name) => ({ name, provision_state: 'enroll' })),
    // Long enough that all eight are in flight at once at the server, however late a loaded machine reads them.
    faults: [{ kind: 'latency', ms: 500, method: 'PUT' }],
  });
  const report = await client.provision(names, 'manage');
  assert.deepEqual(
    report.nodes.map((n) => n.outcome),
    names.map(() => 'accepted'),
  );
  const puts = ironic.sim.log({ method: 'PUT' });
  const overlap = Math.max(...puts.map((p) => puts.filter((q) => q.t <= p.t && p.t < q.tEnd).length));
  assert.equal(overlap, 8, 'eight at a time');
});

test('after a PUT fails no new one starts, and the first failure in order is the error', async () => {
  const names = Array.from({ length: 20 }, (_, i) => `p${i}`);
  const client = await start({
    nodes: names.map((name) => ({ name, provision_state: name === 'p2' ? 'active' : 'enroll' })),
    // p2 is refused at once, while the others are still in flight (for far longer than a loaded machine lags).
    faults: [{ kind: 'latency', ms: 1000, method: 'PUT', node: names.filter((n) => n !== 'p2') }],
  });
  await assert.rejects(client.provision(names, 'manage', { wait: true }), (e) => {
    assert.ok(e instanceof IronicHttpError);
    assert.match(e.detail, /can not be performed on node .* while it is in state "active"/);
    return true;
  });
  assert.equal(ironic.requests('PUT', '/v1/nodes/*').length, 8, 'only the first window was sent');
  assert.equal(ironic.requests('GET', '/v1/nodes/*').length, 0, 'and there was no wait');
});

test('abort and unhold are sent, but waiting on them is refused before anything is sent', async () => {
  const client = await start({ nodes: nodes({ n1: 'available' }) });
  for (const action of ['abort', 'unhold']) {
    await assert.rejects(client.provision('n1', action, { wait: true }), (e) => {
      assert.ok(e instanceof InvalidArgumentError);
      assert.equal(e.message, `Action ${action} cannot be waited on: it has no expected state`);
      return true;
    });
  }
  assert.equal(ironic.requests('PUT', '/v1/nodes/*').length, 0);
  // Without wait, the PUT goes out (and Ironic refuses abort from available).
  await assert.rejects(client.provision('n1', 'abort'), IronicHttpError);
  assert.equal(ironic.requests('PUT', '/v1/nodes/n1/states/provision').length, 1);
});

test('a failure rejects with StateTransitionFailed carrying last_error and the report', async () => {
  const client = await start({
    nodes: nodes({ n1: 'available' }),
    transitions: [{ node: 'n1', action: 'deploy', fail: 'No deploy steps returned by the driver' }],
  });
  await assert.rejects(client.provision('n1', 'deploy', { wait: true, timeout: 10, pollInterval: 0.02 }), (e) => {
    assert.ok(e instanceof StateTransitionFailed);
    assert.equal(e.name, 'StateTransitionFailed');
    assert.equal(
      e.message,
      "Node n1 failed to reach state active. It's in state deploy failed, and has error: No deploy steps returned by the driver",
    );
    assert.deepEqual(
      [e.node, e.expected, e.state, e.lastError],
      ['n1', 'active', 'deploy failed', 'No deploy steps returned by the driver'],
    );
    assert.equal(e.report.nodes[0].outcome, 'failed');
    return true;
  });
});

test('an unexpected stable state fails, unless failOnUnexpectedState is off', async () => {
  const client = await start({ nodes: nodes({ n1: 'available' }) });
  await assert.rejects(client.waitForProvisionState('n1', 'active'), (e) => {
    assert.ok(e instanceof StateTransitionFailed);
    assert.equal(e.message, "Node n1 failed to reach state active. It's in unexpected stable state available");
    assert.equal(e.unexpectedStable, true);
    return true;
  });
  await assert.rejects(
    client.waitForProvisionState('n1', 'active', { failOnUnexpectedState: false, timeout: 0.1, pollInterval: 0.02 }),
    StateTransitionTimeout,
  );
});

// python-ironicclient would sleep the whole interval before its last check;
// we make that check at the deadline. With an interval 400 times the
// timeout, the order decides it: a second check that comes at all before
// the test's own timeout came at the deadline, not after the interval.
test("a timeout rejects with python-ironicclient's message and a final check at the deadline", { timeout: 120_000 }, async () => {
  const client = await start({ nodes: nodes({ a: 'available', b: 'available' }), transitions: [{ action: 'deploy', stall: true }] });
  await assert.rejects(client.provision(['a', 'b'], 'deploy', { wait: true, timeout: 1.5, pollInterval: 600 }), (e) => {
    assert.ok(e instanceof StateTransitionTimeout);
    assert.equal(e.message, 'Node(s) a, b failed to reach state active in 1.5 seconds');
    assert.deepEqual(e.nodes, ['a', 'b']);
    assert.deepEqual(
      e.report.nodes.map((n) => [n.outcome, n.state, n.polls]),
      [
        ['timed-out', 'deploying', 2],
        ['timed-out', 'deploying', 2],
      ],
    );
    // The library's own clock: the wait ended long before one interval had passed.
    assert.ok(e.report.elapsed < 600, `settled ${e.report.elapsed} s in`);
    return true;
  });
  const [first, last] = ironic.sim.log({ method: 'GET', path: '/v1/nodes/a' });
  assert.ok(last, 'checks at 0 and at the deadline');
  assert.equal(ironic.requests('GET', '/v1/nodes/a').length, 2, 'checks at 0 and at the deadline');
  // On the simulator's clock: the final check came at the deadline (not before it), not after the interval.
  assert.ok(last.t - first.t >= 1000 && last.t - first.t < 600_000, `the final check ${last.t - first.t} ms after the first`);
});

test('aborting mid-wait rejects with the signal reason and nothing is sent after', async () => {
  const client = await start({ nodes: nodes({ n1: 'available' }), transitions: [{ action: 'deploy', stall: true }] });
  const controller = new AbortController();
  const waiting = client.provision('n1', 'deploy', { wait: true, pollInterval: 0.05, signal: controller.signal });
  await until(() => ironic.requests('GET', '/v1/nodes/n1').length >= 3);
  controller.abort();
  const sentAtAbort = ironic.seen.length;
  await assert.rejects(waiting, (e) => e.name === 'AbortError');
  await sleep(300);
  assert.equal(ironic.seen.length, sentAtAbort, 'no request after the abort');
  // A reason of the caller's own is passed through as is.
  const reason = new Error('operator cancelled');
  const again = new AbortController();
  const second = client.waitForProvisionState('n1', 'active', { signal: again.signal, pollInterval: 0.05 });
  setTimeout(() => again.abort(reason), 100);
  await assert.rejects(second, (e) => e === reason);
  // An already aborted signal sends nothing at all.
  const before = ironic.seen.length;
  await assert.rejects(client.provision('n1', 'deploy', { signal: AbortSignal.abort() }), (e) => e.name === 'AbortError');
  assert.equal(ironic.seen.length, before);
});

test('abort cancels the request in flight', async () => {
  const client = await start({
    nodes: nodes({ n1: 'deploying' }),
    faults: [{ kind: 'hang', method: 'GET', path: '/v1/nodes/n1' }],
  });
  const controller = new AbortController();
  const waiting = client.waitForProvisionState('n1', 'active', { signal: controller.signal });
  await until(() => ironic.sim.hung.size === 1);
  controller.abort();
  await assert.rejects(waiting, (e) => e.name === 'AbortError');
  const [get] = ironic.requests('GET', '/v1/nodes/n1');
  await until(() => get.cancelled);
});

// python-ironicclient's wait starts its clock on entry; checking a huge
// list of identifiers (100,000 take 100-300 ms) must not lengthen it. The
// checking here takes a second (a busy loop on the wall clock, so a loaded
// machine cannot make it shorter), twice the timeout: counted from the
// call, the deadline has passed when the checks end, and the wait times out
// without a round of its own (at most the one final check); counted from
// the end of the checks, it would check at 0 and again at the deadline.
test("a wait's deadline runs from the method's call, not from the end of its argument checks", async () => {
  const client = await start({ nodes: nodes({ n1: 'deploying' }), transitions: [{ node: 'n1', action: 'deploy', stall: true }] });
  const slow = new Proxy(['n1'], {
    getOwnPropertyDescriptor(target, key) {
      const until = performance.now() + 1000;
      while (performance.now() < until); // a second of checking, synchronously
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
  await assert.rejects(client.waitForProvisionState(slow, 'active', { timeout: 0.5, pollInterval: 0.1 }), (e) => {
    assert.ok(e instanceof StateTransitionTimeout);
    const [entry] = e.report.nodes;
    assert.equal(entry.outcome, 'timed-out');
    assert.ok(entry.polls <= 1, `${entry.polls} checks: the second of checking was not counted in the timeout`);
    // The wait's own clock started at the call: the second of checking is in it.
    assert.ok(e.report.elapsed >= 1, `elapsed ${e.report.elapsed} s`);
    return true;
  });
  assert.ok(ironic.requests('GET', '/v1/nodes/n1').length <= 1, 'no round but the final check');
});

// Node's fetch follows the caller's signal through a weak reference only: a
// request the client no longer held was collected mid-flight and could not
// be cancelled any more, neither by an abort nor by requestTimeout.
test('a request in flight is still cancelled after a garbage collection', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  ironic = await startIronic({
    nodes: nodes({ n1: 'deploying', n2: 'deploying' }),
    faults: ['n1', 'n2'].map((n) => ({ kind: 'hang', method: 'GET', path: `/v1/nodes/${n}` })),
  });
  // One client each: waits on one client would share one request.
  const client = () => new IronicClient({ endpoint: ironic.url, requestTimeout: 1 });
  const controller = new AbortController();
  const aborted = assert.rejects(
    client().waitForProvisionState('n1', 'active', { signal: controller.signal }),
    (e) => e.name === 'AbortError',
  );
  const timedOut = assert.rejects(client().waitForProvisionState('n2', 'active', { timeout: 0.5 }), StateTransitionTimeout);
  await until(() => ironic.sim.hung.size === 2);
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(10);
  }
  controller.abort();
  await aborted;
  await until(() => ironic.requests('GET', '/v1/nodes/n1')[0].cancelled);
  await timedOut;
  await until(() => ironic.requests('GET', '/v1/nodes/n2')[0].cancelled);
});

test("settle all resolves with every node's outcome", async () => {
  const client = await start({
    nodes: nodes({ ok: 'available', bad: 'available', slow: 'available', stable: 'manageable' }),
    transitions: [
      { node: 'bad', action: 'deploy', fail: 'boom' },
      { node: 'slow', action: 'deploy', stall: true },
    ],
  });
  await client.provision(['ok', 'bad', 'slow'], 'deploy');
  const report = await client.waitForProvisionState(['ok', 'bad', 'slow', 'stable', 'ghost'], 'active', {
    settle: 'all',
    timeout: 2,
    pollInterval: 0.02,
  });
  assert.equal(report.ok, false);
  assert.deepEqual(
    report.nodes.map((n) => [n.node, n.outcome]),
    [
      ['ok', 'reached'],
      ['bad', 'failed'],
      ['slow', 'timed-out'],
      ['stable', 'unexpected-stable'],
      ['ghost', 'not-found'],
    ],
  );
  assert.equal(report.nodes[1].lastError, 'boom');
  assert.ok(report.nodes[4].error instanceof IronicHttpError);
  assert.equal(report.nodes[4].error.status, 404);
});

test("settle all: a refused PUT is that node's outcome and the others are still waited for", async () => {
  const client = await start({ nodes: nodes({ a: 'available', busy: 'active', b: 'available' }) });
  const events = [];
  const report = await client.provision(['a', 'busy', 'b'], 'deploy', {
    wait: true,
    timeout: 10,
    pollInterval: 0.02,
    settle: 'all',
    onProgress: (e) => events.push(e),
  });
  assert.equal(report.ok, false);
  assert.deepEqual(
    report.nodes.map((n) => [n.node, n.outcome]),
    [
      ['a', 'reached'],
      ['busy', 'error'],
      ['b', 'reached'],
    ],
  );
  assert.ok(report.nodes[1].error instanceof IronicHttpError);
  assert.match(report.nodes[1].error.message, /while it is in state "active"/);
  assert.deepEqual(
    events.filter((e) => e.node === 'busy').map((e) => [e.done, e.outcome]),
    [[true, 'error']],
  );
  assert.equal(ironic.requests('GET', '/v1/nodes/busy').length, 0, 'a refused node is not polled');
  // Without wait: accepted or refused, node by node (all three are active now).
  const refused = await client.provision(['a', 'b'], 'manage', { settle: 'all' });
  assert.deepEqual(
    refused.nodes.map((n) => n.outcome),
    ['error', 'error'],
  );
  assert.equal(refused.ok, false);
  const sent = await client.provision(['a', 'busy'], 'undeploy', { settle: 'all' });
  assert.deepEqual(
    sent.nodes.map((n) => n.outcome),
    ['accepted', 'accepted'],
  );
  assert.equal(sent.ok, true);
});

test("first-failure (the default) stops at the first failure in the caller's order", async () => {
  const client = await start({ nodes: nodes({ a: 'deploying', b: 'deploy failed', c: 'clean failed' }) });
  ironic.sim.setNode('b', { last_error: 'b broke' });
  await assert.rejects(client.waitForProvisionState(['a', 'b', 'c'], 'active'), (e) => {
    assert.equal(e.node, 'b');
    assert.deepEqual(
      e.report.nodes.map((n) => n.outcome),
      ['stopped', 'failed', 'stopped'],
    );
    return true;
  });
});

test('hold states: waited through by default, terminal with holdIsTerminal', async () => {
  const client = await start({ nodes: nodes({ n1: 'available' }), transitions: [{ node: 'n1', action: 'deploy', hold: true }] });
  const report = await client.provision('n1', 'deploy', { wait: true, timeout: 10, pollInterval: 0.02, holdIsTerminal: true });
  assert.deepEqual(
    report.nodes.map((n) => [n.outcome, n.state]),
    [['held', 'deploy hold']],
  );
  await assert.rejects(client.waitForProvisionState('n1', 'active', { timeout: 0.2, pollInterval: 0.02 }), StateTransitionTimeout);
});

test('allocations: active, error, timeout', async () => {
  const client = await start({
    nodes: [{ name: 'g1', provision_state: 'available', resource_class: 'gold' }],
  });
  const { allocation, report } = await client.createAllocation(
    { resourceClass: 'gold', name: 'alloc-1' },
    { wait: true, timeout: 5, pollInterval: 0.02 },
  );
  assert.equal(allocation.state, 'active');
  assert.equal(allocation.name, 'alloc-1');
  assert.equal(report.allocation.outcome, 'reached');
  assert.equal(ironic.sim.node('g1').allocation_uuid, allocation.uuid);

  await assert.rejects(client.createAllocation({ resourceClass: 'no-such-class' }, { wait: true, timeout: 5, pollInterval: 0.02 }), (e) => {
    assert.ok(e instanceof StateTransitionFailed);
    assert.match(
      e.message,
      /^Allocation [0-9a-f-]{36} failed: Failed to process allocation [0-9a-f-]{36}: no available nodes match the resource class no-such-class\.$/,
    );
    return true;
  });

  const slow = await startIronic({
    timing: { allocating: 60_000 },
    nodes: [{ name: 'g2', provision_state: 'available', resource_class: 'gold' }],
  });
  try {
    const c2 = new IronicClient({ endpoint: slow.url });
    const created = await c2.createAllocation({ resourceClass: 'gold' });
    assert.equal(created.report, null);
    await assert.rejects(c2.waitForAllocation(created.allocation.uuid, { timeout: 0.25, pollInterval: 0.1 }), (e) => {
      assert.ok(e instanceof StateTransitionTimeout);
      assert.equal(e.message, `Allocation ${created.allocation.uuid} failed to become active in 0.25 seconds`);
      return true;
    });
  } finally {
    await slow.close();
  }
  await assert.rejects(client.createAllocation({ name: 'x' }), /resourceClass is required except when node is given/);
});

test('1000 nodes are waited on with one list request per round', async () => {
  const fleet = Array.from({ length: 1000 }, (_, i) => ({ name: `n${String(i).padStart(4, '0')}`, provision_state: 'enroll' }));
  // Verification stalls until the test lets every node through at once.
  const client = await start({ nodes: fleet, transitions: [{ action: 'manage', stall: true }] });
  const names = fleet.map((n) => n.name);
  const sent = await client.provision(names, 'manage');
  assert.equal(sent.requests, 1000, 'one PUT per node');
  assert.equal(ironic.requests('GET', '/v1').length, 1, 'and one version negotiation, shared by the client');
  // In full every round (the change feed has tests of its own: shared-loop.test.mjs).
  const waiting = client.waitForProvisionState(names, 'manageable', { timeout: 30, pollInterval: 0.1, listMode: 'list' });
  await until(() => ironic.requests('GET', '/v1/nodes').length >= 2);
  for (const name of names) ironic.sim.setNode(name, { provision_state: 'manageable', target_provision_state: null });
  const report = await waiting;
  assert.equal(report.ok, true);
  const rounds = report.nodes[0].polls;
  assert.ok(rounds >= 3, `${rounds} rounds`);
  assert.ok(report.nodes.every((n) => n.polls === rounds));
  const lists = ironic.requests('GET', '/v1/nodes');
  assert.equal(lists.length, rounds, 'one list request per round');
  assert.ok(lists.every((r) => r.url === '/v1/nodes?fields=uuid,name,provision_state,target_provision_state,last_error&limit=1000'));
  assert.equal(ironic.requests('GET', '/v1/nodes/*').length, 0, 'no per-node GETs');
  assert.equal(report.requests, rounds);
});
