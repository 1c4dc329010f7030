// Power actions, lock waits and `diagnose`, the built package against the
// simulator (which powers nodes as Ironic 39 does: sim/README.md, "Power
// actions" and "Node history"): what is sent, when a wait ends, how a failed
// action reads, and what a failed node's history says.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { InvalidArgumentError, IronicClient, StateTransitionFailed, StateTransitionTimeout } from 'ironic-wait';
import { nodes, startIronic } from './harness.mjs';

let ironic;
afterEach(() => ironic?.close());

async function start(scenario, client = {}) {
  ironic = await startIronic({ timing: { power: 300 }, ...scenario });
  return new IronicClient({ endpoint: ironic.url, ...client });
}

const bodies = (method, path) => ironic.requests(method, path).length;

test('setPowerState sends each node its power PUT and waits until the target is cleared', async () => {
  const client = await start({ nodes: nodes({ n1: 'active', n2: 'available' }) });
  const events = [];
  const report = await client.setPowerState(['n1', 'n2'], 'power off', {
    wait: true,
    timeout: 30,
    pollInterval: 0.1,
    onProgress: (e) => events.push(e),
  });
  assert.equal(report.ok, true);
  assert.deepEqual(
    report.nodes.map((n) => [n.node, n.outcome, n.state, n.targetState]),
    [
      ['n1', 'reached', 'power off', null],
      ['n2', 'reached', 'power off', null],
    ],
  );
  for (const name of ['n1', 'n2']) {
    assert.equal(ironic.sim.node(name).power_state, 'power off');
    assert.equal(bodies('PUT', `/v1/nodes/${name}/states/power`), 1);
  }
  // While it ran the target was set: the wait saw it and did not stop there.
  assert.ok(
    events.some((e) => e.targetState === 'power off' && !e.done),
    JSON.stringify(events),
  );
});

test('a reboot keeps power on throughout and is over only when its target is cleared', async () => {
  const client = await start({ nodes: nodes({ n1: 'active' }), timing: { power: 600 } });
  const report = await client.setPowerState('n1', 'reboot', { wait: true, timeout: 30, pollInterval: 0.1 });
  assert.equal(report.nodes[0].outcome, 'reached');
  // On the simulator's clock: the check that ended the wait came after the reboot ended (its target
  // cleared), not before: it waited for the reboot, not for power on, which the node had at once.
  const ended = ironic.sim.history('n1').entries.find((e) => 'target_power_state' in e && e.target_power_state === null);
  assert.ok(ended, JSON.stringify(ironic.sim.history('n1').entries));
  const last = ironic.sim.log({ method: 'GET', path: '/v1/nodes/n1' }).at(-1);
  assert.ok(last.t >= ended.t, `the last check at ${last.t} ms, the reboot over at ${ended.t} ms`);
  const put = ironic.seen.find((r) => r.method === 'PUT');
  assert.match(put.url, /\/v1\/nodes\/n1\/states\/power$/);
});

test('a failed power action is a StateTransitionFailed, and diagnose adds the node history', async () => {
  const client = await start({
    nodes: nodes({ n1: 'active', n2: 'active' }),
    transitions: [{ node: 'n1', action: 'power off', fail: 'IPMI: BMC 10.0.0.7 did not answer' }],
  });
  await assert.rejects(client.setPowerState(['n1', 'n2'], 'power off', { wait: true, timeout: 30, pollInterval: 0.1 }), (e) => {
    assert.ok(e instanceof StateTransitionFailed);
    assert.match(
      e.message,
      /^Node n1 failed to reach state power off\. It's in state power on, and has error: .*BMC 10\.0\.0\.7 did not answer/,
    );
    return true;
  });
  assert.equal(bodies('GET', '/v1/nodes/*/history'), 0, 'no history without diagnose');

  const report = await client.setPowerState(['n1', 'n2'], 'power off', {
    wait: true,
    timeout: 30,
    pollInterval: 0.1,
    settle: 'all',
    diagnose: true,
  });
  assert.equal(report.ok, false);
  const [n1, n2] = report.nodes;
  assert.equal(n1.outcome, 'failed');
  assert.ok(Array.isArray(n1.history) && n1.history.length >= 1 && n1.history.length <= 5, JSON.stringify(n1));
  const last = n1.history.at(-1);
  assert.equal(last.severity, 'ERROR');
  assert.match(last.event, /BMC 10\.0\.0\.7 did not answer/);
  assert.ok(last.event_type, 'detail=true gives the event type');
  assert.equal(n2.outcome, 'reached');
  assert.equal(n2.history, undefined, 'only failed nodes are diagnosed');
  assert.equal(bodies('GET', '/v1/nodes/n1/history'), 1);
  assert.equal(bodies('GET', '/v1/nodes/n2/history'), 0);
});

