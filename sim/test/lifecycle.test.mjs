// Provision actions: every target, the intermediate states real Ironic walks,
// locks, refusals, and scripted failures, holds and deletions. A manual clock
// makes every instant exact.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { startSimulator } from '../server.mjs';
import { client, faultstring, provision } from '../testkit.mjs';

const TIMING = {
  verifying: 100,
  deploying: 200,
  'wait call-back': 50,
  deleting: 100,
  cleaning: 300,
  inspecting: 100,
  adopting: 100,
  rescuing: 100,
  unrescuing: 100,
  servicing: 100,
  allocating: 10,
};
const NODES = [
  { name: 'enrolled', provision_state: 'enroll' },
  { name: 'managed', provision_state: 'manageable' },
  { name: 'free', provision_state: 'available' },
  { name: 'busy', provision_state: 'active' },
  { name: 'broken', provision_state: 'available', maintenance: true },
];

let sim;
let api;
async function start(scenario = {}) {
  sim = await startSimulator({ manualClock: true, scenario: { nodes: NODES, ...scenario, timing: { ...TIMING, ...scenario.timing } } });
  api = client(sim.url);
}
afterEach(() => sim.close());

/** [t, provision_state, target_provision_state] since the scenario loaded. */
const walk = (node) =>
  sim
    .history(node)
    .entries.slice(1)
    .map((e) => (e.deleted ? [e.t, 'DELETED'] : [e.t, e.provision_state, e.target_provision_state]));
const state = async (node, fields = 'provision_state,target_provision_state,reservation,last_error') =>
  (await api.get(`/v1/nodes/${node}?fields=${fields}`)).json;

async function accepted(node, target, extra) {
  const res = await provision(api, node, target, extra);
  assert.equal(res.status, 202, `${target}: ${res.text}`);
  assert.equal(res.text, '');
  return res;
}

test('manage: enroll -> verifying (locked) -> manageable', async () => {
  await start();
  const res = await accepted('enrolled', 'manage');
  assert.equal(res.headers.location, `${sim.url}/v1/nodes/enrolled/states`);
  const during = await state('enrolled');
  assert.deepEqual(during, {
    provision_state: 'verifying',
    target_provision_state: 'manageable',
    reservation: 'localhost',
    last_error: null,
    links: during.links,
  });
  sim.advance(100);
  assert.equal((await state('enrolled')).target_provision_state, null);
  assert.deepEqual(walk('enrolled'), [
    [0, 'verifying', 'manageable'],
    [100, 'manageable', null],
  ]);
  await accepted('free', 'manage');
  assert.deepEqual(walk('free'), [[100, 'manageable', null]], 'available -> manageable at once');
});

test('provide: manageable -> cleaning -> available; provision_updated_at moves', async () => {
  await start({ epoch: '2026-01-01T00:00:00Z' });
  sim.advance(5);
  await accepted('managed', 'provide');
  assert.equal((await state('managed', 'provision_updated_at')).provision_updated_at, '2026-01-01T00:00:00.005000+00:00');
  sim.advance(300);
  const after = await state('managed', 'provision_state,target_provision_state,provision_updated_at');
  assert.equal(after.provision_updated_at, '2026-01-01T00:00:00.305000+00:00');
  assert.deepEqual(walk('managed'), [
    [5, 'cleaning', 'available'],
    [305, 'available', null],
  ]);
});

test('deploy: available -> deploying -> wait call-back (unlocked) -> deploying -> active', async () => {
  await start();
  await accepted('free', 'active');
  sim.advance(200);
  assert.equal((await state('free')).reservation, null, 'wait call-back does not hold the lock');
  sim.advance(250);
  assert.deepEqual(walk('free'), [
    [0, 'deploying', 'active'],
    [200, 'wait call-back', 'active'],
    [250, 'deploying', 'active'],
    [450, 'active', null],
  ]);
});

test('deploy without a wait state when its duration is 0; the "deploy" verb needs 1.73', async () => {
  await start({ timing: { 'wait call-back': 0 } });
  const early = await client(sim.url, '1.72').put('/v1/nodes/free/states/provision', { body: { target: 'deploy' } });
  assert.equal(early.status, 406);
  await accepted('free', 'deploy');
  sim.advance(200);
  assert.deepEqual(walk('free'), [
    [0, 'deploying', 'active'],
    [200, 'active', null],
  ]);
});

