// A real OpenStack Keystone from PyPI, for tests (issue 11): keystone 30 served
// by gunicorn, SQLite, fernet tokens, 127.0.0.1 only; and a real Ironic
// (real-ironic.mjs) behind it with `auth_strategy = keystone`. Everything
// lives in .cache/real-keystone/ (git-ignored):
//   venv/            keystone + gunicorn, reused while complete
//                    (venv/.complete is written after a successful install)
//   schema.db        a database after `keystone-manage db_sync` and
//                    `bootstrap` (the admin user, project and roles, the
//                    region, the identity service with endpoints at a
//                    placeholder URL), copied per run (schema.json says what
//                    it was made for); keystone-manage imports Keystone for
//                    seconds of CPU, so a run starts without it: its
//                    endpoints' URLs and the admin's password are set in the
//                    copy with sqlite3 and bcrypt, and its fernet and
//                    credential keys are written from Node
//   install.log      pip's, db_sync's and bootstrap's output
//   run/<name>/      one running Keystone: keystone.conf, keystone.db,
//                    fernet-keys/, credential-keys/, keystone_gunicorn.py,
//                    keystone.log, setup.log (the copy's fix), console.log
//                    (gunicorn), keystone.pid; kept after stop for debugging
//
//   node scripts/real-keystone.mjs install          make the venv (if needed)
//   node scripts/real-keystone.mjs start [--port P] run one until Ctrl-C
//
// From JavaScript: `await startKeystone({ name })` resolves to a Keystone whose
// `url` is the v3 base, `http://127.0.0.1:<port>/v3` (what OS_AUTH_URL and
// clouds.yaml's auth_url usually hold; `root` is the same without /v3), with
// an `admin` user (password `adminPassword`) holding the admin role on the
// `admin` project and on the system, region RegionOne, and REST helpers that
// go through Keystone's API with an admin token. `startIronicBehindKeystone`
// adds a real Ironic that validates tokens with it, listed in the catalog.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { ROOT } from './lib.mjs';
import {
  answers,
  ensureServiceVenv,
  exec,
  freePort,
  killGroup,
  request,
  serviceCli,
  startIronic,
  supervise,
  tail,
} from './real-ironic.mjs';

export const DIR = join(ROOT, '.cache', 'real-keystone');
export const VENV = join(DIR, 'venv');
const BIN = join(VENV, 'bin');
const SCHEMA = join(DIR, 'schema.db');

/** What the venv holds. Changing this list makes the next run rebuild it. */
export const REQUIREMENTS = ['keystone==30.*', 'gunicorn==27.*'];

export const REGION = 'RegionOne';
/** The domain that bootstrap makes, and every helper's default. */
export const DOMAIN = 'default';

// ---------------------------------------------------------------- the venv

/** The identity endpoints' URL in schema.db, replaced in each run's copy. */
const PLACEHOLDER_URL = 'http://127.0.0.1:1/v3';
/** bcrypt's cost for passwords ([identity] password_hash_rounds, and the admin's set by fixDatabase). */
const HASH_ROUNDS = 4;

/** Makes the venv and the schema (bootstrapped) unless they are there (see ensureServiceVenv). */
export function ensureVenv({ quiet = false } = {}) {
  return ensureServiceVenv({
    name: 'real-keystone',
    dir: DIR,
    requirements: REQUIREMENTS,
    schema: `bootstrap admin/admin/admin ${REGION} ${PLACEHOLDER_URL}`,
    migrate: async (conf, log) => {
      // bootstrap refuses to run without a fernet key repository (it reads /etc/keystone's by default).
      const keys = join(dirname(conf), 'fernet-keys');
      writeKeyRepository(keys);
      const more = join(dirname(conf), 'keys.conf');
      writeFileSync(more, `[fernet_tokens]\nkey_repository = ${keys}\n[fernet_receipts]\nkey_repository = ${keys}\n`);
      const manage = (args, env) =>
        exec(join(BIN, 'keystone-manage'), ['--config-file', conf, '--config-file', more, ...args], { log, env });
      await manage(['db_sync']);
      // The password is replaced in each run's copy (fixDatabase).
      await manage(bootstrapArgs(PLACEHOLDER_URL), { ...process.env, OS_BOOTSTRAP_PASSWORD: randomBytes(12).toString('base64url') });
    },
    quiet,
  });
}

