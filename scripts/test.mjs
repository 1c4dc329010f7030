// `npm test`: installs what the chosen parts need, builds pkg/ when they use
// it, and runs the parts of the suite, several at once where they do not
// compete for the cores.
//   npm test                        every part
//   npm test -- --only node,rust    some parts (and only their set-up)
//   npm test -- --list              the parts and the set-up steps
//   npm run check                   the quick check: lint, rust, sim, unit
//   npm run soak                    the long soak (not in npm test)
//
// Set-up steps and parts are tasks of one graph: a task starts once the
// tasks it needs are done and the cores have room for it. Each task carries
// its wall and CPU seconds as measured on a fresh clone; their ratio is how
// much of a core it keeps busy (cargo most of both, a part that waits on
// timers, browsers or a real Ironic little). The running tasks' sum stays
// within CAPACITY, and the task with the most CPU work in the chain of tasks
// behind it starts first. A task's output is kept and printed whole when it
// ends (and written to .cache/test-logs/NAME.log). Every part runs even when
// another failed; a part whose set-up failed fails unrun. The exit code is 1
// if any part failed.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { main, ROOT } from './lib.mjs';

const node = (...args) => [process.execPath, ...args];
const setupStep = (...ids) => node('scripts/setup.mjs', ...ids.flatMap((id) => ['--step', id]));
// A tenth more than the cores, as the ratios are averages over a task's
// life. More than that leaves the real-Ironic and CLI parts' one-second
// waits too little of a core.
const CAPACITY = availableParallelism() * 1.1;
// node --test runs this many test files at once (its default is one fewer than the cores).
const NODE_FILES_AT_ONCE = 2;
const LOGS = join(ROOT, '.cache', 'test-logs');
const CPU_MARK = 'task-cpu-seconds:';
// A task still running after this long is stopped and fails: far beyond any part's time, well within CI's 90 minutes.
const TASK_LIMIT_S = 40 * 60;

// `seconds` and `cpuSeconds`: wall and CPU time of a fresh-clone run on two
// cores (2026-12-03), used only to share the cores and order the work,
// never to judge it.
const SETUP = [
  { name: 'npm', what: 'npm ci', cmd: setupStep('npm'), seconds: 15, cpuSeconds: 13 },
  { name: 'wasm-target', what: 'the wasm32 Rust target', cmd: setupStep('wasm-target'), seconds: 5, cpuSeconds: 2 },
  { name: 'wasm-bindgen', what: 'wasm-bindgen-cli, built by cargo', cmd: setupStep('wasm-bindgen'), seconds: 210, cpuSeconds: 245 },
  {
    name: 'build',
    what: 'pkg/',
    needs: ['npm', 'wasm-target', 'wasm-bindgen'],
    cmd: node('scripts/build.mjs'),
    seconds: 75,
    cpuSeconds: 105,
  },
  { name: 'chromium-deb', what: "Debian's Chromium", cmd: setupStep('chromium'), seconds: 40, cpuSeconds: 20 },
  {
    name: 'ironic-venv',
    what: 'Ironic 39 and python-ironicclient from PyPI',
    cmd: node('scripts/real-ironic.mjs', 'install'),
    seconds: 105,
    cpuSeconds: 80,
  },
  {
    // Node 22 and wrangler for the two workerd parts, installed once before either runs.
    name: 'wrangler',
    what: 'wrangler and its Node 22 (tests/runtimes/wrangler)',
    needs: ['npm'],
    cmd: node('--input-type=module', '-e', "import { installToolchain } from './tests/runtimes/workerd.mjs'; installToolchain();"),
    seconds: 20,
    cpuSeconds: 16,
  },
  { name: 'keystone-venv', what: 'Keystone 30 from PyPI', cmd: node('scripts/real-keystone.mjs', 'install'), seconds: 65, cpuSeconds: 50 },
];

const nodeTests = (...paths) => node('--test', `--test-concurrency=${NODE_FILES_AT_ONCE}`, ...paths);
// Quick files of tests/node for `npm run check` (the rest are the fault matrix, the soak and other long runs).
const UNIT = ['options', 'client-http', 'client-robustness', 'client-waits', 'power', 'watch', 'secrets', 'keystone', 'size'];

