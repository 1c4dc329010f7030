#!/usr/bin/env node
// `npm run bench`: ironic-wait against a hand-written floor client (and, with
// --peers or BENCH_PY, python-ironicclient and openstacksdk) on the same
// seeded schedule; writes docs/benchmarks.md and docs/benchmarks.svg.
//
//   npm run bench [-- --quick | --smoke] [-- --peers] [-- --out DIR] [-- --nodes 1,100] [-- --peers-max 1000]
//   npm run bench -- --fleet [--fleet-sizes 10000:1000,100000:1000] [--fleet-k 100000:1000]
//   npm run bench -- --server [--server-sizes 1000,10000] [--server-repeats 5] [--server-db sqlite,mariadb]
//
// --fleet runs the fleet table only (bench/fleet.mjs) and replaces only the
// Fleet section of benchmarks.md; a run without it keeps the section the
// file has. --quick runs both, each in its small variant. --smoke is --quick
// on the shortest schedules (schedule.mjs: a 1 s interval, every node in
// `active` before the second round): the whole report in about a minute,
// for tests/node/bench.test.mjs; its figures are not ones to read.
//
// --server runs only the Server cost section (bench/server.mjs: a real
// Ironic from PyPI, what each way of polling costs it) and replaces only
// that section; every other run keeps the one the file has.
//
// See bench/README.md. Not a test: nothing here passes or fails on a figure.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { main, PKG, ROOT, WASM_FILE } from '../scripts/lib.mjs';
import { measureFleet } from './fleet.mjs';
import { FLEET_CLIENTS, fleetMarkdown, fleetSectionOf, K_CLIENTS, withFleetSection } from './fleet-report.mjs';
import { nodeColdStart, pythonColdStart, sizes } from './footprint.mjs';
import { ensurePeersVenv, peerVersions } from './peers.mjs';
import { markdown, svg } from './report.mjs';
import { FLEET_SCHEDULE, FLEET_SIZES, kGroups, POLL_INTERVAL, SEED, TIMING, window } from './schedule.mjs';
import { measureServer, serverMarkdown, serverSectionOf, withServerSection } from './server.mjs';
import { clientCommand, measureWait } from './wait.mjs';

const PEERS = ['python-ironicclient', 'openstacksdk'];

/** How this run was started, as the report says it: without `--out DIR`, which says where it wrote, not what it measured. */
function commandLine() {
  const args = process.argv.slice(2);
  const out = args.indexOf('--out');
  if (out >= 0) args.splice(out, 2);
  return `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`;
}

