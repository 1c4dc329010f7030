// Shared set-up of the runtime matrix: the package as a user gets it (its
// own `npm pack` tarball installed into a scratch consumer project under
// .cache/runtimes/<runtime>/, git-ignored; one folder per runtime, so that
// the test files can run in parallel), the simulator, Node's own run of the
// scenario, and the comparison of a runtime's report with Node's and with
// EXPECTED, one subtest per scenario step.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../sim/server.mjs';
import { EXPECTED } from './expected.mjs';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CACHE = join(ROOT, '.cache', 'runtimes');
export const HERE = fileURLToPath(new URL('.', import.meta.url));
export const BIN = join(ROOT, 'node_modules', '.bin');

const tarballs = new Map();
/** `npm pack` of the repository (pkg/ must be built) into `dir`, once per process: the tarball's path. */
export function packTarball(dir) {
  if (tarballs.has(dir)) return tarballs.get(dir);
  mkdirSync(dir, { recursive: true });
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [{ filename, files }] = JSON.parse(out);
  assert.ok(
    files.some((f) => f.path === 'pkg/ironic_wait_bg.wasm'),
    'the tarball has no pkg/: run `npm run build`',
  );
  tarballs.set(dir, join(dir, filename));
  return tarballs.get(dir);
}

/**
 * A fresh consumer project CACHE/<runtime>/<name> holding scenario.mjs and
 * `files` (name in the project -> a file of tests/runtimes/ to copy, or
 * `{ text }`), with ironic-wait installed from the tarball, and its
 * dependencies exactly as the repository's package-lock.json pins them.
 * @returns the project's directory
 */
export function consumerProject(runtime, name, files = {}) {
  const dir = join(CACHE, runtime, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tarball = packTarball(join(CACHE, runtime));
  const manifest = { name: `${name}-consumer`, private: true, type: 'module', dependencies: { 'ironic-wait': `file:${tarball}` } };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(consumerLock(manifest, tarball), null, 2));
  cpSync(join(HERE, 'scenario.mjs'), join(dir, 'scenario.mjs'));
  for (const [file, from] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    if (typeof from === 'string') cpSync(join(HERE, from), join(dir, file));
    else writeFileSync(join(dir, file), from.text);
  }
  // With a lock, npm needs no registry metadata: a package is found in the
  // cache by its integrity (`npm ci` of the repository put it there), and
  // only when it is missing (a cache emptied since) is it downloaded.
  execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  assertInstalledAsLocked(dir);
  return dir;
}

/**
 * The consumer's package-lock.json: ironic-wait from the tarball, and the
 * package's dependencies (and theirs) as the repository's own lock has them,
 * so that a consumer gets exactly what `npm test` was run with.
 */
function consumerLock(manifest, tarball) {
  const repo = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages;
  const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const packages = {
    '': { name: manifest.name, dependencies: manifest.dependencies },
    // npm ci links a package's commands from what its lock entry says.
    'node_modules/ironic-wait': {
      version: own.version,
      resolved: `file:${tarball}`,
      license: own.license,
      dependencies: own.dependencies ?? {},
      bin: own.bin,
      engines: own.engines,
    },
  };
  const pending = Object.keys(own.dependencies ?? {});
  while (pending.length) {
    const dep = pending.pop();
    const path = `node_modules/${dep}`;
    if (packages[path]) continue;
    // The repository's lock is hoisted flat today; a nested copy would need its own path here.
    assert.ok(repo[path], `the repository's package-lock.json has no ${path}`);
    packages[path] = repo[path];
    pending.push(...Object.keys(repo[path].dependencies ?? {}));
  }
  return { name: manifest.name, lockfileVersion: 3, requires: true, packages };
}

/** Every package a consumer project's lock names is installed at the locked version. */
function assertInstalledAsLocked(dir) {
  const { packages } = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8'));
  for (const [path, { version }] of Object.entries(packages)) {
    if (!path) continue;
    const installed = JSON.parse(readFileSync(join(dir, path, 'package.json'), 'utf8')).version;
    assert.equal(installed, version, `${path} in ${dir}: installed ${installed}, locked ${version}`);
  }
}

/** The simulator, on its own loopback port. */
export const startSim = () => startSimulator({ port: 0, host: '127.0.0.1', seed: 7 });

/**
 * Runs a command to its end (killing it after `ms`, a bound far above the
 * seconds a build or a scenario takes), and resolves with its stdout;
 * rejects with its stderr when it fails.
 */
export function runToEnd(cmd, args, { cwd, env, ms = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
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
