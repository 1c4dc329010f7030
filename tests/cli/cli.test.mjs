// What ironic-wait's command line does beyond `baremetal`: --json, --settle
// all, progress on stderr, Ctrl-C, `node wait`, `allocation wait`, help and
// secrets. Each runs bin/ironic-wait.mjs against a fresh simulator.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Progress } from '../../cli/output.mjs';
import { CLI, endpointArgs, run, withSimulator } from './support.mjs';

const TIMING = { verifying: 0, deploying: 0, 'wait call-back': 0, deleting: 0, cleaning: 0, allocating: 0 };
const scenario = (nodes, extra = {}) => ({ seed: 11, epoch: '2026-01-01T00:00:00Z', manualClock: true, timing: TIMING, nodes, ...extra });
const available = (name) => ({ name, provision_state: 'available', resource_class: 'gold' });
const PROGRESS_LINE = /^ *\d+\.\d+s /;

const ironicWait = (sim, args, options) => run(process.execPath, [CLI, ...endpointArgs(sim), ...args], options);

test('--json: the wait report alone on stdout', async () => {
  await withSimulator(scenario([available('n1'), available('n2')]), async (sim) => {
    const r = await ironicWait(sim, ['--json', 'node', 'deploy', 'n1', 'n2', '--wait', '30']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.nodes.map((n) => [n.node, n.outcome, n.state]),
      [
        ['n1', 'reached', 'active'],
        ['n2', 'reached', 'active'],
      ],
    );
    assert.ok(report.requests >= 4, 'the PUTs and the GETs are counted');
  });
});

test('--json after a failure: the report on stdout, the message on stderr, exit 1', async () => {
  const failing = scenario([available('n1')], { transitions: [{ node: 'n1', action: 'active', fail: 'boom' }] });
  await withSimulator(failing, async (sim) => {
    const r = await ironicWait(sim, ['node', 'deploy', 'n1', '--wait', '--json']);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).nodes[0].outcome, 'failed');
    assert.match(r.stderr, /^Node n1 failed to reach state active\. It's in state deploy failed, and has error: boom$/m);
  });
});

test('--settle all: every node is sent the action and waited for; each failure is reported', async () => {
  const mixed = scenario([available('n1'), available('n2'), available('n3')], {
    transitions: [{ node: 'n2', action: 'active', fail: 'boom' }],
  });
  await withSimulator(mixed, async (sim) => {
    const r = await ironicWait(sim, ['--settle', 'all', 'node', 'deploy', 'n1', 'nope', 'n2', 'n3', '--wait', '30']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'Waiting for provision state active on node(s) n1, nope, n2, n3\n');
    const messages = r.stderr.split('\n').filter((l) => l && !PROGRESS_LINE.test(l));
    assert.deepEqual(
      messages.map((l) => l.replace(/req-[0-9a-f-]+/, 'req-X')),
      [
        'Node nope could not be found. (HTTP 404) (Request-ID: req-X)',
        "Node n2 failed to reach state active. It's in state deploy failed, and has error: boom",
      ],
    );
    // Past the 404, the others were still sent the action, and n3 got there.
    assert.deepEqual(
      sim
        .log({ method: 'PUT' })
        .map((e) => e.path)
        .sort(),
      [
        '/v1/nodes/n1/states/provision',
        '/v1/nodes/n2/states/provision',
        '/v1/nodes/n3/states/provision',
        '/v1/nodes/nope/states/provision',
      ],
    );
    assert.equal(sim.node('n3').provision_state, 'active');
  });
});

test('progress: plain lines on stderr when it is not a terminal, stdout unchanged; -q hides them', async () => {
  await withSimulator(scenario([available('n1')]), async (sim) => {
    const r = await ironicWait(sim, ['node', 'deploy', 'n1', '--wait']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, 'Waiting for provision state active on node(s) n1\n');
    assert.match(r.stderr, /^ *\d+\.\d+s n1: active \(reached\)\n$/);
    assert.doesNotMatch(r.stderr, /\x1b/, 'no terminal codes in a log');
  });
  await withSimulator(scenario([available('n1')]), async (sim) => {
    const r = await ironicWait(sim, ['-q', 'node', 'deploy', 'n1', '--wait']);
    assert.equal(r.code, 0);
    assert.equal(r.stderr, '');
  });
});