await main('bench', async () => {
  const started = performance.now();
  // Other work on the machine slows everything measured here: the report says how much there was.
  const loadBefore = os.loadavg()[0];
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      peers: { type: 'boolean', default: false },
      out: { type: 'string', default: join(ROOT, 'docs') },
      nodes: { type: 'string' },
      'peers-max': { type: 'string', default: '1000' },
      'start-runs': { type: 'string' },
      fleet: { type: 'boolean', default: false },
      'fleet-sizes': { type: 'string' },
      'fleet-k': { type: 'string' },
      server: { type: 'boolean', default: false },
      'server-sizes': { type: 'string' },
      'server-repeats': { type: 'string' },
      'server-db': { type: 'string' },
      'server-gets-max': { type: 'string', default: '10000' },
      'server-report': { type: 'string' },
    },
  });
  if (values.server || values['server-report']) {
    if (values.fleet || values.nodes || values['fleet-sizes'] || values.peers)
      throw new Error('--server runs alone: no --fleet, --nodes or --peers');
    await runServer(values, loadBefore);
    return;
  }
  if (!existsSync(join(PKG, WASM_FILE))) throw new Error('pkg/ is missing: run `npm run build` first');
  // The schedules of schedule.mjs: full, quick, or smoke (--quick's sizes on the shortest schedules).
  const variant = values.smoke ? 'smoke' : values.quick ? 'quick' : 'full';
  const small = variant !== 'full';
  const nodeCounts = (values.nodes ?? (small ? '1,100' : '1,100,1000,10000')).split(',').map(Number);
  if (!nodeCounts.every((n) => Number.isInteger(n) && n > 0)) throw new Error(`--nodes: a list of positive integers, not ${values.nodes}`);
  const peersMax = Number(values['peers-max']);
  const startRuns = Number(values['start-runs'] ?? 15);
  const timing = TIMING[variant];
  const pollInterval = POLL_INTERVAL[variant];
  const [, latest] = window(timing);
  // The per-N tables, unless --fleet or --fleet-sizes without --nodes; the fleet table with --fleet, --fleet-sizes, --quick or --smoke.
  const perN = (!values.fleet && values['fleet-sizes'] === undefined) || values.nodes !== undefined;
  const fleetSizes =
    values['fleet-sizes'] !== undefined
      ? pairs(values['fleet-sizes'], '--fleet-sizes')
      : values.fleet || small
        ? FLEET_SIZES[small ? 'quick' : 'full']
        : [];
  // K waits at each size whose N is the smallest measured (N = 1000 by default), unless --fleet-k says where.
  const kSizes =
    values['fleet-k'] !== undefined
      ? pairs(values['fleet-k'], '--fleet-k')
      : fleetSizes.filter(([, n]) => n === Math.min(...fleetSizes.map((p) => p[1])));

  const python = values.peers ? ensurePeersVenv() : process.env.BENCH_PY || null;
  const peerInfo = python && peerVersions(python);
  if (python && !peerInfo) throw new Error(`${python} lacks python-ironicclient or openstacksdk (try --peers)`);
  const clients = ['ironic-wait', 'ironic-wait+checkpoint', 'floor', 'floor-http', ...(python ? PEERS : [])];

  const results = {};
  for (const nodes of perN ? nodeCounts : []) {
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
        const figures = await measureWait({ command: clientCommand(client, python), nodes, timing, pollInterval, timeoutMs });
        results[nodes][client] = figures;
        console.error(
          `bench:   ${figures.requests} requests, CPU ${figures.cpuSeconds.toFixed(3)} s, ` +
            `detection lag ${figures.detectMeanMs.toFixed(0)} ms, done ${figures.afterLastAnswerMs.toFixed(1)} ms after the last answer`,
        );
      } catch (err) {
        console.error(`bench:   ${err.message}`);
        results[nodes][client] = { error: err.message };
      }
    }
  }

  const fleet = fleetSizes.length ? await runFleet({ sizes: fleetSizes, kSizes, variant, python, peerInfo, peersMax, loadBefore }) : null;
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const mdFile = join(out, 'benchmarks.md');
  const existing = existsSync(mdFile) ? readFileSync(mdFile, 'utf8') : null;
  if (!perN) {
    writeFileSync(mdFile, withFleetSection(existing ?? '# Benchmarks\n', fleetMarkdown(fleet)));
    console.error(`bench: wrote the Fleet section of ${mdFile} in ${((performance.now() - started) / 60000).toFixed(1)} min`);
    failOn(results, fleet);
    return;
  }

  console.error('bench: sizes and start-up');
  const download = sizes();
  const nodeStart = nodeColdStart(startRuns);
  const pythonStart = python ? pythonColdStart(python, PEERS, Math.min(startRuns, 5)) : null;

  const run = {
    date: new Date().toISOString(),
    command: commandLine(),
    variant,
    machine: machine(python, peerInfo, loadBefore),
    build: build(),
    seed: SEED,
    timing,
    pollInterval,
    window: window(timing),
    nodeCounts,
    clients,
    results,
    download,
    nodeStart,
    pythonStart,
    minutes: (performance.now() - started) / 60000,
    // This run's fleet section, or the one the file already has.
    fleetSection: fleet ? fleetMarkdown(fleet) : existing && fleetSectionOf(existing),
    // Made only by --server: kept as the file has it.
    serverSection: existing && serverSectionOf(existing),
  };
  writeFileSync(mdFile, markdown(run));
  writeFileSync(join(out, 'benchmarks.svg'), svg(run));
  console.error(`bench: wrote ${mdFile} and benchmarks.svg in ${run.minutes.toFixed(1)} min`);
  failOn(results, fleet);
});

/**
 * --server: the Server cost section only (bench/server.mjs), written into
 * benchmarks.md in place of the one there; the raw figures go to
 * .cache/server-bench/. --server-report FILE writes the section again from
 * such a file, measuring nothing; FILE,FILE... from several runs (sizes or
 * databases measured apart: N = 100,000 takes as long as the rest).
 */
