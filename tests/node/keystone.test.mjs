// Keystone logins in the package, against the simulator (Ironic) and a
// scripted Keystone on loopback that can answer anything: what the package
// sends to log in for each auth type, what it makes of every kind of answer
// (a token, a refusal, garbage, silence, a dead port), when it logs in again,
// and that no secret reaches an error, a report, an event or a URL.
// tests/real-keystone/ does the same against a real Keystone.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, test } from 'node:test';
import { AuthError, InvalidArgumentError, InvalidResponseError, IronicClient } from 'ironic-wait';
import { listen } from '../../sim/http.mjs';
import { startIronic } from './harness.mjs';

const SECRET = 'S3CRET-pw-\u00e9';

const ironic = await startIronic({ nodes: [{ name: 'n1', provision_state: 'available' }] });
after(() => ironic.close());

/**
 * A Keystone on loopback: `answer(req, body, n)` (n counts from 1) returns
 * { status, headers, body } or 'hang' or 'reset'; by default a token whose
 * catalog lists the simulator. Records { url, headers, body } of each request.
 */
async function startKeystone(answer = () => ({})) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: body ? JSON.parse(body) : null });
      const a = answer(req, body, seen.length);
      if (a === 'hang') return;
      if (a === 'reset') return req.socket.destroy();
      const status = a.status ?? 201;
      const headers = { 'Content-Type': 'application/json', 'X-OpenStack-Request-Id': `req-ks-${seen.length}`, ...a.headers };
      if (status === 201 && !('X-Subject-Token' in headers)) headers['X-Subject-Token'] = `gAAAA-token-${seen.length}`;
      res.writeHead(status, headers);
      res.end(typeof a.body === 'string' ? a.body : JSON.stringify(a.body ?? tokenBody()));
    });
  });
  const listening = await listen(server, 0, '127.0.0.1');
  const url = `http://127.0.0.1:${listening.port}`;
  return { url, v3: `${url}/v3`, seen, close: () => listening.close() };
}

/** A token body like Keystone's, living `life` seconds, with `catalog`. */
function tokenBody({ life = 3600, catalog = catalogOf(ironic.url) } = {}) {
  const issued = new Date();
  return {
    token: {
      methods: ['password'],
      issued_at: issued.toISOString().replace('Z', '000Z'),
      expires_at: new Date(issued.getTime() + life * 1000).toISOString().replace('Z', '000Z'),
      catalog,
    },
  };
}

function catalogOf(url, { region = 'RegionOne', interfaces = ['public', 'internal', 'admin'] } = {}) {
  return [
    { type: 'identity', name: 'keystone', endpoints: [{ interface: 'public', region_id: region, region, url: 'http://127.0.0.1:1/v3' }] },
    { type: 'baremetal', name: 'ironic', endpoints: interfaces.map((i) => ({ interface: i, region_id: region, region, url })) },
  ];
}

const password = (authUrl, extra = {}) => ({
  type: 'password',
  authUrl,
  username: 'alice',
  password: SECRET,
  userDomainName: 'Default',
  projectName: 'demo',
  projectDomainId: 'default',
  ...extra,
});

/** Everything visible of a value or error, as text. */
function visible(...values) {
  return values.map((v) => (v instanceof Error ? `${v.message} ${JSON.stringify(v)} ${v.stack}` : JSON.stringify(v))).join('\n');
}

