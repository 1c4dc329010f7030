// The package logging in to a real Keystone 30 and driving a real Ironic 39
// that validates its tokens (scripts/real-keystone.mjs): password,
// application credential and token auth, Ironic's endpoint from the catalog,
// a token renewed before it expires and after it was revoked, Keystone's
// refusals as AuthError, and no secret in anything the package hands back.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AuthError, InvalidArgumentError, IronicClient } from 'ironic-wait';
import { ironicApi, issueToken, passwordAuth, REGION, startIronicBehindKeystone, startKeystone } from '../../scripts/real-keystone.mjs';

// Tokens live this long, so that renewal shows within a test: the package
// renews halfway through a life this short.
const TOKEN_LIFE = 20;
const PROJECT = 'wait';
const USER = 'carol';
const PASSWORD = 'carol-secret-7';

let keystone;
let ironic;
let nodeUuid; // kn-2: a fake-hardware node owned by the project, manageable (kn-1 stays enrolled for the first test)

before(async () => {
  keystone = await startKeystone({ name: 'client', tokenExpiration: TOKEN_LIFE });
  ironic = await startIronicBehindKeystone(keystone, { name: 'client-ironic' });
  await keystone.createProjectUser({ project: PROJECT, user: USER, password: PASSWORD, role: 'admin' });
  const login = await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }));
  const api = ironicApi(ironic.url, login.token);
  await api('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'kn-1' });
  nodeUuid = (await api('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'kn-2' })).uuid;
  // Through Ironic's API, not the package: the tests below must not depend on each other.
  await api('PUT', '/v1/nodes/kn-2/states/provision', { target: 'manage' });
  for (let i = 0; i < 120 && (await api('GET', '/v1/nodes/kn-2')).provision_state !== 'manageable'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
});

after(async () => {
  await Promise.allSettled([ironic?.stop(), keystone?.stop()]);
});

/** Password auth of carol on the project, as users write it. */
const password = (extra = {}) => ({
  type: 'password',
  authUrl: keystone.url,
  username: USER,
  password: PASSWORD,
  userDomainName: 'Default',
  projectName: PROJECT,
  projectDomainId: 'default',
  ...extra,
});

/** Everything a call handed back, as text, for searching for secrets. */
function seen(...values) {
  return values.map((v) => (v instanceof Error ? `${v.name} ${v.message} ${JSON.stringify(v)} ${v.stack}` : JSON.stringify(v))).join('\n');
}

// Two tests at a time, the renewal test (which waits past a token's life) first: Keystone serves one
// request at a time, and eight tests at once queued a poll for longer than a token lives on a
// loaded machine.
describe('the package against a real Keystone and a real Ironic behind it', { concurrency: 2, timeout: 300_000 }, () => {
  test('a token is renewed before it expires, and a wait runs across its expiry', async () => {
    const client = new IronicClient({ auth: password() });
    const first = (await client.authenticate()).token;
    // Half a life on, the next request logs in again first (no 401 needed).
    const polls = client.waitForProvisionState(nodeUuid, 'active', {
      timeout: TOKEN_LIFE + 6,
      pollInterval: 2,
      failOnUnexpectedState: false,
      settle: 'all',
    });
    await new Promise((resolve) => setTimeout(resolve, (TOKEN_LIFE / 2 + 2) * 1000));
    const second = (await client.authenticate()).token;
    assert.notEqual(second, first, 'renewed halfway through its life');
    const report = await polls;
    // Any poll refused for its token would have made the outcome `error`.
    assert.equal(report.nodes[0].outcome, 'timed-out', JSON.stringify(report));
    assert.ok(report.elapsed > TOKEN_LIFE, `polled past the first token's expiry: ${report.elapsed} s`);
  });

  test('password auth: Ironic from the catalog, a wait that reaches its state', async () => {
    const events = [];
    const client = new IronicClient({ auth: password() });
    const report = await client.provision('kn-1', 'manage', {
      wait: true,
      timeout: 60,
      pollInterval: 1,
      onProgress: (e) => events.push(e),
    });
    assert.equal(report.nodes[0].outcome, 'reached', JSON.stringify(report));
    const { endpoint, token, expiresAt } = await client.authenticate();
    assert.equal(endpoint, ironic.url, 'the public baremetal endpoint of the catalog');
    assert.match(token, /^gAAAAA/);
    assert.ok(Date.parse(expiresAt) > Date.now(), expiresAt);
    const text = seen(report, events);
    assert.ok(!text.includes(PASSWORD) && !text.includes(token), 'no secret in the report or the events');
  });

  test("the catalog's interface and region choose the endpoint; a missing one is an AuthError", async () => {
    for (const iface of ['internal', 'admin']) {
      const client = new IronicClient({ auth: password(), interface: iface, region: REGION });
      assert.equal((await client.getNode(nodeUuid, { fields: ['uuid'] })).uuid, nodeUuid, iface);
    }
    const nowhere = new IronicClient({ auth: password(), region: 'Nowhere' });
    await assert.rejects(
      nowhere.listNodes(),
      (e) =>
        e instanceof AuthError && e.message === 'Authentication failed: public endpoint for baremetal service in Nowhere region not found',
    );
    // An explicit endpoint wins over the catalog.
    const explicit = new IronicClient({ auth: password(), endpoint: `${ironic.url}/v1`, region: 'Nowhere' });
    assert.equal((await explicit.getNode(nodeUuid, { fields: ['uuid'] })).uuid, nodeUuid);
  });

  test("application credentials made through Keystone's API, by id and by name with the user", async () => {
    const credential = await keystone.createApplicationCredential({ user: USER, password: PASSWORD, project: PROJECT, name: 'ci-waits' });
    const auths = [
      {
        type: 'v3applicationcredential',
        authUrl: keystone.url,
        applicationCredentialId: credential.id,
        applicationCredentialSecret: credential.secret,
      },
      {
        type: 'v3applicationcredential',
        authUrl: `${keystone.root}/`,
        applicationCredentialName: 'ci-waits',
        username: USER,
        userDomainId: 'default',
        applicationCredentialSecret: credential.secret,
      },
    ];
    for (const auth of auths) {
      const client = new IronicClient({ auth });
      const report = await client.waitForProvisionState(nodeUuid, 'manageable', { timeout: 60, pollInterval: 1 });
      assert.equal(report.nodes[0].outcome, 'reached');
      assert.ok(!seen(report).includes(credential.secret));
    }
    // A scope cannot be asked of an application credential: refused before anything is sent.
    assert.throws(
      () => new IronicClient({ auth: { ...auths[0], projectName: PROJECT } }),
      (e) => e instanceof InvalidArgumentError && /cannot request a scope/.test(e.message) && !e.message.includes(credential.secret),
    );
  });

  test('token auth exchanges a token for a new one that Ironic takes', async () => {
    const login = await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }));
    const client = new IronicClient({
      auth: { type: 'token', authUrl: keystone.url, token: login.token, projectName: PROJECT, projectDomainName: 'Default' },
    });
    assert.equal((await client.getNode(nodeUuid, { fields: ['uuid'] })).uuid, nodeUuid);
    const { token } = await client.authenticate();
    assert.notEqual(token, login.token, 'a token of its own');
  });

  test("a revoked token is replaced after Ironic's 401, once", async () => {
    const client = new IronicClient({ auth: password() });
    const first = (await client.authenticate()).token;
    await keystone.revokeToken(first);
    assert.equal((await client.getNode(nodeUuid, { fields: ['uuid'] })).uuid, nodeUuid);
    assert.notEqual((await client.authenticate()).token, first);
    // authenticate() renews a refused token too (for a proxy that saw the 401).
    const current = (await client.authenticate()).token;
    const renewed = (await client.authenticate({ refused: current })).token;
    assert.notEqual(renewed, current);
    assert.equal((await client.authenticate({ refused: current })).token, renewed, 'an older refused token changes nothing');
  });

  test('concurrent first calls share one login', async () => {
    const client = new IronicClient({ auth: password() });
    const results = await Promise.all(Array.from({ length: 6 }, () => client.authenticate()));
    assert.equal(new Set(results.map((r) => r.token)).size, 1);
  });

  test("a wrong password is an AuthError with Keystone's message and request id, and no secret", async () => {
    const wrong = 'not-carols-password';
    const client = new IronicClient({ auth: password({ password: wrong }) });
    const error = await client.provision('kn-1', 'manage', { wait: true, timeout: 10 }).catch((e) => e);
    assert.ok(error instanceof AuthError, String(error));
    assert.equal(error.status, 401);
    assert.match(error.requestId, /^req-[0-9a-f-]{36}$/);
    assert.equal(error.message, `The request you have made requires authentication. (HTTP 401) (Request-ID: ${error.requestId})`);
    assert.ok(!seen(error).includes(wrong));
    const unknownUser = new IronicClient({ auth: password({ username: 'nobody' }) });
    await assert.rejects(unknownUser.listNodes(), (e) => e instanceof AuthError && e.status === 401);
  });
});
