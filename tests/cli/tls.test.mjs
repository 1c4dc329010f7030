// Certificates, as python-openstackclient takes them: an Ironic behind TLS
// with a certificate of a private CA (made here with openssl) is reached
// with --os-cacert, OS_CACERT or clouds.yaml's `cacert`, or unchecked with
// --insecure or clouds.yaml's `verify: false`; without them the certificate
// is refused and nothing is waited for.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { listen } from '../../sim/http.mjs';
import { createSimulator } from '../../sim/server.mjs';
import { makeCertificates } from '../support/tls.mjs';
import { CLI, run } from './support.mjs';

const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-tls-'));
const CA = join(dir, 'ca.pem');
let sim;
let server;
let url;

before(async () => {
  const tls = makeCertificates(dir);
  sim = createSimulator({ seed: 3, scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
  server = await listen(
    https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => sim.handle(req, res) || res.writeHead(404).end()),
    0,
    '127.0.0.1',
  );
  url = `https://127.0.0.1:${server.port}`;
});
after(async () => {
  await server?.close();
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

const wait = ['node', 'wait', 'n1', '--state', 'available', '--timeout', '30'];
const ironicWait = (args, env = {}) => run(process.execPath, [CLI, '-q', '--os-auth-type', 'none', '--os-endpoint', url, ...args], { env });
const WAITING = 'Waiting for provision state available on node(s) n1\n';

test('--os-cacert and OS_CACERT: the private CA is trusted, the wait runs', async () => {
  for (const [args, env] of [
    [['--os-cacert', CA, ...wait], {}],
    [wait, { OS_CACERT: CA }],
  ]) {
    const r = await ironicWait(args, env);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, WAITING);
    assert.equal(r.code, 0);
  }
});

test('without the CA the certificate is refused: exit 1, a connection error naming the cause', async () => {
  const before = sim.log().length;
  const r = await ironicWait(['--max-retries', '0', ...wait]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /certificate/i);
  assert.equal(sim.log().length, before, 'no request was answered');
});

test('--insecure, or verify: false in clouds.yaml, checks no certificate', async () => {
  const r = await ironicWait(['--insecure', ...wait]);
  assert.equal(r.stdout, WAITING);
  assert.equal(r.code, 0);
  const home = mkdtempSync(join(dir, 'home-'));
  const cloud = (extra) => `clouds:\n  lab:\n    auth_type: none\n    baremetal_endpoint_override: ${url}\n${extra}`;
  for (const extra of ['    verify: false\n', `    cacert: ${CA}\n`]) {
    writeFileSync(join(home, 'clouds.yaml'), cloud(extra));
    const r = await run(process.execPath, [CLI, '-q', '--os-cloud', 'lab', ...wait], {
      env: { OS_CLIENT_CONFIG_FILE: join(home, 'clouds.yaml') },
    });
    assert.equal(r.stderr, '', extra);
    assert.equal(r.code, 0, extra);
  }
  // --verify beats the file's verify: false (and there is no CA to trust).
  writeFileSync(join(home, 'clouds.yaml'), cloud('    verify: false\n'));
  const checked = await run(process.execPath, [CLI, '--verify', '--max-retries', '0', '--os-cloud', 'lab', ...wait], {
    env: { OS_CLIENT_CONFIG_FILE: join(home, 'clouds.yaml') },
  });
  assert.equal(checked.code, 1);
  assert.match(checked.stderr, /certificate/i);
});

test('a CA bundle that cannot be read is a configuration error; --verify and --insecure exclude each other', async () => {
  const r = await ironicWait(['--os-cacert', join(dir, 'missing.pem'), ...wait]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, 'The CA bundle file of --os-cacert could not be read (ENOENT).\n');
  const both = await ironicWait(['--verify', '--insecure', ...wait]);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--insecure: not allowed with argument --verify/);
});