test('each auth type sends the login body Keystone v3 expects, and nothing secret anywhere else', async () => {
  const keystone = await startKeystone();
  after(() => keystone.close());
  const cases = [
    [
      password(keystone.url),
      {
        identity: { methods: ['password'], password: { user: { name: 'alice', domain: { name: 'Default' }, password: SECRET } } },
        scope: { project: { name: 'demo', domain: { id: 'default' } } },
      },
    ],
    [
      { type: 'password', authUrl: `${keystone.v3}/`, userId: 'u-1', password: SECRET, systemScope: 'all' },
      { identity: { methods: ['password'], password: { user: { id: 'u-1', password: SECRET } } }, scope: { system: { all: true } } },
    ],
    [
      { type: 'password', authUrl: keystone.v3, userId: 'u-1', password: SECRET, domainName: 'Default' },
      { identity: { methods: ['password'], password: { user: { id: 'u-1', password: SECRET } } }, scope: { domain: { name: 'Default' } } },
    ],
    [
      { type: 'v3applicationcredential', authUrl: keystone.v3, applicationCredentialId: 'ac-1', applicationCredentialSecret: SECRET },
      { identity: { methods: ['application_credential'], application_credential: { id: 'ac-1', secret: SECRET } } },
    ],
    [
      {
        type: 'v3applicationcredential',
        authUrl: keystone.v3,
        applicationCredentialName: 'ci',
        username: 'alice',
        userDomainId: 'default',
        applicationCredentialSecret: SECRET,
      },
      {
        identity: {
          methods: ['application_credential'],
          application_credential: { name: 'ci', user: { name: 'alice', domain: { id: 'default' } }, secret: SECRET },
        },
      },
    ],
    [
      { type: 'token', authUrl: keystone.v3, token: SECRET, projectId: 'p-1' },
      { identity: { methods: ['token'], token: { id: SECRET } }, scope: { project: { id: 'p-1' } } },
    ],
  ];
  for (const [auth, expected] of cases) {
    const before = ironic.seen.length;
    const events = [];
    const client = new IronicClient({ auth });
    const report = await client.waitForProvisionState('n1', 'available', { onProgress: (e) => events.push(e) });
    const login = keystone.seen.at(-1);
    assert.deepEqual([login.method, login.url], ['POST', '/v3/auth/tokens'], auth.type);
    assert.deepEqual(login.body, { auth: expected }, auth.type);
    assert.equal(login.headers['content-type'], 'application/json');
    assert.equal(login.headers['x-auth-token'], undefined, 'the login carries no token');
    const sent = ironic.seen.slice(before);
    assert.ok(
      sent.length >= 2 && sent.every((r) => r.headers['x-auth-token'] === `gAAAA-token-${keystone.seen.length}`),
      'Ironic gets the new token',
    );
    assert.ok(
      !visible(
        report,
        events,
        sent.map((r) => r.url),
      ).includes(SECRET),
    );
  }
});

test('a Keystone token is renewed halfway through a short life, and once after a 401', async () => {
  const keystone = await startKeystone(() => ({ body: tokenBody({ life: 6 }) }));
  after(() => keystone.close());
  const client = new IronicClient({ auth: password(keystone.url) });
  await client.getNode('n1');
  assert.equal(keystone.seen.length, 1);
  await client.getNode('n1');
  assert.equal(keystone.seen.length, 1, 'the token is still young');
  await new Promise((resolve) => setTimeout(resolve, 3100));
  await client.getNode('n1');
  assert.equal(keystone.seen.length, 2, 'past half its life: logged in again before sending');
  assert.equal(ironic.seen.at(-1).headers['x-auth-token'], 'gAAAA-token-2');

  // A 401 from Ironic: one login more, then the request again.
  const refusing = await startIronic({
    nodes: [{ name: 'n1' }],
    faults: [{ kind: 'status', status: 401, method: 'GET', path: '/v1/nodes/n1', count: 1 }],
  });
  after(() => refusing.close());
  const keystone2 = await startKeystone(() => ({ body: tokenBody({ catalog: catalogOf(refusing.url) }) }));
  after(() => keystone2.close());
  const c2 = new IronicClient({ auth: password(keystone2.url) });
  await c2.getNode('n1');
  assert.deepEqual(
    refusing.requests('GET', '/v1/nodes/n1').map((r) => r.headers['x-auth-token']),
    ['gAAAA-token-1', 'gAAAA-token-2'],
  );
  // A second 401 in a row is the answer: no loop of logins.
  const always = await startIronic({
    nodes: [{ name: 'n1' }],
    faults: [{ kind: 'status', status: 401, method: 'GET', path: '/v1/nodes/n1' }],
  });
  after(() => always.close());
  const keystone3 = await startKeystone(() => ({ body: tokenBody({ catalog: catalogOf(always.url) }) }));
  after(() => keystone3.close());
  await assert.rejects(new IronicClient({ auth: password(keystone3.url) }).getNode('n1'), (e) => e.status === 401);
  assert.equal(keystone3.seen.length, 2);
});