test('undeploy: active -> deleting -> cleaning -> available, the instance goes', async () => {
  await start();
  assert.notEqual((await state('busy', 'instance_uuid')).instance_uuid, null);
  const old = await client(sim.url, '1.60').put('/v1/nodes/busy/states/provision', { body: { target: 'undeploy' } });
  assert.equal(old.status, 202, 'Ironic never gates "undeploy" (its verb table is keyed by "delete")');
  sim.advance(100);
  assert.equal((await state('busy', 'instance_uuid')).instance_uuid, null);
  sim.advance(300);
  assert.deepEqual(walk('busy'), [
    [0, 'deleting', 'available'],
    [100, 'cleaning', 'available'],
    [400, 'available', null],
  ]);
});

test('inspect (with and without inspect wait), adopt, rebuild', async () => {
  await start({ timing: { 'inspect wait': 40 }, nodes: [...NODES, { name: 'm2', provision_state: 'manageable' }] });
  await accepted('managed', 'inspect');
  await accepted('m2', 'adopt');
  await accepted('busy', 'rebuild');
  sim.advance(1000);
  assert.deepEqual(walk('managed'), [
    [0, 'inspecting', 'manageable'],
    [100, 'inspect wait', 'manageable'],
    [140, 'manageable', null],
  ]);
  assert.deepEqual(walk('m2'), [
    [0, 'adopting', 'active'],
    [100, 'active', null],
  ]);
  assert.deepEqual(
    walk('busy').map((w) => w[1]),
    ['deploying', 'wait call-back', 'deploying', 'active'],
  );
});

test('rescue needs a password; rescue -> unrescue', async () => {
  await start();
  const noPassword = await provision(api, 'busy', 'rescue');
  assert.equal(noPassword.status, 400);
  assert.equal(faultstring(noPassword), 'A non-empty "rescue_password" is required when setting target provision state to rescue');
  const misplaced = await provision(api, 'busy', 'deleted', { rescue_password: 'x' });
  assert.equal(faultstring(misplaced), '"rescue_password" is only valid when setting target provision state to rescue');
  await accepted('busy', 'rescue', { rescue_password: 'secret' });
  sim.advance(100);
  await accepted('busy', 'unrescue');
  sim.advance(100);
  assert.deepEqual(walk('busy'), [
    [0, 'rescuing', 'rescue'],
    [100, 'rescue', null],
    [100, 'unrescuing', 'active'],
    [200, 'active', null],
  ]);
});

test('clean and service need their steps; service needs 1.87', async () => {
  await start();
  assert.equal(
    faultstring(await provision(api, 'managed', 'clean')),
    '"clean_steps" is required when setting target provision state to clean',
  );
  assert.equal(
    faultstring(await provision(api, 'managed', 'clean', { clean_steps: [] })),
    '"clean_steps" is required when setting target provision state to clean',
  );
  assert.equal(
    faultstring(await provision(api, 'busy', 'service')),
    '"service_steps" is required when setting target provision state to service',
  );
  assert.equal(
    (await client(sim.url, '1.86').put('/v1/nodes/busy/states/provision', { body: { target: 'service', service_steps: [{}] } })).status,
    406,
  );
  const steps = [{ interface: 'bios', step: 'apply_configuration' }];
  assert.equal(
    faultstring(await provision(api, 'free', 'active', { clean_steps: steps })),
    '"clean_steps" is only valid when setting target provision state to clean',
  );
  await accepted('managed', 'clean', { clean_steps: steps });
  await accepted('busy', 'service', { service_steps: steps });
  sim.advance(300);
  assert.deepEqual(walk('managed'), [
    [0, 'cleaning', 'manageable'],
    [300, 'manageable', null],
  ]);
  assert.deepEqual(walk('busy'), [
    [0, 'servicing', 'active'],
    [100, 'active', null],
  ]);
});

