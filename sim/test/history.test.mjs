// Node history (GET /v1/nodes/{id}/history, API 1.78) as Ironic 39 serves
// it: what the conductor journals (ERROR events where it sets last_error,
// INFO events at the start and end of deploy, cleaning and servicing step
// flows), the fields per microversion, the list's arguments, order and
// paging, and its refusals. A manual clock makes every instant exact.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { UUID_RE } from '../rng.mjs';
import { startSimulator } from '../server.mjs';
import { client, faultstring, provision } from '../testkit.mjs';

const TIMING = {
  verifying: 100,
  deploying: 200,
  'wait call-back': 0,
  deleting: 100,
  cleaning: 300,
  'clean wait': 0,
  inspecting: 100,
  adopting: 100,
  rescuing: 100,
  unrescuing: 100,
  servicing: 100,
  power: 50,
};
const NODES = [
  { name: 'free', provision_state: 'available' },
  { name: 'managed', provision_state: 'manageable' },
  { name: 'busy', provision_state: 'active' },
  { name: 'new', provision_state: 'enroll' },
  { name: 'far', provision_state: 'available', conductor_group: 'rack-b' },
];
const DEPLOY_STEPS = "[{'step': 'deploy', 'priority': 100, 'abortable': True, 'argsinfo': None, 'interface': 'deploy'}]";
const CLEAN_STEPS =
  "[{'step': 'log_passthrough', 'priority': 1, 'abortable': False, 'argsinfo': None, 'interface': 'vendor', 'requires_ramdisk': True}]";

let sim;
let api;
async function start(scenario = {}) {
  sim = await startSimulator({
    manualClock: true,
    scenario: { epoch: '2026-01-01T00:00:00Z', nodes: NODES, ...scenario, timing: { ...TIMING, ...scenario.timing } },
  });
  api = client(sim.url);
}
afterEach(() => sim.close());

const history = async (node, query = '', version) => api.get(`/v1/nodes/${node}/history${query}`, version ? { version } : {});
/** The detailed list, without uuids and links: [created_at, severity, event_type, event, state, target, duration]. */
async function rows(node) {
  const res = await history(node, '?detail=true');
  assert.equal(res.status, 200, res.text);
  return res.json.history.map((e) => [
    e.created_at.slice(11),
    e.severity,
    e.event_type,
    e.event,
    e.state,
    e.target_provision_state,
    e.duration_seconds,
  ]);
}
async function accepted(node, target, extra) {
  const res = await provision(api, node, target, extra);
  assert.equal(res.status, 202, res.text);
}

test('a deploy journals the deployment flow: INFO at its start and its end, as Ironic 39 writes them', async () => {
  await start();
  sim.advance(1000);
  await accepted('free', 'active');
  sim.advance(400); // deploying 200 (no wait call-back) -> active
  assert.deepEqual(await rows('free'), [
    ['00:00:01+00:00', 'INFO', 'deployment_start', `Starting deployment with steps=${DEPLOY_STEPS}`, 'deploying', 'active', 0],
    [
      '00:00:01.200000+00:00',
      'INFO',
      'deployment_end',
      `Deployment completed successfully with steps=${DEPLOY_STEPS}`,
      'deploying',
      'active',
      0,
    ],
  ]);
  await accepted('free', 'deleted');
  sim.advance(400);
  assert.deepEqual((await rows('free')).slice(2), [
    [
      '00:00:01.500000+00:00',
      'INFO',
      'automated_cleaning_start',
      `Starting automated cleaning with steps=${CLEAN_STEPS}`,
      'cleaning',
      'available',
      0,
    ],
    [
      '00:00:01.800000+00:00',
      'INFO',
      'automated_cleaning_end',
      'Automated Cleaning completed successfully with steps=[]',
      'cleaning',
      'available',
      0,
    ],
  ]);
});

