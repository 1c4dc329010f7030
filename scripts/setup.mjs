// Installs what the build and the tests need and a fresh machine may lack.
// Idempotent, silent and fast (well under 1 s) when everything is present:
// every `npm run build` / `npm test` runs it first.
//
// Adding a requirement = adding one entry to STEPS: `present()` is a cheap
// check, `install()` runs only when it returns false. `setup()` runs the
// steps the build needs; a step marked `tests` runs only when named
// (`node scripts/setup.mjs --step chromium`), as `npm test` does for the
// parts that need it, so that `npm start` on a fresh machine installs no
// browser.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { capture, main, ROOT, run } from './lib.mjs';

const WASM_TARGET = 'wasm32-unknown-unknown';
const TOOLS = join(ROOT, '.tools'); // git-ignored, reused across builds
export const WASM_BINDGEN = join(TOOLS, 'bin', 'wasm-bindgen');
export const CHROMIUM = '/usr/bin/chromium';

const STEPS = [
  {
    id: 'npm',
    name: 'npm packages',
    present: npmInstalled,
    // `npm ci` installs exactly the lock; without a lock, make one.
    install: () => run('npm', [existsSync(join(ROOT, 'package-lock.json')) ? 'ci' : 'install', '--no-audit', '--no-fund']),
  },
  {
    id: 'wasm-target',
    name: `Rust target ${WASM_TARGET}`,
    present: () => (capture('rustup', ['target', 'list', '--installed']) ?? '').split('\n').includes(WASM_TARGET),
    install: () => run('rustup', ['target', 'add', WASM_TARGET]),
  },
  {
    id: 'wasm-bindgen',
    name: 'wasm-bindgen-cli',
    present: wasmBindgenInstalled,
    install: installWasmBindgen,
  },
  {
    // The console's browser tests drive Debian's Chromium with playwright-core
    // (a browser download of Playwright's own cannot reach its host).
    id: 'chromium',
    name: 'Chromium (Debian package)',
    tests: true,
    present: () => existsSync(CHROMIUM),
    install: installChromium,
  },
];

/** Installs what is missing of `ids` (default: every step the build needs). */
export async function setup(ids = STEPS.filter((s) => !s.tests).map((s) => s.id)) {
  const unknown = ids.filter((id) => !STEPS.some((s) => s.id === id));
  if (unknown.length) throw new Error(`no set-up step ${unknown.join(', ')}; the steps: ${STEPS.map((s) => s.id).join(', ')}`);
  for (const step of STEPS.filter((s) => ids.includes(s.id))) {
    if (step.present()) continue;
    console.error(`setup: installing ${step.name}`);
    await step.install();
    if (!step.present()) throw new Error(`${step.name}: still missing after installing it`);
  }
}

// node_modules matches package-lock.json when npm's own record of what it
// installed (node_modules/.package-lock.json) has every locked package at the
// locked version. Optional packages for other platforms are never installed.
function npmInstalled() {
  const read = (f) => (existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')).packages ?? {}) : null);
  const locked = read(join(ROOT, 'package-lock.json'));
  const installed = read(join(ROOT, 'node_modules', '.package-lock.json'));
  if (!installed) return false;
  if (!locked) return true; // nothing pinned: any install will do
  return Object.entries(locked).every(
    ([path, pkg]) => path === '' || (installed[path] ? installed[path].version === pkg.version : pkg.optional === true),
  );
}

// The CLI must be exactly the version of the `wasm-bindgen` crate in
// Cargo.lock: a mismatch refuses to process the wasm.
export function wasmBindgenVersion() {
  const lock = readFileSync(join(ROOT, 'Cargo.lock'), 'utf8');
  const m = lock.match(/\[\[package\]\]\nname = "wasm-bindgen"\nversion = "([^"]+)"/);
  if (!m) throw new Error('Cargo.lock has no wasm-bindgen package');
  return m[1];
}

function wasmBindgenInstalled() {
  return capture(WASM_BINDGEN, ['--version'])?.trim() === `wasm-bindgen ${wasmBindgenVersion()}`;
}

async function installWasmBindgen() {
  // A build takes minutes on two cores; if one is already running (another
  // `npm test`, or by hand), wait for it instead of racing it.
  let waited = false;
  while (otherCargoInstall()) {
    if (!waited) console.error('setup: waiting for a running `cargo install wasm-bindgen-cli` to finish');
    waited = true;
    await sleep(2000);
  }
  if (waited && wasmBindgenInstalled()) return;
  // No --locked: the CLI's own lock names a crate version crates.io lacks.
  // --debug: it compiles in half the CPU time of a release build (198 s
  // against 427 s, measured 2026-12-03), the longest step of a fresh
  // machine's set-up, and its output is the same, a second later at most.
  run('cargo', ['install', 'wasm-bindgen-cli', '--version', wasmBindgenVersion(), '--root', TOOLS, '--debug']);
}

function installChromium() {
  if (capture('apt-get', ['--version']) === null) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM} and there is no apt-get to install it: install Chromium so that ${CHROMIUM} runs it`,
    );
  }
  run('apt-get', ['update']);
  run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

// Linux only (reads /proc); elsewhere we simply do not wait.
function otherCargoInstall() {
  if (!existsSync('/proc')) return false;
  return readdirSync('/proc').some((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return argv.includes('install') && argv.includes('wasm-bindgen-cli');
    } catch {
      return false; // the process ended while we looked
    }
  });
}

// Run when invoked as a script (`node scripts/setup.mjs`), not when imported.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argv = process.argv.slice(2);
  const named = argv.flatMap((arg, i) => (argv[i - 1] === '--step' ? [arg] : []));
  main('setup', () => setup(named.length ? named : undefined));
}