async function runServer(values, loadBefore) {
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const mdFile = join(out, 'benchmarks.md');
  let raw;
  let rawFiles = values['server-report']?.split(',');
  if (rawFiles) {
    raw = mergeServerRuns(rawFiles.map((f) => JSON.parse(readFileSync(f, 'utf8'))));
  } else {
    // --smoke: one small fleet, one repeat, SQLite alone: the section end to end, figures not to read.
    const sizes = (values['server-sizes'] ?? (values.smoke ? '200' : '1000,10000')).split(',').map(Number);
    if (!sizes.every((n) => Number.isInteger(n) && n > 0))
      throw new Error(`--server-sizes: a list of positive integers, not ${values['server-sizes']}`);
    const repeats = Number(values['server-repeats'] ?? (values.smoke ? 1 : 5));
    if (!(Number.isInteger(repeats) && repeats > 0))
      throw new Error(`--server-repeats: a positive integer, not ${values['server-repeats']}`);
    const databases = (values['server-db'] ?? (values.smoke ? 'sqlite' : 'sqlite,mariadb')).split(',');
    if (!databases.every((d) => d === 'sqlite' || d === 'mariadb'))
      throw new Error(`--server-db: sqlite and/or mariadb, not ${values['server-db']}`);
    const getsMax = Number(values['server-gets-max']);
    const date = new Date().toISOString();
    const rawDir = join(ROOT, '.cache', 'server-bench');
    mkdirSync(rawDir, { recursive: true });
    const rawFile = join(rawDir, `server-${date.replace(/[:.]/g, '-')}.json`);
    rawFiles = [rawFile];
    const m = machine(null, null, loadBefore);
    const run = {
      date,
      command: commandLine(),
      machine: `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}`,
      load: m.load,
    };
    // Written after each size too: what a run killed half-way measured can still be reported (--server-report).
    const save = (result) => writeFileSync(rawFile, `${JSON.stringify({ result, run }, null, 1)}\n`);
    const result = await measureServer({
      sizes,
      repeats,
      databases,
      getsMax,
      name: values.smoke ? 'server-bench-smoke' : 'server-bench',
      onSize: save,
    });
    save(result);
    raw = { result, run };
    console.error(`bench: every repeat of the server runs in ${rawFile}`);
  }
  const existing = existsSync(mdFile) ? readFileSync(mdFile, 'utf8') : '# Benchmarks\n';
  const section = serverMarkdown(raw.result, { ...raw.run, rawFiles: rawFiles.map((f) => relative(ROOT, resolve(f))) });
  writeFileSync(mdFile, withServerSection(existing, section));
  console.error(`bench: wrote the Server cost section of ${mdFile}`);
  const failed = raw.result.databases.flatMap((d) => (d.sizes ?? []).filter((s) => s.error).map((s) => `${d.name} at N = ${s.n}`));
  if (failed.length) throw new Error(`failed: ${failed.join(', ')}`);
}

/**
 * Raw files of several --server runs as one: each database's sizes together
 * (in order of N; a size measured again, the later run's), the commands and
 * loads side by side, the minutes added.
 */
function mergeServerRuns(raws) {
  const databases = [];
  for (const { result } of raws) {
    for (const d of result.databases) {
      const known = databases.find((x) => x.name === d.name);
      if (!known) databases.push({ ...d, sizes: [...(d.sizes ?? [])] });
      else if (known.skipped && !d.skipped) Object.assign(known, { ...d, sizes: [...d.sizes] });
      else if (!d.skipped) {
        // A later run's figures for a size replace an earlier one's.
        known.sizes = known.sizes.filter((x) => !d.sizes.some((y) => y.n === x.n));
        known.sizes.push(...d.sizes);
      }
    }
  }
  for (const d of databases) d.sizes?.sort((a, b) => a.n - b.n);
  const first = raws[0];
  const repeats = [...new Set(raws.map((r) => r.result.repeats))];
  return {
    result: {
      ...first.result,
      repeats: repeats.length === 1 ? repeats[0] : repeats.join(' or '),
      sizes: [...new Set(raws.flatMap((r) => r.result.sizes))].sort((a, b) => a - b),
      databases,
      minutes: raws.reduce((a, r) => a + r.result.minutes, 0),
    },
    run: {
      ...first.run,
      date: raws.at(-1).run.date,
      command: raws.map((r) => r.run.command),
      load: raws.map((r) => r.run.load).join(' and '),
    },
  };
}

/** Throws naming every run that failed. */
function failOn(results, fleet) {
  const failed = Object.entries(results).flatMap(([n, byClient]) =>
    Object.entries(byClient)
      .filter(([, r]) => r.error)
      .map(([client]) => `${client} at N = ${n}`),
  );
  for (const [key, byClient] of Object.entries({ ...fleet?.results })) {
    for (const [client, r] of Object.entries(byClient)) if (r.error) failed.push(`fleet ${client} at F/N = ${key}`);
  }
  for (const [key, byClient] of Object.entries({ ...fleet?.k })) {
    for (const [client, r] of Object.entries(byClient)) if (r.error) failed.push(`fleet ${client} at F/N = ${key}`);
  }
  if (failed.length) throw new Error(`failed: ${failed.join(', ')}`);
}