function bootstrapArgs(url) {
  return [
    'bootstrap',
    '--bootstrap-username',
    'admin',
    '--bootstrap-project-name',
    'admin',
    '--bootstrap-role-name',
    'admin',
    '--bootstrap-service-name',
    'keystone',
    '--bootstrap-region-id',
    REGION,
    '--bootstrap-admin-url',
    url,
    '--bootstrap-internal-url',
    url,
    '--bootstrap-public-url',
    url,
  ];
}

// What bootstrap would have made differently in a run's copy of schema.db:
// the identity endpoints' URL (the only endpoints there) and the admin's
// password, hashed as Keystone hashes it (bcrypt, "$2b$..."). The password
// comes by the environment, not the command line.
const FIX_DATABASE = `import os, sqlite3, sys
import bcrypt
db, url, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
hashed = bcrypt.hashpw(os.environ["OS_BOOTSTRAP_PASSWORD"].encode(), bcrypt.gensalt(rounds)).decode("ascii")
connection = sqlite3.connect(db)
with connection:
    endpoints = connection.execute("UPDATE endpoint SET url = ?", (url,)).rowcount
    passwords = connection.execute(
        "UPDATE password SET password_hash = ? WHERE local_user_id ="
        " (SELECT id FROM local_user WHERE name = 'admin' AND domain_id = 'default')",
        (hashed,),
    ).rowcount
connection.close()
if (endpoints, passwords) != (3, 1):
    sys.exit(f"expected 3 endpoints and 1 password, updated {endpoints} and {passwords}")
`;

function fixDatabase(dir, url, password) {
  return exec(join(BIN, 'python'), ['-c', FIX_DATABASE, join(dir, 'keystone.db'), url, String(HASH_ROUNDS)], {
    log: join(dir, 'setup.log'),
    env: { ...process.env, OS_BOOTSTRAP_PASSWORD: password, PYTHONDONTWRITEBYTECODE: '1' },
  });
}

// What `keystone-manage fernet_setup` and `credential_setup` make: a key
// repository with a staged key (0) and a primary one (1), each 32 random
// bytes in URL-safe base64 (padded), readable by this user only.
function writeKeyRepository(repository) {
  mkdirSync(repository, { mode: 0o700 });
  for (const index of ['0', '1']) {
    writeFileSync(join(repository, index), randomBytes(32).toString('base64').replaceAll('+', '-').replaceAll('/', '_'), { mode: 0o600 });
  }
}

// ----------------------------------------------------------- one Keystone

// Keystone's config library parses sys.argv, which under gunicorn holds
// gunicorn's own arguments: every worker would exit with code 2. This module
// empties it before Keystone is imported. (The config file comes from
// OS_KEYSTONE_CONFIG_FILES in the environment instead.)
const WSGI_MODULE = `import sys
sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402,F401
`;

/**
 * Starts one Keystone in .cache/real-keystone/run/<name>/ on a free loopback
 * port (or `port`), bootstrapped, and resolves once it issues a token.
 *   tokenExpiration  [token] expiration in seconds (Keystone's default 3600)
 *   corsOrigin       an origin allowed by Keystone's CORS middleware
 * @returns {{ url, root, port, dir, log, adminPassword, region, stop(), ... }}
 *   `url` is the v3 base (`.../v3`); the REST helpers are described below.
 */
