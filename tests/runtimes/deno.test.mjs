// The runtime matrix, Deno (npm `deno`): the scenario from a consumer
// project (Deno reads its package.json and node_modules, and picks the
// `deno` export condition), with no permission but --allow-net for the
// simulator's host:port: the package's wasm needs no --allow-read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BIN, CACHE, startSim, consumerProject, runToEnd, lastJsonLine, nodeReport, assertReport } from './harness.mjs';

const DENO = join(BIN, 'deno');
// Deno's caches stay in the git-ignored folder; no update check.
const env = { DENO_DIR: join(CACHE, 'deno', 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };

let sim;
let dir;
before(async () => {
  sim = await startSim();
  dir = consumerProject('deno', 'deno', { 'cli.mjs': 'cli.mjs', 'deno-permission.mjs': 'deno-permission.mjs' });
});
after(() => sim?.close());

const deno = (args) => runToEnd(DENO, ['run', `--allow-net=${sim.host}:${sim.port}`, ...args], { cwd: dir, env });

test('Deno: the scenario with --allow-net=<simulator> only, same as Node', async (t) => {
  const node = await nodeReport('deno', sim.url);
  await assertReport(t, lastJsonLine(await deno(['cli.mjs', sim.url])), node);
});

test('Deno: a fetch refused for lack of permission is a ConnectionError at once, not retried', async () => {
  // A port the permission does not cover (nothing listens there either).
  const elsewhere = `http://${sim.host}:${sim.port === 65535 ? 65534 : sim.port + 1}`;
  const out = lastJsonLine(await deno(['deno-permission.mjs', elsewhere]));
  assert.deepEqual(out, {
    name: 'ConnectionError',
    isConnectionError: true,
    message: `Error contacting Ironic server: Requires net access to "${new URL(elsewhere).host}", run again with the --allow-net flag`,
    retried: false,
  });
});
