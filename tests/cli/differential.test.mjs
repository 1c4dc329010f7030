// ironic-wait against python-ironicclient's `baremetal` (6.3, from the
// real-ironic venv): the same command line, each against a fresh simulator
// loaded with the same scenario; stdout, stderr and the exit code must be
// equal, but for the deliberate differences named in DIFFERENCES.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { baremetalPath, endpointArgs, ironicWaitAs, run, withSimulator } from './support.mjs';

/** Where ironic-wait answers differently on purpose, and why. Each case names the ones it meets. */
const DIFFERENCES = {
  'request-id': {
    why: 'ironic-wait negotiates the microversion with one GET /v1 first; the simulator draws request ids in order, so the same error carries another id',
    normalize: (s) => s.replace(/req-[0-9a-f-]{36}/g, 'req-<id>'),
  },
  progress: {
    why: "ironic-wait shows the wait's progress on stderr (plain lines when stderr is not a terminal; -q hides them)",
    ours: (s) => s.replace(/^ *\d+\.\d+s .*\n/gm, ''),
  },
  'negative-wait': {
    why: "a negative --wait is refused before anything is sent; baremetal sends the PUT, prints 'Waiting for ...', then fails",
  },
  'typed-error': {
    why: "where baremetal crashes (a node whose provision_state is null: AttributeError, printed as Python's own words), ironic-wait fails with an InvalidResponseError naming the node and the field; both exit 1",
  },
  'refused-before-sending': {
    why: "what baremetal sends for Ironic to refuse (an empty --rescue-password or --clean-steps is dropped from the body; steps that are not a list), ironic-wait refuses before sending anything, in Ironic's words without the (HTTP 400) (Request-ID: ...) suffix",
    normalize: (s) => s.replace(/ \(HTTP 400\) \(Request-ID: req-[0-9a-f-]{36}\)$/m, ''),
  },
  'program-path': {
    why: 'a message naming the program names it by the path it was started from, and the two programs live in different places',
    normalize: (s) => s.replace(/`\S*\/baremetal --help`/g, '`baremetal --help`'),
  },
  'global-usage': {
    why: "the usage line of a global option error lists ironic-wait's own global options (the --os-* options of the config, --json, --settle); the error line is the same",
  },
};

const TIMING = {
  verifying: 0,
  deploying: 0,
  'wait call-back': 0,
  deleting: 0,
  cleaning: 0,
  'clean wait': 0,
  inspecting: 0,
  adopting: 0,
  rescuing: 0,
  unrescuing: 0,
  servicing: 0,
  allocating: 0,
};
// A manual clock: time stands still, so a 0-long phase is over at its PUT,
// a stalled one never is, and timestamps are the epoch in both worlds.
const scenario = (nodes, extra = {}) => ({ seed: 11, epoch: '2026-01-01T00:00:00Z', manualClock: true, timing: TIMING, nodes, ...extra });
const available = (name, more = {}) => ({ name, provision_state: 'available', resource_class: 'gold', ...more });
const ALLOCATION = '5f0c3a8e-4b7e-4a3e-9a7e-1b2c3d4e5f60';
const active = (name) => ({ name, provision_state: 'active', resource_class: 'gold' });
const manageable = (name) => ({ name, provision_state: 'manageable', resource_class: 'gold' });

// Files both programs read: steps in YAML, a config drive in JSON and in text.
const FILES = mkdtempSync(join(tmpdir(), 'ironic-wait-differential-'));
after(() => rmSync(FILES, { recursive: true, force: true }));
const STEPS_YAML = join(FILES, 'steps.yaml');
writeFileSync(STEPS_YAML, '- interface: deploy\n  step: erase_devices_metadata\n  args: {}\n');
const DRIVE_JSON = join(FILES, 'drive.json');
writeFileSync(DRIVE_JSON, '{"meta_data": {"hostname": "n1"}}');
const DRIVE_TEXT = join(FILES, 'drive.b64');
writeFileSync(DRIVE_TEXT, 'H4sIAAAAAAAAA+3BMQEAAADCoPVPbQwfoAAAAAAAAAAAAAAAAAAAAIC3AYbSVKsAKAAA');
const STEPS_JSON = '[{"interface": "deploy", "step": "erase_devices_metadata", "args": {}}]';