test('the list without detail has uuid, created_at, severity, event and a self link; detail and versions add fields', async () => {
  await start();
  await accepted('far', 'active');
  sim.advance(400);
  const uuid = sim.node('far').uuid;
  const plain = (await history('far')).json.history[0];
  assert.deepEqual(Object.keys(plain), ['uuid', 'created_at', 'severity', 'event', 'links']);
  assert.match(plain.uuid, UUID_RE);
  assert.deepEqual(plain.links, [{ href: `${sim.url}/v1/nodes/${uuid}/history/${plain.uuid}`, rel: 'self' }]);
  const keys = async (version) => Object.keys((await history('far', '?detail=true', version)).json.history[0]);
  assert.deepEqual(await keys('1.78'), ['uuid', 'created_at', 'severity', 'event_type', 'event', 'conductor', 'user', 'links']);
  assert.deepEqual(await keys('1.113'), ['uuid', 'created_at', 'severity', 'event_type', 'event', 'conductor', 'user', 'project', 'links']);
  assert.deepEqual(await keys('1.115'), [
    'uuid',
    'created_at',
    'severity',
    'event_type',
    'event',
    'conductor',
    'user',
    'project',
    'state',
    'target_provision_state',
    'duration_seconds',
    'links',
  ]);
  const detail = (await history('far', '?detail=true')).json.history[0];
  assert.deepEqual([detail.conductor, detail.user, detail.project], ['conductor-rack-b', null, null]);
  // One event is always in detail, at the same version gates.
  const one = await history('far', `/${plain.uuid}`, '1.114');
  assert.equal(one.status, 200);
  assert.deepEqual(Object.keys(one.json), [
    'uuid',
    'created_at',
    'severity',
    'event_type',
    'event',
    'conductor',
    'user',
    'project',
    'links',
  ]);
  assert.deepEqual((await history('far', `/${plain.uuid}`)).json, detail);
});

test('below 1.78 the route does not exist (a bare 404); then 404 for an unknown node, event or marker', async () => {
  await start();
  for (const path of [
    '/v1/nodes/free/history',
    '/v1/nodes/nope/history',
    `/v1/nodes/free/history/${'1'.repeat(8)}-1111-4111-8111-${'1'.repeat(12)}`,
  ]) {
    const res = await api.get(path, { version: '1.77' });
    assert.equal(res.status, 404, path);
    assert.equal(res.text, '{"error_message": "{\\"code\\": 404, \\"title\\": \\"Not Found\\", \\"description\\": \\"\\"}"}');
    assert.equal(res.headers['x-openstack-ironic-api-version'], undefined, 'no version headers, as pecan answers it');
  }
  assert.equal((await api.get('/v1/nodes/free/history')).status, 200, 'latest');
  assert.equal((await api.get('/v1/nodes/free/history', { version: '1.1' })).status, 404);
  const cases = [
    ['/v1/nodes/nope/history', 404, 'Node nope could not be found.'],
    [
      '/v1/nodes/free/history/52949728-59fc-4651-84c8-b0a16b469372',
      404,
      'Node history record 52949728-59fc-4651-84c8-b0a16b469372 could not be found.',
    ],
    ['/v1/nodes/free/history/1234', 404, 'Node history record 1234 could not be found.'],
    ['/v1/nodes/free/history/a%20b', 400, 'Expected UUID or name for event: a b'],
    [
      '/v1/nodes/free/history?marker=52949728-59fc-4651-84c8-b0a16b469372',
      404,
      'Node history record 52949728-59fc-4651-84c8-b0a16b469372 could not be found.',
    ],
  ];
  for (const [path, status, text] of cases) {
    const res = await api.get(path);
    assert.deepEqual([res.status, faultstring(res)], [status, text], path);
  }
  assert.deepEqual((await history('free')).json, { history: [] });
  assert.equal((await api.put('/v1/nodes/free/history', { body: {} })).status, 405);
});

