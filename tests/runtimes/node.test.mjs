// The runtime matrix, Node: the scenario in this Node (20), from a consumer
// project with the package installed from its `npm pack` tarball; the
// `ironic-wait` command that tarball installs; and its types, as a
// TypeScript user meets them.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { assertReport, BIN, CACHE, consumerProject, nodeReport, packTarball, ROOT, startSim } from './harness.mjs';

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

test('the packed types: tsc --strict passes a consumer of every method and option (and refuses what it must); attw finds no problem', async () => {
  const dir = consumerProject('node', 'types', { 'consumer.ts': 'types/consumer.ts' });
  const config = { extends: join(ROOT, 'tests', 'tsconfig.strict.json'), files: ['consumer.ts'] };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  const exec = (file, args, cwd) => promisify(execFile)(file, args, { cwd }).catch((e) => e);
  const tsc = await exec(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir);
  assert.equal(`${tsc.stdout}${tsc.stderr}`, '', 'tsc reports nothing');
  assert.equal(tsc.code ?? 0, 0);
  // The package is ESM only: CommonJS and node10 resolutions are not its to pass.
  const attw = await exec(join(BIN, 'attw'), [packTarball(join(CACHE, 'node')), '--profile', 'esm-only', '--format', 'json'], ROOT);
  assert.deepEqual(
    JSON.parse(attw.stdout).analysis.problems.filter((p) => !['node10', 'node16-cjs'].includes(p.resolutionKind)),
    [],
  );
  assert.equal(attw.code ?? 0, 0);
});
