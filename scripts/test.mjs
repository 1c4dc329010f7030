// `npm test`: installs what the tests need, builds pkg/, then runs every
// part of the suite in turn and says how long each took.
//   npm test                       everything
//   npm test -- --only node,rust   some parts (names below)
//   npm test -- --list             the parts
// Every part runs even when an earlier one failed; the exit code is 1 if any
// failed. Parts add their own set-up (a venv, npm packages) to their `run`.
import { spawnSync } from 'node:child_process';
import { main, ROOT } from './lib.mjs';
import { setup } from './setup.mjs';

const node = (...args) => ({ cmd: process.execPath, args });
const PARTS = [
  { name: 'rust', what: 'the core: unit, engine, property and fuzz tests (cargo test)', cmd: 'cargo', args: ['test'] },
  { name: 'sim', what: 'the simulator', ...node('--test', 'sim/test') },
  { name: 'node', what: 'the built package in Node against the simulator', ...node('--test', 'tests/node') },
  {
    name: 'cli',
    what: "the ironic-wait command line, and against python-ironicclient's baremetal on the same simulator scenarios (the real-ironic venv)",
    ...node('--test', 'tests/cli'),
  },
  { name: 'browser', what: 'the console and its server, in Chromium', ...node('--test', 'tests/browser') },
  {
    name: 'real-ironic',
    what: 'the package and python-ironicclient 6.3 side by side against a real Ironic 39 (its venv in .cache/real-ironic)',
    ...node('--test', 'tests/real-ironic'),
  },
  {
    name: 'real-keystone',
    what: 'the package, the CLI and the console logging in to a real Keystone 30, a real Ironic 39 behind it (venvs in .cache/)',
    ...node('--test', 'tests/real-keystone'),
  },
  // The runtime matrix (tests/runtimes/): one scenario, the package from its own tarball, each runtime vs Node.
  {
    name: 'node-pack',
    what: 'the runtime scenario in Node, the package installed from its tarball',
    ...node('--test', 'tests/runtimes/node.test.mjs'),
  },
  { name: 'deno', what: 'the runtime scenario in Deno, with --allow-net only', ...node('--test', 'tests/runtimes/deno.test.mjs') },
  {
    name: 'workerd',
    what: 'the runtime scenario in a wrangler-bundled Worker under workerd',
    ...node('--test', 'tests/runtimes/workerd.test.mjs'),
  },
  {
    name: 'cloudflare',
    what: "ironic-wait/cloudflare's Durable Object in examples/cloudflare's Worker under workerd: storage and alarms on disk, WebSocket listeners, SIGKILL",
    ...node('--experimental-websocket', '--test', 'tests/runtimes/cloudflare.test.mjs'),
  },
  {
    name: 'deno-kv',
    what: "ironic-wait/deno's KvWaits in examples/deno's server under deno: waits and rounds in a Deno KV file and its queue, SSE listeners, SIGKILL",
    ...node('--test', 'tests/runtimes/deno-kv.test.mjs'),
  },
  {
    name: 'chromium',
    what: 'the runtime scenario in Chromium: vite and import-map pages, and module workers',
    ...node('--test', 'tests/runtimes/chromium.test.mjs'),
  },
  {
    name: 'cors',
    what: 'a page calling a real Ironic 39 across origins, stock and documented [cors]',
    ...node('--test', 'tests/runtimes/cors.test.mjs'),
  },
];

await main('test', async () => {
  const argv = process.argv.slice(2);
  if (argv.includes('--list')) {
    for (const p of PARTS) console.log(`${p.name.padEnd(13)} ${p.what}`);
    return;
  }
  const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1]?.split(',') : null;
  const unknown = (only ?? []).filter((n) => !PARTS.some((p) => p.name === n));
  if (unknown.length || (only && !only.length)) {
    throw new Error(`unknown part ${unknown.join(', ') || '(none given)'}; the parts: ${PARTS.map((p) => p.name).join(', ')}`);
  }
  await setup({ tests: true });
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('the build failed');

  const results = [];
  for (const part of PARTS.filter((p) => !only || only.includes(p.name))) {
    console.log(`\n=== ${part.name}: ${part.what}`);
    const started = performance.now();
    const r = spawnSync(part.cmd, part.args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...part.env } });
    results.push({ name: part.name, ok: r.status === 0, seconds: (performance.now() - started) / 1000 });
  }
  console.log('\npart          result  seconds');
  for (const r of results) console.log(`${r.name.padEnd(13)} ${(r.ok ? 'pass' : 'FAIL').padEnd(7)} ${r.seconds.toFixed(0).padStart(7)}`);
  const failed = results.filter((r) => !r.ok).map((r) => r.name);
  // The plain closing line CI reads: parts, each a whole test runner's verdict.
  console.log(`parts: ${results.length - failed.length} passed, ${failed.length} failed`);
  if (failed.length) throw new Error(`failed: ${failed.join(', ')}`);
});
