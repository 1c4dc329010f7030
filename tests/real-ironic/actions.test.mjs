// Every waitable action against a real Ironic 39 (fake-hardware, slowed so
// that the working states are seen), with python-ironicclient 6.3 doing the
// same on a twin node at the same time; and allocations that become active.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { realIronic } from './support.mjs';

let ironic;
before(async () => {
  ironic = await realIronic('actions');
});
after(() => ironic?.close());

const IMAGE = { image_source: 'http://127.0.0.1:1/image.qcow2' }; // rebuild needs one (never fetched by fake-hardware)
const FACTORY_RESET = [{ interface: 'bios', step: 'factory_reset' }];
const CONFIG_DRIVE = { meta_data: { hostname: 'web-1' }, user_data: '#cloud-config\n' };

// The lifecycle, in order: [ironic-wait action, options, Ironic target (python), python extras,
// expected state, a working state a client must see on the way].
const LIFECYCLE = [
  ['manage', {}, 'manage', {}, 'manageable', 'verifying'],
  ['inspect', {}, 'inspect', {}, 'manageable', 'inspecting'],
  ['clean', { cleanSteps: FACTORY_RESET }, 'clean', { clean_steps: FACTORY_RESET }, 'manageable', 'cleaning'],
  ['provide', {}, 'provide', {}, 'available', 'cleaning'],
  ['deploy', { configDrive: CONFIG_DRIVE }, 'active', { configdrive: CONFIG_DRIVE }, 'active', 'deploying'],
  ['rebuild', {}, 'rebuild', {}, 'active', 'deploying'],
  ['rescue', { rescuePassword: 'pass-1234' }, 'rescue', { rescue_password: 'pass-1234' }, 'rescue', 'rescuing'],
  ['unrescue', {}, 'unrescue', {}, 'active', 'unrescuing'],
  ['service', { serviceSteps: FACTORY_RESET }, 'service', { service_steps: FACTORY_RESET }, 'active', 'servicing'],
  ['undeploy', {}, 'deleted', {}, 'available', 'deleting'],
];

describe('against a real Ironic', { concurrency: true }, () => {
  test('every waitable action with wait reaches its state, as python-ironicclient does on a twin node', async () => {
    await ironic.createNode({ name: 'life-iw', instance_info: IMAGE });
    await ironic.createNode({ name: 'life-py', instance_info: IMAGE });
    const client = new IronicClient({ endpoint: ironic.url });

    const ours = (async () => {
      const seen = [];
      for (const [action, options, , , expected, working] of LIFECYCLE) {
        const states = [];
        const report = await client.provision('life-iw', action, {
          wait: true,
          timeout: 600,
          pollInterval: 0.5,
          ...options,
          onProgress: (e) => states.push(e.state),
        });
        assert.equal(report.ok, true, `${action}: ${JSON.stringify(report)}`);
        assert.deepEqual(
          report.nodes.map((n) => [n.node, n.outcome, n.state]),
          [['life-iw', 'reached', expected]],
          action,
        );
        assert.ok(states.includes(working), `${action}: ${working} seen on the way (${states.join(' -> ')})`);
        const node = await ironic.node('life-iw');
        assert.deepEqual([node.provision_state, node.target_provision_state], [expected, null], action);
        if (action === 'deploy') seen.push(node.instance_info.configdrive);
      }
      return seen;
    })();
    const theirs = ironic.oracle(
      LIFECYCLE.map(([, , target, extra]) => ({ op: 'provision', nodes: ['life-py'], target, ...extra, wait: 600, poll_interval: 0.5 })),
    );

    const [configDrives, results] = await Promise.all([ours, theirs]);
    assert.deepEqual(
      results.map((r, i) => [LIFECYCLE[i][0], r.ok ? 'ok' : r.message]),
      LIFECYCLE.map(([a]) => [a, 'ok']),
    );
    assert.equal((await ironic.node('life-py')).provision_state, 'available');
    // Ironic kept the config drive the deploy sent (and shows it masked).
    assert.deepEqual(configDrives, ['******']);
  });

  test('adopt with wait', async () => {
    await ironic.nodeIn('manageable', { name: 'adopt-iw', instance_info: IMAGE });
    await ironic.nodeIn('manageable', { name: 'adopt-py', instance_info: IMAGE });
    const client = new IronicClient({ endpoint: ironic.url });
    const states = [];
    const [report, [theirs]] = await Promise.all([
      client.provision('adopt-iw', 'adopt', { wait: true, timeout: 300, pollInterval: 0.5, onProgress: (e) => states.push(e.state) }),
      ironic.oracle([{ op: 'provision', nodes: ['adopt-py'], target: 'adopt', wait: 300, poll_interval: 0.5 }]),
    ]);
    assert.deepEqual(
      report.nodes.map((n) => [n.outcome, n.state]),
      [['reached', 'active']],
    );
    assert.ok(states.includes('adopting'), states.join(' -> '));
    assert.deepEqual(theirs, { ok: true, value: null });
    for (const name of ['adopt-iw', 'adopt-py']) assert.equal((await ironic.node(name)).provision_state, 'active');
  });
});

// Alone, one at a time: Ironic on SQLite can fail an allocation with "database is locked"
// while other writes are under way.
describe('allocations', () => {
  test('an allocation becomes active (nodes with a power state), as with python-ironicclient', async () => {
    // Allocations only match nodes that have a power state: fake nodes get one from a power action.
    const gold = await Promise.all(
      ['gold-iw', 'gold-py'].map(async (name) => {
        const node = await ironic.nodeIn('available', { name, resource_class: 'gold', automated_clean: false });
        const r = await ironic.api('PUT', `/v1/nodes/${name}/states/power`, { target: 'power off' });
        assert.equal(r.status, 202, r.text);
        await ironic.reach(name, null, { until: (n) => n.power_state === 'power off' && !n.target_power_state });
        return node.uuid;
      }),
    );
    const client = new IronicClient({ endpoint: ironic.url });
    const { allocation, report } = await client.createAllocation(
      { resourceClass: 'gold', candidateNodes: ['gold-iw'], name: 'alloc-iw' },
      { wait: true, timeout: 300, pollInterval: 0.5 },
    );
    assert.equal(allocation.name, 'alloc-iw');
    assert.equal(report.ok, true, JSON.stringify(report));
    assert.deepEqual([report.allocation.outcome, report.allocation.state], ['reached', 'active']);
    assert.equal(report.allocation.body.node_uuid, gold[0]);
    assert.equal((await ironic.node('gold-iw')).allocation_uuid, allocation.uuid);

    const [theirs] = await ironic.oracle([
      {
        op: 'allocation',
        fields: { resource_class: 'gold', candidate_nodes: ['gold-py'], name: 'alloc-py' },
        wait: 300,
        poll_interval: 0.5,
      },
    ]);
    assert.equal(theirs.ok, true, theirs.message);
    assert.deepEqual([theirs.value.state, theirs.value.node_uuid], ['active', gold[1]]);
  });
});
