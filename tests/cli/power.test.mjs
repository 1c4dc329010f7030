// `node power on|off`, `node reboot` (and `node power reboot`), `node wait
// --power-state` and `--diagnose`: bin/ironic-wait.mjs against a fresh
// simulator, behind a small proxy that keeps the bodies of the PUTs.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLI, endpointArgs, run, withSimulator } from './support.mjs';

const TIMING = { verifying: 0, deploying: 0, 'wait call-back': 0, deleting: 0, cleaning: 0, power: 0 };
const scenario = (nodes, extra = {}) => ({ seed: 11, epoch: '2026-01-01T00:00:00Z', manualClock: true, timing: TIMING, nodes, ...extra });
const active = (name, power = 'power on') => ({ name, provision_state: 'active', power_state: power });
const PROGRESS_LINE = /^ *\d+\.\d+s /;
const messages = (stderr) => stderr.split('\n').filter((l) => l && !PROGRESS_LINE.test(l));

/** The simulator behind a proxy recording each PUT's path and JSON body. */
async function withRecorder(s, fn) {
  return withSimulator(s, async (sim) => {
    const puts = [];
    const server = http.createServer(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const body = Buffer.concat(chunks);
      if (req.method === 'PUT') puts.push({ path: req.url, body: JSON.parse(body.toString('utf8') || 'null') });
      const headers = { ...req.headers };
      delete headers.host;
      delete headers['content-length'];
      const answer = await fetch(new URL(req.url, sim.url), { method: req.method, headers, body: body.length ? body : undefined });
      const out = Buffer.from(await answer.arrayBuffer());
      const back = Object.fromEntries(
        [...answer.headers].filter(([k]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k)),
      );
      res.writeHead(answer.status, back);
      res.end(out);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${server.address().port}`;
    try {
      return await fn({
        sim,
        puts,
        ironicWait: (args, options) => run(process.execPath, [CLI, '--os-auth-type', 'none', '--os-endpoint', url, ...args], options),
      });
    } finally {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    }
  });
}

test('power on, off and reboot without --wait: a PUT each, nothing printed, exit 0', async () => {
  await withRecorder(scenario([active('n1', 'power off'), active('n2', 'power off')]), async ({ puts, ironicWait }) => {
    const r = await ironicWait(['node', 'power', 'on', 'n1', 'n2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, '');
    assert.deepEqual(puts, [
      { path: '/v1/nodes/n1/states/power', body: { target: 'power on' } },
      { path: '/v1/nodes/n2/states/power', body: { target: 'power on' } },
    ]);
  });
  for (const [args, target] of [
    [['node', 'power', 'off', 'n1'], 'power off'],
    [['node', 'power', 'off', '--soft', 'n1'], 'soft power off'],
    [['node', 'reboot', 'n1'], 'rebooting'],
    [['node', 'reboot', 'n1', '--soft'], 'soft rebooting'],
    [['node', 'power', 'reboot', 'n1'], 'rebooting'],
  ]) {
    await withRecorder(scenario([active('n1')]), async ({ puts, ironicWait }) => {
      const r = await ironicWait(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout + r.stderr, '');
      assert.deepEqual(
        puts.map((p) => p.body.target),
        [target],
        args.join(' '),
      );
    });
  }
});

test('--power-timeout goes in the body as timeout; --wait waits until the action is over, printing nothing on stdout', async () => {
  await withRecorder(scenario([active('n1'), active('n2')]), async ({ sim, puts, ironicWait }) => {
    const r = await ironicWait(['node', 'power', 'off', 'n1', 'n2', '--power-timeout', '30', '--wait', '20']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.deepEqual(messages(r.stderr), []);
    assert.match(r.stderr, /n1: power off \(reached\)/);
    assert.deepEqual(
      puts.map((p) => p.body),
      [
        { target: 'power off', timeout: 30 },
        { target: 'power off', timeout: 30 },
      ],
    );
    assert.equal(sim.node('n1').power_state, 'power off');
    assert.equal(sim.node('n2').power_state, 'power off');
  });
  await withRecorder(scenario([active('n1', 'power off')]), async ({ sim, puts, ironicWait }) => {
    const r = await ironicWait(['-q', 'node', 'reboot', 'n1', '--soft', '--power-timeout=5', '--wait']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout + r.stderr, '');
    assert.deepEqual(
      puts.map((p) => p.body),
      [{ target: 'soft rebooting', timeout: 5 }],
    );
    assert.equal(sim.node('n1').power_state, 'power on');
  });
});

const failing = () =>
  scenario([active('n1'), active('n2')], { transitions: [{ node: 'n1', action: 'power off', fail: 'IPMI: BMC 10.0.0.7 did not answer' }] });
const FAILED = /^Node n1 failed to reach state power off\. It's in state power on, and has error: .*BMC 10\.0\.0\.7 did not answer$/m;
const HISTORY_LINE = /^ {2}\S+ ERROR \S+: .*BMC 10\.0\.0\.7 did not answer$/m;

test('a failed power action: the message of the other waits, exit 1; --diagnose adds the history', async () => {
  await withRecorder(failing(), async ({ ironicWait }) => {
    const r = await ironicWait(['-q', 'node', 'power', 'off', 'n1', 'n2', '--wait', '20']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, FAILED);
    assert.equal(r.stderr.split('\n').length, 2, 'one line, no history without --diagnose');
  });
  await withRecorder(failing(), async ({ sim, ironicWait }) => {
    const r = await ironicWait(['-q', 'node', 'power', 'off', 'n1', 'n2', '--wait', '20', '--diagnose']);
    assert.equal(r.code, 1);
    const lines = r.stderr.trimEnd().split('\n');
    assert.match(lines[0], FAILED);
    assert.ok(lines.length >= 2 && lines.length <= 6, r.stderr);
    assert.match(lines.at(-1), HISTORY_LINE);
    assert.equal(sim.log({ method: 'GET' }).filter((e) => /\/history$/.test(e.path)).length, 1);
  });
  // --settle all: every node waited for, the history under the failure.
  await withRecorder(failing(), async ({ ironicWait }) => {
    const r = await ironicWait(['-q', '--settle', 'all', 'node', 'power', 'off', 'n1', 'n2', '--wait', '20', '--diagnose']);
    assert.equal(r.code, 1);
    const lines = r.stderr.trimEnd().split('\n');
    assert.match(lines[0], FAILED);
    assert.match(lines.at(-1), HISTORY_LINE);
  });
});

test('--diagnose on a provision action and on node wait', async () => {
  const deploy = scenario([{ name: 'n1', provision_state: 'available' }], {
    transitions: [{ node: 'n1', action: 'active', fail: 'Image checksum mismatch' }],
  });
  await withRecorder(deploy, async ({ ironicWait }) => {
    const r = await ironicWait(['-q', 'node', 'deploy', 'n1', '--wait', '20', '--diagnose']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'Waiting for provision state active on node(s) n1\n');
    const lines = r.stderr.trimEnd().split('\n');
    assert.match(lines[0], /^Node n1 failed to reach state active\. It's in state deploy failed, and has error: .*Image checksum mismatch/);
    assert.ok(lines.length >= 2, r.stderr);
    for (const l of lines.slice(1)) assert.match(l, /^ {2}\S+ [A-Z]+ \S+: /);
    assert.match(lines.at(-1), /Image checksum mismatch/);
  });
  await withRecorder(failing(), async ({ ironicWait }) => {
    const sent = await ironicWait(['node', 'power', 'off', 'n1']);
    assert.equal(sent.code, 0, sent.stderr);
    const r = await ironicWait(['-q', 'node', 'wait', 'n1', '--power-state', 'power off', '--timeout', '20', '--diagnose']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'Waiting for power state power off on node(s) n1\n');
    const lines = r.stderr.trimEnd().split('\n');
    assert.match(lines[0], FAILED);
    assert.match(lines.at(-1), HISTORY_LINE);
  });
});

test('node wait --power-state: waits for the power state; one of --state and --power-state is required', async () => {
  await withRecorder(scenario([active('n1', 'power off'), active('n2')]), async ({ puts, ironicWait }) => {
    const r = await ironicWait(['-q', 'node', 'wait', 'n2', '--power-state', 'power on', '--timeout', '10']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Waiting for power state power on on node(s) n2\n');
    const late = await ironicWait(['-q', 'node', 'wait', 'n1', '--power-state', 'power on', '--timeout', '0.2', '--poll-interval', '0.1']);
    assert.equal(late.code, 1);
    assert.equal(late.stderr, 'Node(s) n1 failed to reach state power on in 0.2 seconds\n');
    const both = await ironicWait(['node', 'wait', 'n1', '--state', 'active', '--power-state', 'power on']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /error: argument --power-state: not allowed with argument --state\n$/);
    const neither = await ironicWait(['node', 'wait', 'n1']);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /error: one of the arguments --state --power-state is required\n$/);
    const bad = await ironicWait(['node', 'wait', 'n1', '--power-state', 'rebooting']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /error: argument --power-state: invalid choice: 'rebooting' \(choose from 'power on', 'power off'\)\n$/);
    assert.deepEqual(puts, []);
  });
});

test('bad arguments: clear errors, nothing sent', async () => {
  await withRecorder(scenario([active('n1')]), async ({ sim, puts, ironicWait }) => {
    const unknown = await ironicWait(['node', 'power', 'cycle', 'n1']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /'node power cycle n1' is not an ironic-wait command/);
    assert.match(unknown.stderr, /Did you mean one of these\?\n {2}node power on\n {2}node power off\n {2}node power reboot\n$/);

    const soft = await ironicWait(['node', 'power', 'on', 'n1', '--soft']);
    assert.equal(soft.code, 2);
    assert.match(soft.stderr, /^usage: ironic-wait node power on /);
    assert.match(soft.stderr, /error: unrecognized arguments: --soft\n$/);

    const zero = await ironicWait(['node', 'power', 'off', 'n1', '--power-timeout', '0']);
    assert.equal(zero.code, 1);
    assert.equal(zero.stderr, "'timeout' option for setting power state must have positive integer value (> 0)\n");

    const word = await ironicWait(['node', 'reboot', 'n1', '--power-timeout', 'soon']);
    assert.equal(word.code, 2);
    assert.match(word.stderr, /error: argument --power-timeout: invalid int value: 'soon'\n$/);

    const negative = await ironicWait(['node', 'power', 'on', 'n1', '--wait', '-1']);
    assert.equal(negative.code, 1);
    assert.equal(negative.stderr, 'Timeout must be a non-negative number\n');

    const missing = await ironicWait(['node', 'reboot']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /error: the following arguments are required: <node>\n$/);

    assert.deepEqual(puts, []);
    assert.equal(sim.log({ method: 'PUT' }).length, 0);
  });
});

test("a refused power PUT: Ironic's message and exit 1", async () => {
  await withRecorder(scenario([active('n1')]), async ({ ironicWait }) => {
    const r = await ironicWait(['node', 'power', 'on', 'nope']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Node nope could not be found\. \(HTTP 404\)/);
  });
});

test("help: the power commands are listed, and their options shown; --diagnose is not in baremetal's usage line", async () => {
  await withSimulator(scenario([]), async (sim) => {
    const ironicWait = (args) => run(process.execPath, [CLI, ...endpointArgs(sim), ...args]);
    const list = await ironicWait(['--help']);
    for (const c of ['node power on', 'node power off', 'node reboot', 'node power reboot'])
      assert.match(list.stdout, new RegExp(`^ {2}${c} `, 'm'));
    const off = await ironicWait(['node', 'power', 'off', '--help']);
    assert.match(off.stdout, /^usage: ironic-wait node power off \[-h\] \[--power-timeout <power-timeout>\]\s+\[--soft\]/);
    assert.match(off.stdout, /--diagnose/);
    const deploy = await ironicWait(['node', 'deploy', '--help']);
    assert.doesNotMatch(deploy.stdout.split('\n\n')[0], /--diagnose/);
    assert.match(deploy.stdout, /^ {2}--diagnose /m);
  });
});

test('--checkpoint and resume of a power wait: no "Waiting for" line, the timeout message of the original', async () => {
  const stalled = scenario([active('n1')], { transitions: [{ node: 'n1', action: 'power off', stall: true }] });
  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-power-'));
  const file = join(dir, 'wait.json');
  try {
    await withRecorder(stalled, async ({ puts, ironicWait }) => {
      const r = await ironicWait(['-q', '--checkpoint', file, 'node', 'power', 'off', 'n1', '--wait', '1']);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, 'Node(s) n1 failed to reach state power off in 1 seconds\n');
      const resumed = await ironicWait(['-q', 'resume', file]);
      assert.equal(resumed.code, 1);
      assert.equal(resumed.stdout, '');
      assert.equal(resumed.stderr, 'Node(s) n1 failed to reach state power off in 1 seconds\n');
      assert.equal(puts.length, 1, 'the PUT is not sent again');
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
