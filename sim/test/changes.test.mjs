// The change feed: timestamps, sorting and paging as the database does them,
// list filters and their microversions, and the controls that make a feed
// hard to follow (late commits, a skewed server clock, churn).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareValues } from '../order.mjs';
import { createSimulator } from '../server.mjs';
import { client, faultstring, provision, request } from '../testkit.mjs';
import { EPOCH, FEED, start } from './manual.mjs';

/** Every page of a list from `path` on, following `next`; the names (or uuids) in the order served. */
async function walk(sim, api, path, key = 'name') {
  const seen = [];
  let pages = 0;
  for (let url = path; url; pages++) {
    const res = await api.get(url);
    assert.equal(res.status, 200, res.text);
    seen.push(...res.json.nodes.map((n) => n[key]));
    url = res.json.next?.slice(sim.url.length);
    assert.ok(pages < 10_000, 'the list ends');
  }
  return { seen, pages };
}

/** The names of the fleet in (key, id) order, as the database sorts them, from the stored nodes. */
function sorted(sim, key, desc, keep = () => true) {
  const value = sim.world.sortValue(key);
  const nodes = sim.world.order.filter((n) => keep(n.rec));
  nodes.sort((a, b) => compareValues(value(a), value(b)) || a.id - b.id);
  if (desc) nodes.reverse();
  return nodes.map((n) => n.rec.name);
}

/**
 * What paging by `limit` serves, the slow way: each page is the first rows,
 * in order, that satisfy oslo.db paginate_query's criteria for the marker
 * (the last row of the page before) with the SQL meaning of NULL.
 */
function paginated(sim, key, desc, limit) {
  const value = sim.world.sortValue(key);
  const rows = sorted(sim, key, desc).map((name) => {
    const node = sim.world.findNode(name);
    return { name, v: value(node), id: node.id };
  });
  const beyond = (c) => (desc ? c < 0 : c > 0);
  const after = (r, m) => {
    if (m.v == null) return beyond(r.id - m.id); // the key's comparison is skipped
    if (r.v == null) return false; // NULL < x and NULL = x are not true
    const c = compareValues(r.v, m.v);
    return beyond(c) || (c === 0 && beyond(r.id - m.id));
  };
  const out = [];
  for (let marker = null, n = 0; n < 1000; n++) {
    const page = rows.filter((r) => !marker || after(r, marker)).slice(0, limit);
    out.push(...page.map((r) => r.name));
    if (page.length < limit) return out;
    marker = page[limit - 1];
  }
  throw new Error('endless');
}

// ---------------------------------------------------------------- timestamps

test('timestamps as Ironic renders them: microseconds, no fraction when it is 0; loaded nodes stamped before the epoch, new ones null', async () => {
  const { sim, api } = await start({
    scenario: {
      nodes: [
        { name: 'old', provision_state: 'available' },
        { name: 'never', provision_state: 'enroll', provision_updated_at: null },
        { name: 'given', provision_updated_at: '2025-12-31T23:59:58.250001+00:00' },
      ],
    },
  });
  const old = (await api.get('/v1/nodes/old')).json;
  for (const f of ['created_at', 'updated_at', 'provision_updated_at']) {
    assert.match(old[f], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/, f);
    assert.ok(Date.parse(old[f]) < Date.parse(EPOCH), `${f} before the epoch`);
  }
  assert.ok(old.created_at <= old.provision_updated_at);
  assert.equal((await api.get('/v1/nodes/never')).json.provision_updated_at, null);
  assert.equal((await api.get('/v1/nodes/given')).json.provision_updated_at, '2025-12-31T23:59:58.250001+00:00');

  sim.advance(1500);
  const made = await api.post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'new' } });
  assert.deepEqual(
    [made.json.created_at, made.json.updated_at, made.json.provision_updated_at],
    ['2026-01-01T00:00:01.500000+00:00', null, null],
  );
  sim.advance(500);
  await provision(api, 'new', 'manage');
  const moved = (await api.get('/v1/nodes/new')).json;
  assert.equal(moved.provision_updated_at, '2026-01-01T00:00:02+00:00', 'a whole second has no fraction (isoformat)');
  assert.equal(moved.updated_at, moved.provision_updated_at);
});

test('a lazy transition is stamped at the instant it was due, not when somebody looked', async () => {
  const { sim, api } = await start({ scenario: { timing: { cleaning: 300 }, nodes: [{ name: 'm', provision_state: 'manageable' }] } });
  sim.advance(5);
  await provision(api, 'm', 'provide');
  sim.advance(10_000); // nobody asks in between
  const node = (await api.get('/v1/nodes/m?fields=provision_state,provision_updated_at')).json;
  assert.equal(node.provision_state, 'available');
  assert.equal(node.provision_updated_at, '2026-01-01T00:00:00.305000+00:00');
  assert.equal((await api.get('/v1/nodes/m')).json.updated_at, '2026-01-01T00:00:00.305000+00:00');
});

