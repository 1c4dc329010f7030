// Power actions, as Ironic's API and conductor carry them out: the targets
// it accepts, its refusals in their order and texts, the states a node shows
// while the action runs and after, the conductor's lock, and scripted
// failures and hangs. A manual clock makes every instant exact.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { startSimulator } from '../server.mjs';
import { client, faultstring, provision } from '../testkit.mjs';

const NODES = [
  { name: 'off', provision_state: 'available' }, // loaded powered off
  { name: 'on', provision_state: 'active' }, // loaded powered on
  { name: 'new', provision_state: 'enroll' }, // no power state yet
  { name: 'failed', provision_state: 'deploy failed', last_error: 'boom' },
  { name: 'racked', provision_state: 'available', conductor_group: 'rack-a' },
  { name: 'guarded', provision_state: 'active', disable_power_off: true },
];

let sim;
let api;
async function start(scenario = {}) {
  sim = await startSimulator({
    manualClock: true,
    scenario: { nodes: NODES, timing: { power: 500, deploying: 200, 'wait call-back': 300, cleaning: 200, deleting: 100 }, ...scenario },
  });
  api = client(sim.url);
}
afterEach(() => sim.close());

const power = (node, body, version) => api.put(`/v1/nodes/${node}/states/power`, { body, ...(version ? { version } : {}) });
const POWER_FIELDS = 'power_state,target_power_state,reservation,last_error';
async function state(node) {
  const { links, ...rest } = (await api.get(`/v1/nodes/${node}?fields=${POWER_FIELDS}`)).json;
  return rest;
}
async function accepted(node, target, extra = {}, version) {
  const res = await power(node, { target, ...extra }, version);
  assert.equal(res.status, 202, `${target}: ${res.text}`);
  assert.equal(res.text, '');
  return res;
}
async function refused(node, body, status, text, version) {
  const res = await power(node, body, version);
  assert.equal(res.status, status, res.text);
  assert.equal(faultstring(res), text);
  return res;
}
/** The simulator's own record of power changes: [t, power_state, target_power_state, action]. */
const powerWalk = (node) =>
  sim
    .history(node)
    .entries.filter((e) => 'power_state' in e)
    .map((e) => [e.t, e.power_state, e.target_power_state, e.action]);

test('power on: 202 with Location, the target and the lock while it runs, then power on, target and lock cleared', async () => {
  await start();
  sim.advance(10);
  const res = await accepted('off', 'power on');
  assert.equal(res.headers.location, `${sim.url}/v1/nodes/off/states`);
  assert.equal(res.headers['x-openstack-ironic-api-version'], '1.115');
  assert.deepEqual(await state('off'), {
    power_state: 'power off',
    target_power_state: 'power on',
    reservation: 'localhost',
    last_error: null,
  });
  sim.advance(499);
  assert.equal((await state('off')).target_power_state, 'power on', 'still running 1 ms before its end');
  sim.advance(1);
  assert.deepEqual(await state('off'), { power_state: 'power on', target_power_state: null, reservation: null, last_error: null });
  assert.deepEqual(powerWalk('off'), [
    [10, 'power off', 'power on', 'power on'],
    [510, 'power on', null, 'power on'],
  ]);
  assert.deepEqual(sim.events('off'), [], 'a power action that works writes no node history');
});

test('power off, rebooting, soft power off and soft rebooting end in the power state Ironic computes', async () => {
  await start();
  const cases = [
    ['on', 'power off', 'power off', 'power off'],
    ['off', 'rebooting', 'power on', 'power on'], // a reboot of a node that is off powers it on
    ['on', 'rebooting', 'power on', 'power on'],
    ['on', 'soft power off', 'power off', 'power off'],
    ['off', 'soft rebooting', 'power on', 'power on'],
    ['new', 'power on', 'power on', 'power on'], // from no power state at all
  ];
  for (const [node, target, during, after] of cases) {
    await accepted(node, target);
    assert.equal((await state(node)).target_power_state, during, target);
    sim.advance(500);
    assert.deepEqual(
      await state(node),
      { power_state: after, target_power_state: null, reservation: null, last_error: null },
      `${node} ${target}`,
    );
  }
});

test('a target already reached is accepted and ends the same way: target set, then cleared, power state kept', async () => {
  await start();
  await accepted('on', 'power on');
  assert.deepEqual(await state('on'), {
    power_state: 'power on',
    target_power_state: 'power on',
    reservation: 'localhost',
    last_error: null,
  });
  sim.advance(500);
  assert.deepEqual(await state('on'), { power_state: 'power on', target_power_state: null, reservation: null, last_error: null });
});

