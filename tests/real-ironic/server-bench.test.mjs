// `npm run bench -- --server --smoke` (bench/server.mjs: what each way of
// polling costs a real Ironic 39; here one fleet of 200 nodes on SQLite,
// each round once, about 30 s) runs end to end and writes its section into
// an existing benchmarks.md in place, the rest of the file kept. A
// benchmark, not a timed test: no figure is judged, only that each is there
// and is a number.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { tables } from 'ironic-wait';
import { SERVER_BEGIN, SERVER_END } from '../../bench/server.mjs';
import { tableAfter } from '../support/markdown.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// A median, and its range when the repeats differ; thousands with commas; CPU less idle may dip below zero.
const FIGURE = /^-?[\d,]+(\.\d+)?( \(-?[\d,]+(\.\d+)?--?[\d,]+(\.\d+)?\))?$/;

test('npm run bench -- --server --smoke writes the Server cost section in place', () => {
  const out = mkdtempSync(join(tmpdir(), 'server-bench-test-'));
  try {
    const file = join(out, 'benchmarks.md');
    writeFileSync(file, '# Benchmarks\n\nthe tables before\n\n## Size\n\nthe tables after\n');
    const r = spawnSync(process.execPath, ['bench/run.mjs', '--server', '--smoke', '--out', out], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 5 * 60_000,
    });
    assert.equal(r.status, 0, `the bench failed:\n${r.stderr}`);
    const md = readFileSync(file, 'utf8');
    // In place: before "## Size", the rest as it was.
    assert.ok(md.startsWith('# Benchmarks\n\nthe tables before\n\n'), md.slice(0, 200));
    assert.ok(md.endsWith(`${SERVER_END}\n\n## Size\n\nthe tables after\n`), md.slice(-200));
    assert.equal(md.split(SERVER_BEGIN).length, 2);

    const [head, ...rows] = tableAfter(md, '### SQLite, N = 200');
    assert.deepEqual(head, ['round', 'requests', 'entries', 'KB', 'wall ms', 'Ironic CPU ms']);
    for (const start of [
      `GET /v1/nodes/{uuid} x ${tables().defaults.listThreshold - 1} (the largest wait the default polls by GETs)`,
      'GET /v1/nodes/{uuid} x 20 ',
      'GET /v1/nodes/{uuid} x 200 ',
      'full listing',
      'change feed: quiet round',
      'change feed: busy round, 2 moved',
      'change feed: churn round, 2 moved',
      'change feed: busy round, 20 moved',
      'change feed: churn round, 20 moved',
    ]) {
      const row = rows.find((x) => x[0].startsWith(start));
      assert.ok(row, `no row "${start}..."`);
      for (const [i, c] of row.slice(1).entries()) assert.match(c, FIGURE, `${row[0]}, ${head[i + 1]}: "${c}"`);
    }
    assert.equal(rows.length, 9, `rows: ${rows.map((x) => x[0])}`);

    const [waitHead, ...waits] = tableAfter(md, findPerWait(md));
    assert.deepEqual(waitHead, ['way', 'requests', 'Ironic CPU s']);
    assert.ok(waits.some((w) => w[0].startsWith('ironic-wait, change feed (the default): quiet fleet')));
    assert.ok(waits.some((w) => w[0].startsWith('python-ironicclient: 200 nodes')));
    for (const w of waits) for (const c of w.slice(1)) assert.match(c, FIGURE, `${w[0]}: "${c}"`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

/** The line just before the per-wait table: the paragraph that introduces it. */
function findPerWait(md) {
  const line = md.split('\n').find((l) => l.startsWith('Per wait of '));
  assert.ok(line, 'no per-wait paragraph');
  return line;
}