test('updated_at moves with any change, provision_updated_at only with the provision state', async () => {
  const { sim, api } = await start({ scenario: { nodes: [{ name: 'n', provision_state: 'available' }] } });
  const before = (await api.get('/v1/nodes/n')).json;
  sim.advance(2000);
  sim.setNode('n', { maintenance: true });
  const after = (await api.get('/v1/nodes/n')).json;
  assert.equal(after.updated_at, '2026-01-01T00:00:02+00:00');
  assert.equal(after.provision_updated_at, before.provision_updated_at);
  sim.setNode('n', { provision_updated_at: '2026-01-01T00:00:01.5Z' });
  assert.equal((await api.get('/v1/nodes/n')).json.provision_updated_at, '2026-01-01T00:00:01.500000+00:00', 'set by hand');
});

test('second resolution truncates as MariaDB does; second-rounded rounds as MySQL does', async () => {
  const stampAt = async (resolution) => {
    const { sim, api } = await start({
      timestampResolution: resolution,
      scenario: { nodes: [{ name: 'a', provision_state: 'available' }] },
    });
    sim.advance(1999.9);
    await provision(api, 'a', 'manage');
    return (await api.get('/v1/nodes/a?fields=provision_updated_at')).json.provision_updated_at;
  };
  assert.equal(await stampAt('microsecond'), '2026-01-01T00:00:01.999900+00:00');
  assert.equal(await stampAt('second'), '2026-01-01T00:00:01+00:00');
  assert.equal(await stampAt('second-rounded'), '2026-01-01T00:00:02+00:00');
  assert.throws(() => createSimulator({ timestampResolution: 'minute' }), /timestampResolution must be one of/);
  const { sim } = await start({ scenario: { timestampResolution: 'second', nodes: 3 } });
  assert.equal(sim.summary().timestampResolution, 'second', 'a scenario sets it too');
});

test('provision_updated_at is a fields entry; updated_at and created_at are not', async () => {
  const { api } = await start({ nodes: 3 });
  const list = await api.get('/v1/nodes?fields=uuid,provision_updated_at&limit=1');
  assert.deepEqual(Object.keys(list.json.nodes[0]), ['uuid', 'provision_updated_at', 'links']);
  for (const f of ['updated_at', 'created_at']) {
    const res = await api.get(`/v1/nodes?fields=uuid,${f}`);
    assert.equal(res.status, 400);
    assert.equal(faultstring(res), `Field ${f} is not a valid field.`);
  }
  assert.ok('created_at' in (await api.get('/v1/nodes/detail?limit=1')).json.nodes[0], 'detail lists show them');
});

// ---------------------------------------------------------------- sorting and paging

/** 23 nodes whose stamps tie in threes at whole seconds, plus two never moved. */
function tiedFleet() {
  const nodes = [];
  for (let i = 0; i < 23; i++) {
    nodes.push({
      name: `t${String(i).padStart(2, '0')}`,
      provision_state: i % 2 ? 'available' : 'manageable',
      provision_updated_at: `2025-12-31T23:00:0${Math.floor(i / 3)}Z`,
    });
  }
  nodes.push(
    { name: 'null-a', provision_state: 'enroll', provision_updated_at: null },
    { name: 'null-b', provision_state: 'enroll', provision_updated_at: null },
  );
  return nodes;
}

test('desc paging over tied stamps (second resolution) visits each node once, in (stamp, id) desc order', async () => {
  const { sim, api } = await start({ timestampResolution: 'second', scenario: { nodes: tiedFleet().slice(0, 23) } });
  const expected = sorted(sim, 'provision_updated_at', true);
  assert.deepEqual(expected.slice(0, 3), ['t22', 't21', 't20'], 'ties go by id, desc');
  for (const limit of [1, 2, 3, 4, 7, 22, 23]) {
    const { seen } = await walk(sim, api, `/v1/nodes?${FEED}&fields=name,provision_updated_at&limit=${limit}`);
    assert.deepEqual(seen, expected, `limit ${limit}`);
  }
  const { seen } = await walk(sim, api, '/v1/nodes?sort_key=provision_updated_at&sort_dir=asc&fields=name&limit=4');
  assert.deepEqual(seen, [...expected].reverse());
});

