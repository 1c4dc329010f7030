// The real chain that issue 11's Keystone support will be tested on, checked
// with plain fetch, beside the package's own tests (client.test.mjs): a real Keystone 30
// (scripts/real-keystone.mjs) issuing short-lived tokens, and a real Ironic 39
// behind it (`auth_strategy = keystone`) listed in its catalog as `baremetal`.
// Keystone's and Ironic's answers are the judges: every token is checked by
// what Ironic does with it, and Keystone's own validation where that says more.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from '../../scripts/real-ironic.mjs';
import {
  applicationCredentialAuth,
  issueToken,
  passwordAuth,
  startIronicBehindKeystone,
  startKeystone,
  tokenAuth,
} from '../../scripts/real-keystone.mjs';

// Every token lives this long, so that the expiry test waits no more; long
// enough for any other test to use its token on a busy machine.
const TOKEN_LIFE = 20;
// A bound, not a budget: the expiry test waits out a token's life; other suites run beside this one.
const TEST_TIMEOUT = 180_000;
const PROJECT = 'demo';
const USER = 'alice';
const PASSWORD = 'alice-secret-1';
const API_VERSION = '1.115';
// A page's origin that Keystone's CORS middleware allows (no page is served:
// fetch from Node sends the Origin header a browser would).
const PAGE_ORIGIN = 'http://127.0.0.1:8123';

let keystone;
let ironic;
let demo; // { project, user } as Keystone made them

before(async () => {
  keystone = await startKeystone({ name: 'smoke', tokenExpiration: TOKEN_LIFE, corsOrigin: PAGE_ORIGIN });
  ironic = await startIronicBehindKeystone(keystone, { name: 'smoke-ironic' });
  // admin on its own project: Ironic 39's default policy lets it create nodes
  // (they become owned by that project) and drive them.
  demo = await keystone.createProjectUser({ project: PROJECT, user: USER, password: PASSWORD, role: 'admin' });
});

after(async () => {
  await Promise.allSettled([ironic?.stop(), keystone?.stop()]);
});

/** A token for alice on demo, by password; fails the test unless Keystone issues it. */
async function aliceToken() {
  const r = await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }));
  assert.equal(r.status, 201, r.text);
  return r;
}

/** A request to Ironic, at the public baremetal endpoint that a catalog names (or Ironic's URL), with `token` unless null. */
const ironicRequest = (method, path, token, { body, base = ironic.url } = {}) =>
  request(base, method, path, { body, token, headers: { 'X-OpenStack-Ironic-API-Version': API_VERSION } });

/** Ironic's refusal of an unauthenticated request: keystonemiddleware's 401, naming Keystone. */
function assertIronicRefuses(r, what) {
  assert.equal(r.status, 401, `${what}: ${r.text}`);
  assert.deepEqual(
    r.body,
    { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } },
    what,
  );
  assert.equal(r.headers.get('www-authenticate'), `Keystone uri="${keystone.url}"`, what);
}