test('its arguments are checked as Ironic checks them, in its order', async () => {
  await start();
  const cases = [
    ['?fields=uuid', 'Unexpected arguments: fields'],
    ['?limit=1&bogus=1', 'Unexpected arguments: bogus'],
    [
      '?detail=maybe',
      "Invalid detail: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'",
    ],
    ['?marker=abc', 'Expected UUID for marker: abc'],
    ['?limit=x', 'Expected an integer for limit: x'],
    ['?limit=0', 'Limit must be positive'],
    ['?sort_dir=up', "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'"],
    ['?sort_key=bogus', 'The sort_key value "bogus" is an invalid field for sorting'],
    ['?limit=0&sort_dir=up', 'Limit must be positive'],
  ];
  for (const [query, text] of cases) {
    const res = await history('free', query);
    assert.deepEqual([res.status, faultstring(res)], [400, text], query);
  }
  const res = await history('nope', '?marker=abc');
  assert.deepEqual([res.status, faultstring(res)], [400, 'Expected UUID for marker: abc'], 'arguments before the node');
});

test('every failure writes an ERROR event named as its error handler names it, with last_error as the event', async () => {
  const nodes = [
    ['d', 'available', 'active', 'deploying'],
    ['c', 'manageable', 'provide', 'cleaning'],
    ['v', 'enroll', 'manage', 'verifying'],
    ['u', 'active', 'deleted', 'unprovision', { at: 'deleting' }],
    ['i', 'manageable', 'inspect', 'introspection'],
    ['a', 'manageable', 'adopt', 'adoption'],
    ['r', 'active', 'rescue', 'rescue', {}, { rescue_password: 'x' }],
    ['s', 'active', 'service', 'servicing', {}, { service_steps: [{ interface: 'bios', step: 'apply_configuration' }] }],
  ];
  await start({
    nodes: nodes.map(([name, provision_state]) => ({ name, provision_state })),
    transitions: nodes.map(([node, , action, , extra]) => ({ node, action, fail: `${node} broke`, ...extra })),
  });
  for (const [node, , action, , , body] of nodes) await accepted(node, action, body);
  sim.advance(1000);
  for (const [node, , , eventType] of nodes) {
    const errors = (await rows(node)).filter((r) => r[1] === 'ERROR');
    const state = sim.node(node);
    assert.equal(state.last_error, `${node} broke`);
    assert.deepEqual(
      errors.map((r) => [r[2], r[3]]),
      [[eventType, `${node} broke`]],
      node,
    );
  }
  // The row shows the working state that failed, and how long the node was in it.
  assert.deepEqual(
    (await rows('d')).map((r) => r.slice(1)),
    [
      ['INFO', 'deployment_start', `Starting deployment with steps=${DEPLOY_STEPS}`, 'deploying', 'active', 0],
      ['ERROR', 'deploying', 'd broke', 'deploying', 'active', 0],
    ],
  );
  assert.deepEqual(
    (await rows('u')).map((r) => r.slice(1)),
    [['ERROR', 'unprovision', 'u broke', 'deleting', 'available', 0]],
    'no cleaning began',
  );
});

test('duration_seconds counts whole seconds since provision_updated_at; created_at is the instant of the change', async () => {
  await start({ transitions: [{ node: 'free', action: 'active', fail: 'late', after: 2999 }] });
  sim.advance(500);
  await accepted('free', 'active');
  sim.advance(2999); // `after` is the time spent in the failing state
  assert.deepEqual(await rows('free'), [
    ['00:00:00.500000+00:00', 'INFO', 'deployment_start', `Starting deployment with steps=${DEPLOY_STEPS}`, 'deploying', 'active', 0],
    ['00:00:03.499000+00:00', 'ERROR', 'deploying', 'late', 'deploying', 'active', 2],
  ]);
});