/** `10000:1000,100000:1000` -> [[10000, 1000], [100000, 1000]] (fleet F, waited N <= F). */
function pairs(text, option) {
  const list = text.split(',').map((p) => p.split(':').map(Number));
  if (!list.every((p) => p.length === 2 && p.every((x) => Number.isInteger(x) && x > 0) && p[1] <= p[0])) {
    throw new Error(`${option}: a list of F:N pairs of positive integers with N <= F, not ${text}`);
  }
  return list;
}

/**
 * The fleet table: at each F, N every fleet client, one after the other, each
 * in a fresh process against a fresh simulator; then the K-waits runs.
 */
async function runFleet({ sizes, kSizes, variant, python, peerInfo, peersMax, loadBefore }) {
  const started = performance.now();
  const schedule = FLEET_SCHEDULE[variant];
  const pollInterval = POLL_INTERVAL[variant];
  const [, latest] = window(schedule.timing);
  const clients = FLEET_CLIENTS.filter((c) => !c.peer || (python && c.kind === 'python-ironicclient'));
  const results = {};
  const k = {};
  const measure = async (label, kind, f, n, config, peer, heartbeating = null) => {
    console.error(`bench: fleet F = ${f}, N = ${n}, ${label}`);
    try {
      // The last arrival and a few rounds; per-node rounds take ~1 ms a node (Python's ~5).
      const timeoutMs = (latest + 60) * 1000 + n * (peer ? 200 : 10);
      const r = await measureFleet({
        command: clientCommand(kind, python),
        fleet: f,
        waited: n,
        schedule,
        pollInterval,
        timeoutMs,
        config,
        heartbeating,
      });
      console.error(
        `bench:   ${r.rounds} rounds, ${r.requests} requests (${r.requestsPerRound.toFixed(2)} a round, quiet ${r.quietRequests?.toFixed(2) ?? '—'}), ` +
          `CPU ${r.cpuSeconds.toFixed(3)} s (quiet round ${r.quietCpuMs?.toFixed(2) ?? '—'} ms), lag ${r.detectMeanMs.toFixed(0)} ms` +
          (heartbeating ? `; ${r.touches} heartbeat touches, ${r.missed} arrivals missed` : ''),
      );
      return r;
    } catch (err) {
      console.error(`bench:   ${err.message}`);
      return { error: err.message };
    }
  };
  for (const [f, n] of sizes) {
    const key = `${f}/${n}`;
    results[key] = {};
    for (const c of clients) {
      results[key][c.name] =
        c.peer && n > peersMax
          ? { skipped: `not run: it sends one GET per node per round, and N = ${n} is over --peers-max ${peersMax}` }
          : await measure(c.name, c.kind, f, n, c.config(n), c.peer, c.heartbeating);
    }
    if (kSizes.some(([kf, kn]) => kf === f && kn === n)) {
      k[key] = {};
      for (const c of K_CLIENTS) k[key][c.name] = await measure(c.name, c.kind, f, n, c.config(kGroups(n)), false);
    }
  }
  // Every round of every run, for the record (git-ignored).
  const rawDir = join(ROOT, '.cache', 'bench-fleet');
  mkdirSync(rawDir, { recursive: true });
  const date = new Date().toISOString();
  const rawFile = join(rawDir, `fleet-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(rawFile, `${JSON.stringify({ date, schedule, sizes, results, k }, null, 1)}\n`);
  console.error(`bench: every round of the fleet runs in ${rawFile}`);
  const strip = (byClient) => Object.fromEntries(Object.entries(byClient).map(([c, { roundLog, ...r }]) => [c, r]));
  return {
    date,
    command: commandLine(),
    variant,
    machine: machine(python, peerInfo, loadBefore),
    build: build(),
    schedule,
    pollInterval,
    sizes,
    peersMax,
    clients: clients.map((c) => c.name),
    results: Object.fromEntries(Object.entries(results).map(([key, byClient]) => [key, strip(byClient)])),
    k: Object.fromEntries(Object.entries(k).map(([key, byClient]) => [key, strip(byClient)])),
    rawFile: relative(ROOT, rawFile),
    minutes: (performance.now() - started) / 60000,
  };
}

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
    pkgBuilt: `${statSync(join(PKG, WASM_FILE)).mtime.toISOString().replace('T', ' ').slice(0, 16)} UTC`,
  };
}