test('NULL stamps sort first in asc and last in desc; oslo.db paging cannot reach them after a marker with a stamp', async () => {
  const { sim, api } = await start({ timestampResolution: 'second', scenario: { nodes: tiedFleet() } });
  const desc = sorted(sim, 'provision_updated_at', true);
  assert.deepEqual(desc.slice(-2), ['null-b', 'null-a']);
  const all = await api.get(`/v1/nodes?${FEED}&fields=name&limit=1000`);
  assert.deepEqual(
    all.json.nodes.map((n) => n.name),
    desc,
    'one page holds them all, nulls last',
  );
  // Paged: the page after t00 (the last with a stamp) is empty, as `provision_updated_at < t00's` excludes NULLs.
  const { seen } = await walk(sim, api, `/v1/nodes?${FEED}&fields=name&limit=5`);
  assert.deepEqual(seen, desc.slice(0, 23), 'the never-moved nodes are out of reach in desc');
  // asc: the NULLs come first; a NULL marker bounds by id only, so nodes with a stamp and a lower id are skipped.
  const asc = await api.get('/v1/nodes?sort_key=provision_updated_at&sort_dir=asc&fields=name&limit=1');
  assert.deepEqual(
    asc.json.nodes.map((n) => n.name),
    ['null-a'],
  );
  const afterNull = await api.get(
    `/v1/nodes?sort_key=provision_updated_at&sort_dir=asc&fields=name&limit=1000&marker=${sim.node('null-a').uuid}`,
  );
  assert.deepEqual(
    afterNull.json.nodes.map((n) => n.name),
    ['null-b'],
    'every node with a stamp has a lower id than null-a: all skipped',
  );
  // desc with a NULL marker: every node with a lower id, stamped ones included again.
  const again = await api.get(`/v1/nodes?${FEED}&fields=name&limit=1000&marker=${sim.node('null-b').uuid}`);
  assert.deepEqual(
    again.json.nodes.map((n) => n.name),
    [...desc.slice(0, 23), 'null-a'],
    'repeats the stamped nodes',
  );
});

test('the marker row is read as it is now: a marker that moved bounds the next page by its new stamp', async () => {
  const { sim, api } = await start({ scenario: { nodes: tiedFleet().slice(0, 12) } });
  const first = await api.get(`/v1/nodes?${FEED}&fields=name&limit=4`);
  const names = first.json.nodes.map((n) => n.name);
  assert.deepEqual(names, ['t11', 't10', 't09', 't08']);
  sim.advance(10);
  await provision(api, 't08', t08State(sim)); // the marker moves: now the newest
  const next = await api.get(first.json.next.slice(sim.url.length));
  assert.deepEqual(
    next.json.nodes.map((n) => n.name),
    ['t11', 't10', 't09', 't07'],
    'everything older than its new stamp: page 1 again',
  );
  // A marker that stays put and a node that moves between pages: the moved node is missed in this pass.
  const a = await api.get(`/v1/nodes?${FEED}&fields=name&limit=3`);
  sim.advance(10);
  await provision(api, 't03', 'manage');
  const b = await api.get(a.json.next.slice(sim.url.length));
  assert.deepEqual(
    a.json.nodes.map((n) => n.name),
    ['t08', 't11', 't10'],
  );
  assert.deepEqual(
    b.json.nodes.map((n) => n.name),
    ['t09', 't07', 't06'],
    't03 moved to the top between pages: this pass misses it',
  );
});
const t08State = (sim) => (sim.node('t08').provision_state === 'available' ? 'manage' : 'provide');

test('sort_key and sort_dir: refused keys, unknown keys, versioned keys, bad directions, an empty key', async () => {
  const { sim, api } = await start({ nodes: 5 });
  for (const key of [
    'properties',
    'driver_info',
    'extra',
    'instance_info',
    'driver_internal_info',
    'clean_step',
    'deploy_step',
    'raid_config',
    'target_raid_config',
    'traits',
    'network_data',
    'service_step',
  ]) {
    const res = await api.get(`/v1/nodes?sort_key=${key}`);
    assert.equal(res.status, 400, key);
    assert.equal(faultstring(res), `The sort_key value ${key} is an invalid field for sorting`);
  }
  for (const key of ['bogus', 'conductor', 'allocation_uuid', 'chassis_uuid']) {
    const res = await api.get(`/v1/nodes?sort_key=${key}`);
    assert.equal(res.status, 400, key);
    assert.equal(faultstring(res), `The sort_key value "${key}" is an invalid field for sorting`, 'the database refuses it, quoted');
  }
  const early = await client(sim.url, '1.20').get('/v1/nodes?sort_key=resource_class');
  assert.equal(early.status, 406, 'a field newer than the version');
  assert.equal(faultstring(early), 'Request not acceptable.');
  for (const dir of ['up', 'DESC', '']) {
    const res = await api.get(`/v1/nodes?sort_key=name&sort_dir=${dir}`);
    assert.equal(res.status, 400);
    assert.equal(faultstring(res), `Invalid sort direction: ${dir}. Acceptable values are 'asc' or 'desc'`);
  }
  const empty = await api.get('/v1/nodes?sort_key=&sort_dir=desc&fields=name&limit=2');
  assert.deepEqual(
    empty.json.nodes.map((n) => n.name),
    ['node-004', 'node-003'],
    'an empty key sorts by id',
  );
  assert.match(empty.json.next, /\?sort_key=&sort_dir=desc&fields=name&limit=2&marker=/);
  for (const key of ['id', 'version', 'chassis_id', 'allocation_id', 'created_at', 'updated_at', 'maintenance']) {
    assert.equal((await api.get(`/v1/nodes?sort_key=${key}&limit=1`)).status, 200, key);
  }
});