test('concurrent calls share one login; a failed login fails them all and the next call tries again', async () => {
  let fail = true;
  const keystone = await startKeystone((_req, _body, n) =>
    fail && n === 1
      ? {
          status: 401,
          body: { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } },
        }
      : {},
  );
  after(() => keystone.close());
  const client = new IronicClient({ auth: password(keystone.url) });
  const failed = await Promise.allSettled(Array.from({ length: 5 }, () => client.getNode('n1')));
  assert.equal(keystone.seen.length, 1);
  for (const r of failed) {
    assert.ok(r.reason instanceof AuthError);
    assert.equal(r.reason.message, 'The request you have made requires authentication. (HTTP 401) (Request-ID: req-ks-1)');
    assert.deepEqual([r.reason.status, r.reason.requestId], [401, 'req-ks-1']);
  }
  fail = false;
  const ok = await Promise.all(Array.from({ length: 5 }, () => client.getNode('n1')));
  assert.equal(ok.length, 5);
  assert.equal(keystone.seen.length, 2, 'one more login, shared');
});

test('what Keystone answers that is no token is a typed error; 503 and resets are retried', async () => {
  const cases = [
    ['no X-Subject-Token', () => ({ headers: { 'X-Subject-Token': '' } }), AuthError, /no X-Subject-Token header/],
    ['HTML', () => ({ body: '<html>oops</html>', headers: { 'Content-Type': 'text/html' } }), InvalidResponseError, /not JSON/],
    ['a list', () => ({ body: [1, 2] }), InvalidResponseError, /no token object/],
    ['expires_at garbage', () => ({ body: { token: { expires_at: 'soon' } } }), InvalidResponseError, /expires_at/],
    ['catalog not a list', () => ({ body: { token: { catalog: { baremetal: 1 } } } }), InvalidResponseError, /catalog/],
    [
      'no baremetal',
      () => ({ body: tokenBody({ catalog: [] }) }),
      AuthError,
      /^Authentication failed: public endpoint for baremetal service not found$/,
    ],
    [
      'only internal',
      () => ({ body: tokenBody({ catalog: catalogOf(ironic.url, { interfaces: ['internal'] }) }) }),
      AuthError,
      /public endpoint for baremetal/,
    ],
    [
      'a catalog URL with credentials',
      () => ({ body: tokenBody({ catalog: catalogOf('http://u:p@127.0.0.1:1') }) }),
      InvalidResponseError,
      /not an http\(s\) URL/,
    ],
    [
      'a catalog URL of another scheme',
      () => ({ body: tokenBody({ catalog: catalogOf('file:///etc/passwd') }) }),
      InvalidResponseError,
      /not an http\(s\) URL/,
    ],
    ['a redirect', () => ({ status: 302, headers: { Location: 'http://127.0.0.1:1/v3/auth/tokens' }, body: '' }), Error, /redirect/i],
    [
      '403 text',
      () => ({ status: 403, headers: { 'Content-Type': 'text/plain' }, body: 'no' }),
      AuthError,
      /^Forbidden \(HTTP 403\) \(Request-ID: req-ks-1\)$/,
    ],
    [
      '503 after the retries',
      () => ({ status: 503, headers: { 'Content-Type': 'text/plain' }, body: '' }),
      AuthError,
      /^Service Unavailable \(HTTP 503\) \(Request-ID: req-ks-2\)$/,
    ],
  ];
  for (const [what, answer, Kind, message] of cases) {
    const keystone = await startKeystone(answer);
    const error = await new IronicClient({ auth: password(keystone.url), maxRetries: 1, retryInterval: 0.01 })
      .getNode('n1')
      .catch((e) => e);
    await keystone.close();
    assert.ok(error instanceof Kind, `${what}: ${error}`);
    assert.match(error.message, message, what);
    assert.ok(!visible(error).includes(SECRET), what);
  }
  // Retried as any request is: 503, then a reset, then the token.
  const flaky = await startKeystone((_req, _body, n) => (n === 1 ? { status: 503, body: '' } : n === 2 ? 'reset' : {}));
  after(() => flaky.close());
  const client = new IronicClient({ auth: password(flaky.url), retryInterval: 0.01 });
  assert.equal((await client.getNode('n1')).name, 'n1');
  assert.equal(flaky.seen.length, 3);
  // A port nobody listens on: the URL in the message, never the body.
  const dead = await startKeystone();
  await dead.close();
  const error = await new IronicClient({ auth: password(dead.url), maxRetries: 0 }).getNode('n1').catch((e) => e);
  assert.ok(error instanceof AuthError, String(error));
  assert.match(error.message, new RegExp(`^Authentication failed: Unable to establish connection to ${dead.v3}/auth/tokens: `));
});