test('progress of many nodes in a log: summary lines, and a line for each node that fails', async () => {
  const names = Array.from({ length: 25 }, (_, i) => `n${String(i).padStart(2, '0')}`);
  const fleet = scenario(names.map(available), { transitions: [{ node: 'n07', action: 'active', fail: 'boom' }] });
  await withSimulator(fleet, async (sim) => {
    const r = await ironicWait(sim, ['--settle', 'all', 'node', 'deploy', ...names, '--wait', '30']);
    assert.equal(r.code, 1);
    const progress = r.stderr.split('\n').filter((l) => PROGRESS_LINE.test(l));
    assert.ok(
      progress.some((l) => / n07: deploy failed \(failed\)$/.test(l)),
      r.stderr,
    );
    assert.ok(!progress.some((l) => /n0[0-68]: /.test(l)), 'no line per node that got there');
    assert.match(progress.at(-1), /^ *\d+\.\ds 24 reached, 1 failed$/);
    assert.ok(progress.length <= 4, r.stderr);
  });
});

test('progress on a terminal: one live line per node, redrawn in place', async () => {
  let written = '';
  const stream = {
    isTTY: true,
    columns: 60,
    write: (s) => {
      written += s;
    },
  };
  let now = 0;
  const progress = new Progress({ stream, targets: ['n1', 'n2'], now: () => now });
  progress.event({ node: 'n1', state: 'deploying', elapsed: 0.1, done: false, outcome: null });
  now = 1500;
  progress.event({ node: 'n2', state: 'active', elapsed: 1.5, done: true, outcome: 'reached' });
  progress.end();
  const frames = written.split('\x1b[2F');
  const last = frames
    .at(-1)
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replace('\x1b[2K', ''));
  assert.deepEqual(last, ['n1: deploying  1.5s', 'n2: active (reached)  1.5s']);
});