test('any column sorts and pages like the database, and stays right while nodes change', async () => {
  const { sim, api } = await start({
    nodes: 60,
    seed: 9,
    scenario: { timing: { cleaning: 50, verifying: 30, deploying: 40, 'wait call-back': 0 } },
  });
  const keys = [
    'name',
    'provision_state',
    'conductor_group',
    'shard',
    'owner',
    'lessee',
    'maintenance',
    'updated_at',
    'provision_updated_at',
    'instance_uuid',
  ];
  const check = async (label) => {
    for (const key of keys) {
      for (const dir of ['asc', 'desc']) {
        const { seen } = await walk(sim, api, `/v1/nodes?sort_key=${key}&sort_dir=${dir}&fields=name&limit=7`);
        // NULLs are unreachable after a marker with a value, in desc; with one page they show.
        const full = (await api.get(`/v1/nodes?sort_key=${key}&sort_dir=${dir}&fields=name`)).json.nodes.map((n) => n.name);
        assert.deepEqual(full, sorted(sim, key, dir === 'desc'), `${label}: ${key} ${dir}`);
        assert.deepEqual(seen, paginated(sim, key, dir === 'desc', 7), `${label}: ${key} ${dir} paged`);
      }
    }
  };
  await check('loaded');
  for (const n of (await api.get('/v1/nodes?provision_state=manageable&fields=name&limit=6')).json.nodes)
    await provision(api, n.name, 'provide');
  for (const n of (await api.get('/v1/nodes?provision_state=enroll&fields=name&limit=3')).json.nodes)
    await provision(api, n.name, 'manage');
  sim.setNode('node-003', { maintenance: true, owner: 'zed', name: 'aaa-renamed' });
  sim.advance(20);
  sim.churn({ count: 8 });
  await check('mid-transition');
  sim.advance(200);
  sim.deleteNode('node-010');
  await api.post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'late-comer' } });
  await check('settled');
});

// ---------------------------------------------------------------- filters

