// `OS_CLOUD=... npm start` against a real Keystone 30 and a real Ironic 39
// behind it: the console server reads clouds.yaml (secure.yaml merged) like
// the CLI, logs in, finds Ironic in the catalog and proxies /v1 with the
// token, which never reaches the page, an answer or the terminal.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { ROOT } from '../../scripts/lib.mjs';
import {
  ironicApi,
  issueToken,
  passwordAuth,
  startIronicBehindKeystone,
  startKeystone,
  writeCloudConfig,
} from '../../scripts/real-keystone.mjs';

const PROJECT = 'console';
const USER = 'dave';
const PASSWORD = 'dave-secret-3';

let keystone;
let ironic;
let dir;
let cloudFiles; // OS_CLIENT_CONFIG_FILE and OS_CLIENT_SECURE_FILE: clouds.yaml and secure.yaml in dir
/** `npm start`s still running, each the leader of a process group of its own (its build, its server). */
const started = new Set();

before(async () => {
  keystone = await startKeystone({ name: 'console' });
  ironic = await startIronicBehindKeystone(keystone, { name: 'console-ironic' });
  await keystone.createProjectUser({ project: PROJECT, user: USER, password: PASSWORD, role: 'admin' });
  const login = await issueToken(keystone.url, passwordAuth({ user: USER, password: PASSWORD, project: PROJECT }));
  await ironicApi(ironic.url, login.token)('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'console-node' });
  dir = mkdtempSync(join(tmpdir(), 'iw-console-'));
  cloudFiles = writeCloudConfig(dir, keystone, { user: USER, password: PASSWORD, project: PROJECT });
});

after(async () => {
  // Whatever a test left running (one that timed out while the build or the login went on), with its children.
  for (const child of started) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  await Promise.allSettled([ironic?.stop(), keystone?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `npm start`'s script with these variables (and none of ours of OpenStack's); resolves once it serves or exits. */
function start(env) {
  const ours = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OS_') && !name.startsWith('IRONIC_')));
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: ROOT,
    env: { ...ours, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // a process group of its own: after() stops it and its children, whatever state it is in
  });
  started.add(child);
  child.on('exit', () => started.delete(child));
  const output = { stdout: '', stderr: '' };
  child.stderr.on('data', (d) => {
    output.stderr += d;
  });
  return new Promise((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      output.stdout += `${line}\n`;
      const url = output.stdout.match(/^ironic-wait console: (http:\S+)\/$/m)?.[1];
      if (url && line.includes('Ctrl-C to stop')) resolve({ url, child, output });
    });
    child.on('exit', (code) => resolve({ code, child, output }));
  });
}

// Bounds, not budgets: `npm start` builds what is stale first; other suites run beside this one on a loaded machine.
test("OS_CLOUD: the console proxies to the catalog's Ironic with a token the page never sees", { timeout: 300_000 }, async () => {
  const { url, child, output } = await start({ OS_CLOUD: 'lab', ...cloudFiles });
  assert.ok(url, `the server started: ${output.stderr}`);
  try {
    assert.match(
      output.stdout,
      new RegExp(`/v1 goes to ${ironic.url.replace(/[.]/g, '\\.')} \\(cloud lab, with a Keystone token the server renews\\)`),
    );
    const page = await (await fetch(`${url}/`)).text();
    const consoleToken = page.match(/<meta name="console-token" content="([^"]+)">/)[1];
    const answer = await fetch(`${url}/v1/nodes?fields=name,provision_state`, {
      headers: { 'X-Console-Token': consoleToken, 'X-OpenStack-Ironic-API-Version': '1.115' },
    });
    const text = await answer.text();
    assert.equal(answer.status, 200, text);
    assert.deepEqual(
      JSON.parse(text).nodes.map((n) => n.name),
      ['console-node'],
    );
    // Without the console's token, nothing is proxied.
    assert.equal((await fetch(`${url}/v1/nodes`)).status, 403);
    const seen = [page, text, JSON.stringify([...answer.headers]), output.stdout, output.stderr].join('\n');
    assert.ok(!seen.includes('gAAAA'), 'no Keystone token in the page, the answers or the terminal');
    assert.ok(!seen.includes(PASSWORD));
  } finally {
    child.kill('SIGINT');
  }
});

test("a wrong password stops npm start with Keystone's refusal, and no secret", { timeout: 300_000 }, async () => {
  const wrong = 'wrong-horse-battery';
  const { code, output } = await start({ OS_AUTH_URL: keystone.url, OS_USERNAME: USER, OS_PASSWORD: wrong, OS_PROJECT_NAME: PROJECT });
  assert.equal(code, 1);
  // The last line (the build may have said something before).
  assert.match(
    output.stderr,
    /(^|\n)start: The request you have made requires authentication\. \(HTTP 401\) \(Request-ID: req-[0-9a-f-]{36}\)\n$/,
  );
  assert.ok(!output.stdout.includes(wrong) && !output.stderr.includes(wrong));
});