test('progress on a real terminal (util-linux script): live lines with the final state, then the exit', async (t) => {
  if ((await run('script', ['--version']).catch(() => ({ code: -1 }))).code !== 0) return t.skip('no script(1) here');
  await withSimulator(scenario([available('n1'), available('n2')]), async (sim) => {
    const command = [process.execPath, CLI, ...endpointArgs(sim), 'node', 'deploy', 'n1', 'n2', '--wait', '30'].join(' ');
    const r = await run('script', ['-qefc', command, '/dev/null'], { env: { COLUMNS: '80', TERM: 'xterm' } });
    assert.equal(r.code, 0, r.stdout);
    // stdout and stderr share the terminal: the Waiting line, then the live block drawn in place.
    assert.match(r.stdout, /^Waiting for provision state active on node\(s\) n1, n2\r\n/);
    assert.match(r.stdout, /\x1b\[2Kn1: active \(reached\) {2}\d+\.\ds\r\n\x1b\[2Kn2: active \(reached\) {2}\d+\.\ds\r\n$/);
    assert.doesNotMatch(r.stdout, /^ *\d+\.\ds n1:/m, 'no plain progress lines on a terminal');
  });
});

test('Ctrl-C: exit 130, and nothing is sent after it', async () => {
  const stalled = scenario([{ name: 'n1', provision_state: 'verifying', target_provision_state: 'manageable' }]);
  await withSimulator(stalled, async (sim) => {
    let signalled = false;
    const r = await ironicWait(sim, ['node', 'wait', 'n1', '--state', 'manageable', '--poll-interval', '60'], {
      onStderr: (stderr, child) => {
        // The first check is done (its progress line is out): interrupt the wait's sleep.
        if (!signalled && /n1: verifying/.test(stderr)) {
          signalled = true;
          child.kill('SIGINT');
        }
      },
    });
    assert.ok(signalled);
    assert.equal(r.code, 130);
    assert.match(r.stderr, /Interrupted: stopped waiting/);
    const nodeGets = sim.log({ method: 'GET' }).filter((e) => e.path.startsWith('/v1/nodes/'));
    assert.equal(nodeGets.length, 1, 'one check before Ctrl-C, none after');
  });
});

test('SIGTERM (a job cancelled): exit 143, nothing sent after it, the --checkpoint file kept for resume', async () => {
  const stalled = scenario([{ name: 'n1', provision_state: 'verifying', target_provision_state: 'manageable' }]);
  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-sigterm-'));
  try {
    const file = join(dir, 'wait.json');
    await withSimulator(stalled, async (sim) => {
      let signalled = false;
      const args = ['--checkpoint', file, 'node', 'wait', 'n1', '--state', 'manageable', '--poll-interval', '60'];
      const r = await ironicWait(sim, args, {
        onStderr: (stderr, child) => {
          if (!signalled && /n1: verifying/.test(stderr)) {
            signalled = true;
            child.kill('SIGTERM');
          }
        },
      });
      assert.ok(signalled);
      assert.equal(r.signal, null, 'handled, not killed by the signal');
      assert.equal(r.code, 143);
      assert.match(r.stderr, /^Terminated: stopped waiting; nothing more was sent/m);
      const gets = () => sim.log({ method: 'GET' }).filter((e) => e.path.startsWith('/v1/nodes/')).length;
      assert.equal(gets(), 1, 'one check before SIGTERM, none after');
      // The file holds the wait: a new process goes on with it.
      sim.setNode('n1', { provision_state: 'manageable', target_provision_state: null });
      const resumed = await ironicWait(sim, ['resume', file]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal(gets(), 2);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('node watch: each node of the scope once, then each change, a JSON line each; Ctrl-C ends it (130)', async () => {
  const nodes = [available('n1'), available('n2'), { ...available('n3'), owner: 'other' }].map((n, i) =>
    i < 2 ? { ...n, owner: 'me' } : n,
  );
  await withSimulator(scenario(nodes, { manualClock: false }), async (sim) => {
    let deployed = false;
    let signalled = false;
    const r = await ironicWait(sim, ['node', 'watch', '-f', 'json', '--owner', 'me', '--poll-interval', '0.1'], {
      onStdout: (stdout, child) => {
        const lines = stdout.split('\n').filter(Boolean);
        if (!deployed && lines.length === 2) {
          deployed = true;
          sim.setNode('n1', { provision_state: 'active' });
        }
        if (!signalled && lines.some((l) => JSON.parse(l).type === 'modified')) {
          signalled = true;
          child.kill('SIGINT');
        }
      },
    });
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /^Stopped watching\.$/m);
    const changes = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      changes
        .slice(0, 2)
        .map((c) => [c.type, c.node.name, c.node.provision_state])
        .sort(),
      [
        ['added', 'n1', 'available'],
        ['added', 'n2', 'available'],
      ],
    );
    assert.deepEqual(
      changes.slice(2).map((c) => [c.type, c.node.name, c.node.provision_state]),
      [['modified', 'n1', 'active']],
    );
    assert.ok(
      sim
        .log({ method: 'GET' })
        .filter((e) => e.path === '/v1/nodes')
        .every((e) => e.query.includes('owner=me')),
    );
  });
});

test('node watch: a line per change; a scope filter the server lacks is refused, exit 1', async () => {
  await withSimulator(scenario([available('n1')], { manualClock: false }), async (sim) => {
    const r = await ironicWait(sim, ['node', 'watch', '--field', 'maintenance', '--poll-interval', '0.1'], {
      onStdout: (stdout, child) => /^added/m.test(stdout) && child.kill('SIGINT'),
    });
    assert.equal(r.code, 130);
    assert.equal(r.stdout, 'added    n1 provision_state="available" maintenance=false\n');
    const old = await ironicWait(sim, ['--os-baremetal-api-version', '1.40', 'node', 'watch', '--owner', 'me']);
    assert.equal(old.code, 1);
    assert.match(old.stderr, /owner/);
  });
});

test('node wait sends nothing and fails as --wait does; allocation wait shows the allocation', async () => {
  await withSimulator(
    scenario([
      { name: 'n1', provision_state: 'active' },
      { name: 'n2', provision_state: 'deploy failed', last_error: 'disk' },
      available('n3'),
    ]),
    async (sim) => {
      const ok = await ironicWait(sim, ['node', 'wait', 'n1', '--state', 'ACTIVE', '--timeout', '5']);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, 'Waiting for provision state active on node(s) n1\n');
      const failed = await ironicWait(sim, ['-q', 'node', 'wait', 'n1', 'n2', '--state', 'active']);
      assert.equal(failed.code, 1);
      assert.equal(failed.stderr, "Node n2 failed to reach state active. It's in state deploy failed, and has error: disk\n");
      const bad = await ironicWait(sim, ['node', 'wait', 'n1', '--state', 'active', '--timeout', 'soon']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /error: argument --timeout: invalid float value: 'soon'\n$/);
      assert.deepEqual(sim.log({ method: 'PUT' }), []);

      const created = await fetch(`${sim.url}/v1/allocations`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-OpenStack-Ironic-API-Version': '1.115' },
        body: JSON.stringify({ resource_class: 'gold', name: 'a1' }),
      }).then((res) => res.json());
      const shown = await ironicWait(sim, ['allocation', 'wait', 'a1', '--timeout', '10', '-f', 'value', '-c', 'uuid', '-c', 'state']);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(shown.stdout, `${created.uuid}\nactive\n`);
      const missing = await ironicWait(sim, ['-q', 'allocation', 'wait', 'nope']);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /^Allocation nope could not be found\. \(HTTP 404\)/);
    },
  );
});

test('a timeout the library cannot hold is refused before anything is sent', async () => {
  await withSimulator(scenario([available('n1')]), async (sim) => {
    const r = await ironicWait(sim, ['node', 'deploy', 'n1', '--wait', '99999999']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'Timeout must be at most 2147483 seconds (about 24.8 days); 0 waits without limit\n');
    assert.deepEqual(sim.log(), []);
  });
});

test('help names the program as called, lists the commands and says what differs from baremetal', async () => {
  await withSimulator(scenario([]), async (sim) => {
    const top = await ironicWait(sim, ['--help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /^usage: ironic-wait \[--version\]/);
    for (const command of ['node deploy', 'node wait', 'allocation create', 'allocation wait'])
      assert.match(top.stdout, new RegExp(`^  ${command} `, 'm'));
    assert.match(
      top.stdout.replace(/\s+/g, ' '),
      /a --wait timeout ends at its deadline; a negative timeout is refused before anything is sent/,
    );
    const deploy = await ironicWait(sim, ['node', 'deploy', '-h']);
    assert.equal(deploy.code, 0);
    assert.match(deploy.stdout, /^usage: ironic-wait node deploy \[-h\] \[--wait \[<time-out>\]\]/);
    assert.match(deploy.stdout.replace(/\s+/g, ' '), /Unlike baremetal: a timeout ends at its deadline/);
    const version = await ironicWait(sim, ['--version']);
    assert.equal(version.stdout, `ironic-wait ${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url))).version}\n`);
    const unknown = await ironicWait(sim, ['node', 'frobnicate', 'n1']);
    assert.equal(unknown.code, 2);
    assert.match(
      unknown.stderr,
      /^ironic-wait: 'node frobnicate n1' is not an ironic-wait command\. See 'ironic-wait --help'\.\nDid you mean one of these\?\n {2}node manage\n/,
    );
  });
});

test('secrets given on the command line or in the environment appear in no output, errors included', async () => {
  const PASSWORD = 'pw-S3cret-8d1f';
  const TOKEN = 'tok-S3cret-77aa';
  const RESCUE = 'rescue-S3cret-19';
  const env = { OS_PASSWORD: PASSWORD, OS_TOKEN: TOKEN };
  const secretFlags = ['--os-password', PASSWORD, `--os-token=${TOKEN}`];
  const lines = [
    [...secretFlags, 'node', 'deploy', 'nope', '--wait'],
    [...secretFlags, 'node', 'deploy'],
    [...secretFlags, '--max-retries', 'many', 'node', 'deploy', 'n1'],
    [...secretFlags, '--json', 'node', 'rescue', 'n1', 'nope', '--rescue-password', RESCUE, '--wait', '5'],
    [...secretFlags, 'node', 'rescue', 'n1', '--rescue-pasword', RESCUE],
    [...secretFlags, 'node', 'rescue', 'n1', `--rescue-pasword=${RESCUE}`],
    ['--os-pasword', PASSWORD, 'node', 'deploy', 'n1'],
    ['--os-auth-type', 'token', '--os-token', TOKEN, 'node', 'deploy', 'n1', '--wait', '5'],
  ];
  const failing = scenario([{ name: 'n1', provision_state: 'active' }, available('n2')], {
    transitions: [{ node: 'n1', action: 'rescue', fail: 'no ramdisk' }],
  });
  for (const args of lines) {
    await withSimulator(failing, async (sim) => {
      const r = await run(
        process.execPath,
        [CLI, '--os-endpoint', sim.url, ...(args[0] === '--os-auth-type' ? [] : ['--os-auth-type', 'none']), ...args],
        { env },
      );
      assert.notEqual(r.code, 0, `${args.join(' ')} should fail`);
      for (const secret of [PASSWORD, TOKEN, RESCUE]) {
        assert.ok(
          !r.stdout.includes(secret) && !r.stderr.includes(secret),
          `a secret in the output of ${args.join(' ')}:\n${r.stdout}${r.stderr}`,
        );
      }
    });
  }
});

test('--checkpoint FILE, then resume FILE: a command killed mid-wait goes on in a new process with the same output and exit code, no PUT sent twice', async () => {
  // n1 gets there, n2 fails: the original command's output, uninterrupted.
  const slow = { ...TIMING, deploying: 1500 };
  const world = () => ({
    ...scenario([available('n1'), available('n2')], { transitions: [{ node: 'n2', action: 'active', fail: 'boom' }] }),
    manualClock: false,
    timing: slow,
  });
  const args = ['--settle', 'all', 'node', 'deploy', 'n1', 'n2', '--wait', '60'];
  const messages = (r) => r.stderr.split('\n').filter((l) => l && !PROGRESS_LINE.test(l));
  const whole = await withSimulator(world(), (sim) => ironicWait(sim, args));
  assert.equal(whole.code, 1, whole.stderr);

  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-checkpoint-'));
  try {
    const file = join(dir, 'deploy.json');
    await withSimulator(world(), async (sim) => {
      // Killed at its first progress line: the PUTs are sent and the checkpoint saved.
      const killed = await ironicWait(sim, ['--checkpoint', file, ...args], { onStderr: (_, child) => child.kill('SIGKILL') });
      assert.equal(killed.signal, 'SIGKILL');
      assert.equal(killed.stdout, whole.stdout, 'the "Waiting for" line came before the kill');
      const saved = readFileSync(file, 'utf8');
      assert.doesNotMatch(saved, /Bearer|password/i);
      assert.equal((statSync(file).mode & 0o777).toString(8), '600');

      const resumed = await ironicWait(sim, ['resume', file]);
      assert.equal(resumed.code, whole.code);
      assert.equal(resumed.stdout, whole.stdout);
      assert.deepEqual(messages(resumed), messages(whole));
      const puts = sim
        .log({ method: 'PUT' })
        .map((e) => e.path)
        .sort();
      assert.deepEqual(puts, ['/v1/nodes/n1/states/provision', '/v1/nodes/n2/states/provision']);
      assert.equal(sim.node('n1').provision_state, 'active');
    });
    // Not a checkpoint file: refused, nothing sent.
    await withSimulator(world(), async (sim) => {
      writeFileSync(file, '{"ironicWaitCli":1,"command":"node deploy"}');
      const refused = await ironicWait(sim, ['resume', file]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /is not a checkpoint file of ironic-wait --checkpoint/);
      writeFileSync(file, 'garbage');
      assert.match((await ironicWait(sim, ['resume', file])).stderr, /^Cannot read the checkpoint file .*: it is not JSON\n$/);
      assert.deepEqual(sim.log(), []);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
