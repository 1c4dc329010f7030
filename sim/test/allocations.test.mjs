// Allocations: allocating -> active (a node is reserved) or error with Ironic's text.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSimulator } from '../server.mjs';
import { client, faultstring } from '../testkit.mjs';

let sim;
let api;
before(async () => {
  sim = await startSimulator({
    manualClock: true,
    scenario: {
      timing: { allocating: 30 },
      nodes: [
        { name: 'g1', provision_state: 'available', resource_class: 'gold', traits: ['CUSTOM_A'] },
        { name: 'g2', provision_state: 'available', resource_class: 'gold', traits: ['CUSTOM_A', 'CUSTOM_B'] },
        { name: 'g3', provision_state: 'manageable', resource_class: 'gold' },
        { name: 's1', provision_state: 'available', resource_class: 'silver', maintenance: true },
      ],
    },
  });
  api = client(sim.url);
});
after(() => sim.close());

async function allocate(body) {
  const res = await api.post('/v1/allocations', { body });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.json.state, 'allocating');
  assert.equal(res.headers.location, `${sim.url}/v1/allocations/${res.json.uuid}`);
  return res.json;
}

test('a matching available node is reserved: allocation active, node gets allocation_uuid and instance_uuid', async () => {
  const created = await allocate({ resource_class: 'gold', traits: ['CUSTOM_B'], name: 'a1' });
  assert.deepEqual(Object.keys(created), [
    'uuid',
    'created_at',
    'updated_at',
    'candidate_nodes',
    'extra',
    'last_error',
    'name',
    'owner',
    'resource_class',
    'state',
    'traits',
    'links',
    'node_uuid',
  ]);
  sim.advance(29);
  assert.equal((await api.get('/v1/allocations/a1')).json.state, 'allocating');
  sim.advance(1);
  const done = (await api.get(`/v1/allocations/${created.uuid}`)).json;
  assert.equal(done.state, 'active');
  assert.equal(done.last_error, null);
  const g2 = (await api.get('/v1/nodes/g2?fields=uuid,instance_uuid,allocation_uuid')).json;
  assert.equal(done.node_uuid, g2.uuid);
  assert.equal(g2.allocation_uuid, created.uuid);
  assert.equal(g2.instance_uuid, created.uuid);
});

test("no node left: error with Ironic's last_error", async () => {
  const a = await allocate({ resource_class: 'gold', traits: ['CUSTOM_B'] });
  const b = await allocate({ resource_class: 'no-such-class' });
  const c = await allocate({ resource_class: 'gold', candidate_nodes: ['g3'] });
  const d = await allocate({ resource_class: 'silver' });
  sim.advance(30);
  const last = async (x) => (await api.get(`/v1/allocations/${x.uuid}`)).json;
  assert.equal((await last(a)).last_error, `Failed to process allocation ${a.uuid}: no suitable nodes have the requested traits CUSTOM_B.`);
  assert.equal(
    (await last(b)).last_error,
    `Failed to process allocation ${b.uuid}: no available nodes match the resource class no-such-class.`,
  );
  assert.equal(
    (await last(c)).last_error,
    `Failed to process allocation ${c.uuid}: none of the requested nodes are available and match the resource class gold.`,
  );
  assert.equal(
    (await last(d)).last_error,
    `Failed to process allocation ${d.uuid}: no available nodes match the resource class silver.`,
    'nodes in maintenance are skipped',
  );
  for (const x of [a, b, c, d]) assert.equal((await last(x)).state, 'error');
});

test('candidate nodes by name become UUIDs; the only candidate gets reserved', async () => {
  const a = await allocate({ resource_class: 'gold', candidate_nodes: ['g1'] });
  assert.deepEqual(a.candidate_nodes, [sim.node('g1').uuid]);
  sim.advance(30);
  assert.equal((await api.get(`/v1/allocations/${a.uuid}`)).json.node_uuid, sim.node('g1').uuid);
});

test('allocation errors: 404, version gate, missing resource class, unknown candidates, duplicate name, bad keys', async () => {
  const missing = await api.get('/v1/allocations/nope');
  assert.equal(missing.status, 404);
  assert.equal(faultstring(missing), 'Allocation nope could not be found.');
  const old = await client(sim.url, '1.51').get('/v1/allocations/a1');
  assert.equal(old.status, 404);
  assert.equal(faultstring(old), 'The API version does not allow allocations');
  assert.equal(faultstring(await api.post('/v1/allocations', { body: {} })), 'The resource_class field is mandatory when not backfilling');
  assert.equal(
    faultstring(await api.post('/v1/allocations', { body: { resource_class: 'gold', candidate_nodes: ['nope', 'g1', 'nada'] } })),
    'Nodes cannot be found: nope, nada',
  );
  const dup = await api.post('/v1/allocations', { body: { resource_class: 'gold', name: 'a1' } });
  assert.equal(dup.status, 409);
  assert.equal(faultstring(dup), 'An allocation with name a1 already exists.');
  assert.equal(
    faultstring(await api.post('/v1/allocations', { body: { resource_class: 'gold', bogus: 1 } })),
    "Schema error: Additional properties are not allowed ('bogus' was unexpected)",
  );
  const before60 = await client(sim.url, '1.59').get('/v1/allocations/a1');
  assert.equal('owner' in before60.json, false);
});

test('GET /v1/allocations lists them all', async () => {
  const { json } = await api.get('/v1/allocations');
  assert.ok(json.allocations.length >= 6);
  assert.ok(json.allocations.some((a) => a.name === 'a1' && a.state === 'active'));
});