const CASES = [
  {
    name: 'deploy two nodes, success',
    scenario: scenario([available('n1'), available('n2')]),
    args: ['node', 'deploy', 'n1', 'n2', '--wait', '30'],
    differences: ['progress'],
  },
  {
    name: 'manage, bare --wait, success',
    scenario: scenario([{ name: 'n1', provision_state: 'enroll' }]),
    args: ['node', 'manage', 'n1', '--wait'],
    differences: ['progress'],
  },
  { name: 'provide without --wait', scenario: scenario([{ name: 'n1', provision_state: 'manageable' }]), args: ['node', 'provide', 'n1'] },
  {
    name: 'deploy failed',
    scenario: scenario([available('n1')], { transitions: [{ node: 'n1', action: 'active', fail: 'Deploy step failed: no image' }] }),
    args: ['node', 'deploy', 'n1', '--wait'],
    differences: ['progress'],
  },
  {
    name: 'timeout: a node that never settles',
    scenario: scenario([{ name: 'n1', provision_state: 'enroll' }], { transitions: [{ node: 'n1', action: 'manage', stall: true }] }),
    args: ['node', 'manage', 'n1', '--wait', '1'],
    differences: ['progress'],
  },
  {
    name: 'unexpected stable state',
    scenario: scenario([{ name: 'n1', provision_state: 'enroll' }], {
      transitions: [{ node: 'n1', action: 'manage', fail: 'cannot reach the BMC' }],
    }),
    args: ['node', 'manage', 'n1', '--wait', '20'],
    differences: ['progress'],
  },
  { name: '404 node', scenario: scenario([available('n1')]), args: ['node', 'deploy', 'nope', '--wait'], differences: ['request-id'] },
  {
    name: '404 between two nodes',
    scenario: scenario([available('n1'), available('n2')]),
    args: ['node', 'deploy', 'n1', 'nope', 'n2', '--wait', '5'],
    differences: ['request-id'],
  },
  {
    name: 'refused action (400)',
    scenario: scenario([{ name: 'n1', provision_state: 'active' }]),
    args: ['node', 'provide', 'n1', '--wait'],
    differences: ['request-id'],
  },
  { name: '--wait on abort', scenario: scenario([]), args: ['node', 'abort', 'n1', '--wait'] },
  { name: '--wait on unhold', scenario: scenario([]), args: ['node', 'unhold', 'n1', '--wait', '5'] },
  { name: 'missing node', scenario: scenario([]), args: ['node', 'deploy', '--wait', '5'] },
  { name: '--wait 1.5', scenario: scenario([]), args: ['node', 'deploy', 'n1', '--wait', '1.5'] },
  { name: '--wait swallows a node name', scenario: scenario([]), args: ['node', 'deploy', '--wait', 'n1'] },
  { name: 'unknown option', scenario: scenario([]), args: ['node', 'deploy', 'n1', '--wiat', '5'] },
  { name: 'node names after --wait N', scenario: scenario([]), args: ['node', 'deploy', 'n1', '--wait', '5', 'n2'] },
  {
    name: 'a node name after --',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', '--wait', '5', '--', '--wait'],
    differences: ['request-id'],
  },
  { name: 'an option without its value', scenario: scenario([]), args: ['node', 'deploy', 'n1', '--config-drive'] },
  { name: '--wait= with nothing', scenario: scenario([]), args: ['node', 'deploy', 'n1', '--wait='] },
  { name: 'a flag given a value', scenario: scenario([]), args: ['node', 'clean', 'n1', '--disable-ramdisk=yes', '--clean-steps', '[]'] },
  { name: 'an ambiguous prefix', scenario: scenario([]), args: ['allocation', 'create', '--n', 'x'] },
  { name: 'an invalid choice', scenario: scenario([]), args: ['allocation', 'create', '--resource-class', 'gold', '-f', 'xml'] },
  {
    name: 'a short option with its value attached',
    scenario: scenario([available('n1')]),
    args: ['allocation', 'create', '--resource-class', 'gold', '--uuid', ALLOCATION, '-fvalue', '-cstate', '--wait'],
    differences: ['progress'],
  },
  {
    name: 'bare --wait before --',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', '--wait', '--', 'n1'],
    differences: ['progress'],
  },
  { name: 'clean without steps', scenario: scenario([]), args: ['node', 'clean', 'n1', '--wait'] },
  { name: 'clean steps and runbook', scenario: scenario([]), args: ['node', 'clean', 'n1', '--runbook', 'r1', '--clean-steps', '[]'] },
  {
    name: 'service: runbook with --disable-ramdisk',
    scenario: scenario([]),
    args: ['node', 'service', 'n1', '--runbook', 'r1', '--disable-ramdisk', '--wait'],
  },
  {
    name: 'clean steps that are not JSON',
    scenario: scenario([]),
    args: ['node', 'clean', 'n1', '--clean-steps', 'not-a-file'],
    stderrPrefix: "Value 'not-a-file' is not a file and cannot be parsed as JSON: ",
  },
  {
    name: 'rescue with an empty password',
    scenario: scenario([active('n1')]),
    args: ['node', 'rescue', 'n1', '--rescue-password', '', '--wait'],
    differences: ['refused-before-sending'],
  },
  {
    name: 'clean with empty steps',
    scenario: scenario([manageable('n1')]),
    args: ['node', 'clean', 'n1', '--clean-steps', '', '--wait'],
    differences: ['refused-before-sending'],
  },
  {
    name: 'allocation create with a bad --extra',
    scenario: scenario([available('n1')]),
    args: ['allocation', 'create', '--resource-class', 'gold', '--extra', 'novalue', '--wait'],
  },
  { name: 'rescue without password', scenario: scenario([]), args: ['node', 'rescue', 'n1', '--wait'] },
  {
    name: 'config drive that is no file',
    scenario: scenario([]),
    args: ['node', 'deploy', 'n1', '--config-drive', '/nonexistent/cd.iso', '--wait'],
  },
  {
    name: 'an option abbreviated',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', 'n1', '--wai', '10'],
    differences: ['progress'],
  },
  { name: '--wait=N', scenario: scenario([available('n1')]), args: ['node', 'deploy', 'n1', '--wait=10'], differences: ['progress'] },
  {
    name: 'allocation create --wait, success (table)',
    scenario: scenario([available('n1')]),
    args: [
      'allocation',
      'create',
      '--resource-class',
      'gold',
      '--uuid',
      ALLOCATION,
      '--name',
      'a1',
      '--extra',
      'k=1',
      '--extra',
      'who=me',
      '--owner',
      'ops',
      '--wait',
      '10',
    ],
    differences: ['progress'],
  },
  {
    name: 'allocation create --wait -f value -c',
    scenario: scenario([available('n1')]),
    args: ['allocation', 'create', '--resource-class', 'gold', '--uuid', ALLOCATION, '--wait', '-f', 'value', '-c', 'state', '-c', 'uuid'],
    differences: ['progress'],
  },
  {
    name: 'allocation create --wait -f json and shell',
    scenario: scenario([available('n1')]),
    args: [
      'allocation',
      'create',
      '--resource-class',
      'gold',
      '--uuid',
      ALLOCATION,
      '--trait',
      'CUSTOM_X',
      '--candidate-node',
      'n1',
      '--wait',
      '5',
      '-f',
      'json',
    ],
    differences: ['progress'],
  },
  {
    name: 'allocation create --wait -f yaml',
    scenario: scenario([available('n1')]),
    args: ['allocation', 'create', '--resource-class', 'gold', '--uuid', ALLOCATION, '--extra', 'k={"a": [1, 2]}', '--wait', '-f', 'yaml'],
    differences: ['progress'],
  },
  {
    // A key named like JS's prototype accessor is a key like any other.
    name: 'allocation create --extra __proto__=...',
    scenario: scenario([available('n1')]),
    args: [
      'allocation',
      'create',
      '--resource-class',
      'gold',
      '--uuid',
      ALLOCATION,
      '--extra',
      '__proto__={"polluted": true}',
      '--extra',
      'k=2',
      '-f',
      'json',
      '-c',
      'extra',
    ],
  },
  {
    name: 'allocation create -f shell --prefix',
    scenario: scenario([available('n1')]),
    args: [
      'allocation',
      'create',
      '--resource-class',
      'gold',
      '--uuid',
      ALLOCATION,
      '--name',
      'say "hi"',
      '-f',
      'shell',
      '--prefix',
      'al_',
    ],
  },
  {
    name: 'allocation create --wait, error',
    scenario: scenario([available('n1')]),
    args: ['allocation', 'create', '--resource-class', 'silver', '--uuid', ALLOCATION, '--wait', '10'],
    differences: ['progress'],
  },
  { name: 'allocation create without --resource-class', scenario: scenario([]), args: ['allocation', 'create', '--wait'] },
  { name: 'allocation create --trait without a value', scenario: scenario([]), args: ['allocation', 'create', '--trait'] },
  // Every waitable action once, each to its expected state.
  { name: 'undeploy', scenario: scenario([active('n1')]), args: ['node', 'undeploy', 'n1', '--wait', '30'], differences: ['progress'] },
  { name: 'inspect', scenario: scenario([manageable('n1')]), args: ['node', 'inspect', 'n1', '--wait'], differences: ['progress'] },
  { name: 'adopt', scenario: scenario([manageable('n1')]), args: ['node', 'adopt', 'n1', '--wait'], differences: ['progress'] },
  { name: 'provide', scenario: scenario([manageable('n1')]), args: ['node', 'provide', 'n1', '--wait'], differences: ['progress'] },
  {
    name: 'rescue',
    scenario: scenario([active('n1')]),
    args: ['node', 'rescue', 'n1', '--rescue-password', 'pw', '--wait'],
    differences: ['progress'],
  },
  {
    name: 'unrescue',
    scenario: scenario([{ name: 'n2', provision_state: 'rescue' }]),
    args: ['node', 'unrescue', 'n2', '--wait'],
    differences: ['progress'],
  },
  {
    name: 'rebuild with a config drive file (JSON)',
    scenario: scenario([active('n1')]),
    args: ['node', 'rebuild', 'n1', '--config-drive', DRIVE_JSON, '--wait'],
    differences: ['progress'],
  },
  {
    name: 'deploy with a config drive file (text) and deploy steps',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', 'n1', '--config-drive', DRIVE_TEXT, '--deploy-steps', STEPS_JSON, '--wait'],
    differences: ['progress'],
  },
  {
    name: 'deploy with a config drive object',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', 'n1', '--config-drive', '{"user_data": "#!/bin/sh"}', '--wait'],
    differences: ['progress'],
  },
  {
    name: 'clean with steps from a YAML file',
    scenario: scenario([manageable('n1')]),
    args: ['node', 'clean', 'n1', '--clean-steps', STEPS_YAML, '--wait'],
    differences: ['progress'],
  },
  {
    name: 'clean with steps from stdin',
    scenario: scenario([manageable('n1')]),
    args: ['node', 'clean', 'n1', '--clean-steps', '-', '--wait'],
    input: STEPS_JSON,
    differences: ['progress'],
  },
  {
    name: 'service with steps',
    scenario: scenario([active('n1')]),
    args: ['node', 'service', 'n1', '--service-steps', STEPS_JSON, '--wait', '20'],
    differences: ['progress'],
  },
  {
    name: 'a command option abbreviated like a global one (--se)',
    scenario: scenario([active('n1')]),
    args: ['node', 'service', 'n1', '--se', STEPS_JSON, '--wait'],
    differences: ['progress'],
  },
  {
    name: 'the second of three nodes fails',
    scenario: scenario([available('n1'), available('n2'), available('n3')], {
      transitions: [{ node: 'n2', action: 'active', fail: 'boom' }],
    }),
    args: ['node', 'deploy', 'n1', 'n2', 'n3', '--wait'],
    differences: ['progress'],
  },
  {
    name: 'timeout of one node of two',
    scenario: scenario(
      [
        { name: 'n1', provision_state: 'enroll' },
        { name: 'n2', provision_state: 'enroll' },
      ],
      { transitions: [{ node: 'n2', action: 'manage', stall: true }] },
    ),
    // n1 is manageable at its PUT, but ironic-wait ends at its deadline: the deadline must leave
    // time for a check whatever the machine's load (1 s did not, beside other suites).
    args: ['node', 'manage', 'n1', 'n2', '--wait', '5'],
    differences: ['progress'],
  },
  {
    name: 'a real clock: verifying for a second, then manageable',
    scenario: scenario([{ name: 'n1', provision_state: 'enroll' }], { manualClock: false, timing: { ...TIMING, verifying: 1000 } }),
    args: ['node', 'manage', 'n1', '--wait', '30'],
    differences: ['progress'],
  },
  {
    name: 'a node without a provision state',
    scenario: scenario([available('n1')], { faults: [{ node: 'n1', method: 'GET', kind: 'set', set: { provision_state: null } }] }),
    args: ['node', 'deploy', 'n1', '--wait'],
    differences: ['typed-error'],
  },
  {
    name: '--wait -1',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', 'n1', '--wait', '-1'],
    differences: ['negative-wait'],
  },
  {
    name: 'global option with a bad value',
    scenario: scenario([]),
    args: ['--max-retries', 'x', 'node', 'deploy', 'n1'],
    differences: ['global-usage'],
  },
  {
    name: 'no endpoint and no credentials: the configuration error, nothing sent',
    scenario: scenario([available('n1')]),
    args: ['node', 'deploy', 'n1', '--wait', '30'],
    noEndpoint: true,
    differences: ['program-path'],
  },
];

