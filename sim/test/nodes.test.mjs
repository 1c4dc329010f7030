// Nodes: create, get, fields, list pagination and filters.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSimulator } from '../server.mjs';
import { client, faultstring } from '../testkit.mjs';

let sim;
let api;
before(async () => {
  sim = await startSimulator({ nodes: 2500, seed: 11 });
  api = client(sim.url);
});
after(() => sim.close());

test('the demo fleet: node-0000.. in a seeded mix of stable states', async () => {
  const { byState, nodes } = sim.summary();
  assert.equal(nodes, 2500);
  assert.deepEqual(Object.keys(byState).sort(), ['active', 'available', 'enroll', 'manageable']);
  const first = (await api.get('/v1/nodes/node-0000')).json;
  assert.equal(first.name, 'node-0000');
  assert.equal(first.driver, 'fake-hardware');
  const active = (await api.get('/v1/nodes?provision_state=active&limit=1&fields=instance_uuid,power_state')).json.nodes[0];
  assert.match(active.instance_uuid, /^[0-9a-f-]{36}$/);
  assert.equal(active.power_state, 'power on');
});

test('POST /v1/nodes creates an enroll node (available before 1.11) with Location', async () => {
  const res = await api.post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'made-1', resource_class: 'gold' } });
  assert.equal(res.status, 201);
  assert.equal(res.json.provision_state, 'enroll');
  assert.equal(res.json.target_provision_state, null);
  assert.equal(res.json.power_state, null);
  assert.equal(res.json.provision_updated_at, null);
  assert.equal(res.headers.location, `${sim.url}/v1/nodes/${res.json.uuid}`);
  const old = await client(sim.url, '1.10').post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'made-2' } });
  assert.equal(old.json.provision_state, 'available');
  const ancient = await client(sim.url, '1.1').post('/v1/nodes', { body: { driver: 'fake-hardware' } });
  assert.equal(ancient.status, 201);
  assert.equal(ancient.json.provision_state, null, 'available reads as null before 1.2');
});

test('POST /v1/nodes errors: duplicate name 409, no driver 400, unknown or read-only field 400, name before 1.5 406', async () => {
  const dup = await api.post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'node-0001' } });
  assert.equal(dup.status, 409);
  assert.equal(faultstring(dup), 'A node with name node-0001 already exists.');
  const noDriver = await api.post('/v1/nodes', { body: { name: 'x' } });
  assert.equal(noDriver.status, 400);
  assert.equal(faultstring(noDriver), "Schema error for node: 'driver' is a required property");
  const bogus = await api.post('/v1/nodes', { body: { driver: 'fake-hardware', provision_state: 'active' } });
  assert.equal(faultstring(bogus), "Schema error for node: Additional properties are not allowed ('provision_state' was unexpected)");
  assert.equal((await client(sim.url, '1.1').post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'x' } })).status, 406);
});

test("GET a node by UUID or name; unknown -> 404 with Ironic's text and shape", async () => {
  const byName = (await api.get('/v1/nodes/node-0002')).json;
  const byUuid = (await api.get(`/v1/nodes/${byName.uuid}`)).json;
  assert.deepEqual(byUuid, byName);
  assert.deepEqual(byName.links, [
    { href: `${sim.url}/v1/nodes/${byName.uuid}`, rel: 'self' },
    { href: `${sim.url}/nodes/${byName.uuid}`, rel: 'bookmark' },
  ]);
  const missing = await api.get('/v1/nodes/n1');
  assert.equal(missing.status, 404);
  assert.equal(
    missing.text,
    '{"error_message": "{\\"faultcode\\": \\"Client\\", \\"faultstring\\": \\"Node n1 could not be found.\\", \\"debuginfo\\": null}"}',
  );
});

test("a full node has Ironic's fields in Ironic's order", async () => {
  const keys = Object.keys((await api.get('/v1/nodes/node-0003')).json);
  assert.deepEqual(keys.slice(0, 5), ['uuid', 'created_at', 'updated_at', 'automated_clean', 'bios_interface']);
  assert.deepEqual(keys.slice(-9), [
    'vendor_interface',
    'links',
    'conductor',
    'allocation_uuid',
    'chassis_uuid',
    'ports',
    'states',
    'portgroups',
    'volume',
  ]);
  for (const f of [
    'provision_state',
    'target_provision_state',
    'power_state',
    'target_power_state',
    'maintenance',
    'last_error',
    'provision_updated_at',
    'instance_uuid',
    'resource_class',
    'traits',
    'driver',
    'reservation',
  ]) {
    assert.ok(keys.includes(f), f);
  }
});

