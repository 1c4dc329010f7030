// What a user pays before any wait: the download (the wasm and the JS glue in
// pkg/, as the size test counts them) and the start-up (import and first
// client, in fresh processes).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlib } from 'node:zlib';
import { gzipSize, PKG, WASM_FILE } from '../scripts/lib.mjs';

const here = (file) => fileURLToPath(new URL(file, import.meta.url));

const brotliSize = (bytes) =>
  brotliCompressSync(bytes, {
    params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: bytes.length },
  }).length;

/** Raw, gzip -9 and brotli -q 11 bytes of some files, each compressed on its own and summed. */
function measure(paths) {
  const sizes = { raw: 0, gzip: 0, brotli: 0 };
  for (const path of paths) {
    const bytes = readFileSync(path);
    sizes.raw += bytes.length;
    sizes.gzip += gzipSize(bytes);
    sizes.brotli += brotliSize(bytes);
  }
  return sizes;
}

/** Rows of the size table: the package's wasm, its JS, their sum, and the floor client's source. */
export function sizes() {
  const js = readdirSync(PKG)
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(PKG, f));
  const wasm = measure([join(PKG, WASM_FILE)]);
  const glue = measure(js);
  return [
    { what: `ironic-wait: ${WASM_FILE}`, ...wasm },
    { what: `ironic-wait: JS (${js.length} files in pkg/)`, ...glue },
    { what: 'ironic-wait: wasm + JS', raw: wasm.raw + glue.raw, gzip: wasm.gzip + glue.gzip, brotli: wasm.brotli + glue.brotli },
    { what: 'floor: bench/floor.mjs', ...measure([here('./floor.mjs')]) },
  ];
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Runs a command to its end; returns the wall milliseconds and its stdout. */
function timed(cmd, args) {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`\`${[cmd, ...args].join(' ')}\` failed: ${r.stderr.trim()}`);
  return { ms, stdout: r.stdout };
}

/**
 * Fresh processes, `runs` of each kind, the kinds interleaved so that a busy
 * moment hits all alike. `kinds` maps a label to [cmd, ...args]; the first is
 * the baseline. A process may print what it timed inside as JSON:
 * { importMs, constructMs, cpuMs }.
 */
function startTimes(kinds, runs) {
  const samples = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
  for (let i = 0; i < runs; i++) {
    for (const [label, [cmd, ...args]] of Object.entries(kinds)) {
      const { ms, stdout } = timed(cmd, args);
      samples[label].push({ ms, ...(stdout.trim() ? JSON.parse(stdout) : {}) });
    }
  }
  return rows(samples);
}

/**
 * Node: an empty ES module (bench/cold-start.mjs bare, the baseline),
 * `node -e 0` for scale, the floor's import, and ironic-wait's import plus
 * first `new IronicClient`.
 */
export function nodeColdStart(runs) {
  const script = here('./cold-start.mjs');
  const node = process.execPath;
  return startTimes(
    {
      'empty ES module (baseline)': [node, script, 'bare'],
      'node -e 0': [node, '-e', '0'],
      'floor: import': [node, script, 'floor'],
      'ironic-wait: import + new IronicClient': [node, script, 'ironic-wait'],
    },
    runs,
  );
}

/** Python: `python -c pass` (the baseline), then each peer's import plus its first client. */
export function pythonColdStart(python, peers, runs) {
  const kinds = { 'python -c pass (baseline)': [python, '-c', 'pass'] };
  for (const peer of peers) kinds[`${peer}: import + client`] = [python, here('./peer.py'), 'cold', peer];
  return startTimes(kinds, runs);
}

/** Medians: the process from spawn to exit (and over the baseline's), and what it timed inside. */
function rows(samples) {
  const medianOf = (list, key) => (list.every((x) => x[key] !== undefined) ? median(list.map((x) => x[key])) : null);
  const baseline = medianOf(Object.values(samples)[0], 'ms');
  return Object.entries(samples).map(([what, list]) => {
    const inside = list.every((x) => x.importMs !== undefined) ? median(list.map((x) => x.importMs + x.constructMs)) : null;
    return {
      what,
      runs: list.length,
      ms: medianOf(list, 'ms'),
      overBaselineMs: medianOf(list, 'ms') - baseline,
      importMs: medianOf(list, 'importMs'),
      constructMs: medianOf(list, 'constructMs'),
      insideMs: inside,
      cpuMs: medianOf(list, 'cpuMs'),
    };
  });
}
