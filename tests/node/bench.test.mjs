// `npm run bench -- --smoke` (--quick's sizes on the shortest schedules, a
// 1 s interval: about a minute where --quick takes three) runs end to end and
// writes a well-formed report: a table per N with a row of numbers for every
// client, the fleet table (its small variant), the size and start-up tables,
// and an SVG. A benchmark, not a timed test: no figure is judged, only that
// each is there and is a number.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { tableAfter } from '../support/markdown.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NUMBER = /^[+-]?\d+(\.\d+)?x?$/;

/** Runs the bench into a temporary folder; returns the Markdown and the SVG. */
function bench(args, env) {
  const out = mkdtempSync(join(tmpdir(), 'bench-test-'));
  try {
    const r = spawnSync(process.execPath, ['bench/run.mjs', '--smoke', '--start-runs', '1', '--out', out, ...args], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 10 * 60_000,
    });
    assert.equal(r.status, 0, `the bench failed:\n${r.stderr}`);
    return { md: readFileSync(join(out, 'benchmarks.md'), 'utf8'), svg: readFileSync(join(out, 'benchmarks.svg'), 'utf8') };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function checkResults(md, clients) {
  for (const n of [1, 100]) {
    const [head, ...rows] = tableAfter(md, `### N = ${n}`);
    assert.equal(head[0], 'client');
    const numeric = head.length - 2; // all but the client name and the breakdown by kind
    for (const client of [...clients, 'ironic-wait / floor']) {
      const row = rows.find((r) => r[0] === client);
      assert.ok(row, `N = ${n}: no row for ${client}`);
      assert.equal(row.length, head.length, `N = ${n}, ${client}: ${row.length} cells for ${head.length} columns`);
      for (const [i, cell] of row.slice(1, 1 + numeric).entries()) {
        assert.match(cell, NUMBER, `N = ${n}, ${client}, ${head[i + 1]}: "${cell}" is not a number`);
      }
    }
    assert.equal(rows.length, clients.length + 1, `N = ${n}: rows ${rows.map((r) => r[0])}`);
  }
}

function checkFootprint(md, svg, clients) {
  const [sizeHead, ...sizes] = tableAfter(md, '## Size');
  assert.deepEqual(sizeHead, ['file', 'raw KB', 'gzip -9 KB', 'brotli -q 11 KB']);
  assert.ok(sizes.some((r) => r[0] === 'ironic-wait: wasm + JS'));
  for (const row of sizes) for (const cell of row.slice(1)) assert.match(cell, NUMBER, `size of ${row[0]}: "${cell}"`);
  const [, ...starts] = tableAfter(md, '## Start-up');
  const start = starts.find((r) => r[0] === 'ironic-wait: import + new IronicClient');
  assert.ok(start, 'no start-up row for ironic-wait');
  for (const cell of start.slice(1)) assert.match(cell, NUMBER, `start-up: "${cell}"`);
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>\n$/);
  for (const client of clients) assert.ok(svg.includes(`>${client}</text>`), `no ${client} in the chart's legend`);
  // A bar per client and N, each with its figure as a tooltip.
  assert.equal(svg.match(/<rect [^>]*><title>/g)?.length, clients.length * 2);
}

/** The ironic-wait clients of the fleet table. */
const FLEET_JS = [
  'ironic-wait changes',
  'ironic-wait changes, 20% heartbeating',
  'ironic-wait list',
  'ironic-wait per-node',
  'ironic-wait auto',
  "ironic-wait auto, python's budget",
];

