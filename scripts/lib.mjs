// Small helpers shared by setup.mjs, build.mjs and the size test.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync, constants as zlib } from 'node:zlib';

/** The repository root (this file lives in scripts/). */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs a command with its output shown; throws (with the command) on failure. */
export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', ...opts });
  if (r.error) throw new Error(`cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`\`${[cmd, ...args].join(' ')}\` failed (exit ${r.status ?? r.signal})`);
}

/** Runs a command quietly and returns its stdout, or null when it fails or is missing. */
export function capture(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? r.stdout : null;
}

/** The entry point for scripts: prints a failed step's message plainly and exits 1. */
export async function main(name, fn) {
  try {
    await fn();
  } catch (err) {
    console.error(`${name}: ${err.message}`);
    process.exit(1);
  }
}

// What a JS user downloads: the optimised wasm plus every JS file in pkg/
// (the wasm-bindgen glue, the entry wrappers and the hand-written layer).
// gzip -9, as in wasm-toolchain.md, so figures compare with its table.
export const PKG = join(ROOT, 'pkg');
export const WASM_FILE = 'ironic_wait_bg.wasm';
// The most pkg/'s wasm and JS may weigh (gzip -9): what every browser and
// Worker downloads. It only goes down: a feature pays for its bytes
// elsewhere. 152.8 KB measured on 2026-12-04 (docs/performance.md); the
// CHANGELOG says what moved it.
export const BUDGET_GZIP = 152.7 * 1024;

export function gzipSize(bytes) {
  return gzipSync(bytes, { level: zlib.Z_BEST_COMPRESSION }).length;
}

/** Raw and gzip sizes of the wasm, the JS, and their total in `dir`. */
export function pkgSizes(dir = PKG) {
  const measure = (files) => {
    const parts = files.map((f) => readFileSync(join(dir, f)));
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    return { raw: sum(parts.map((b) => b.length)), gzip: sum(parts.map(gzipSize)) };
  };
  const wasm = measure([WASM_FILE]);
  const js = measure(readdirSync(dir).filter((f) => f.endsWith('.js')));
  return { wasm, js, total: { raw: wasm.raw + js.raw, gzip: wasm.gzip + js.gzip } };
}

export const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

/** Whether process `pid` runs (EPERM: it does, as another user's). */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}