test('refusals: bad transition 400, missing target 400, maintenance 400, lock 409', async () => {
  await start();
  const uuid = sim.node('busy').uuid;
  const bad = await provision(api, 'busy', 'provide');
  assert.equal(bad.status, 400);
  assert.equal(
    bad.text,
    `{"error_message": "{\\"faultcode\\": \\"Client\\", \\"faultstring\\": \\"The requested action \\\\\\"provide\\\\\\" can not be performed on node \\\\\\"${uuid}\\\\\\" while it is in state \\\\\\"active\\\\\\".\\", \\"debuginfo\\": null}"}`,
  );
  assert.equal(
    faultstring(await provision(api, 'busy', 'bogus')),
    `The requested action "bogus" can not be performed on node "${uuid}" while it is in state "active".`,
  );
  for (const body of [{}, 'not json']) {
    const res = await api.put('/v1/nodes/busy/states/provision', { body });
    assert.equal(faultstring(res), 'Missing mandatory parameter: target');
  }
  assert.equal(
    faultstring(await provision(api, 'broken', 'active')),
    `The provisioning operation can't be performed on node ${sim.node('broken').uuid} because it's in maintenance mode.`,
  );
  assert.equal((await provision(api, 'nope', 'active')).status, 404);
  await accepted('free', 'active');
  for (const target of ['deleted', 'provide', 'active']) {
    const locked = await provision(api, 'free', target);
    assert.equal(locked.status, 409, target);
    assert.equal(
      faultstring(locked),
      `Node ${sim.node('free').uuid} is locked by host localhost, please retry after the current operation is completed.`,
    );
  }
  sim.advance(200);
  await accepted('free', 'deleted'); // from wait call-back: no lock, and the machine allows it
  assert.equal((await state('free')).provision_state, 'deleting');
});

test('a scripted failure lands in the failure state with last_error, cleared by the next operation', async () => {
  await start({ transitions: [{ node: 'free', action: 'active', fail: 'boom' }] });
  await accepted('free', 'active');
  sim.advance(450);
  assert.deepEqual(await state('free'), {
    provision_state: 'deploy failed',
    target_provision_state: 'active',
    reservation: null,
    last_error: 'boom',
    links: (await state('free')).links,
  });
  await accepted('free', 'deleted');
  assert.equal((await state('free')).last_error, null);
  sim.advance(400);
  assert.deepEqual(
    walk('free').map((w) => w[1]),
    ['deploying', 'wait call-back', 'deploying', 'deploy failed', 'deleting', 'cleaning', 'available'],
  );
});

test('failures by state: verifying -> enroll, deleting -> error, cleaning with maintenance', async () => {
  await start({
    transitions: [
      { node: 'enrolled', action: 'manage', fail: 'bad credentials' },
      { node: 'busy', action: 'deleted', at: 'deleting', fail: 'teardown broke', after: 30 },
      { node: 'managed', action: 'provide', fail: 'disk wipe failed', maintenance: true },
    ],
  });
  await accepted('enrolled', 'manage');
  await accepted('busy', 'undeploy'); // an alias matches the rule too
  await accepted('managed', 'provide');
  sim.advance(300);
  assert.deepEqual(walk('enrolled'), [
    [0, 'verifying', 'manageable'],
    [100, 'enroll', null],
  ]);
  assert.equal((await state('enrolled')).last_error, 'bad credentials');
  assert.deepEqual(walk('busy'), [
    [0, 'deleting', 'available'],
    [30, 'error', null],
  ]);
  const m = await state('managed', 'provision_state,target_provision_state,maintenance,fault,last_error');
  assert.deepEqual(
    [m.provision_state, m.target_provision_state, m.maintenance, m.fault, m.last_error],
    ['clean failed', 'available', true, 'clean failure', 'disk wipe failed'],
  );
  await accepted('managed', 'manage');
  assert.equal((await state('managed')).last_error, 'disk wipe failed', 'manage from clean failed keeps last_error, as Ironic does');
});

test('a rule applies `times` times only, then transitions succeed', async () => {
  await start({ transitions: [{ action: 'manage', fail: 'flaky', times: 1 }] });
  await accepted('enrolled', 'manage');
  sim.advance(100);
  await accepted('enrolled', 'manage');
  sim.advance(100);
  assert.deepEqual(
    walk('enrolled').map((w) => w[1]),
    ['verifying', 'enroll', 'verifying', 'manageable'],
  );
});

