// The Python peers: python-ironicclient and openstacksdk, measured by
// bench/peer.py in a Python of their own. `BENCH_PY` names a Python that has
// them; `--peers` makes (or reuses) a venv with them under .cache/ (git-ignored).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../scripts/lib.mjs';

export const PEER_PACKAGES = ['python-ironicclient==6.3.0', 'openstacksdk==4.22.0'];
export const PEERS_VENV = join(ROOT, '.cache', 'bench-peers');
// Written last, after pip succeeded: a venv without it is incomplete and made again.
const COMPLETE = join(PEERS_VENV, 'complete.json');

const venvPython = (dir) => join(dir, 'bin', 'python');

/** The versions of the two peers in `python`, or null when either is missing. */
export function peerVersions(python) {
  const r = spawnSync(
    python,
    ['-c', ['import importlib.metadata as m', 'print(m.version("python-ironicclient"), m.version("openstacksdk"))'].join('\n')],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) return null;
  const [ironicclient, openstacksdk] = r.stdout.trim().split(' ');
  return { ironicclient, openstacksdk };
}

/** Makes the venv (python3 -m venv, then pip from PyPI) unless a complete one is there; returns its Python. */
export function ensurePeersVenv({ log = console.error } = {}) {
  const python = venvPython(PEERS_VENV);
  if (existsSync(COMPLETE) && existsSync(python)) {
    const want = JSON.parse(readFileSync(COMPLETE, 'utf8')).packages;
    if (want.join() === PEER_PACKAGES.join()) return python;
  }
  const base = process.env.PYTHON ?? 'python3';
  mkdirSync(PEERS_VENV, { recursive: true });
  const step = (cmd, args) => {
    log(`bench: ${[cmd, ...args].join(' ')}`);
    const r = spawnSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`\`${[cmd, ...args].join(' ')}\` failed (exit ${r.status ?? r.signal})`);
  };
  step(base, ['-m', 'venv', '--clear', PEERS_VENV]);
  step(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...PEER_PACKAGES]);
  writeFileSync(COMPLETE, `${JSON.stringify({ packages: PEER_PACKAGES }, null, 2)}\n`);
  return python;
}