test('diagnose on a failed deploy gives its last events; below API 1.78 it says why there are none', async () => {
  const scenario = { nodes: nodes({ n1: 'available' }), transitions: [{ node: 'n1', action: 'deploy', fail: 'Image checksum mismatch' }] };
  let client = await start(scenario);
  let report = await client.provision('n1', 'deploy', { wait: true, timeout: 30, pollInterval: 0.1, settle: 'all', diagnose: true });
  const entry = report.nodes[0];
  assert.equal(entry.outcome, 'failed');
  assert.ok(
    entry.history.some((e) => e.severity === 'ERROR' && /Image checksum mismatch/.test(e.event)),
    JSON.stringify(entry.history),
  );
  // The same history, whole, from getNodeHistory.
  const events = await client.getNodeHistory('n1');
  assert.deepEqual(events.slice(-entry.history.length), entry.history);
  await ironic.close();

  client = await start(scenario, { microversion: '1.70' });
  report = await client.provision('n1', 'deploy', { wait: true, timeout: 30, pollInterval: 0.1, settle: 'all', diagnose: true });
  assert.equal(report.nodes[0].history, undefined);
  assert.equal(report.nodes[0].historyError, 'Node history needs API version 1.78; the server speaks 1.70');
  assert.equal(bodies('GET', '/v1/nodes/n1/history'), 0);
  await assert.rejects(client.getNodeHistory('n1'), /Node history needs API version 1\.78/);
});

test('waitForPowerState waits out a power action; waitForReservation waits for the lock', async () => {
  // No wait call-back: the deploy holds the lock from its start to active (an unlocked wait state in
  // between would let the lock wait end there, and the node be locked again by the time it is looked at).
  const client = await start({ nodes: nodes({ n1: 'active', n2: 'available' }), timing: { deploying: 400, 'wait call-back': 0 } });
  await client.setPowerState('n1', 'power off');
  const off = await client.waitForPowerState('n1', 'power off', { timeout: 30, pollInterval: 0.1 });
  assert.deepEqual(
    off.nodes.map((n) => [n.outcome, n.state]),
    [['reached', 'power off']],
  );

  await client.provision('n2', 'deploy');
  const lock = await client.waitForReservation('n2', { timeout: 30, pollInterval: 0.1 });
  assert.equal(lock.nodes[0].outcome, 'reached');
  assert.equal(ironic.sim.node('n2').reservation, null);
  // A node already unlocked is reached at the first check.
  const requests = ironic.seen.length;
  await client.waitForReservation('n1', { timeout: 30 });
  assert.equal(ironic.seen.length - requests, 1);
});

test('a power wait times out with the nodes still under way, after one last check', async () => {
  const client = await start({ nodes: nodes({ n1: 'active' }), transitions: [{ node: 'n1', action: 'power', stall: true }] });
  await assert.rejects(client.setPowerState('n1', 'power off', { wait: true, timeout: 1, pollInterval: 0.3 }), (e) => {
    assert.ok(e instanceof StateTransitionTimeout);
    assert.equal(e.message, 'Node(s) n1 failed to reach state power off in 1 seconds');
    return true;
  });
});