// CLI_CASES=REGEX runs only the cases whose name matches (while working on one).
const selected = process.env.CLI_CASES ? CASES.filter((c) => new RegExp(process.env.CLI_CASES).test(c.name)) : CASES;

const BAREMETAL = await baremetalPath();
const IRONIC_WAIT = ironicWaitAs('baremetal');

async function runIn(program, c) {
  return withSimulator(c.scenario, async (sim) => {
    const cmd = program === 'python' ? BAREMETAL : process.execPath;
    const endpoint = c.noEndpoint ? [] : endpointArgs(sim);
    const args = program === 'python' ? [...endpoint, ...c.args] : [IRONIC_WAIT, ...endpoint, ...c.args];
    const result = await run(cmd, args, { input: c.input ?? '' });
    return { ...result, log: sim.log() };
  });
}

test('ironic-wait and baremetal on the same scenarios', { concurrency: 3 }, async (t) => {
  await Promise.all(
    selected.map((c) =>
      t.test(c.name, async () => {
        const [python, ours] = await Promise.all([runIn('python', c), runIn('ours', c)]);
        const differences = (c.differences ?? []).map((d) => DIFFERENCES[d]);
        const normalize = (s, side) =>
          differences.reduce(
            (text, d) => (side === 'ours' && d.ours ? d.ours(text) : text),
            differences.reduce((text, d) => (d.normalize ? d.normalize(text) : text), s),
          );
        const what = `${c.args.join(' ')}\n--- baremetal stderr:\n${python.stderr}--- ironic-wait stderr:\n${ours.stderr}`;

        if (c.differences?.includes('negative-wait')) {
          assert.equal(python.stdout, 'Waiting for provision state active on node(s) n1\n');
          assert.equal(ours.stdout, '', what);
          assert.equal(ours.stderr, python.stderr, what);
          assert.equal(ours.code, python.code);
          assert.ok(
            python.log.some((e) => e.method === 'PUT'),
            'baremetal sends the PUT',
          );
          assert.deepEqual(
            ours.log.filter((e) => e.method === 'PUT'),
            [],
            'ironic-wait sends nothing',
          );
          return;
        }
        if (c.differences?.includes('typed-error')) {
          assert.equal(ours.stdout, python.stdout);
          assert.match(python.stderr, /'NoneType' object has no attribute 'endswith'/);
          assert.match(DIFFERENCES.progress.ours(ours.stderr), /^[^\n]*\bn1\b[^\n]*provision_state[^\n]*\n$/, ours.stderr);
          assert.equal(ours.code, python.code);
          return;
        }
        if (c.differences?.includes('global-usage')) {
          const lastLine = (s) => s.trimEnd().split('\n').at(-1);
          assert.match(python.stderr, /^usage: baremetal /);
          assert.match(ours.stderr, /^usage: baremetal /);
          assert.equal(lastLine(ours.stderr), lastLine(python.stderr), what);
          assert.equal(ours.stdout, python.stdout);
          assert.equal(ours.code, python.code);
          return;
        }
        assert.equal(normalize(ours.stdout, 'ours'), normalize(python.stdout, 'python'), `stdout of ${what}`);
        if (c.stderrPrefix) {
          // The parser's own words after the prefix differ (Python's json module, JavaScript's JSON.parse).
          assert.ok(python.stderr.startsWith(c.stderrPrefix), python.stderr);
          assert.ok(ours.stderr.startsWith(c.stderrPrefix), ours.stderr);
        } else {
          assert.equal(normalize(ours.stderr, 'ours'), normalize(python.stderr, 'python'), `stderr of ${what}`);
        }
        assert.equal(ours.code, python.code, `exit code of ${what}`);
        // Nothing at all is sent when the command line or the configuration is refused.
        if (python.code === 2 || c.noEndpoint || c.differences?.includes('refused-before-sending')) assert.deepEqual(ours.log, []);
      }),
    ),
  );
});