test('every filter at its microversion: 406 below it, a proper subset from it', async () => {
  const { sim, api } = await start({ nodes: 400, seed: 3 });
  sim.setNode('node-001', {
    maintenance: true,
    fault: 'clean failure',
    retired: true,
    description: 'Rack 7, shelf 2',
    instance_name: 'vm-1',
  });
  const recs = sim.world.order.map((n) => n.rec);
  const gates = [
    ['provision_state=available', 9, (r) => r.provision_state === 'available', 'Request not acceptable.'],
    ['driver=fake-hardware', 16, () => true],
    ['resource_class=gpu', 21, (r) => r.resource_class === 'gpu'],
    ['fault=clean%20failure', 42, (r) => r.fault === 'clean failure'],
    ['conductor_group=rack-a', 46, (r) => r.conductor_group === 'rack-a'],
    ['owner=project-b', 50, (r) => r.owner === 'project-b'],
    ['lessee=tenant-a', 65, (r) => r.lessee === 'tenant-a'],
    ['shard=SHARD-1,shard-3,,shard-1', 82, (r) => r.shard === 'shard-1' || r.shard === 'shard-3'],
    ['sharded=false', 82, (r) => r.shard === null],
    ['instance_name=vm-1', 104, (r) => r.instance_name === 'vm-1', 'instance_name is not acceptable in this API version'],
    ['include_children=true', 83, () => true],
  ];
  for (const [query, min, keep, message = `Request not acceptable. The minimal required API version should be 1.${min}`] of gates) {
    const old = await client(sim.url, `1.${min - 1}`).get(`/v1/nodes?${query}`);
    assert.equal(old.status, 406, query);
    assert.equal(faultstring(old), message, query);
    const res = await client(sim.url, `1.${min}`).get(`/v1/nodes?${query}&limit=1000`);
    assert.equal(res.status, 200, `${query}: ${res.text}`);
    const expected = recs.filter(keep).map((r) => r.uuid);
    assert.deepEqual(
      res.json.nodes.map((n) => n.uuid),
      expected,
      query,
    );
    if (!['driver=fake-hardware', 'include_children=true'].includes(query))
      assert.ok(expected.length > 0 && expected.length < recs.length, `${query}: a proper subset`);
  }
  const ungated = [
    ['maintenance=true', (r) => r.maintenance],
    ['maintenance=0', (r) => !r.maintenance],
    ['associated=yes', (r) => r.instance_uuid !== null],
    ['associated=false', (r) => r.instance_uuid === null],
    ['retired=true', (r) => r.retired],
    ['project=tenant-b', (r) => r.owner === 'tenant-b' || r.lessee === 'tenant-b'],
    ['description_contains=RACK%25shelf', (r) => r.description !== null],
    ['description_contains=rack_8', () => false],
    [
      'provision_state=active&conductor_group=rack-b&owner=project-a',
      (r) => r.provision_state === 'active' && r.conductor_group === 'rack-b' && r.owner === 'project-a',
    ],
    ['shard=', () => false],
  ];
  for (const [query, keep] of ungated) {
    const res = await api.get(`/v1/nodes?${query}&fields=uuid&limit=1000`);
    assert.equal(res.status, 200, `${query}: ${res.text}`);
    assert.deepEqual(
      res.json.nodes.map((n) => n.uuid),
      recs.filter(keep).map((r) => r.uuid),
      query,
    );
  }
  assert.equal(
    faultstring(await api.get('/v1/nodes?fault=on%20fire')),
    "Unrecognized fault \"on fire\" is specified, allowed faults are ('power failure', 'clean failure', 'rescue abort failure', 'service failure')",
  );
  assert.equal(
    faultstring(await api.get('/v1/nodes?maintenance=perhaps')),
    "Invalid maintenance: Unrecognized value 'perhaps', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'",
  );
  assert.equal(faultstring(await api.get('/v1/nodes?updated_since=2026-01-01')), 'Unexpected arguments: updated_since');
  assert.equal(faultstring(await api.get('/v1/nodes/detail?fields=uuid')), 'Unexpected arguments: fields', '/detail takes no fields');
  assert.equal(faultstring(await api.get('/v1/nodes?instance_uuid=x')), 'Expected UUID for instance_uuid: x');
  const chassis = await api.get('/v1/nodes?chassis_uuid=00000000-0000-4000-8000-000000000000');
  assert.equal(chassis.status, 404);
  assert.equal(faultstring(chassis), 'Chassis 00000000-0000-4000-8000-000000000000 could not be found.');
});

test('filters combine with sorting and paging; next carries sort, fields and true booleans, never the other filters', async () => {
  const { sim, api } = await start({ nodes: 300, seed: 4 });
  sim.setNode('node-002', { maintenance: true, instance_uuid: null });
  sim.setNode('node-005', { maintenance: true, instance_uuid: null });
  const keep = (r) => r.conductor_group === 'rack-a';
  const first = await api.get(`/v1/nodes?${FEED}&conductor_group=rack-a&fields=name,provision_updated_at&limit=10`);
  assert.equal(
    first.json.next,
    `${sim.url}/v1/nodes?${FEED}&fields=name,provision_updated_at&limit=10&marker=${sim.node(first.json.nodes[9].name).uuid}`,
  );
  // Following next as given drops the filter (as with Ironic); adding it again pages the subset.
  let seen = [...first.json.nodes.map((n) => n.name)];
  for (let url = first.json.next; url; ) {
    const res = await api.get(`${url.slice(sim.url.length)}&conductor_group=rack-a`);
    seen.push(...res.json.nodes.map((n) => n.name));
    url = res.json.next;
  }
  assert.deepEqual(seen, sorted(sim, 'provision_updated_at', true, keep));
  const flags = await api.get('/v1/nodes?maintenance=true&associated=false&retired=false&detail=true&limit=1');
  assert.match(flags.json.next, /\?sort_key=id&sort_dir=asc&maintenance=True&detail=True&limit=1&marker=/);
  seen = (await walk(sim, api, '/v1/nodes?maintenance=true&sort_key=name&sort_dir=desc&fields=name&limit=1')).seen;
  assert.deepEqual(seen, ['node-005', 'node-002'], 'maintenance=True travels in next');
});