const PARTS = [
  {
    name: 'lint',
    what: 'Biome (format and lint of the JS and CSS), cargo fmt, cargo clippy natively and for wasm32, warnings denied',
    needs: ['npm', 'wasm-target'],
    cmd: node('scripts/lint.mjs'),
    seconds: 50,
    cpuSeconds: 80,
  },
  {
    name: 'rust',
    what: 'the core: unit, engine, property and fuzz tests (cargo test)',
    cmd: ['cargo', 'test'],
    seconds: 115,
    cpuSeconds: 195,
  },
  { name: 'sim', what: 'the simulator', cmd: nodeTests('sim/test'), seconds: 15, cpuSeconds: 17 },
  {
    name: 'docs',
    what: 'the API reference (npm run docs): TypeDoc over the types of every export, failing on an undocumented export or member or a broken {@link}',
    needs: ['npm'],
    cmd: node('scripts/docs.mjs'),
    seconds: 6,
    cpuSeconds: 8,
  },
  {
    name: 'node',
    what: 'the built package in Node against the simulator',
    needs: ['build'],
    cmd: nodeTests('tests/node'),
    seconds: 200,
    cpuSeconds: 170,
  },
  {
    name: 'cli',
    what: "the ironic-wait command line, and against python-ironicclient's baremetal on the same simulator scenarios",
    needs: ['build', 'ironic-venv'],
    cmd: nodeTests('tests/cli'),
    seconds: 225,
    cpuSeconds: 205,
  },
  {
    name: 'browser',
    what: 'the console and its server, in Chromium',
    needs: ['build', 'chromium-deb'],
    cmd: nodeTests('tests/browser'),
    seconds: 195,
    cpuSeconds: 75,
  },
  {
    name: 'real-ironic',
    what: 'the package and python-ironicclient 6.3 side by side against a real Ironic 39',
    needs: ['build', 'ironic-venv', 'chromium-deb'],
    cmd: nodeTests('tests/real-ironic'),
    seconds: 195,
    cpuSeconds: 195,
  },
  {
    name: 'real-keystone',
    what: 'the package, the CLI and the console logging in to a real Keystone 30, a real Ironic 39 behind it',
    needs: ['build', 'ironic-venv', 'keystone-venv', 'chromium-deb'],
    cmd: nodeTests('tests/real-keystone'),
    seconds: 130,
    cpuSeconds: 100,
  },
  // The runtime matrix (tests/runtimes/): one scenario, the package from its own tarball, each runtime vs Node.
  {
    name: 'node-pack',
    what: 'the package installed from its tarball in Node 20 and 22: its files, types, quickstart, README example, simulator and source map',
    // wrangler's set-up brings the Node 22 it runs on.
    needs: ['build', 'wrangler'],
    cmd: node('--test', 'tests/runtimes/node.test.mjs'),
    seconds: 40,
    cpuSeconds: 20,
  },
  {
    name: 'deno',
    what: 'the runtime scenario in Deno, with --allow-net only',
    needs: ['build'],
    cmd: node('--test', 'tests/runtimes/deno.test.mjs'),
    seconds: 25,
    cpuSeconds: 8,
  },
  {
    name: 'workerd',
    what: 'the runtime scenario in a wrangler-bundled Worker under workerd',
    needs: ['build', 'wrangler'],
    cmd: node('--test', 'tests/runtimes/workerd.test.mjs'),
    seconds: 25,
    cpuSeconds: 8,
  },
  {
    name: 'cloudflare',
    what: "ironic-wait/cloudflare's Durable Object in examples/cloudflare's Worker under workerd: storage and alarms on disk, WebSocket listeners, SIGKILL",
    needs: ['build', 'wrangler'],
    cmd: node('--experimental-websocket', '--test', 'tests/runtimes/cloudflare.test.mjs'),
    seconds: 95,
    cpuSeconds: 10,
  },
  {
    name: 'deno-kv',
    what: "ironic-wait/deno's KvWaits in examples/deno's server under deno: waits and rounds in a Deno KV file and its queue, SSE listeners, SIGKILL",
    needs: ['build'],
    cmd: node('--test', 'tests/runtimes/deno-kv.test.mjs'),
    seconds: 30,
    cpuSeconds: 6,
  },
  {
    name: 'chromium',
    what: 'the runtime scenario in Chromium: vite and import-map pages, and module workers',
    needs: ['build', 'chromium-deb'],
    cmd: node('--test', 'tests/runtimes/chromium.test.mjs'),
    seconds: 60,
    cpuSeconds: 20,
  },
  {
    name: 'cors',
    what: 'a page calling a real Ironic 39 across origins, stock and documented [cors]',
    needs: ['build', 'chromium-deb', 'ironic-venv'],
    cmd: node('--test', 'tests/runtimes/cors.test.mjs'),
    seconds: 25,
    cpuSeconds: 15,
  },
  // Not in `npm test`: named by `npm run check` and `npm run soak`.
  {
    name: 'unit',
    what: "tests/node's quick files (npm run check)",
    extra: true,
    needs: ['build'],
    cmd: nodeTests(...UNIT.map((f) => `tests/node/${f}.test.mjs`)),
    seconds: 60,
    cpuSeconds: 60,
  },
  {
    name: 'soak',
    what: 'the long soak: many waits through faults and restarts (npm run soak)',
    extra: true,
    needs: ['build'],
    cmd: node('--test', 'tests/node/soak.test.mjs'),
    env: { IRONIC_WAIT_SOAK: 'full' },
    seconds: 190,
    cpuSeconds: 120,
  },
];
const CHECK = ['lint', 'rust', 'sim', 'unit'];