test("fields selects a subset in Ironic's order (uuid first, links, then API fields)", async () => {
  const res = await api.get('/v1/nodes/node-0004?fields=instance_uuid,allocation_uuid,provision_state,uuid');
  assert.deepEqual(Object.keys(res.json), ['uuid', 'instance_uuid', 'provision_state', 'links', 'allocation_uuid']);
  const bad = await api.get('/v1/nodes/node-0004?fields=provision_state,bogus');
  assert.equal(bad.status, 400);
  assert.equal(faultstring(bad), 'Field bogus is not a valid field.');
  assert.equal((await api.get('/v1/nodes?fields=bogus')).status, 400);
  assert.equal(faultstring(await api.get('/v1/nodes/node-0004?fields=created_at')), 'Field created_at is not a valid field.');
});

test('the list: default fields, limit, next link without filters, marker', async () => {
  const res = await api.get('/v1/nodes?limit=3');
  assert.equal(res.json.nodes.length, 3);
  assert.deepEqual(Object.keys(res.json.nodes[0]), [
    'uuid',
    'instance_uuid',
    'maintenance',
    'power_state',
    'provision_state',
    'name',
    'links',
  ]);
  assert.deepEqual(
    res.json.nodes.map((n) => n.name),
    ['node-0000', 'node-0001', 'node-0002'],
  );
  const last = res.json.nodes[2].uuid;
  assert.equal(
    res.json.next,
    `${sim.url}/v1/nodes?sort_key=id&sort_dir=asc&fields=instance_uuid,maintenance,power_state,provision_state,uuid,name&limit=3&marker=${last}`,
  );
  const page2 = await api.get(`/v1/nodes?limit=3&marker=${last}`);
  assert.deepEqual(
    page2.json.nodes.map((n) => n.name),
    ['node-0003', 'node-0004', 'node-0005'],
  );

  const filtered = await api.get('/v1/nodes?provision_state=manageable&limit=2&fields=uuid,provision_state');
  assert.ok(filtered.json.nodes.every((n) => n.provision_state === 'manageable'));
  assert.doesNotMatch(filtered.json.next, /[?&]provision_state=/, 'filters never travel in next');
  assert.match(filtered.json.next, /fields=uuid,provision_state&limit=2&marker=/);

  const detail = await api.get('/v1/nodes?detail=true&limit=1');
  assert.ok('driver_info' in detail.json.nodes[0]);
  assert.match(detail.json.next, /\?sort_key=id&sort_dir=asc&detail=True&limit=1&marker=/);
  const detailPath = await api.get('/v1/nodes/detail?limit=1');
  assert.match(detailPath.json.next, /\/v1\/nodes\/detail\?sort_key=id&sort_dir=asc&limit=1&marker=/);
});

test('following next visits every node exactly once; a short page has no next', async () => {
  const seen = [];
  let url = '/v1/nodes?limit=1000&fields=uuid';
  let pages = 0;
  for (; url; pages++) {
    const { json } = await api.get(url);
    seen.push(...json.nodes.map((n) => n.uuid));
    url = json.next?.slice(sim.url.length);
  }
  assert.equal(pages, 3);
  assert.equal(seen.length, sim.summary().nodes);
  assert.equal(new Set(seen).size, seen.length);
});

test('limit is capped at 1000; limit <= 0, a bad limit and a non-UUID marker are 400; an unknown marker is 404', async () => {
  const big = await api.get('/v1/nodes?limit=5000&fields=uuid');
  assert.equal(big.json.nodes.length, 1000);
  assert.match(big.json.next, /limit=1000&/);
  const unlimited = await api.get('/v1/nodes?fields=uuid');
  assert.equal(unlimited.json.nodes.length, 1000);
  assert.equal(faultstring(await api.get('/v1/nodes?limit=0')), 'Limit must be positive');
  assert.equal(faultstring(await api.get('/v1/nodes?limit=-3')), 'Limit must be positive');
  assert.equal(faultstring(await api.get('/v1/nodes?limit=abc')), 'Expected an integer for limit: abc');
  assert.equal(faultstring(await api.get('/v1/nodes?marker=node-0001')), 'Expected UUID for marker: node-0001');
  const gone = await api.get('/v1/nodes?marker=00000000-0000-4000-8000-000000000000');
  assert.equal(gone.status, 404);
});

test('provision_state filter: needs 1.9, must be a known state', async () => {
  const bad = await api.get('/v1/nodes?provision_state=bogus');
  assert.equal(bad.status, 400);
  assert.equal(faultstring(bad), 'Provision state "bogus" is not valid');
  assert.equal((await client(sim.url, '1.8').get('/v1/nodes?provision_state=active')).status, 406);
  const none = await api.get('/v1/nodes?provision_state=deploying');
  assert.deepEqual(none.json, { nodes: [] });
});