test('the conductor filter runs on the page the database gave: short pages, no next', async () => {
  const { sim, api } = await start({ nodes: 40, seed: 2 });
  const recs = sim.world.order.map((n) => n.rec);
  assert.equal((await client(sim.url, '1.48').get('/v1/nodes?conductor=localhost')).status, 406);
  const page = await api.get('/v1/nodes?conductor=conductor-rack-a&fields=name,conductor_group,conductor&limit=10');
  const firstTen = recs.slice(0, 10).filter((r) => r.conductor_group === 'rack-a');
  assert.deepEqual(
    page.json.nodes.map((n) => n.name),
    firstTen.map((r) => r.name),
  );
  assert.ok(page.json.nodes.every((n) => n.conductor === 'conductor-rack-a'));
  assert.ok(firstTen.length < 10 && page.json.next === undefined, 'a short page ends the list');
  const all = await api.get('/v1/nodes?conductor=localhost&fields=name&limit=1000');
  assert.deepEqual(
    all.json.nodes.map((n) => n.name),
    recs.filter((r) => r.conductor_group === '').map((r) => r.name),
  );
  assert.equal((await api.get('/v1/nodes?conductor=&limit=1000')).json.nodes.length, 40, 'an empty conductor filters nothing');
});

test('an instance_uuid query never has a next link; child nodes are listed only when asked', async () => {
  const { sim, api } = await start({
    scenario: {
      nodes: [
        { name: 'p', provision_state: 'active' },
        { name: 'kid', provision_state: 'available' },
      ],
    },
  });
  sim.setNode('kid', { parent_node: sim.node('p').uuid });
  const one = await api.get(`/v1/nodes?instance_uuid=${sim.node('p').instance_uuid}&limit=1`);
  assert.deepEqual([one.json.nodes.length, one.json.next], [1, undefined]);
  assert.deepEqual(
    (await api.get('/v1/nodes?fields=name')).json.nodes.map((n) => n.name),
    ['p'],
  );
  assert.deepEqual(
    (await api.get('/v1/nodes?fields=name&include_children=true')).json.nodes.map((n) => n.name),
    ['p', 'kid'],
  );
  assert.deepEqual(
    (await api.get(`/v1/nodes?fields=name&parent_node=${sim.node('p').uuid}`)).json.nodes.map((n) => n.name),
    ['kid'],
  );
  assert.equal(
    (await api.get('/v1/nodes/detail?include_children=no')).json.nodes.length,
    2,
    '/detail does not read include_children as a boolean',
  );
});

// ---------------------------------------------------------------- faults and controls

test('late-commit: the change shows delay ms late, stamped when it was made (before others made meanwhile)', async () => {
  const { sim, api } = await start({
    scenario: {
      timing: { verifying: 100 },
      nodes: [
        { name: 'slow', provision_state: 'available' },
        { name: 'fast', provision_state: 'available' },
        { name: 'e', provision_state: 'enroll' },
      ],
      faults: [{ kind: 'late-commit', node: 'slow', delay: 500, id: 'db' }],
    },
  });
  const quiet = (await api.get('/v1/nodes/slow')).json;
  sim.advance(10);
  await provision(api, 'slow', 'manage');
  sim.advance(90);
  const hidden = (await api.get('/v1/nodes/slow')).json;
  assert.deepEqual(
    [hidden.provision_state, hidden.provision_updated_at, hidden.updated_at],
    ['available', quiet.provision_updated_at, quiet.updated_at],
    'the old row until the commit',
  );
  await provision(api, 'fast', 'manage'); // at 100
  sim.advance(200);
  const top = async () => (await api.get(`/v1/nodes?${FEED}&fields=name,provision_state,provision_updated_at&limit=2`)).json.nodes;
  assert.deepEqual(
    [(await top())[0].name, (await api.get('/v1/nodes/slow')).json.provision_state],
    ['fast', 'available'],
    'not committed yet',
  );
  sim.advance(210); // 510: committed
  const shown = await top();
  assert.deepEqual(
    shown.map((n) => [n.name, n.provision_state, n.provision_updated_at]),
    [
      ['fast', 'manageable', '2026-01-01T00:00:00.100000+00:00'],
      ['slow', 'manageable', '2026-01-01T00:00:00.010000+00:00'],
    ],
    'a change older than one already seen',
  );
  assert.deepEqual(sim.history('slow').entries.at(-1), {
    t: 10,
    provision_state: 'manageable',
    target_provision_state: null,
    last_error: null,
    action: 'manage',
    committed: 510,
  });
  assert.equal(sim.faults.list()[0].hits, 1);
});