test('bad arguments are refused before anything is sent', async () => {
  const client = await start({ nodes: nodes({ n1: 'active' }) });
  const refused = [
    () => client.setPowerState('n1', 'power cycle', { wait: true }),
    () => client.setPowerState('n1', { toString: () => 'power on' }),
    () => client.setPowerState('n1', 'power on', { powerTimeout: 0 }),
    () => client.setPowerState('n1', 'power on', { powerTimeout: 1.5 }),
    () => client.setPowerState('n1', 'power on', { configDrive: 'x' }),
    () => client.setPowerState('n1', 'power on', { holdIsTerminal: true }),
    () => client.setPowerState([], 'power on'),
    () => client.waitForPowerState('n1', 'rebooting'),
    () => client.waitForPowerState('n1', 'power on', { listMode: 'changes' }),
    () => client.waitForReservation('n1', { diagnose: true }),
    () => client.getNodeHistory(''),
    () => client.getNodeHistory(['n1']),
  ];
  for (const call of refused) await assert.rejects(call(), InvalidArgumentError, call.toString());
  assert.equal(ironic.seen.length, 0);
});

test('a power wait checkpoints and resumes: no PUT twice, the same end', async () => {
  const client = await start({ nodes: nodes({ n1: 'active' }), timing: { power: 800 } });
  const controller = new AbortController();
  let last;
  await assert.rejects(
    client.setPowerState('n1', 'power off', {
      wait: true,
      timeout: 30,
      pollInterval: 0.1,
      signal: controller.signal,
      powerTimeout: 20,
      onCheckpoint: (c) => {
        last = c;
        controller.abort();
      },
    }),
  );
  assert.equal(JSON.parse(last).method, 'setPowerState');
  const again = new IronicClient({ endpoint: ironic.url });
  const report = await again.resume(last);
  assert.deepEqual(
    report.nodes.map((n) => [n.node, n.outcome, n.state]),
    [['n1', 'reached', 'power off']],
  );
  assert.equal(bodies('PUT', '/v1/nodes/n1/states/power'), 1);
  // A checkpoint made without sending anything is of the same method.
  const planned = JSON.parse(client.checkpoint('waitForPowerState', 'n1', 'power off', { timeout: 5 }));
  assert.equal(planned.method, 'waitForPowerState');
  assert.equal(JSON.parse(client.checkpoint('waitForReservation', 'n1', { timeout: 5 })).method, 'waitForReservation');
});

test('an abort is final: the promise rejects with its reason and nothing is sent after it', async () => {
  const client = await start({ nodes: nodes({ n1: 'active' }), transitions: [{ node: 'n1', action: 'power', stall: true }] });
  const controller = new AbortController();
  const reason = { why: 'operator left' };
  const call = client.setPowerState('n1', 'power off', {
    wait: true,
    timeout: 30,
    pollInterval: 0.1,
    signal: controller.signal,
    onProgress: () => controller.abort(reason),
  });
  await assert.rejects(call, (e) => e === reason);
  const sent = ironic.seen.length;
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(ironic.seen.length, sent);
  assert.ok(ironic.seen.every((r) => !r.cancelled || r.method === 'GET'));
});

test('a power wait and a provision wait on one node share the loop: one GET a round, with the fields of both', async () => {
  const client = await start({ nodes: nodes({ n1: 'available' }), timing: { deploying: 1500 } });
  await client.provision('n1', 'deploy');
  const controller = new AbortController();
  const options = { timeout: 30, pollInterval: 0.2, signal: controller.signal };
  const waits = [
    client.waitForProvisionState('n1', 'active', options),
    // Off while available, with no action under way: it waits (until the abort below).
    client.waitForPowerState('n1', 'power on', options),
  ];
  const both = Promise.allSettled(waits);
  const provision = await waits[0].then(
    (value) => ({ value }),
    (reason) => ({ reason }),
  );
  assert.equal(provision.value?.nodes[0].outcome, 'reached', JSON.stringify(provision));
  controller.abort();
  await both;
  const gets = ironic.requests('GET', '/v1/nodes/n1');
  assert.ok(gets.length >= 3, `${gets.length} GETs`);
  // While both waited, every GET asked for both waits' fields: one request served both.
  const shared = gets.filter((r) => /target_provision_state/.test(r.url) && /target_power_state/.test(r.url));
  assert.ok(shared.length >= 3, gets.map((r) => r.url).join('\n'));
  const apart = gets.filter((r) => /target_provision_state/.test(r.url) && !/power_state/.test(r.url));
  assert.equal(apart.length, 0, 'no GET for the provision wait alone while the power wait was on the loop');
});