test('the lock: a node in a locked working state or in a power action gets 409 NodeLocked; its conductor holds it', async () => {
  await start();
  await provision(api, 'off', 'active');
  const locked = (node, host) =>
    `Node ${sim.node(node).uuid} is locked by host ${host}, please retry after the current operation is completed.`;
  await refused('off', { target: 'power on' }, 409, locked('off', 'localhost'));
  await accepted('racked', 'power on');
  assert.equal((await state('racked')).reservation, 'conductor-rack-a', 'the conductor of its group');
  await refused('racked', { target: 'power off' }, 409, locked('racked', 'conductor-rack-a'));
  const prov = await provision(api, 'racked', 'active');
  assert.deepEqual(
    [prov.status, faultstring(prov)],
    [409, locked('racked', 'conductor-rack-a')],
    'a provision action waits for the power action too',
  );
  sim.advance(500);
  await accepted('racked', 'power off');
});

test('a power action in an unlocked wait state keeps the lock across the provision phase that follows', async () => {
  await start();
  await provision(api, 'off', 'active'); // deploying 200, wait call-back 300, deploying 200
  sim.advance(250);
  assert.equal(sim.node('off').provision_state, 'wait call-back');
  await accepted('off', 'power on'); // 250 .. 750
  sim.advance(250); // 500: deploying again (locked), the power action still running
  assert.deepEqual([sim.node('off').provision_state, sim.node('off').reservation], ['deploying', 'localhost']);
  sim.advance(200); // 700: active; the power action keeps the lock
  assert.deepEqual(
    [sim.node('off').provision_state, sim.node('off').reservation, sim.node('off').target_power_state],
    ['active', 'localhost', 'power on'],
  );
  sim.advance(50);
  assert.deepEqual(await state('off'), { power_state: 'power on', target_power_state: null, reservation: null, last_error: null });
});

test('a node being cleaned is refused with 400 naming its provision state, though it is locked', async () => {
  await start();
  await provision(api, 'on', 'deleted');
  sim.advance(100); // deleting -> cleaning
  assert.equal(sim.node('on').provision_state, 'cleaning');
  await refused(
    'on',
    { target: 'power off' },
    400,
    'The requested action "power off" can not be performed on node "on" while it is in state "cleaning".',
  );
});

test('invalid targets: 400 with the requested action, the node as named and its power state', async () => {
  await start();
  const uuid = sim.node('on').uuid;
  for (const target of ['reboot', 'on', 'off', 'soft reboot', 'soft off', 'POWER ON', 'power_on', '']) {
    await refused(
      'on',
      { target },
      400,
      `The requested action "${target}" can not be performed on node "on" while it is in state "power on".`,
    );
  }
  await refused(
    uuid,
    { target: 'reboot' },
    400,
    `The requested action "reboot" can not be performed on node "${uuid}" while it is in state "power on".`,
  );
  await refused(
    'new',
    { target: 'reboot' },
    400,
    'The requested action "reboot" can not be performed on node "new" while it is in state "None".',
  );
  await refused(
    'on',
    { target: null },
    400,
    'The requested action "None" can not be performed on node "on" while it is in state "power on".',
  );
  await refused('on', {}, 400, 'Missing mandatory parameter: target');
  await refused('on', { timeout: 5 }, 400, 'Missing mandatory parameter: target');
  await refused('on', { target: 5 }, 400, 'Expected string for target: 5');
  await refused('on', { target: ['power on'] }, 400, "Expected string for target: ['power on']");
  await refused('on', { target: 'power on', force: true }, 400, 'Unexpected arguments: force');
  await refused('nope', { target: 'power on' }, 404, 'Node nope could not be found.');
  assert.equal(sim.node('on').target_power_state, null, 'nothing started');
});

