// Power actions, lock waits and node history against a real Ironic 39
// (fake-hardware powers nodes on and off; its power delay is set to 1 s so
// the action is seen under way), and `diagnose` on a deploy that fails the
// way real-ironic.md's recipe makes it fail.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IronicClient, StateTransitionFailed } from 'ironic-wait';
import { realIronic } from './support.mjs';

let ironic;
before(async () => {
  ironic = await realIronic('power-history', { fake: { power_delay: '1' } });
});
after(() => ironic?.close());

test('power on, power off and reboot with wait end as the node does, each one PUT', async () => {
  await ironic.createNode({ name: 'pw-1' });
  const client = new IronicClient({ endpoint: ironic.url });
  // A new fake-hardware node has no power state until its first action.
  const on = await client.setPowerState('pw-1', 'power on', { wait: true, timeout: 300, pollInterval: 0.2 });
  assert.deepEqual(
    on.nodes.map((n) => [n.outcome, n.state, n.targetState]),
    [['reached', 'power on', null]],
  );
  const seen = [];
  const off = await client.setPowerState('pw-1', 'power off', {
    wait: true,
    timeout: 300,
    pollInterval: 0.2,
    onProgress: (e) => seen.push(e),
  });
  assert.equal(off.nodes[0].state, 'power off');
  assert.ok(
    seen.some((e) => e.targetState === 'power off' && !e.done),
    `the action was seen under way: ${JSON.stringify(seen)}`,
  );
  const reboot = await client.setPowerState('pw-1', 'reboot', { wait: true, timeout: 300, pollInterval: 0.2 });
  assert.deepEqual(
    reboot.nodes.map((n) => [n.outcome, n.state]),
    [['reached', 'power on']],
  );
  const node = await ironic.node('pw-1');
  assert.deepEqual([node.power_state, node.target_power_state, node.reservation], ['power on', null, null]);
  assert.equal(ironic.requests('PUT', '/v1/nodes/pw-1/states/power').length, 3);
  assert.ok(ironic.requests('PUT', '/v1/nodes/pw-1/states/power').every((r) => r.status === 202));
  // Standing waits: the state it has is reached at once; the lock is free.
  assert.equal((await client.waitForPowerState('pw-1', 'power on', { timeout: 10 })).nodes[0].outcome, 'reached');
  assert.equal((await client.waitForReservation('pw-1', { timeout: 10 })).nodes[0].outcome, 'reached');
});

test('a failed deploy: diagnose gives its history, as getNodeHistory does', async () => {
  await ironic.nodeIn('available', { name: 'hist-1' });
  const client = new IronicClient({ endpoint: ironic.url });
  const deploySteps = [{ interface: 'deploy', step: 'deploy', args: {}, priority: 0 }];
  await assert.rejects(
    client.provision('hist-1', 'deploy', { wait: true, timeout: 600, pollInterval: 0.5, deploySteps }),
    StateTransitionFailed,
  );
  await ironic.setState('hist-1', 'deleted');
  await ironic.reach('hist-1', 'available', { ms: 600_000 });
  const report = await client.provision('hist-1', 'deploy', {
    wait: true,
    timeout: 600,
    pollInterval: 0.5,
    deploySteps,
    settle: 'all',
    diagnose: true,
  });
  const entry = report.nodes[0];
  assert.equal(entry.outcome, 'failed');
  assert.ok(entry.history.length >= 1 && entry.history.length <= 5, JSON.stringify(entry.history));
  const error = entry.history.at(-1);
  assert.equal(error.severity, 'ERROR');
  assert.match(error.event, /No deploy steps returned by the driver/);
  assert.equal(typeof error.event_type, 'string');
  const all = await client.getNodeHistory('hist-1');
  assert.ok(all.filter((e) => e.severity === 'ERROR').length >= 2, 'both failed deploys are in the history');
  assert.deepEqual(
    all.slice(-entry.history.length).map((e) => e.uuid),
    entry.history.map((e) => e.uuid),
  );
});