test('manual cleaning and servicing print the steps given; unhold ends a held flow; a rescue abort is an INFO event', async () => {
  await start({
    nodes: [...NODES, { name: 'rescued', provision_state: 'active' }],
    transitions: [{ node: 'busy', action: 'service', hold: true }],
    timing: { 'rescue wait': 100 },
  });
  await accepted('managed', 'clean', { clean_steps: [{ interface: 'bios', step: 'factory_reset', args: { force: true } }] });
  await accepted('busy', 'service', { service_steps: [{ interface: 'raid', step: 'delete_configuration' }] });
  sim.advance(400);
  assert.deepEqual(
    (await rows('managed')).map((r) => [r[2], r[3], r[5]]),
    [
      [
        'manual_cleaning_start',
        "Starting manual cleaning with steps=[{'interface': 'bios', 'step': 'factory_reset', 'args': {'force': True}}]",
        'manageable',
      ],
      ['manual_cleaning_end', 'Manual Cleaning completed successfully with steps=[]', 'manageable'],
    ],
  );
  assert.equal(sim.node('busy').provision_state, 'service hold');
  assert.deepEqual(
    (await rows('busy')).map((r) => r[2]),
    ['servicing_start'],
  );
  await accepted('busy', 'unhold');
  sim.advance(400);
  assert.deepEqual(
    (await rows('busy')).map((r) => [r[2], r[3]]),
    [
      ['servicing_start', "Starting servicing with steps=[{'interface': 'raid', 'step': 'delete_configuration'}]"],
      ['servicing_end', 'Servicing completed successfully with steps=[]'],
    ],
  );
  await accepted('rescued', 'rescue', { rescue_password: 'pw' });
  sim.advance(100);
  assert.equal(sim.node('rescued').provision_state, 'rescue wait');
  await accepted('rescued', 'abort');
  assert.deepEqual(
    (await rows('rescued')).map((r) => r.slice(1, 5)),
    [['INFO', 'rescue', 'By request, the rescue operation was aborted.', 'rescue failed']],
  );
});

test('paging: limit and marker walk the rows in (created_at, id) order; next is the link Ironic 39 builds', async () => {
  await start();
  for (let i = 0; i < 3; i++) {
    await accepted('free', 'active');
    sim.advance(400);
    await accepted('free', 'deleted');
    sim.advance(400);
  }
  const all = (await history('free')).json.history;
  assert.equal(all.length, 12);
  const stamps = all.map((e) => Date.parse(e.created_at));
  assert.deepEqual(
    [...stamps].sort((a, b) => a - b),
    stamps,
    'oldest first',
  );
  assert.equal((await history('free')).json.next, undefined, 'no next when the page is not full');
  let page = (await history('free', '?limit=5')).json;
  assert.deepEqual(
    page.history.map((e) => e.uuid),
    all.slice(0, 5).map((e) => e.uuid),
  );
  assert.equal(
    page.next,
    `${sim.url}/v1/nodes/free/history?marker=None&sort_key=created_at&sort_dir=asc&fields=uuid,created_at,severity,event&limit=5&marker=${all[4].uuid}`,
  );
  const seen = [...page.history];
  let marker = all[4].uuid;
  for (;;) {
    page = (await history('free', `?limit=5&marker=${marker}`)).json;
    seen.push(...page.history);
    if (page.history.length < 5) break;
    marker = page.history.at(-1).uuid;
  }
  assert.deepEqual(
    seen.map((e) => e.uuid),
    all.map((e) => e.uuid),
    'a client paging by marker sees every row once',
  );
  // With a marker, Ironic prints the marker object itself into the link; and the link's `fields` is refused.
  const second = (await history('free', `?limit=2&marker=${all[0].uuid}&detail=true`)).json;
  const ev = sim.events('free')[0];
  const when = '2026-01-01T00:00:00Z';
  assert.equal(
    second.next,
    `${sim.url}/v1/nodes/free/history?marker=NodeHistory(conductor='localhost',created_at=${when},duration_seconds=0,` +
      `event='Starting deployment with steps=${DEPLOY_STEPS}',event_type='deployment_start',id=${ev.id},node_id=${sim.world.findNode('free').id},` +
      `project=None,severity='INFO',state='deploying',target_provision_state='active',updated_at=None,user=None,uuid=${all[0].uuid})` +
      '&sort_key=created_at&sort_dir=asc&fields=uuid,created_at,severity,event_type,event,conductor,user,project,state,target_provision_state,duration_seconds' +
      `&limit=2&marker=${all[2].uuid}`,
  );
  const followed = await api.get(page.next ?? (await history('free', '?limit=5')).json.next);
  assert.deepEqual([followed.status, faultstring(followed)], [400, 'Unexpected arguments: fields']);
});