// Two tests at a time, the expiry test (which waits out a token's life) first: Keystone serves one
// request at a time, and eight tests at once queued a request for longer than a token lives on a
// loaded machine.
describe('a real Keystone with a real Ironic behind it', { concurrency: 2, timeout: TEST_TIMEOUT }, () => {
  test('an expired token is refused by Ironic and by Keystone', async () => {
    const r = await aliceToken();
    assert.equal((await ironicRequest('GET', '/v1/nodes', r.token)).status, 200);
    // Keystone's clock and ours are the same machine's; a second of slack.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, r.expiresAt - Date.now()) + 1000));
    assertIronicRefuses(await ironicRequest('GET', '/v1/nodes', r.token), 'an expired token');
    const validation = await keystone.validateToken(r.token);
    assert.equal(validation.status, 404, validation.text);
    const self = await request(keystone.url, 'GET', '/auth/tokens', { token: r.token, headers: { 'X-Subject-Token': r.token } });
    assert.equal(self.status, 401, `an expired token cannot even ask about itself: ${self.text}`);
  });

  test('password auth gives a token in X-Subject-Token and a catalog with the baremetal endpoints', async () => {
    const r = await aliceToken();
    assert.match(r.token, /^gAAAAA[\w-]{100,}$/, 'a fernet token');
    const { token } = r.body;
    assert.deepEqual(token.methods, ['password']);
    assert.equal(token.user.name, USER);
    assert.deepEqual([token.project.name, token.project.id], [PROJECT, demo.project.id]);
    assert.ok(
      token.roles.some((role) => role.name === 'admin'),
      JSON.stringify(token.roles),
    );
    // [token] expiration is what the token lives. Keystone keeps issued_at and
    // expires_at to the whole second each, cut apart from one another: across a
    // second's boundary the two differ by one second less (or more).
    const life = (Date.parse(token.expires_at) - Date.parse(token.issued_at)) / 1000;
    assert.ok(Math.abs(life - TOKEN_LIFE) <= 1, `${token.issued_at} to ${token.expires_at}: ${life} s, not about ${TOKEN_LIFE}`);

    const byType = Object.fromEntries(token.catalog.map((service) => [service.type, service]));
    assert.deepEqual(Object.keys(byType).sort(), ['baremetal', 'identity']);
    const endpoints = (type) => byType[type].endpoints.map((e) => [e.interface, e.url, e.region]).sort();
    assert.deepEqual(endpoints('baremetal'), [
      ['admin', ironic.url, 'RegionOne'],
      ['internal', ironic.url, 'RegionOne'],
      ['public', ironic.url, 'RegionOne'],
    ]);
    assert.deepEqual(endpoints('identity'), [
      ['admin', keystone.url, 'RegionOne'],
      ['internal', keystone.url, 'RegionOne'],
      ['public', keystone.url, 'RegionOne'],
    ]);
    assert.equal(byType.baremetal.name, 'ironic');

    // The catalog's Ironic takes the token.
    const publicUrl = byType.baremetal.endpoints.find((e) => e.interface === 'public').url;
    const nodes = await ironicRequest('GET', '/v1/nodes', r.token, { base: publicUrl });
    assert.equal(nodes.status, 200, nodes.text);
  });

  test('an application credential made through the API authenticates, by id and by name with its user', async () => {
    const credential = await keystone.createApplicationCredential({ user: USER, password: PASSWORD, project: PROJECT, name: 'smoke-ci' });
    assert.equal(credential.project_id, demo.project.id);
    assert.ok(credential.secret.length >= 32, 'Keystone made a secret');

    const byId = await issueToken(keystone.url, applicationCredentialAuth({ id: credential.id, secret: credential.secret }));
    const byName = await issueToken(keystone.url, applicationCredentialAuth({ name: 'smoke-ci', secret: credential.secret, user: USER }));
    for (const [how, r] of [
      ['by id', byId],
      ['by name', byName],
    ]) {
      assert.equal(r.status, 201, `${how}: ${r.text}`);
      assert.deepEqual(r.body.token.methods, ['application_credential'], how);
      assert.equal(r.body.token.project.id, demo.project.id, `${how}: scoped to the credential's project`);
      assert.equal(r.body.token.application_credential.id, credential.id, how);
      const nodes = await ironicRequest('GET', '/v1/nodes', r.token);
      assert.equal(nodes.status, 200, `${how}: ${nodes.text}`);
    }

    // It is bound to its project: asking for a scope is refused.
    const scoped = await issueToken(keystone.url, {
      ...applicationCredentialAuth({ id: credential.id, secret: credential.secret }),
      scope: { project: { name: PROJECT, domain: { id: 'default' } } },
    });
    assert.equal(scoped.status, 401, scoped.text);
    assert.match(scoped.body.error.message, /Application credentials cannot request a scope/);

    // (Not the secret with a character added: Keystone's secrets are 86
    // characters, hashed with bcrypt, which reads only the first 72 bytes, so
    // anything after the 72nd is not checked at all.)
    const wrong = `${credential.secret[0] === 'a' ? 'b' : 'a'}${credential.secret.slice(1)}`;
    const wrongSecret = await issueToken(keystone.url, applicationCredentialAuth({ id: credential.id, secret: wrong }));
    assert.equal(wrongSecret.status, 401, wrongSecret.text);
    assert.equal(wrongSecret.token, null);
  });

  test("token auth gives a new token, which keeps the old one's expiry and dies with it", async () => {
    const first = await aliceToken();
    const second = await issueToken(keystone.url, tokenAuth(first.token));
    assert.equal(second.status, 201, second.text);
    assert.notEqual(second.token, first.token);
    assert.deepEqual(second.body.token.methods.sort(), ['password', 'token'], 'the methods of both (in no fixed order)');
    assert.equal(second.body.token.project.id, demo.project.id, 'the old scope');
    // No renewal by token auth: the new token ends when the old one does.
    assert.equal(second.body.token.expires_at, first.body.token.expires_at);
    // Its audit chain names the old token, so revoking that one revokes both.
    assert.deepEqual(second.body.token.audit_ids.slice(1), first.body.token.audit_ids);
    assert.equal((await ironicRequest('GET', '/v1/nodes', second.token)).status, 200);
    await keystone.revokeToken(first.token);
    assertIronicRefuses(await ironicRequest('GET', '/v1/nodes', second.token), 'a token made from a revoked one');
  });

  test("a wrong password is 401 with Keystone's error body, the same as an unknown user", async () => {
    const expected = { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } };
    for (const [user, password] of [
      [USER, 'not-the-password'],
      ['nobody', PASSWORD],
    ]) {
      const r = await issueToken(keystone.url, passwordAuth({ user, password, project: PROJECT }));
      assert.equal(r.status, 401, r.text);
      assert.deepEqual(r.body, expected);
      assert.equal(r.token, null);
      assert.equal(r.headers.get('www-authenticate'), `Keystone uri="${keystone.url}"`);
      assert.match(r.headers.get('x-openstack-request-id'), /^req-[0-9a-f-]{36}$/);
      assert.ok(!r.text.includes(password), 'the password is not echoed');
    }
  });

  test('CORS: the allowed origin may log in from a page and read X-Subject-Token; another may not', async () => {
    const preflight = (origin) =>
      fetch(`${keystone.url}/auth/tokens`, {
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
      });
    const allowed = await preflight(PAGE_ORIGIN);
    assert.equal(allowed.headers.get('access-control-allow-origin'), PAGE_ORIGIN);
    assert.match(allowed.headers.get('access-control-allow-methods'), /POST/);
    assert.equal((await preflight('http://127.0.0.1:8124')).headers.get('access-control-allow-origin'), null);

    const r = await request(keystone.url, 'POST', '/auth/tokens', {
      body: { auth: passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }) },
      headers: { Origin: PAGE_ORIGIN },
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.headers.get('access-control-allow-origin'), PAGE_ORIGIN);
    const exposed = r.headers
      .get('access-control-expose-headers')
      .split(',')
      .map((h) => h.trim().toLowerCase());
    assert.ok(exposed.includes('x-subject-token') && exposed.includes('x-openstack-request-id'), exposed.join());
  });

  test('Ironic refuses a request without a token and accepts one with it', async () => {
    assertIronicRefuses(await ironicRequest('GET', '/v1/nodes', null), 'no token');
    assertIronicRefuses(await ironicRequest('GET', '/v1/nodes', 'not-a-token'), 'a made-up token');
    // The API's root and version document stay open (clients negotiate there).
    assert.equal((await ironicRequest('GET', '/v1', null)).status, 200);

    const { token } = await aliceToken();
    const created = await ironicRequest('POST', '/v1/nodes', token, { body: { driver: 'fake-hardware', name: 'smoke-node' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.owner, demo.project.id, 'made by a project admin, owned by the project');
    assert.equal(created.body.provision_state, 'enroll');
    const listed = await ironicRequest('GET', '/v1/nodes?fields=uuid,name,owner', token);
    assert.equal(listed.status, 200, listed.text);
    assert.ok(
      listed.body.nodes.some((n) => n.uuid === created.body.uuid && n.name === 'smoke-node'),
      listed.text,
    );
  });

  test('a revoked token is refused by Ironic at once, and only that token', async () => {
    const revoked = await aliceToken();
    const other = await aliceToken();
    assert.equal((await ironicRequest('GET', '/v1/nodes', revoked.token)).status, 200);
    await keystone.revokeToken(revoked.token);
    // Immediately: keystonemiddleware caches nothing (token_cache_time = -1).
    assertIronicRefuses(await ironicRequest('GET', '/v1/nodes', revoked.token), 'a revoked token');
    const validation = await keystone.validateToken(revoked.token);
    assert.equal(validation.status, 404, validation.text);
    assert.equal((await ironicRequest('GET', '/v1/nodes', other.token)).status, 200, 'another token of the same user still works');
  });
});
