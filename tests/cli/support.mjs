// Running the two command lines: python-ironicclient's `baremetal` (from the
// real-ironic venv) and `ironic-wait`, each against its own fresh simulator
// loaded with the same scenario.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../../sim/server.mjs';

export const CLI = fileURLToPath(new URL('../../bin/ironic-wait.mjs', import.meta.url));

/**
 * `baremetal` from the real-ironic venv (made if missing). IRONIC_WAIT_BAREMETAL
 * names another one (a venv being tried out, say).
 */
export async function baremetalPath() {
  if (process.env.IRONIC_WAIT_BAREMETAL) return process.env.IRONIC_WAIT_BAREMETAL;
  const { ensureVenv, VENV } = await import('../../scripts/real-ironic.mjs');
  await ensureVenv();
  return join(VENV, 'bin', 'baremetal');
}

let scratchDir = null;
const scratch = () => (scratchDir ??= mkdtempSync(join(tmpdir(), 'ironic-wait-cli-home-')));
process.once('exit', () => scratchDir && rmSync(scratchDir, { recursive: true, force: true }));

// argparse names the program after argv[0]: run ironic-wait through a link
// called `baremetal`, so that usage lines are laid out for the same name.
let linkDir = null;
export function ironicWaitAs(name) {
  linkDir ??= mkdtempSync(join(tmpdir(), 'ironic-wait-cli-'));
  const link = join(linkDir, name);
  try {
    symlinkSync(CLI, link);
  } catch (e) {
    if (e.code !== 'EEXIST') throw e;
  }
  return link;
}
process.once('exit', () => linkDir && rmSync(linkDir, { recursive: true, force: true }));

/**
 * Runs a program to its end: { stdout, stderr, code, signal }. `onStderr`
 * and `onStdout` see their stream as it comes (with the child, to signal
 * it).
 */
export function run(cmd, args, { env = {}, input = '', timeoutMs = 120_000, onStderr, onStdout } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      // An empty home and working directory: no clouds.yaml of the machine's
      // user is read, and nothing is left behind (Python's version cache).
      cwd: scratch(),
      env: { PATH: process.env.PATH, HOME: scratch(), LANG: 'C.UTF-8', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
      onStdout?.(stdout, child);
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d;
      onStderr?.(stderr, child);
    });
    // A program that exits without reading its input is not an error here.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code, signal });
    });
  });
}

/** A fresh simulator per run, so that both programs meet the same world. */
export async function withSimulator(scenario, fn) {
  const sim = await startSimulator({ port: 0, host: '127.0.0.1', scenario });
  try {
    return await fn(sim);
  } finally {
    await sim.close();
  }
}

/** The options both programs take to reach a simulator without auth. */
export const endpointArgs = (sim) => ['--os-auth-type', 'none', '--os-endpoint', sim.url];

/** Runs `items` through `fn`, `limit` at a time (the machine has two cores). */
export async function pool(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
