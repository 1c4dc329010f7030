// The command line: node sim/server.mjs --port 0 --nodes N --seed S ...

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from '../testkit.mjs';

const SERVER = fileURLToPath(new URL('../server.mjs', import.meta.url));

/** Start the CLI; resolves once it printed its URL. */
function cli(args) {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  let err = '';
  child.stderr.on('data', (c) => {
    err += c;
  });
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      const m = /^ironic simulator on (http:\/\/127\.0\.0\.1:\d+) /.exec(out);
      if (m) resolve(m[1]);
    });
    exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
  });
  return { child, ready, exited, stderr: () => err };
}

test('starts on a free port with a seeded fleet and stops on SIGTERM', async () => {
  const run = cli([
    ...['--port', '0', '--nodes', '12', '--seed', '4', '--time-scale', '50'],
    ...['--timestamp-resolution', 'second', '--heartbeat-timeout', '20'],
  ]);
  const url = await run.ready;
  const list = await request(url, 'GET', '/v1/nodes?fields=name,provision_updated_at', { version: 'latest' });
  assert.deepEqual(
    list.json.nodes.map((n) => n.name),
    Array.from({ length: 12 }, (_, i) => `node-${String(i).padStart(3, '0')}`),
  );
  for (const n of list.json.nodes) assert.match(n.provision_updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/, 'whole seconds');
  const summary = (await request(url, 'GET', '/__sim')).json;
  assert.deepEqual(
    [summary.seed, summary.timeScale, summary.nodes, summary.timestampResolution, summary.heartbeatTimeout],
    [4, 50, 12, 'second', 20],
  );
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0);
});

test('loads a scenario file; a bad flag or scenario exits 2 with the usage', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sim-'));
  const file = join(dir, 'scenario.json');
  writeFileSync(file, JSON.stringify({ nodes: [{ name: 'only', provision_state: 'active' }] }));
  const run = cli(['--port', '0', '--scenario', file]);
  const url = await run.ready;
  assert.equal((await request(url, 'GET', '/v1/nodes/only', { version: 'latest' })).json.provision_state, 'active');
  run.child.kill('SIGTERM');
  await run.exited;

  writeFileSync(file, JSON.stringify({ nodes: [{ name: 'x', provision_state: 'nowhere' }] }));
  for (const args of [
    ['--port', '0', '--scenario', file],
    ['--port', '0', '--frobnicate'],
    ['--port', '0', '--seed', 'abc'],
    ['--port', '0', '--timestamp-resolution', 'minute'],
    ['--port', '0', '--heartbeat-timeout', '-5'],
    ['--port', '0', '--heartbeat-timeout', 'soon'],
  ]) {
    const bad = cli(args);
    bad.ready.catch(() => {});
    assert.equal(await bad.exited, 2, args.join(' '));
    assert.match(bad.stderr(), /usage: node sim\/server\.mjs/);
  }
});

test('--help lists every flag, --heartbeat-timeout included; --heartbeat-timeout 0 turns heartbeats off', async () => {
  const help = cli(['--help']);
  help.ready.catch(() => {});
  let out = '';
  help.child.stdout.on('data', (c) => {
    out += c;
  });
  const ended = new Promise((resolve) => help.child.stdout.on('end', resolve));
  assert.equal(await help.exited, 0);
  await ended;
  for (const flag of [
    '--port',
    '--seed',
    '--time-scale',
    '--scenario',
    '--manual-clock',
    '--timestamp-resolution',
    '--heartbeat-timeout',
  ]) {
    assert.ok(out.includes(`  ${flag} `) || out.includes(`  ${flag}\n`), `${flag} in:\n${out}`);
  }
  assert.match(out, /ramdisk_heartbeat_timeout/);
  const run = cli(['--port', '0', '--heartbeat-timeout', '0']);
  const url = await run.ready;
  assert.equal((await request(url, 'GET', '/__sim')).json.heartbeatTimeout, 0);
  run.child.kill('SIGTERM');
  assert.equal(await run.exited, 0);
});