test('an abort while logging in rejects with the reason, and nothing is sent after it', async () => {
  const keystone = await startKeystone(() => 'hang');
  after(() => keystone.close());
  const client = new IronicClient({ auth: password(keystone.url) });
  const before = ironic.seen.length;
  const controller = new AbortController();
  const reason = new Error('operator said stop');
  const call = client.provision('n1', 'manage', { wait: true, timeout: 30, signal: controller.signal });
  await new Promise((resolve) => setTimeout(resolve, 100));
  controller.abort(reason);
  await assert.rejects(call, (e) => e === reason);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(ironic.seen.length, before, 'nothing reached Ironic');
  assert.equal(keystone.seen.length, 1);
  // A login with a time limit of its own: requestTimeout.
  const timed = new IronicClient({ auth: password(keystone.url), requestTimeout: 0.2, maxRetries: 0 });
  await assert.rejects(timed.getNode('n1'), (e) => e instanceof AuthError && /timed out/.test(e.message));
});

test('auth options are checked when the client is made, naming the option and never quoting a secret', () => {
  const url = 'http://127.0.0.1:5000/v3';
  const refused = [
    [
      { auth: { type: 'kerberos', authUrl: url } },
      'Option auth.type must be one of password, v3applicationcredential, token, none, http_basic',
    ],
    [{ auth: { authUrl: url, username: 'a', userDomainName: 'd' } }, 'Option auth.password is required for auth type password'],
    [{ auth: { authUrl: url, password: SECRET } }, 'Option auth.username or auth.userId is required for auth type password'],
    [
      { auth: { authUrl: url, username: 'a', password: SECRET } },
      'Option auth.userDomainName or auth.userDomainId is required with auth.username',
    ],
    [
      { auth: { authUrl: url, userId: 'a', password: SECRET, projectName: 'p' } },
      'Option auth.projectDomainName or auth.projectDomainId is required with auth.projectName',
    ],
    [
      { auth: { authUrl: url, userId: 'a', password: SECRET, projectId: 'p', domainId: 'd' } },
      'Option auth: give one scope, a project, a domain or systemScope, not several',
    ],
    [{ auth: { authUrl: url, userId: 'a', password: SECRET, systemScope: 'some' } }, 'Option auth.systemScope must be "all"'],
    [{ auth: { userId: 'a', password: SECRET } }, 'Option auth.authUrl is required for auth type password'],
    [
      { auth: { authUrl: `http://a:${SECRET}@h/v3`, userId: 'a', password: SECRET } },
      'Option auth.authUrl must be an http(s) URL such as http://127.0.0.1:5000/v3, without credentials, query or fragment',
    ],
    [
      { auth: { authUrl: 'http://h:5000/v2.0', userId: 'a', password: SECRET } },
      "Option auth.authUrl must be Keystone's v3 URL or its root, not a v2.0 URL",
    ],
    [{ auth: { authUrl: url, userId: 'a', password: SECRET, token: SECRET } }, 'Option auth.token is not used by auth type password'],
    [{ auth: { authUrl: url, userId: 'a', password: SECRET, pasword: SECRET } }, 'Option auth.pasword is not known'],
    [{ auth: { authUrl: url, userId: 'a', password: 7 } }, 'Option auth.password must be a string'],
    [
      { auth: { type: 'v3applicationcredential', authUrl: url, applicationCredentialSecret: SECRET } },
      'Option auth.applicationCredentialId, or auth.applicationCredentialName with the user, is required for auth type v3applicationcredential',
    ],
    [
      { auth: { type: 'v3applicationcredential', authUrl: url, applicationCredentialId: 'x' } },
      'Option auth.applicationCredentialSecret is required for auth type v3applicationcredential',
    ],
    [{ auth: { type: 'token', authUrl: url } }, 'Option auth.token is required for auth type token'],
    [{ auth: { type: 'none' } }, 'endpoint must be an http(s) URL such as http://127.0.0.1:6385, got ""'],
    [{ auth: { type: 'none', username: 'a' }, endpoint: 'http://h' }, 'Option auth.username is not used by auth type none'],
    [{ auth: { type: 'http_basic', username: 'a' }, endpoint: 'http://h' }, 'Option auth.password is required for auth type http_basic'],
    [
      { auth: { type: 'http_basic', username: 'a', password: SECRET }, endpoint: 'http://h', region: 'R' },
      "Options region and interface choose Ironic's endpoint in Keystone's catalog: auth type http_basic has none",
    ],
    [
      { endpoint: 'http://h', interface: 'public' },
      "Options region and interface choose Ironic's endpoint in Keystone's catalog: they need the auth option",
    ],
    [{ auth: { authUrl: url, userId: 'a', password: SECRET }, interface: 'private' }, 'Option interface must be public, internal or admin'],
    [
      { auth: { authUrl: url, userId: 'a', password: SECRET }, token: SECRET },
      'Option auth cannot be combined with token, getToken or basicAuth',
    ],
    [{ auth: 'password' }, 'Option auth must be an object'],
  ];
  for (const [options, message] of refused) {
    assert.throws(
      () => new IronicClient(options),
      (e) => e instanceof InvalidArgumentError && e.message === message && !visible(e).includes(SECRET),
      `${JSON.stringify(options)} -> ${message}`,
    );
  }
  // Accepted: `none` and `http_basic` with an endpoint, the v2 interface spellings, an endpoint beside a login.
  new IronicClient({ auth: { type: 'none' }, endpoint: 'http://h' });
  new IronicClient({ auth: { type: 'http_basic', username: 'a', password: 'b' }, endpoint: 'http://h' });
  new IronicClient({ auth: { authUrl: url, userId: 'a', password: 'b' }, interface: 'internalURL', region: 'R', endpoint: 'http://h' });
});

