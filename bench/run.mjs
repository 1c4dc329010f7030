#!/usr/bin/env node
// `npm run bench`: ironic-wait against a hand-written floor client (and, with
// --peers or BENCH_PY, python-ironicclient and openstacksdk) on the same
// seeded schedule; writes docs/benchmarks.md and docs/benchmarks.svg.
//
//   npm run bench [-- --quick] [-- --peers] [-- --out DIR] [-- --nodes 1,100] [-- --peers-max 1000]
//
// See bench/README.md. Not a test: nothing here passes or fails on a figure.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, PKG, WASM_FILE, main } from '../scripts/lib.mjs';
import { SEED, TIMING, window } from './schedule.mjs';
import { measureWait, clientCommand } from './wait.mjs';
import { sizes, nodeColdStart, pythonColdStart } from './footprint.mjs';
import { ensurePeersVenv, peerVersions } from './peers.mjs';
import { markdown, svg } from './report.mjs';

const PEERS = ['python-ironicclient', 'openstacksdk'];

await main('bench', async () => {
  const started = performance.now();
  // Other work on the machine slows everything measured here: the report says how much there was.
  const loadBefore = os.loadavg()[0];
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      peers: { type: 'boolean', default: false },
      out: { type: 'string', default: join(ROOT, 'docs') },
      nodes: { type: 'string' },
      'peers-max': { type: 'string', default: '1000' },
      'start-runs': { type: 'string' },
    },
  });
  if (!existsSync(join(PKG, WASM_FILE))) throw new Error('pkg/ is missing: run `npm run build` first');
  const nodeCounts = (values.nodes ?? (values.quick ? '1,100' : '1,100,1000,10000')).split(',').map(Number);
  if (!nodeCounts.every((n) => Number.isInteger(n) && n > 0)) throw new Error(`--nodes: a list of positive integers, not ${values.nodes}`);
  const peersMax = Number(values['peers-max']);
  const startRuns = Number(values['start-runs'] ?? 15);
  const timing = values.quick ? TIMING.quick : TIMING.full;
  const [, latest] = window(timing);

  const python = values.peers ? ensurePeersVenv() : process.env.BENCH_PY || null;
  const peerInfo = python && peerVersions(python);
  if (python && !peerInfo) throw new Error(`${python} lacks python-ironicclient or openstacksdk (try --peers)`);
  const clients = ['ironic-wait', 'ironic-wait+checkpoint', 'floor', 'floor-http', ...(python ? PEERS : [])];

  const results = {};
  for (const nodes of nodeCounts) {
    results[nodes] = {};
    for (const client of clients) {
      if (PEERS.includes(client) && nodes > peersMax) {
        results[nodes][client] = {
          skipped: `not run: it sends one GET per node per round, and N = ${nodes} is over --peers-max ${peersMax}`,
        };
        continue;
      }
      console.error(`bench: N = ${nodes}, ${client}`);
      try {
        // The last arrival, a few rounds, and for the Python peers ~10 ms per node GET per round.
        const timeoutMs = (latest + 60) * 1000 + (PEERS.includes(client) ? nodes * 200 : nodes * 10);
        const figures = await measureWait({ command: clientCommand(client, python), nodes, timing, timeoutMs });
        results[nodes][client] = figures;
        console.error(`bench:   ${figures.requests} requests, CPU ${figures.cpuSeconds.toFixed(3)} s, `
          + `detection lag ${figures.detectMeanMs.toFixed(0)} ms, done ${figures.afterLastAnswerMs.toFixed(1)} ms after the last answer`);
      } catch (err) {
        console.error(`bench:   ${err.message}`);
        results[nodes][client] = { error: err.message };
      }
    }
  }

  console.error('bench: sizes and start-up');
  const download = sizes();
  const nodeStart = nodeColdStart(startRuns);
  const pythonStart = python ? pythonColdStart(python, PEERS, Math.min(startRuns, 5)) : null;

  const run = {
    date: new Date().toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    quick: values.quick,
    machine: machine(python, peerInfo, loadBefore),
    build: build(),
    seed: SEED,
    timing,
    window: window(timing),
    nodeCounts,
    clients,
    results,
    download,
    nodeStart,
    pythonStart,
    minutes: (performance.now() - started) / 60000,
  };
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'benchmarks.md'), markdown(run));
  writeFileSync(join(out, 'benchmarks.svg'), svg(run));
  console.error(`bench: wrote ${join(out, 'benchmarks.md')} and benchmarks.svg in ${run.minutes.toFixed(1)} min`);
  const failed = Object.entries(results).flatMap(([n, byClient]) =>
    Object.entries(byClient).filter(([, r]) => r.error).map(([client]) => `${client} at N = ${n}`));
  if (failed.length) throw new Error(`failed: ${failed.join(', ')}`);
});

function machine(python, peers, loadBefore) {
  const cpus = os.cpus();
  const pythonVersion = python && execFileSync(python, ['--version'], { encoding: 'utf8' }).trim();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown CPU',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    load: loadBefore.toFixed(1),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    python: pythonVersion,
    peers: peers && { ironicclient: peers.ironicclient, openstacksdk: peers.openstacksdk },
  };
}

/** What is measured: the package version, the commit, and when pkg/ was built. */
function build() {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  return {
    version: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
    commit: git('rev-parse', '--short', 'HEAD') || 'unknown',
    dirty: git('status', '--porcelain', '--', 'src', 'js', 'Cargo.toml', 'Cargo.lock') !== '',
    pkgBuilt: statSync(join(PKG, WASM_FILE)).mtime.toISOString().replace('T', ' ').slice(0, 16) + ' UTC',
  };
}