test('sort_key and sort_dir: any column, NULL smallest, ties by id; a marker bounds by its own values', async () => {
  await start({ transitions: [{ node: 'managed', action: 'provide', fail: 'zzz', times: 1 }] });
  await accepted('managed', 'provide');
  sim.advance(400);
  await accepted('managed', 'manage');
  await accepted('managed', 'provide');
  sim.advance(400);
  const all = sim.events('managed');
  assert.deepEqual(
    all.map((e) => e.event_type),
    ['automated_cleaning_start', 'cleaning', 'automated_cleaning_start', 'automated_cleaning_end'],
  );
  const order = async (query) => (await history('managed', query)).json.history.map((e) => all.findIndex((x) => x.uuid === e.uuid));
  assert.deepEqual(await order('?sort_dir=desc'), [3, 2, 1, 0]);
  assert.deepEqual(await order('?sort_key=event_type'), [3, 0, 2, 1], 'by text, then id');
  assert.deepEqual(await order('?sort_key=event_type&sort_dir=desc'), [1, 2, 0, 3]);
  assert.deepEqual(await order('?sort_key=severity&sort_dir=desc&limit=2'), [3, 2], 'INFO > ERROR, ids descending too');
  assert.deepEqual(await order(`?sort_key=event_type&marker=${all[0].uuid}`), [2, 1]);
  assert.deepEqual(await order(`?sort_key=severity&sort_dir=desc&marker=${all[3].uuid}`), [2, 0, 1]);
  assert.deepEqual(await order('?sort_key=id&sort_dir=desc&limit=1'), [3]);
  assert.deepEqual(await order('?sort_key='), [0, 1, 2, 3], 'an empty key sorts by id');
  assert.deepEqual(await order('?sort_key=user'), [0, 1, 2, 3], 'all NULL: by id');
  // A marker from another node bounds this node's rows too: the table is one.
  await accepted('free', 'active');
  sim.advance(400);
  const foreign = sim.events('free')[0].uuid;
  assert.deepEqual(await order(`?marker=${foreign}`), []);
  assert.equal((await history('managed', `/${foreign}`)).json.uuid, foreign, 'one event by uuid, whichever node it belongs to');
});

test('a list without detail cuts an event over 255 characters to 251 and "..."; detail shows it whole', async () => {
  const long = `${'x'.repeat(300)}!`;
  await start({ transitions: [{ node: 'free', action: 'active', fail: long }] });
  await accepted('free', 'active');
  sim.advance(400);
  const [, error] = (await history('free')).json.history;
  assert.equal(error.event, `${'x'.repeat(251)}...`);
  assert.equal((await history('free', '?detail=1')).json.history[1].event, long);
  assert.equal((await history('free', `/${error.uuid}`)).json.event, long);
});

test('options: nodeHistory false writes nothing, steps false only errors, maxEntries keeps the newest; a deleted node has none', async () => {
  const run = async (nodeHistory) => {
    await start({ nodeHistory, transitions: [{ node: 'managed', action: 'provide', fail: 'nope' }] });
    await accepted('free', 'active');
    await accepted('managed', 'provide');
    sim.advance(400);
    const out = [(await history('free')).json.history.length, (await history('managed')).json.history.map((e) => e.severity)];
    await sim.close();
    return out;
  };
  assert.deepEqual(await run(undefined), [2, ['INFO', 'ERROR']]);
  assert.deepEqual(await run(false), [0, []]);
  assert.deepEqual(await run({ steps: false }), [0, ['ERROR']]);
  assert.deepEqual(await run({ maxEntries: 1 }), [1, ['ERROR']]);
  assert.throws(() => new sim.world.constructor({ scenario: { nodeHistory: { max: 3 } } }), /unknown key "max" in nodeHistory/);
  await start({ transitions: [{ node: 'free', action: 'active', delete: true }] });
  await accepted('free', 'active');
  sim.advance(400);
  assert.equal((await history('free')).status, 404);
  assert.equal(sim.world.nodeHistory.budget.count, 0);
});