// Tasks run in process groups of their own, out of reach of the terminal's
// Ctrl-C: a stop of `npm test` is passed on to each of them.
const children = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of children) {
      try {
        process.kill(-child.pid, signal);
      } catch {} // already gone
    }
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

await main('test', async () => {
  const argv = process.argv.slice(2);
  if (argv.includes('--list')) {
    for (const p of PARTS) console.log(`${p.name.padEnd(14)} ${p.extra ? '(not in npm test) ' : ''}${p.what}`);
    console.log('\nset-up steps, run when a chosen part needs them:');
    for (const s of SETUP) console.log(`${s.name.padEnd(14)} ${s.what}`);
    return;
  }
  let only = argv.includes('--only') ? (argv[argv.indexOf('--only') + 1]?.split(',') ?? []) : null;
  if (argv.includes('--check')) only = CHECK;
  const unknown = (only ?? []).filter((n) => !PARTS.some((p) => p.name === n));
  if (unknown.length || (only && !only.length)) {
    throw new Error(`unknown part ${unknown.join(', ') || '(none given)'}; the parts: ${PARTS.map((p) => p.name).join(', ')}`);
  }
  const parts = PARTS.filter((p) => (only ? only.includes(p.name) : !p.extra));
  const results = await runGraph(parts);

  console.log('\npart           result  seconds');
  for (const p of parts) {
    const r = results.get(p.name);
    console.log(`${p.name.padEnd(14)} ${(r.ok ? 'pass' : 'FAIL').padEnd(7)} ${r.seconds.toFixed(0).padStart(7)}`);
  }
  const failed = parts.filter((p) => !results.get(p.name).ok).map((p) => p.name);
  // The plain closing line CI reads: parts, each a whole test runner's verdict.
  console.log(`parts: ${parts.length - failed.length} passed, ${failed.length} failed`);
  if (failed.length) throw new Error(`failed: ${failed.join(', ')}`);
});

/** How much of a core `task` keeps busy, on average. */
function cores(task) {
  return Math.min(CAPACITY, Math.max(0.1, task.cpuSeconds / task.seconds));
}