export async function startKeystone({ name = 'keystone', tokenExpiration, corsOrigin, port } = {}) {
  await ensureVenv();
  const dir = join(DIR, 'run', name);
  stopLeftover(dir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(SCHEMA, join(dir, 'keystone.db'));
  const conf = join(dir, 'keystone.conf');
  writeFileSync(conf, config({ dir, tokenExpiration }));
  writeFileSync(join(dir, 'keystone_gunicorn.py'), WSGI_MODULE);

  // Fresh keys for each run.
  writeKeyRepository(join(dir, 'fernet-keys'));
  writeKeyRepository(join(dir, 'credential-keys'));

  const adminPassword = `admin-${randomBytes(9).toString('base64url')}`;
  // A port picked free can be taken before gunicorn binds it: then try another.
  let server;
  for (let attempt = 1; ; attempt++) {
    const chosen = port ?? (await freePort());
    // The endpoints name Keystone's own URL, so they are set once the port is chosen.
    await fixDatabase(dir, `http://127.0.0.1:${chosen}/v3`, adminPassword);
    try {
      server = await launch(dir, chosen, conf, corsOrigin);
      break;
    } catch (e) {
      if (!(e.addressInUse && port === undefined && attempt < 3)) throw e;
    }
  }
  const keystone = withHelpers({ ...server, adminPassword, region: REGION });
  try {
    await keystone.adminToken(); // the readiness check: the admin password works, tokens are issued
  } catch (e) {
    await keystone.stop();
    throw new Error(`Keystone does not issue tokens: ${e.message}; logs in ${dir}:\n${tail(join(dir, 'keystone.log'))}`);
  }
  return keystone;
}

function config({ dir, tokenExpiration }) {
  const lines = [
    '[DEFAULT]',
    `log_dir = ${dir}`,
    'log_file = keystone.log',
    'use_stderr = false',
    '[database]',
    `connection = sqlite:///${join(dir, 'keystone.db')}`,
    '[token]',
    'provider = fernet',
    ...(tokenExpiration ? [`expiration = ${tokenExpiration}`] : []),
    '[fernet_tokens]',
    `key_repository = ${join(dir, 'fernet-keys')}`,
    // Receipts (multi-factor auth) are fernet too, with their own repository
    // defaulting to /etc/keystone: the same keys, so that nothing reads /etc.
    '[fernet_receipts]',
    `key_repository = ${join(dir, 'fernet-keys')}`,
    '[credential]',
    `key_repository = ${join(dir, 'credential-keys')}`,
    '[identity]',
    // bcrypt's cheapest: a password check costs ~1 ms of CPU instead of ~330 ms.
    `password_hash_rounds = ${HASH_ROUNDS}`,
  ];
  return `${lines.join('\n')}\n`;
}

async function launch(dir, port, conf, corsOrigin) {
  const consoleLog = join(dir, 'console.log');
  const out = openSync(consoleLog, 'a');
  const env = {
    ...process.env,
    OS_KEYSTONE_CONFIG_FILES: conf,
    // Keystone's CORS middleware reads only its default config files, never
    // OS_KEYSTONE_CONFIG_FILES; oslo.config also reads OS_<GROUP>__<OPTION>.
    ...(corsOrigin ? { OS_CORS__ALLOWED_ORIGIN: corsOrigin } : {}),
    PYTHONDONTWRITEBYTECODE: '1',
  };
  // detached: its own process group, so that stopping reaches gunicorn's
  // worker too, and a Ctrl-C meant for the caller does not.
  const child = spawn(
    join(BIN, 'gunicorn'),
    [
      '--bind',
      `127.0.0.1:${port}`,
      // One worker process (~130 MB) of the default sync class: one request at
      // a time. SQLite cannot take Keystone's concurrent writes: with threads,
      // two password auths of one user racing to update its last_active_at
      // made a 500 ("database is locked"). The sync worker also closes each
      // connection after its answer, which avoids another trap: the gthread
      // worker drops an idle kept-alive connection after 2 s (--keep-alive)
      // while Node's fetch reuses one for up to 4 s, and a request sent in
      // between fails with "other side closed".
      '--workers',
      '1',
      '--graceful-timeout',
      '5',
      // gunicorn 27 otherwise opens a control socket under ~/.gunicorn.
      '--no-control-socket',
      '--pythonpath',
      dir, // the wrapper module; also what stopLeftover recognises
      '--chdir',
      dir,
      '--error-logfile',
      '-',
      'keystone_gunicorn:application',
    ],
    { cwd: dir, detached: true, stdio: ['ignore', out, out], env },
  );
  closeSync(out);
  const { stop, exited } = supervise(child, join(dir, 'keystone.pid'), 10_000);

  const root = `http://127.0.0.1:${port}`;
  const failed = async (why) => {
    await stop();
    const log = tail(consoleLog) + tail(join(dir, 'keystone.log'));
    const e = new Error(`Keystone ${why}; logs in ${dir}:\n${log}`);
    e.addressInUse = /Address already in use|EADDRINUSE|Errno 98/.test(log);
    return e;
  };
  // gunicorn's master binds before its worker imports Keystone (seconds).
  const deadline = performance.now() + 90_000;
  while (!/Listening at:/.test(tail(consoleLog, 200))) {
    const ended = exited();
    if (ended) throw await failed(`exited (${ended.code ?? ended.signal}) before listening`);
    if (performance.now() > deadline) throw await failed('did not listen within 90 s');
    await sleep(50);
  }
  for (;;) {
    const ended = exited();
    if (ended) throw await failed(`exited (${ended.code ?? ended.signal}) before answering`);
    if (await answers(`${root}/v3`)) break;
    if (performance.now() > deadline) throw await failed('did not answer GET /v3 within 90 s');
    await sleep(100);
  }
  return { url: `${root}/v3`, root, port, dir, pid: child.pid, log: join(dir, 'keystone.log'), stop };
}

// A run whose caller was killed before it could stop it: stop it if its PID is
// still a gunicorn serving this folder (a reused PID is left alone).
function stopLeftover(dir) {
  const pidFile = join(dir, 'keystone.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    // gone
  }
  if (pid > 1 && cmdline.includes('gunicorn') && cmdline.split('\0').includes(dir)) killGroup(pid, 'SIGKILL');
  unlinkSync(pidFile);
}

// ------------------------------------------------------------ REST helpers

/**
 * POST /v3/auth/tokens with plain fetch. `auth` is Keystone's `auth` object
 * (`identity` and optional `scope`); see passwordAuth() and friends.
 * @returns {{ status, token, body, text, expiresAt, headers }} where token is
 *   X-Subject-Token (null when refused) and expiresAt a Date.
 */
export async function issueToken(url, auth) {
  const r = await request(url, 'POST', '/auth/tokens', { body: { auth } });
  return {
    ...r,
    token: r.headers.get('x-subject-token'),
    expiresAt: r.body?.token?.expires_at ? new Date(r.body.token.expires_at) : null,
  };
}

/** The `auth` object for a user's password, scoped to a project (both by name, in `domain`) unless `project` is null. */
export function passwordAuth({ user, password, project, domain = DOMAIN, system = false }) {
  return {
    identity: { methods: ['password'], password: { user: { name: user, domain: { id: domain }, password } } },
    ...(system ? { scope: { system: { all: true } } } : project ? { scope: { project: { name: project, domain: { id: domain } } } } : {}),
  };
}

/**
 * The `auth` object for an application credential: by `id`, or by `name` and
 * its user (`userId`, or `user` name and `domain`). It has no scope: an
 * application credential is bound to its project, and asking for a scope is
 * refused ("Application credentials cannot request a scope").
 */
export function applicationCredentialAuth({ id, name, secret, userId, user, domain = DOMAIN }) {
  const credential = id ? { id, secret } : { name, secret, user: userId ? { id: userId } : { name: user, domain: { id: domain } } };
  return { identity: { methods: ['application_credential'], application_credential: credential } };
}

/**
 * The `auth` object for an existing token. Keystone issues a new token that
 * keeps the old one's scope (unless `scope` says otherwise) and its expiry:
 * token auth never extends a session. The new token's audit_ids name the old
 * one, so revoking the old token revokes the new one too.
 */
export function tokenAuth(token, scope) {
  return { identity: { methods: ['token'], token: { id: token } }, ...(scope ? { scope } : {}) };
}

/**
 * Ironic's REST API with a user's token (to set nodes up for a test):
 * `api(method, path, body)` resolves to the answer's JSON, and rejects on
 * any status but 2xx.
 */
export function ironicApi(ironicUrl, token) {
  return async (method, path, body) => {
    const r = await request(ironicUrl, method, path, { body, token, headers: { 'X-OpenStack-Ironic-API-Version': '1.115' } });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
}

/**
 * Writes `dir`/clouds.yaml with a cloud `name` logging in to `keystone` as
 * `user` on `project` (both in the default domain, region RegionOne), and
 * the password apart in `dir`/secure.yaml, as operators keep it. The
 * auth type is spelt out: python-ironicclient's `baremetal` assumes `none`.
 * @returns the variables that point the OpenStack tools at both files
 */
export function writeCloudConfig(dir, keystone, { name = 'lab', user, password, project }) {
  writeFileSync(
    join(dir, 'clouds.yaml'),
    `clouds:
  ${name}:
    auth_type: password
    auth:
      auth_url: ${keystone.url}
      username: ${user}
      project_name: ${project}
      user_domain_name: Default
      project_domain_name: Default
    region_name: ${REGION}
`,
  );
  writeFileSync(join(dir, 'secure.yaml'), `clouds:\n  ${name}:\n    auth:\n      password: ${password}\n`);
  return { OS_CLIENT_CONFIG_FILE: join(dir, 'clouds.yaml'), OS_CLIENT_SECURE_FILE: join(dir, 'secure.yaml') };
}

// The admin helpers, on the object startKeystone returns. Each takes a fresh
// system-scoped admin token when the last one is near its end (tokens may be
// made to live only seconds): Keystone's default policies want the system
// scope for managing projects, users, roles and the catalog.
function withHelpers(keystone) {
  const { url } = keystone;
  let admin = null; // { token, expiresAt }

  const self = {
    ...keystone,
    domain: DOMAIN,

    /** A system-scoped token of the bootstrap admin, reused while it has more than 5 s left. */
    async adminToken() {
      if (admin && admin.expiresAt - Date.now() > 5_000) return admin.token;
      const r = await issueToken(url, passwordAuth({ user: 'admin', password: keystone.adminPassword, system: true }));
      if (r.status !== 201) throw new Error(`admin token: ${r.status} ${r.text}`);
      admin = { token: r.token, expiresAt: r.expiresAt.getTime() };
      return admin.token;
    },

    /** A request with the admin token; `expect` is the status required (a mismatch throws with Keystone's answer). */
    async api(method, path, body, expect) {
      const r = await request(url, method, path, { body, token: await self.adminToken() });
      if (expect !== undefined && r.status !== expect) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
      return r;
    },

    /** Creates a project (in the default domain); returns Keystone's project. */
    async createProject(name, { domain = DOMAIN } = {}) {
      return (await self.api('POST', '/projects', { project: { name, domain_id: domain } }, 201)).body.project;
    },

    /** Creates a user with a password (in the default domain); returns Keystone's user. */
    async createUser(name, password, { domain = DOMAIN, defaultProject } = {}) {
      const user = { name, password, domain_id: domain, ...(defaultProject ? { default_project_id: defaultProject } : {}) };
      return (await self.api('POST', '/users', { user }, 201)).body.user;
    },

    /** The id of a role by name (bootstrap makes admin, manager, member, reader and service). */
    async roleId(name) {
      const { roles } = (await self.api('GET', `/roles?name=${encodeURIComponent(name)}`, undefined, 200)).body;
      if (roles.length !== 1) throw new Error(`role ${name}: ${roles.length} found`);
      return roles[0].id;
    },

    /** Gives `user` (id) the role `role` (name) on `project` (id). */
    async grantRole({ user, project, role }) {
      await self.api('PUT', `/projects/${project}/users/${user}/roles/${await self.roleId(role)}`, undefined, 204);
    },

    /** A project, a user with `password` and `role` on it, in one go; returns { project, user } (Keystone's). */
    async createProjectUser({ project: projectName, user: userName, password, role = 'admin' }) {
      const project = await self.createProject(projectName);
      const user = await self.createUser(userName, password, { defaultProject: project.id });
      await self.grantRole({ user: user.id, project: project.id, role });
      return { project, user };
    },

    /**
     * The `baremetal` service (named ironic) with public, internal and admin
     * endpoints at `ironicUrl` (or one URL per interface) in `region`.
     * @returns Keystone's service and its endpoints.
     */
    async registerBaremetal(ironicUrl, { region = REGION, name = 'ironic' } = {}) {
      const urls = typeof ironicUrl === 'string' ? { public: ironicUrl, internal: ironicUrl, admin: ironicUrl } : ironicUrl;
      const service = (await self.api('POST', '/services', { service: { type: 'baremetal', name, enabled: true } }, 201)).body.service;
      const endpoints = [];
      for (const [iface, endpointUrl] of Object.entries(urls)) {
        const endpoint = { service_id: service.id, interface: iface, url: endpointUrl, region_id: region, enabled: true };
        endpoints.push((await self.api('POST', '/endpoints', { endpoint }, 201)).body.endpoint);
      }
      return { service, endpoints };
    },

    /**
     * An application credential of `user` (name) on `project` (name), made
     * the way a user makes one: with that user's own project-scoped token
     * (not even an admin may make one for someone else). Keystone generates
     * the secret; `roles` (names) default to all the user's roles there.
     * @returns Keystone's credential, with `id`, `name`, `secret`, `user_id`.
     */
    async createApplicationCredential({ user, password, project, name, roles, expiresAt, domain = DOMAIN }) {
      const auth = await issueToken(url, passwordAuth({ user, password, project, domain }));
      if (auth.status !== 201) throw new Error(`${user} on ${project}: ${auth.status} ${auth.text}`);
      const userId = auth.body.token.user.id;
      const credential = {
        name,
        ...(roles ? { roles: roles.map((role) => ({ name: role })) } : {}),
        ...(expiresAt ? { expires_at: expiresAt } : {}),
      };
      const r = await request(url, 'POST', `/users/${userId}/application_credentials`, {
        body: { application_credential: credential },
        token: auth.token,
      });
      if (r.status !== 201) throw new Error(`application credential ${name}: ${r.status} ${r.text}`);
      return r.body.application_credential;
    },

    /** Deletes an application credential of `userId` (with the admin token); Keystone then refuses the tokens made from it. */
    async deleteApplicationCredential(userId, id) {
      await self.api('DELETE', `/users/${userId}/application_credentials/${id}`, undefined, 204);
    },

    /** Revokes `token` (DELETE /v3/auth/tokens, with the admin token). */
    async revokeToken(token) {
      const r = await request(url, 'DELETE', '/auth/tokens', { token: await self.adminToken(), headers: { 'X-Subject-Token': token } });
      if (r.status !== 204) throw new Error(`revoking a token: ${r.status} ${r.text}`);
    },

    /** Keystone's own verdict on `token`: 200 with its body when valid, 404 when expired or revoked. */
    async validateToken(token) {
      return request(url, 'GET', '/auth/tokens', { token: await self.adminToken(), headers: { 'X-Subject-Token': token } });
    },
  };
  return self;
}

// ------------------------------------------------ a real Ironic behind it

/**
 * Starts a real Ironic (real-ironic.mjs, `name` and `options` as startIronic's)
 * that validates every request's token with `keystone`, and lists it in the
 * catalog as the `baremetal` service (public, internal and admin endpoints).
 * keystonemiddleware's service user is `ironic`, admin on the project
 * `service` (made here unless there already).
 * @returns startIronic's Ironic, plus `service` and `endpoints` (Keystone's).
 */
export async function startIronicBehindKeystone(keystone, { name = 'ironic-keystone', ...options } = {}) {
  const password = `ironic-${randomBytes(9).toString('base64url')}`;
  const found = (await keystone.api('GET', '/projects?name=service', undefined, 200)).body.projects[0];
  const project = found ?? (await keystone.createProject('service'));
  const user = await keystone.createUser('ironic', password);
  await keystone.grantRole({ user: user.id, project: project.id, role: 'admin' });
  const ironic = await startIronic({
    name,
    ...options,
    keystone: { authUrl: keystone.url, username: 'ironic', password, projectName: 'service' },
  });
  try {
    return { ...ironic, ...(await keystone.registerBaremetal(ironic.url)) };
  } catch (e) {
    await ironic.stop();
    throw e;
  }
}

// ------------------------------------------------------------------- CLI

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  serviceCli({
    name: 'real-keystone',
    venv: VENV,
    ensure: ensureVenv,
    start: ({ port }) => startKeystone({ name: 'manual', port }),
    more: (keystone) => [
      `OS_AUTH_URL=${keystone.url} OS_USERNAME=admin OS_PASSWORD=${keystone.adminPassword} OS_PROJECT_NAME=admin` +
        ' OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default',
    ],
  });
}
