// Microversion negotiation, version documents, common headers, CORS.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSimulator } from '../server.mjs';
import { faultstring, request } from '../testkit.mjs';

let sim;
before(async () => {
  sim = await startSimulator({
    scenario: {
      nodes: [
        { name: 'n1', provision_state: 'available' },
        { name: 'n2', provision_state: 'inspect wait' },
      ],
    },
  });
});
after(() => sim.close());

const get = (path, opts) => request(sim.url, 'GET', path, opts);
const RANGE = {
  min: 'x-openstack-ironic-api-minimum-version',
  max: 'x-openstack-ironic-api-maximum-version',
  cur: 'x-openstack-ironic-api-version',
};

test('GET / is the root document, with the version range and 1.1 when no version is asked', async () => {
  const res = await get('/');
  assert.equal(res.status, 200);
  assert.equal(res.headers[RANGE.min], '1.1');
  assert.equal(res.headers[RANGE.max], '1.115');
  assert.equal(res.headers[RANGE.cur], '1.1');
  assert.equal(res.json.name, 'OpenStack Ironic API');
  assert.deepEqual(res.json.default_version, {
    id: 'v1',
    links: [{ href: `${sim.url}/v1/`, rel: 'self' }],
    status: 'CURRENT',
    min_version: '1.1',
    version: '1.115',
  });
  assert.deepEqual(res.json.versions, [res.json.default_version]);
});

test('GET /v1 lists controllers by microversion', async () => {
  const old = await get('/v1');
  assert.equal(old.headers[RANGE.cur], '1.1');
  assert.ok(old.json.nodes && !old.json.allocations && !old.json.portgroups);
  assert.equal(old.json.nodes[0].href, `${sim.url}/v1/nodes/`);
  const latest = await get('/v1', { version: 'latest' });
  assert.equal(latest.headers[RANGE.cur], '1.115');
  for (const key of ['allocations', 'portgroups', 'conductors', 'runbooks', 'continue_inspection']) assert.ok(latest.json[key], key);
  assert.equal(latest.json.version.version, '1.115');
});

test('"latest" is case-insensitive and OpenStack-API-Version works too', async () => {
  assert.equal((await get('/v1', { version: 'LATEST' })).headers[RANGE.cur], '1.115');
  const std = await get('/v1', { headers: { 'OpenStack-API-Version': 'compute 2.1, baremetal 1.50' } });
  assert.equal(std.headers[RANGE.cur], '1.50');
  assert.equal((await get('/v1', { version: ' 1.050 ' })).headers[RANGE.cur], '1.50');
});

test('an out-of-range version gets 406 with the range headers and webob body', async () => {
  const res = await get('/v1/nodes', { version: '1.116' });
  assert.equal(res.status, 406);
  assert.equal(res.headers[RANGE.max], '1.115');
  assert.equal(res.headers[RANGE.cur], undefined);
  assert.equal(
    res.text,
    '{"error_message": "{\\"code\\": 406, \\"title\\": \\"Not Acceptable\\", \\"description\\": \\"Version 1.116 was requested but the minor version is not supported by this service. The supported version range is: [1.1, 1.115].\\"}"}',
  );
  const major = await get('/v1', { version: '2.0' });
  assert.equal(major.status, 406);
  assert.match(JSON.parse(major.json.error_message).description, /^Mutually exclusive versions requested\. Version 2\.0 requested/);
  assert.equal((await get('/v1', { version: '1.0' })).status, 406);
});

test('maxVersion plays an older Ironic: its range everywhere, 406 above it, latest is its newest', async () => {
  const old = await startSimulator({ scenario: { maxVersion: '1.80', nodes: [{ name: 'n1', provision_state: 'available' }] } });
  try {
    const v1 = await request(old.url, 'GET', '/v1');
    assert.equal(v1.headers[RANGE.max], '1.80');
    assert.equal(v1.json.version.version, '1.80');
    const latest = await request(old.url, 'GET', '/v1/nodes/n1', { version: 'latest' });
    assert.equal(latest.headers[RANGE.cur], '1.80');
    const above = await request(old.url, 'GET', '/v1/nodes/n1', { version: '1.81' });
    assert.equal(above.status, 406);
    assert.equal(above.headers[RANGE.max], '1.80');
    assert.match(above.json.error_message, /The supported version range is: \[1\.1, 1\.80\]/);
    const missing = await request(old.url, 'GET', '/v1/nodes/nope', { version: '1.80' });
    assert.equal(missing.headers[RANGE.max], '1.80', 'error answers carry the range too');
    assert.throws(() => old.load({ maxVersion: '1.116' }), /maxVersion must be "1.1" to "1.115"/);
  } finally {
    await old.close();
  }
});

