// `ironic-wait` side by side with python-ironicclient's `baremetal` and
// python-openstackclient's `openstack baremetal` on the real chain: a real
// Keystone 30 and a real Ironic 39 that validates its tokens, configured the
// same way (clouds.yaml with secure.yaml, OS_* variables, --os-* flags). Same
// stdout, stderr and exit code for the same command (node names and request
// ids aside); ironic-wait alone for what they lack (`node wait`).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from '../../scripts/lib.mjs';
import { VENV as IRONIC_VENV } from '../../scripts/real-ironic.mjs';
import {
  ironicApi,
  issueToken,
  passwordAuth,
  startIronicBehindKeystone,
  startKeystone,
  writeCloudConfig,
} from '../../scripts/real-keystone.mjs';

const run = promisify(execFile);
const PROJECT = 'cli';
const USER = 'erin';
const PASSWORD = 'erin-secret-5';
const BAREMETAL = join(IRONIC_VENV, 'bin', 'baremetal');
const OPENSTACK = join(IRONIC_VENV, 'bin', 'openstack');
const IRONIC_WAIT = join(ROOT, 'bin', 'ironic-wait.mjs');

let keystone;
let ironic;
let dir;
let cloudFiles; // OS_CLIENT_CONFIG_FILE and OS_CLIENT_SECURE_FILE: clouds.yaml and secure.yaml in dir
let api; // Ironic's REST API as erin, to set the nodes up and check them

before(async () => {
  keystone = await startKeystone({ name: 'cli' });
  ironic = await startIronicBehindKeystone(keystone, { name: 'cli-ironic' });
  await keystone.createProjectUser({ project: PROJECT, user: USER, password: PASSWORD, role: 'admin' });
  api = ironicApi(ironic.url, (await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }))).token);
  for (const name of ['py-1', 'py-2', 'iw-1', 'iw-2', 'iw-3']) await api('POST', '/v1/nodes', { driver: 'fake-hardware', name });
  dir = mkdtempSync(join(tmpdir(), 'iw-cli-'));
  cloudFiles = writeCloudConfig(dir, keystone, { user: USER, password: PASSWORD, project: PROJECT });
});

after(async () => {
  await Promise.allSettled([ironic?.stop(), keystone?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One program with `args` in the temp directory, with `env` and no OS_* of ours; never rejects. */
async function cli(program, args, env = {}) {
  const ours = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OS_')));
  const [file, argv] = {
    baremetal: [BAREMETAL, args],
    // The same command under `openstack`: the global options first, then `baremetal` and the rest.
    openstack: [OPENSTACK, [...args.slice(0, args.indexOf('node')), 'baremetal', ...args.slice(args.indexOf('node'))]],
    'ironic-wait': [process.execPath, [IRONIC_WAIT, ...args]],
  }[program];
  const options = {
    cwd: dir,
    env: { ...ours, HOME: dir, ...cloudFiles, ...env },
    // A bound, not a budget: a command takes seconds, but minutes on a machine loaded by other suites.
    timeout: 600_000,
  };
  try {
    const { stdout, stderr } = await run(file, argv, options);
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (typeof e.code !== 'number') throw e;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A result with node names and request ids made comparable. */
const same = (r, node) => ({
  code: r.code,
  stdout: r.stdout.replaceAll(node, 'NODE').replace(/req-[0-9a-f-]{36}/g, 'req-ID'),
  stderr: r.stderr.replaceAll(node, 'NODE').replace(/req-[0-9a-f-]{36}/g, 'req-ID'),
});

// The waits' time-outs and the tests' are bounds far above the seconds they take (a manage took
// 150 s beside other suites at a load average of 25).
test('OS_CLOUD with secure.yaml: `node manage --wait` says and does what baremetal does', { timeout: 900_000 }, async () => {
  const [python, ours] = await Promise.all([
    cli('baremetal', ['--os-cloud', 'lab', 'node', 'manage', 'py-1', '--wait', '600']),
    cli('ironic-wait', ['--os-cloud', 'lab', '-q', 'node', 'manage', 'iw-1', '--wait', '600']),
  ]);
  assert.deepEqual(same(ours, 'iw-1'), same(python, 'py-1'));
  assert.deepEqual(same(ours, 'iw-1'), { code: 0, stdout: 'Waiting for provision state manageable on node(s) NODE\n', stderr: '' });
  for (const name of ['py-1', 'iw-1']) assert.equal((await api('GET', `/v1/nodes/${name}`)).provision_state, 'manageable', name);
});

// python-openstackclient's precedence, which ironic-wait follows: a variable
// beats the cloud's file. (`baremetal` alone lets secure.yaml win here.)
test("a wrong password in OS_PASSWORD beats secure.yaml: Keystone's refusal, exit 1, as `openstack baremetal` says it", {
  timeout: 900_000,
}, async () => {
  const wrong = 'not-erins-password';
  const args = (node) => ['--os-cloud', 'lab', 'node', 'manage', node, '--wait', '30'];
  const [python, ours] = await Promise.all([
    cli('openstack', args('py-2'), { OS_PASSWORD: wrong }),
    cli('ironic-wait', args('iw-2'), { OS_PASSWORD: wrong }),
  ]);
  assert.deepEqual(same(ours, 'iw-2'), same(python, 'py-2'));
  assert.equal(ours.code, 1);
  assert.match(ours.stderr, /^The request you have made requires authentication\. \(HTTP 401\) \(Request-ID: req-[0-9a-f-]{36}\)\n$/);
  assert.ok(!`${ours.stdout}${ours.stderr}`.includes(wrong));
  for (const name of ['py-2', 'iw-2'])
    assert.equal((await api('GET', `/v1/nodes/${name}`)).provision_state, 'enroll', `${name}: nothing was sent`);
});

test('an application credential and a token through OS_* variables (ironic-wait only: node wait)', { timeout: 900_000 }, async () => {
  const credential = await keystone.createApplicationCredential({ user: USER, password: PASSWORD, project: PROJECT, name: 'cli-ci' });
  const byCredential = await cli('ironic-wait', ['node', 'wait', 'iw-3', '--state', 'enroll', '--timeout', '300'], {
    OS_AUTH_TYPE: 'v3applicationcredential',
    OS_AUTH_URL: keystone.url,
    OS_APPLICATION_CREDENTIAL_ID: credential.id,
    OS_APPLICATION_CREDENTIAL_SECRET: credential.secret,
    OS_CLIENT_CONFIG_FILE: join(dir, 'none.yaml'),
  });
  assert.equal(byCredential.code, 0, byCredential.stderr);
  const token = (await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }))).token;
  const byToken = await cli(
    'ironic-wait',
    [
      '--os-auth-type',
      'token',
      '--os-auth-url',
      keystone.url,
      '--os-token',
      token,
      '--os-project-name',
      PROJECT,
      'node',
      'wait',
      'iw-3',
      '--state',
      'enroll',
      '--timeout',
      '300',
      '--json',
    ],
    { OS_CLIENT_CONFIG_FILE: join(dir, 'none.yaml') },
  );
  assert.equal(byToken.code, 0, byToken.stderr);
  assert.equal(JSON.parse(byToken.stdout).nodes[0].outcome, 'reached');
  for (const r of [byCredential, byToken]) {
    const text = r.stdout + r.stderr;
    assert.ok(!text.includes(credential.secret) && !text.includes(token) && !text.includes('gAAAA'));
  }
});
