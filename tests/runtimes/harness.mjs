// Shared set-up of the runtime matrix: the package as a user gets it (its
// own `npm pack` tarball installed into a scratch consumer project under
// .cache/runtimes/<runtime>/, git-ignored; one folder per runtime, so that
// the test files can run in parallel), the simulator, Node's own run of the
// scenario, and the comparison of a runtime's report with Node's and with
// EXPECTED, one subtest per scenario step.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../sim/server.mjs';
import { EXPECTED } from './expected.mjs';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CACHE = join(ROOT, '.cache', 'runtimes');
export const HERE = fileURLToPath(new URL('.', import.meta.url));
export const BIN = join(ROOT, 'node_modules', '.bin');

const tarballs = new Map();
/** `npm pack` of the repository (pkg/ must be built) into `dir`, once per process. */
function packTarball(dir) {
  if (tarballs.has(dir)) return tarballs.get(dir);
  mkdirSync(dir, { recursive: true });
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [{ filename, files }] = JSON.parse(out);
  assert.ok(files.some((f) => f.path === 'pkg/ironic_wait_bg.wasm'), 'the tarball has no pkg/: run `npm run build`');
  tarballs.set(dir, join(dir, filename));
  return tarballs.get(dir);
}

/**
 * A fresh consumer project CACHE/<runtime>/<name> holding scenario.mjs and
 * `files` (name in the project -> a file of tests/runtimes/ to copy, or
 * `{ text }`), with ironic-wait installed from the tarball (npm, offline:
 * the tarball has no dependencies).
 * @returns the project's directory
 */
export function consumerProject(runtime, name, files = {}) {
  const dir = join(CACHE, runtime, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tarball = packTarball(join(CACHE, runtime));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({
    name: `${name}-consumer`, private: true, type: 'module', dependencies: { 'ironic-wait': `file:${tarball}` },
  }, null, 2));
  cpSync(join(HERE, 'scenario.mjs'), join(dir, 'scenario.mjs'));
  for (const [file, from] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    if (typeof from === 'string') cpSync(join(HERE, from), join(dir, file));
    else writeFileSync(join(dir, file), from.text);
  }
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/** The simulator, on its own loopback port. */
export const startSim = () => startSimulator({ port: 0, host: '127.0.0.1', seed: 7 });

/**
 * Runs a command to its end (killing it after `ms`), and resolves with its
 * stdout; rejects with its stderr when it fails.
 */
export function runToEnd(cmd, args, { cwd, env, ms = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${code ?? signal}):\n${stderr}${stdout}`));
    });
  });
}

/** The report a runner printed as its last line. */
export const lastJsonLine = (out) => JSON.parse(out.trim().split('\n').at(-1));

/** The scenario in Node (this very process's Node), from a consumer project of `runtime`'s; its report. */
export async function nodeReport(runtime, url) {
  const dir = consumerProject(runtime, 'node', { 'cli.mjs': 'cli.mjs' });
  return lastJsonLine(await runToEnd(process.execPath, ['cli.mjs', url], { cwd: dir }));
}

/**
 * One subtest per step: `report` equals EXPECTED and, when given, Node's
 * report (any difference between runtimes fails, even where both differ
 * from EXPECTED).
 */
export async function assertReport(t, report, node) {
  for (const step of new Set([...Object.keys(EXPECTED), ...Object.keys(report)])) {
    await t.test(step, () => {
      if (node) assert.deepEqual(report[step], node[step], `${step}: differs from Node`);
      assert.deepEqual(report[step], EXPECTED[step], `${step}: differs from the expected outcome`);
    });
  }
}