test('late-commit in a transition: each phase waits for its commit; state, count and fraction select changes', async () => {
  const { sim, api } = await start({
    scenario: {
      timing: { verifying: 100 },
      nodes: [
        { name: 'e', provision_state: 'enroll' },
        { name: 'f', provision_state: 'enroll' },
      ],
    },
  });
  sim.faults.add({ kind: 'late-commit', state: 'manageable', delay: 50, count: 1 });
  await provision(api, 'e', 'manage');
  await provision(api, 'f', 'manage');
  sim.advance(100);
  const states = async () => (await api.get('/v1/nodes?fields=name,provision_state')).json.nodes.map((n) => n.provision_state);
  assert.deepEqual(await states(), ['verifying', 'manageable'], 'e waits for its commit; count 1 spares f');
  sim.advance(50);
  assert.deepEqual(await states(), ['manageable', 'manageable']);
  assert.deepEqual(
    sim
      .history('e')
      .entries.slice(1)
      .map((x) => [x.t, x.provision_state, x.committed]),
    [
      [0, 'verifying', undefined],
      [100, 'manageable', 150],
    ],
  );
  for (const bad of [
    { kind: 'late-commit' },
    { kind: 'late-commit', delay: 5, method: 'GET' },
    { kind: 'late-commit', delay: 5, path: '/v1/nodes' },
    { kind: 'late-commit', delay: 5, state: 3 },
  ]) {
    const res = await request(sim.url, 'POST', '/__sim/faults', { body: bad });
    assert.equal(res.status, 400, JSON.stringify(bad));
  }
  const added = await request(sim.url, 'POST', '/__sim/faults', { body: { kind: 'late-commit', delay: 20, fraction: 0.5 } });
  assert.equal(added.json.faults.at(-1).kind, 'late-commit');
});

test('clock skew: stamps written from then on move by skew; what fell due before keeps its instant', async () => {
  const { sim, api } = await start({
    scenario: {
      timing: { cleaning: 100 },
      nodes: [
        { name: 'a', provision_state: 'manageable' },
        { name: 'b', provision_state: 'available' },
      ],
    },
  });
  await provision(api, 'a', 'provide'); // available due at 100
  sim.world.clock.advance(150); // time passes, nobody looks
  const res = await request(sim.url, 'POST', '/__sim/clock', { body: { skew: -60_000 } });
  assert.deepEqual(res.json, { now: 150, manual: true, timeScale: 1, skew: -60_000 });
  assert.equal((await api.get('/v1/nodes/a?fields=provision_updated_at')).json.provision_updated_at, '2026-01-01T00:00:00.100000+00:00');
  await provision(api, 'b', 'manage');
  assert.equal(
    (await api.get('/v1/nodes/b?fields=provision_updated_at')).json.provision_updated_at,
    '2025-12-31T23:59:00.150000+00:00',
    'the clock jumped back a minute',
  );
  const feed = (await api.get(`/v1/nodes?${FEED}&fields=name&limit=2`)).json.nodes.map((n) => n.name);
  assert.deepEqual(feed, ['a', 'b'], 'the newest change sorts below an older one');
  sim.skew(0);
  assert.equal(sim.summary().skew, 0);
  assert.equal((await request(sim.url, 'POST', '/__sim/clock', { body: { skew: 'x' } })).status, 400);
  assert.equal((await request(sim.url, 'POST', '/__sim/clock', { body: { skwe: 1 } })).status, 400);
});

test('churn flips seeded picks of available/manageable nodes now, at the top of the feed; the same picks after a reset', async () => {
  const { sim, api } = await start({ nodes: 200, seed: 8 });
  sim.advance(1000);
  const before = new Map(sim.world.order.map((n) => [n.rec.name, n.rec.provision_state]));
  const { t, changed } = sim.churn({ count: 12 });
  assert.equal(t, 1000);
  assert.equal(changed.length, 12);
  assert.equal(new Set(changed.map((c) => c.uuid)).size, 12);
  for (const c of changed) {
    assert.equal(c.from, before.get(c.name));
    assert.equal(c.to, c.from === 'available' ? 'manageable' : 'available');
    assert.equal(sim.node(c.name).provision_state, c.to);
  }
  const top = (await api.get(`/v1/nodes?${FEED}&fields=name,provision_updated_at&limit=12`)).json.nodes;
  assert.deepEqual(new Set(top.map((n) => n.name)), new Set(changed.map((c) => c.name)));
  assert.ok(top.every((n) => n.provision_updated_at === '2026-01-01T00:00:01+00:00'));
  sim.reset();
  sim.advance(1000);
  assert.deepEqual(sim.churn({ count: 12 }).changed, changed, 'picked from the seed');
  const http = await request(sim.url, 'POST', '/__sim/churn', { body: { count: 3, states: ['manageable'] } });
  assert.deepEqual(
    http.json.changed.map((c) => [c.from, c.to]),
    [
      ['manageable', 'available'],
      ['manageable', 'available'],
      ['manageable', 'available'],
    ],
  );
  assert.equal(
    sim.churn({ count: 1_000_000 }).changed.length,
    [...before.values()].filter((s) => s === 'available' || s === 'manageable').length,
    'at most every candidate',
  );
  for (const bad of [{}, { count: -1 }, { count: 2, states: ['active'] }, { count: 1, states: [] }]) {
    assert.equal((await request(sim.url, 'POST', '/__sim/churn', { body: bad })).status, 400, JSON.stringify(bad));
  }
});