/** The fleet section of a --smoke (or --quick) run: a table at F = 10000, N = 1000 with every fleet client, the targets, the K waits. */
function checkFleet(md, clients) {
  const [head, ...rows] = tableAfter(md, '### Fleet: F = 10000, N = 1000');
  assert.equal(head[0], 'client');
  // Always a figure; the others may be '—' (no quiet round in a client's run, say).
  const always = [
    'rounds',
    'requests / round',
    'KB received / round',
    'CPU ms / round',
    'lag mean ms',
    'lag p95 ms',
    'total requests',
    'CPU s',
  ];
  for (const client of clients) {
    const row = rows.find((r) => r[0] === client);
    assert.ok(row, `fleet: no row for ${client}`);
    assert.equal(row.length, head.length, `fleet, ${client}: ${row.length} cells for ${head.length} columns`);
    for (const [i, cell] of row.slice(1, -1).entries()) {
      const column = head[i + 1];
      if (always.includes(column)) assert.match(cell, NUMBER, `fleet, ${client}, ${column}: "${cell}" is not a number`);
      else assert.match(cell, /^(\d+(\.\d+)?|—)$/, `fleet, ${client}, ${column}: "${cell}"`);
    }
  }
  assert.equal(rows.length, clients.length, `fleet: rows ${rows.map((r) => r[0])}`);
  // The changes client's quiet round (after the lone change) and churn rounds: columns of the table. Whether
  // a round fell in the quiet phase depends on the schedule and the machine's load (the schedule is on the
  // wall clock; --smoke's has none, a loaded --quick run has shown none), so a figure or '—'; which figure is
  // no test's to judge.
  const changes = rows.find((r) => r[0] === 'ironic-wait changes');
  assert.match(changes[head.indexOf('quiet round: requests')], /^(\d+(\.\d+)?|—)$/);
  assert.match(changes[head.indexOf('churn rounds: requests')], /^(\d+(\.\d+)?|—)$/);
  const [targetsHead, ...targets] = tableAfter(md, '### Targets');
  assert.deepEqual(targetsHead, ['target', 'F', 'N', 'measured (ironic-wait changes)', 'met?']);
  for (const row of targets) assert.match(row[4], /^(met|missed|not measured)$/, `target "${row[0]}": "${row[4]}"`);
  for (const start of [
    'a quiet round',
    'churn rounds',
    '20% of the fleet mid-deploy, its agents heartbeating',
    'detection lag, mean',
    '10 waits on one client',
    "pollInterval 'auto', default budget",
    "pollInterval 'auto' with python-ironicclient's",
  ]) {
    assert.ok(
      targets.some((r) => r[0].startsWith(start)),
      `no target "${start}..."`,
    );
  }
  const [kHead, ...k] = tableAfter(md, '### Fleet: 10 concurrent waits');
  assert.equal(kHead[2], 'waits');
  for (const waits of ['10 waits, one client', '10 waits, 10 clients']) {
    const row = k.find((r) => r[2] === waits);
    assert.ok(row, `no K row "${waits}"`);
    for (const cell of row.slice(3, 3 + 5)) assert.match(cell, NUMBER, `K, ${waits}: "${cell}"`);
  }
}

test('npm run bench -- --smoke writes a table per N with every client, and the chart', () => {
  const env = { ...process.env };
  delete env.BENCH_PY; // the JS clients only: no Python needed
  const { md, svg } = bench([], env);
  const clients = ['ironic-wait', 'ironic-wait+checkpoint', 'floor', 'floor-http'];
  checkResults(md, clients);
  checkFootprint(md, svg, clients);
  // What keeping checkpoints costs, beside the wait without.
  assert.match(
    md,
    /\| CPU with onCheckpoint, N = 100; \d+ checkpoints, the largest [\d.]+ KB \| [\d.]+ s \| {2}\| [\d.]+x of the wait without \|/,
  );
  checkFleet(md, [...FLEET_JS, 'floor']);
});

test('with BENCH_PY the Python peers are in the same tables', { skip: !process.env.BENCH_PY && 'BENCH_PY is not set' }, () => {
  const clients = ['ironic-wait', 'ironic-wait+checkpoint', 'floor', 'floor-http', 'python-ironicclient', 'openstacksdk'];
  const { md, svg } = bench([], process.env);
  checkResults(md, clients);
  checkFootprint(md, svg, clients);
  checkFleet(md, [...FLEET_JS, 'floor', 'python-ironicclient']);
  assert.ok(tableAfter(md, 'Python peers (import and their first client, no request):').length >= 3);
});