test("hold states: unhold (1.85) resumes through the wait state; abort fails with Ironic's text", async () => {
  await start({
    transitions: [
      { node: 'free', action: 'active', hold: true },
      { node: 'managed', action: 'provide', hold: true },
      { node: 'busy', action: 'service', hold: true },
    ],
  });
  await accepted('free', 'active');
  await accepted('managed', 'provide');
  await accepted('busy', 'service', { service_steps: [{ interface: 'raid', step: 'x' }] });
  sim.advance(10_000);
  assert.deepEqual(await state('free'), {
    provision_state: 'deploy hold',
    target_provision_state: 'active',
    reservation: null,
    last_error: null,
    links: (await state('free')).links,
  });
  assert.equal((await state('managed')).provision_state, 'clean hold');
  assert.equal((await state('busy')).provision_state, 'service hold');
  assert.equal((await client(sim.url, '1.84').put('/v1/nodes/free/states/provision', { body: { target: 'unhold' } })).status, 406);
  await accepted('free', 'unhold');
  sim.advance(250);
  assert.deepEqual(walk('free').slice(1), [
    [200, 'deploy hold', 'active'],
    [10_000, 'wait call-back', 'active'],
    [10_050, 'deploying', 'active'],
    [10_250, 'active', null],
  ]);
  await accepted('managed', 'abort');
  assert.deepEqual(await state('managed'), {
    provision_state: 'clean failed',
    target_provision_state: 'available',
    reservation: null,
    last_error: 'By request, the clean operation was aborted',
    links: (await state('managed')).links,
  });
  await accepted('busy', 'abort');
  assert.equal((await state('busy')).last_error, 'By request, the service operation was aborted');
});

test('abort in wait call-back needs 1.110', async () => {
  await start();
  await accepted('free', 'active');
  sim.advance(200);
  assert.equal((await client(sim.url, '1.109').put('/v1/nodes/free/states/provision', { body: { target: 'abort' } })).status, 406);
  await accepted('free', 'abort');
  assert.deepEqual(
    [(await state('free')).provision_state, (await state('free')).last_error],
    ['deploy failed', 'By request, the deploy operation was aborted'],
  );
});

test('a node deleted mid-wait answers 404 from then on', async () => {
  await start({ transitions: [{ node: 'free', action: 'active', delete: true, at: 'wait call-back', after: 20 }] });
  await accepted('free', 'active');
  sim.advance(219);
  assert.equal((await state('free')).provision_state, 'wait call-back');
  sim.advance(1);
  const gone = await api.get('/v1/nodes/free');
  assert.equal(gone.status, 404);
  assert.equal(faultstring(gone), 'Node free could not be found.');
  assert.deepEqual(walk('free'), [
    [0, 'deploying', 'active'],
    [200, 'wait call-back', 'active'],
    [220, 'DELETED'],
  ]);
});

test('a stalled transition never ends and keeps the lock', async () => {
  await start({ transitions: [{ node: 'free', stall: true }] });
  await accepted('free', 'active');
  sim.advance(1e9);
  assert.equal((await state('free')).provision_state, 'deploying');
  assert.equal((await provision(api, 'free', 'deleted')).status, 409);
});

test('a real clock with a time scale runs transitions on their own', async () => {
  sim = await startSimulator({ timeScale: 100, scenario: { nodes: [{ name: 'n1', provision_state: 'manageable' }] } });
  api = client(sim.url);
  await accepted('n1', 'provide'); // 2000 sim ms of cleaning = 20 ms
  const deadline = Date.now() + 60_000; // a bound for a broken clock, not a time budget: it takes ~20 ms
  while ((await state('n1')).provision_state !== 'available') {
    assert.ok(Date.now() < deadline, 'provide did not finish');
    await new Promise((r) => setTimeout(r, 5));
  }
  const [cleaning, available] = sim.history('n1').entries.slice(1);
  assert.equal(cleaning.provision_state, 'cleaning');
  assert.ok(Math.abs(available.t - cleaning.t - 20) < 1e-6, 'the instants are the scheduled ones, not the observations');
});