// ---------------------------------------------------------------- scale

test('cached node texts stay within the budget; answers are the same past it', async () => {
  const { sim, api } = await start({ nodes: 50 });
  const full = (await api.get('/v1/nodes/detail')).text;
  sim.world.cacheBudget = 10_000;
  sim.world.cachedChars = 0;
  for (const n of sim.world.order) n.fullCache = n.subsetCache = undefined;
  assert.equal((await api.get('/v1/nodes/detail')).text, full);
  assert.ok(sim.world.cachedChars <= 10_000 && sim.world.cachedChars > 5_000, String(sim.world.cachedChars));
  assert.ok(sim.world.order.some((n) => !n.fullCache) && sim.world.order.some((n) => n.fullCache), 'first come, kept');
  sim.advance(1);
  sim.churn({ count: 50 });
  assert.notEqual((await api.get('/v1/nodes/detail')).text, full, 'changed nodes are rendered again');
  assert.ok(sim.world.cachedChars <= 10_000);
});

/**
 * How many node entries the lists of `fn` read on `sim`: the nodes in
 * creation order (`world.order`, which the default sort pages by marker with
 * a binary search) and the sorted index of each other key (its pages walk it
 * from a bound). The cost of a page in work done, which a loaded machine
 * does not change, where its time in milliseconds it does.
 */
async function entriesRead(sim, fn) {
  const world = sim.world;
  const order = world.order;
  let read = 0;
  world.order = new Proxy(order, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) read++;
      return Reflect.get(target, key, receiver);
    },
  });
  const index = world.index.bind(world);
  const counted = new Set();
  // Indexes built meanwhile (a first sort by a key) are counted from then on.
  world.index = (key) => {
    const built = index(key);
    if (!counted.has(built)) {
      counted.add(built);
      built.walk = (pos, dir, visit) =>
        Object.getPrototypeOf(built).walk.call(built, pos, dir, (e) => {
          read++;
          return visit(e);
        });
    }
    return built;
  };
  try {
    await fn();
  } finally {
    world.order = order;
    delete world.index;
    for (const built of counted) delete built.walk;
  }
  return read;
}

test('100,000 nodes: loaded; a changes page, a deep page and churn stay cheap (in entries read, not in ms)', async (t) => {
  const t0 = performance.now();
  const { sim, api } = await start({ nodes: 100_000, manualClock: false });
  const loaded = performance.now() - t0;
  assert.equal(sim.summary().nodes, 100_000);
  const changes = `/v1/nodes?${FEED}&fields=uuid,name,provision_state,provision_updated_at&limit=50`;
  await api.get(changes);
  let t1 = performance.now();
  const pagesRead = await entriesRead(sim, async () => {
    for (let i = 0; i < 20; i++) await api.get(changes);
  });
  const perPage = (performance.now() - t1) / 20;
  assert.equal(pagesRead, 20 * 50, 'a changes page reads its 50 entries of the index, whatever the fleet');
  const { changed } = sim.churn({ count: 1000 });
  const page = (await api.get(changes.replace('limit=50', 'limit=1000'))).json;
  assert.deepEqual(new Set(page.nodes.map((n) => n.uuid)), new Set(changed.map((c) => c.uuid)), 'the churned nodes are the newest');
  t1 = performance.now();
  let deep;
  const deepRead = await entriesRead(sim, async () => {
    deep = await api.get(`/v1/nodes?fields=name&limit=1000&marker=${sim.node('node-98000').uuid}`);
  });
  assert.deepEqual([deep.json.nodes[0].name, deep.json.nodes.length], ['node-98001', 1000]);
  // From the marker by a binary search (~17 reads), then the page: not a walk from the first node.
  assert.ok(deepRead <= 1000 + 40, `a deep page read ${deepRead} entries`);
  let byName;
  const byNameRead = await entriesRead(sim, async () => {
    byName = await api.get('/v1/nodes?sort_key=name&sort_dir=desc&fields=name&limit=2');
  });
  assert.deepEqual(
    byName.json.nodes.map((n) => n.name),
    ['node-99999', 'node-99998'],
  );
  // The first sort by name builds its index once (reading the fleet to sort it); the page walks 2 entries of it.
  assert.ok(byNameRead <= 100_000 + 2, `a first sort by name read ${byNameRead} entries`);
  const again = await entriesRead(sim, () => api.get('/v1/nodes?sort_key=name&sort_dir=desc&fields=name&limit=2'));
  assert.equal(again, 2, 'the next page by name walks the index it kept');
  t.diagnostic(
    `loaded in ${loaded.toFixed(0)} ms, a changes page in ${perPage.toFixed(1)} ms, a deep page and a first sort by name in ${(performance.now() - t1).toFixed(0)} ms (for the record only)`,
  );
});
