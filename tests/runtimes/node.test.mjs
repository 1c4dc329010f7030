// The runtime matrix, Node: the scenario in this Node (20), from a consumer
// project with the package installed from its `npm pack` tarball; and the
// `ironic-wait` command that tarball installs.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { assertReport, CACHE, nodeReport, startSim } from './harness.mjs';

let sim;
before(async () => {
  sim = await startSim();
});
after(() => sim?.close());

test('Node: the scenario from the packed package', async (t) => {
  await assertReport(t, await nodeReport('node', sim.url));
});

test("Node: the packed package's ironic-wait command runs (its files and its dependency are in the tarball)", async () => {
  // The consumer project the test above installed.
  const bin = join(CACHE, 'node', 'node', 'node_modules', '.bin', 'ironic-wait');
  const run = (args) => promisify(execFile)(bin, args, { env: { PATH: process.env.PATH } }).catch((e) => e);
  const version = await run(['--version']);
  assert.match(version.stdout, /^ironic-wait \d+\.\d+\.\d+\n$/);
  const missing = await run(['--os-auth-type', 'none', '--os-endpoint', sim.url, 'node', 'manage', 'ghost', '--wait']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stdout, '');
  assert.match(missing.stderr, /^Node ghost could not be found\. \(HTTP 404\) \(Request-ID: req-[\w-]+\)\n$/);
});