test('historyLimit bounds both histories in all, dropping the oldest entries first', async () => {
  await start({ historyLimit: 5 });
  for (let i = 0; i < 4; i++) {
    await accepted('free', 'active');
    sim.advance(400);
    await accepted('free', 'deleted');
    sim.advance(400);
  }
  const events = sim.events('free');
  assert.equal(events.length, 5);
  assert.deepEqual(
    events.map((e) => e.id),
    [12, 13, 14, 15, 16],
    'the newest five rows',
  );
  const entries = sim.history('free').entries;
  assert.equal(entries.length, 5);
  assert.equal(entries.at(-1).provision_state, 'available');
  assert.equal(sim.world.historyBudget.count, 5);
  assert.ok(Array.isArray(sim.history()), 'the list of changed nodes copes with a history that lost its first entry');
});

test('a run is deterministic: the same seed and requests give the same rows, uuids included', async () => {
  const run = async () => {
    await start({ seed: 9 });
    await accepted('free', 'active');
    await accepted('managed', 'provide');
    sim.advance(1000);
    const text = ((await history('free', '?detail=true')).text + (await history('managed', '?detail=true')).text).replaceAll(
      sim.url,
      'BASE',
    );
    await sim.close();
    return text;
  };
  const a = await run();
  assert.equal(await run(), a);
  await start();
});

test('a node loaded failed has the ERROR row Ironic wrote when it failed, which the budget never drops', async () => {
  await start({
    historyLimit: 3,
    nodes: [
      ...NODES,
      { name: 'df', provision_state: 'deploy failed', last_error: 'image gone', provision_updated_at: '2025-12-31T23:00:00Z' },
      { name: 'cf', provision_state: 'clean failed', last_error: 'disk frozen', maintenance: true, fault: 'clean failure' },
      {
        name: 'pf',
        provision_state: 'active',
        last_error: 'During sync_power_state, ...',
        maintenance: true,
        fault: 'power failure',
        updated_at: '2025-12-31T22:00:00Z',
      },
      { name: 'kept', provision_state: 'manageable', last_error: 'an old error a manage kept' },
    ],
  });
  const row = async (node) =>
    (await history(node, '?detail=true')).json.history.map((e) => [
      e.created_at,
      e.severity,
      e.event_type,
      e.event,
      e.state,
      e.target_provision_state,
      e.duration_seconds,
    ]);
  assert.deepEqual(await row('df'), [['2025-12-31T23:00:00+00:00', 'ERROR', 'deploying', 'image gone', 'deploying', 'active', null]]);
  assert.deepEqual(
    (await row('cf')).map((r) => r.slice(1, 6)),
    [['ERROR', 'cleaning', 'disk frozen', 'cleaning', 'available']],
  );
  assert.deepEqual(await row('pf'), [
    ['2025-12-31T22:00:00+00:00', 'ERROR', 'monitoring', 'During sync_power_state, ...', 'active', null, null],
  ]);
  assert.deepEqual(await row('kept'), [], 'a stable node keeping an old last_error: no failure to journal');
  for (let i = 0; i < 3; i++) {
    await accepted('df', 'deleted');
    sim.advance(400);
    await accepted('df', 'active');
    sim.advance(400);
    await accepted('free', 'active');
    sim.advance(400);
    await accepted('free', 'deleted');
    sim.advance(400);
  }
  const df = sim.events('df');
  assert.equal(df[0].event, 'image gone', 'outside the budget: still first');
  assert.equal(df.length + sim.events('free').length, 4, 'three counted rows in all, and the loaded one');
  assert.equal(sim.world.nodeHistory.budget.count, 3);
  sim.deleteNode('df');
  assert.equal(sim.world.nodeHistory.loaded.size, 2, "a deleted node's rows go with it");
});