test('soft targets and timeout need 1.27 (406); a timeout below 1 is 400 at any version, checked in Ironic order', async () => {
  await start();
  await refused('on', { target: 'soft power off' }, 406, 'Request not acceptable.', '1.26');
  await refused('on', { target: 'soft rebooting' }, 406, 'Request not acceptable.', '1.26');
  await refused('on', { target: 'power off', timeout: 10 }, 406, 'Request not acceptable.', '1.26');
  await refused('on', { target: 'bogus', timeout: 10 }, 406, 'Request not acceptable.', '1.26'); // the version before the target
  await refused('on', { target: 'rebooting', timeout: 0 }, 400, 'timeout has to be positive integer', '1.26'); // 0 is falsy: no 406
  await refused('on', { target: 'rebooting', timeout: -3 }, 400, 'timeout has to be positive integer');
  await refused('on', { target: 'bogus', timeout: 'x' }, 400, 'Expected an integer for timeout: x');
  await refused('on', { target: 'rebooting', timeout: [1] }, 400, 'Expected an integer for timeout: [1]');
  await refused(
    'on',
    { target: 'bogus', timeout: 5 },
    400,
    'The requested action "bogus" can not be performed on node "on" while it is in state "power on".',
  );
  await accepted('on', 'rebooting', {}, '1.26'); // plain targets at any version
  sim.advance(500);
  await accepted('on', 'soft power off', { timeout: 30 }, '1.27');
  sim.advance(500);
  await accepted('on', 'power on', { timeout: 2.7 }); // int(2.7) is 2
  sim.advance(500);
  await accepted('on', 'power off', { timeout: ' 7 ' }); // int(' 7 ') is 7
  sim.advance(500);
  assert.equal((await state('on')).power_state, 'power off');
});

test('disable_power_off: power off and soft power off are 409, power on and reboot go ahead', async () => {
  await start();
  await refused('guarded', { target: 'power off' }, 409, 'Failed to set node power state to power off.');
  await refused('guarded', { target: 'soft power off' }, 409, 'Failed to set node power state to soft power off.');
  await accepted('guarded', 'rebooting');
});

test('a new power action clears last_error, also on a failed node', async () => {
  await start();
  await accepted('failed', 'power on');
  assert.equal((await state('failed')).last_error, null);
  assert.equal(sim.node('failed').provision_state, 'deploy failed');
});

test('failure injection: the action ends with target cleared, power state unchanged, last_error and an ERROR event', async () => {
  await start({
    epoch: '2026-01-01T00:00:00Z',
    transitions: [{ node: 'on', action: 'power off', fail: 'IPMI call failed: power off.', times: 1 }],
  });
  sim.advance(1000);
  await accepted('on', 'power off');
  sim.advance(500);
  const error = "Failed to change power state to 'power off' by 'power off': IPMI call failed: power off.";
  assert.deepEqual(await state('on'), { power_state: 'power on', target_power_state: null, reservation: null, last_error: error });
  const [event] = sim.events('on');
  assert.deepEqual(
    { ...event, uuid: undefined, id: undefined, node_id: undefined },
    {
      uuid: undefined,
      id: undefined,
      node_id: undefined,
      created_at: 1500,
      severity: 'ERROR',
      event_type: 'UNKNOWN',
      event: error,
      conductor: 'localhost',
      user: null,
      project: null,
      state: 'active',
      target_provision_state: null,
      duration_seconds: Math.trunc((1500 - sim.node('on').provision_updated_at) / 1000),
    },
  );
  await accepted('on', 'power off'); // times: 1 is used up
  assert.equal((await state('on')).last_error, null, 'cleared when the next action starts');
  sim.advance(500);
  assert.deepEqual(await state('on'), { power_state: 'power off', target_power_state: null, reservation: null, last_error: null });
});

test('failure rules: `power` matches every target, a rule without action leaves power alone, `after` times it, maintenance', async () => {
  await start({
    transitions: [
      { node: 'on', fail: 'only for provision actions' },
      { node: 'off', action: 'power', fail: true, after: 50 },
      { node: 'racked', action: 'rebooting', fail: 'BMC busy', maintenance: true },
    ],
  });
  await accepted('on', 'power off');
  sim.advance(500);
  assert.equal((await state('on')).last_error, null);
  await accepted('off', 'rebooting');
  sim.advance(50);
  assert.deepEqual(await state('off'), {
    power_state: 'power off',
    target_power_state: null,
    reservation: null,
    last_error: "Failed to change power state to 'power on' by 'rebooting': Simulated power driver failure",
  });
  await accepted('racked', 'power on'); // not the rule's target
  sim.advance(500);
  await accepted('racked', 'rebooting');
  sim.advance(500);
  const node = sim.node('racked');
  assert.deepEqual(
    [node.power_state, node.maintenance, node.fault, node.maintenance_reason],
    ['power on', true, 'power failure', "Failed to change power state to 'power on' by 'rebooting': BMC busy"],
  );
});