test('a malformed version gets 406 without the range headers, as Ironic answers', async () => {
  for (const bad of ['abc', '1.5.1', '1']) {
    const res = await get('/v1/nodes', { version: bad });
    assert.equal(res.status, 406, bad);
    assert.equal(res.headers[RANGE.min], undefined);
    assert.deepEqual(JSON.parse(res.json.error_message), {
      code: 406,
      title: 'Not Acceptable',
      description: 'Invalid value for X-OpenStack-Ironic-API-Version header',
    });
  }
  const root = await get('/', { version: 'abc' });
  assert.equal(root.status, 406);
  assert.equal(faultstring(root), 'Invalid value for X-OpenStack-Ironic-API-Version header');
  const rootRange = await get('/', { version: '1.116' });
  assert.equal(rootRange.headers[RANGE.max], '1.115');
  assert.match(faultstring(rootRange), /^Version 1\.116 was requested/);
});

test('version quirks: available is null before 1.2, inspect wait is inspecting before 1.39', async () => {
  assert.equal((await get('/v1/nodes/n1', { version: '1.1' })).json.provision_state, null);
  assert.equal((await get('/v1/nodes/n1', { version: '1.2' })).json.provision_state, 'available');
  assert.equal((await get('/v1/nodes/n2', { version: '1.38' })).json.provision_state, 'inspecting');
  assert.equal((await get('/v1/nodes/n2', { version: '1.39' })).json.provision_state, 'inspect wait');
});

test('fields needs 1.8 and every named field must exist at the version, else 406', async () => {
  const early = await get('/v1/nodes/n1?fields=uuid', { version: '1.7' });
  assert.equal(early.status, 406);
  assert.equal(faultstring(early), 'Request not acceptable.');
  assert.equal(early.headers[RANGE.cur], '1.7');
  assert.equal((await get('/v1/nodes/n1?fields=resource_class', { version: '1.20' })).status, 406);
  assert.equal((await get('/v1/nodes/n1?fields=resource_class', { version: '1.21' })).status, 200);
});

test('fields added in later versions are hidden at earlier ones', async () => {
  const v1 = (await get('/v1/nodes/n1', { version: '1.1' })).json;
  assert.equal(v1.name, undefined);
  assert.equal(v1.resource_class, undefined);
  assert.equal(v1.states, undefined);
  assert.deepEqual(Object.keys(v1).slice(0, 4), ['uuid', 'created_at', 'updated_at', 'console_enabled']);
  const v50 = (await get('/v1/nodes/n1', { version: '1.50' })).json;
  assert.equal(v50.name, 'n1');
  assert.ok('owner' in v50 && !('allocation_uuid' in v50) && !('description' in v50));
  const latest = (await get('/v1/nodes/n1', { version: '1.115' })).json;
  assert.ok('allocation_uuid' in latest && 'health' in latest && 'volume' in latest);
});

test('every response carries a request id, errors and unknown routes included', async () => {
  const answers = await Promise.all([
    get('/'),
    get('/v1/nodes/nope', { version: '1.115' }),
    get('/v1/nope'),
    get('/nope'),
    get('/v1', { version: 'x' }),
    get('/__sim'),
  ]);
  const ids = answers.map((r) => r.headers['x-openstack-request-id']);
  for (const id of ids) assert.match(id, /^req-[0-9a-f-]{36}$/);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(answers[2].status, 404);
  assert.equal(answers[2].text, '{"error_message": "{\\"code\\": 404, \\"title\\": \\"Not Found\\", \\"description\\": \\"\\"}"}');
  assert.equal(answers[3].status, 404);
});

test('CORS: any localhost origin may call and read the headers; others get no CORS headers', async () => {
  for (const origin of ['http://localhost:3000', 'http://127.0.0.1:8080', 'http://[::1]:5173']) {
    const res = await get('/v1/nodes/n1', { version: '1.115', headers: { Origin: origin } });
    assert.equal(res.headers['access-control-allow-origin'], origin);
    const exposed = res.headers['access-control-expose-headers'].split(',');
    for (const h of [
      'X-OpenStack-Ironic-API-Minimum-Version',
      'X-OpenStack-Ironic-API-Maximum-Version',
      'X-OpenStack-Ironic-API-Version',
      'X-OpenStack-Request-Id',
    ]) {
      assert.ok(exposed.includes(h), h);
    }
  }
  const foreign = await get('/v1/nodes/n1', { headers: { Origin: 'http://example.com' } });
  assert.equal(foreign.headers['access-control-allow-origin'], undefined);
  const pre = await request(sim.url, 'OPTIONS', '/v1/nodes/n1/states/provision', {
    headers: {
      Origin: 'http://localhost:3000',
      'Access-Control-Request-Method': 'PUT',
      'Access-Control-Request-Headers': 'content-type,x-openstack-ironic-api-version',
    },
  });
  assert.equal(pre.status, 200);
  assert.equal(pre.headers['access-control-allow-methods'], 'PUT');
  assert.equal(pre.headers['access-control-allow-headers'], 'content-type,x-openstack-ironic-api-version');
  assert.equal(sim.log({ method: 'OPTIONS' }).length, 0, 'preflights are not client requests');
});