test('http_basic and none through auth: the same requests as basicAuth and no auth', async () => {
  const basic = new IronicClient({ endpoint: ironic.url, auth: { type: 'http_basic', username: 'admin', password: SECRET } });
  const before = ironic.seen.length;
  await basic.getNode('n1');
  const expected = `Basic ${Buffer.from(`admin:${SECRET}`).toString('base64')}`;
  assert.ok(ironic.seen.slice(before).every((r) => r.headers.authorization === expected));
  const none = new IronicClient({ endpoint: ironic.url, auth: { type: 'none' } });
  const from = ironic.seen.length;
  await none.getNode('n1');
  assert.ok(ironic.seen.slice(from).every((r) => !r.headers.authorization && !r.headers['x-auth-token']));
  assert.deepEqual(await none.authenticate(), { endpoint: ironic.url, token: null, expiresAt: null });
});

test("the fetch option carries Keystone's login as well as Ironic's requests; onRequest sees no secret", async () => {
  const keystone = await startKeystone();
  after(() => keystone.close());
  const through = [];
  const records = [];
  const client = new IronicClient({
    auth: password(keystone.url),
    fetch: (request) => {
      through.push(`${request.method} ${new URL(request.url).origin}${new URL(request.url).pathname}`);
      return fetch(request);
    },
    onRequest: (r) => records.push(r),
  });
  const node = await client.getNode('n1');
  assert.equal(node.name, 'n1');
  assert.deepEqual(through, [`POST ${keystone.url}/v3/auth/tokens`, `GET ${ironic.url}/v1`, `GET ${ironic.url}/v1/nodes/n1`]);
  assert.deepEqual(
    records.map((r) => [r.method, r.path, r.status]),
    [
      ['POST', '/v3/auth/tokens', 201],
      ['GET', '/v1', 200],
      ['GET', '/v1/nodes/n1', 200],
    ],
  );
  assert.equal(records[0].requestId, 'req-ks-1');
  assert.ok(!visible(records).includes(SECRET) && !visible(records).includes('gAAAA'), 'no secret or token in the records');
});