test('stall: the target is never cleared and the node stays locked, until the control API sets it', async () => {
  await start({ transitions: [{ node: 'off', action: 'power on', stall: true }] });
  await accepted('off', 'power on');
  sim.advance(3_600_000);
  assert.deepEqual(await state('off'), {
    power_state: 'power off',
    target_power_state: 'power on',
    reservation: 'localhost',
    last_error: null,
  });
  await refused(
    'off',
    { target: 'power off' },
    409,
    `Node ${sim.node('off').uuid} is locked by host localhost, please retry after the current operation is completed.`,
  );
  sim.setNode('off', { power_state: 'power on' });
  assert.deepEqual(await state('off'), { power_state: 'power on', target_power_state: null, reservation: null, last_error: null });
  await accepted('off', 'power off');
});

test('power rules are checked when loaded: no hold, delete or at, a known target', async () => {
  await start();
  assert.throws(() => sim.transitions.add({ action: 'power on', hold: true }), /"hold" does not apply to power actions/);
  assert.throws(() => sim.transitions.add({ action: 'power off', fail: true, at: 'deploying' }), /"at" does not apply/);
  assert.throws(() => sim.transitions.add({ action: 'reboot', fail: true }), /unknown action "reboot"/);
  assert.throws(() => sim.transitions.add({ action: 'power', fail: true, stall: true }), /exactly one/);
  sim.transitions.add({ action: 'soft rebooting', stall: true });
});

test('timing: the scenario sets the duration, a node overrides it, a range is drawn per action from the seed', async () => {
  const ends = async (seed) => {
    await start({
      seed,
      timing: { power: [100, 900] },
      nodes: [...NODES, { name: 'quick', provision_state: 'available', timing: { power: 5 } }],
    });
    await accepted('quick', 'power on');
    sim.advance(5);
    assert.equal((await state('quick')).power_state, 'power on');
    const out = [];
    for (const target of ['power on', 'power off', 'power on']) {
      await accepted('off', target);
      const start = sim.now();
      while (sim.node('off').target_power_state) sim.advance(1);
      out.push(sim.now() - start);
    }
    await sim.close();
    return out;
  };
  const a = await ends(3);
  assert.ok(
    a.every((ms) => ms >= 100 && ms <= 900),
    String(a),
  );
  assert.deepEqual(await ends(3), a, 'the same seed, the same durations');
  assert.notDeepEqual(await ends(4), a);
  await start(); // for afterEach
});

test('the control API cancels a power action: setNode and deleteNode', async () => {
  await start();
  await accepted('off', 'power on');
  sim.setNode('off', { maintenance: true });
  assert.deepEqual(await state('off'), { power_state: 'power off', target_power_state: null, reservation: null, last_error: null });
  sim.advance(500);
  assert.equal((await state('off')).power_state, 'power off', 'the cancelled action never ends');
  await accepted('on', 'power off');
  sim.deleteNode('on');
  sim.advance(500);
  assert.equal((await api.get('/v1/nodes/on')).status, 404);
});

test('over HTTP through /__sim: a power rule posted to the transitions works like a scenario one', async () => {
  await start();
  const res = await fetch(`${sim.url}/__sim/transitions`, {
    method: 'POST',
    body: JSON.stringify({ node: 'on', action: 'power off', fail: 'no answer' }),
  });
  assert.equal(res.status, 200);
  await accepted('on', 'power off');
  sim.advance(500);
  assert.match((await state('on')).last_error, /by 'power off': no answer$/);
});

test('GET /v1/nodes/{id}/states, where the Location points, shows the power and provision states', async () => {
  await start({
    epoch: '2026-01-01T00:00:00Z',
    nodes: [{ name: 'n', provision_state: 'available', provision_updated_at: '2025-12-31T23:00:00Z' }],
  });
  const res = await accepted('n', 'power on');
  const states = await api.get(new URL(res.headers.location).pathname);
  assert.equal(states.status, 200);
  assert.deepEqual(states.json, {
    console_enabled: false,
    last_error: null,
    power_state: 'power off',
    provision_state: 'available',
    target_power_state: 'power on',
    target_provision_state: null,
    provision_updated_at: '2025-12-31T23:00:00+00:00',
    raid_config: {},
    target_raid_config: {},
    boot_mode: null,
    secure_boot: null,
  });
  assert.deepEqual(Object.keys((await api.get('/v1/nodes/n/states', { version: '1.11' })).json), [
    'console_enabled',
    'last_error',
    'power_state',
    'provision_state',
    'target_power_state',
    'target_provision_state',
    'provision_updated_at',
  ]);
  assert.equal((await api.get('/v1/nodes/n/states', { version: '1.1' })).json.provision_state, null, 'available reads None before 1.2');
  assert.equal((await api.get('/v1/nodes/nope/states')).status, 404);
});