/** Runs `parts` and the set-up they need; resolves to name -> { ok, seconds } for every task. */
async function runGraph(parts) {
  const names = [...SETUP, ...PARTS].map((t) => t.name);
  if (new Set(names).size !== names.length) throw new Error('a part and a set-up step share a name');
  const tasks = new Map();
  const add = (t) => {
    if (tasks.has(t.name)) return;
    for (const n of t.needs ?? []) add(SETUP.find((s) => s.name === n));
    tasks.set(t.name, t);
  };
  for (const p of parts) add(p);
  // Priority: the task's own CPU seconds plus those of the costliest chain of tasks after it.
  const after = new Map();
  const chain = (t) => {
    if (!after.has(t.name)) {
      const next = [...tasks.values()].filter((u) => u.needs?.includes(t.name));
      after.set(t.name, t.cpuSeconds + Math.max(0, ...next.map(chain)));
    }
    return after.get(t.name);
  };
  mkdirSync(LOGS, { recursive: true });
  const started = performance.now();
  const results = new Map();
  const running = new Map(); // name -> started
  const waiting = new Set(tasks.keys());
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0).padStart(5)} s`;
  const heartbeat = setInterval(() => {
    const now = performance.now();
    const list = [...running].map(([n, at]) => `${n} (${((now - at) / 1000).toFixed(0)} s)`);
    console.log(`${elapsed()}  running: ${list.join(', ')}`);
  }, 60_000);

  await new Promise((allDone) => {
    const schedule = () => {
      let load = [...running.keys()].reduce((sum, n) => sum + cores(tasks.get(n)), 0);
      const ready = [...waiting]
        .map((n) => tasks.get(n))
        .filter((t) => (t.needs ?? []).every((n) => results.has(n)))
        .sort((a, b) => chain(b) - chain(a));
      for (const t of ready) {
        const broken = (t.needs ?? []).filter((n) => !results.get(n).ok);
        if (broken.length) {
          waiting.delete(t.name);
          results.set(t.name, { ok: false, seconds: 0 });
          console.log(`\n=== ${t.name}: not run, its set-up failed: ${broken.join(', ')}`);
          return schedule();
        }
        if (running.size && load + cores(t) > CAPACITY) continue;
        waiting.delete(t.name);
        running.set(t.name, performance.now());
        load += cores(t);
        console.log(`${elapsed()}  start ${t.name}`);
        runTask(t).then((r) => {
          running.delete(t.name);
          results.set(t.name, r);
          console.log(`\n=== ${t.name}: ${t.what} (${r.ok ? 'pass' : 'FAIL'}, ${r.seconds.toFixed(0)} s, ${r.cpuSeconds} s of CPU)`);
          process.stdout.write(r.output);
          console.log(`=== end of ${t.name}\n`);
          schedule();
        });
      }
      if (!running.size && !waiting.size) allDone();
    };
    schedule();
  });
  clearInterval(heartbeat);
  return results;
}

/** Runs one task with its output kept; resolves to { ok, seconds, cpuSeconds, output }. */
function runTask(task) {
  const begun = performance.now();
  return new Promise((resolve) => {
    const chunks = [];
    // CPU: bash's `times` after the command counts it and every process it waited for.
    const script = `"$@"; rc=$?; echo; echo ${CPU_MARK}; times; exit $rc`;
    const child = spawn('bash', ['-c', script, 'task', ...task.cmd], {
      cwd: ROOT,
      env: { ...process.env, ...task.env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so that a hung task is stopped whole
    });
    children.add(child);
    const limit = setTimeout(() => {
      chunks.push(Buffer.from(`\n${task.name}: stopped after ${TASK_LIMIT_S} s\n`));
      process.kill(-child.pid, 'SIGKILL');
    }, TASK_LIMIT_S * 1000);
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('error', (e) => chunks.push(Buffer.from(`cannot run ${task.cmd[0]}: ${e.message}\n`)));
    child.on('close', (code) => {
      clearTimeout(limit);
      children.delete(child);
      let output = Buffer.concat(chunks).toString('utf8');
      // After the mark, bash's times: the shell's own, then its children's (user and system).
      const mark = output.lastIndexOf(`\n${CPU_MARK}\n`);
      const cpu = mark >= 0 && output.slice(mark).match(/(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/);
      let cpuSeconds = '?';
      if (cpu) {
        cpuSeconds = (Number(cpu[1]) * 60 + Number(cpu[2]) + Number(cpu[3]) * 60 + Number(cpu[4])).toFixed(0);
        output = output.slice(0, mark + 1);
      }
      writeFileSync(join(LOGS, `${task.name}.log`), output);
      resolve({ ok: code === 0, seconds: (performance.now() - begun) / 1000, cpuSeconds, output });
    });
  });
}
