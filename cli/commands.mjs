// The commands of `ironic-wait`, each with the parser `baremetal` gives it
// (same options, order, metavars and rules, so the same usage text and
// errors) and what it does, through the library.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { StateTransitionTimeout, tables } from 'ironic-wait';
import { parse as parseYaml } from 'yaml';
import { Parser } from './args.mjs';
import { ALLOCATION_FIELDS, FORMATS, formatShowOne } from './output.mjs';

/** A mistake python-ironicclient reports as CommandError, InvalidAttribute, ValueError...: its text, exit 1. */
export class CommandError extends Error {}

// OSC's provision commands: the library's action table (python-ironicclient's
// PROVISION_ACTIONS: target, expected state, poll interval) and the options
// each command adds to baremetal's common ones.
const PROVISION_OPTIONS = {
  manage: [],
  provide: [],
  deploy: ['config-drive', 'deploy-steps'],
  undeploy: [],
  inspect: [],
  clean: ['clean-steps|runbook', 'disable-ramdisk'],
  rescue: ['rescue-password'],
  unrescue: [],
  adopt: [],
  rebuild: ['config-drive', 'deploy-steps'],
  service: ['service-steps|runbook', 'disable-ramdisk'],
  abort: [],
  unhold: [],
};
export const PROVISION = Object.fromEntries(
  Object.entries(PROVISION_OPTIONS).map(([name, options]) => {
    const { target, expected, pollInterval } = tables().actionsByName[name];
    return [name, { target, expected, interval: pollInterval, options }];
  }),
);

const CONFIG_DRIVE_HELP =
  'A gzipped, base64-encoded configuration drive string OR the path to the configuration drive file OR the path to a ' +
  'directory containing the config drive files OR a JSON object to build config drive from OR the path to the JSON ' +
  "file. In case it's a directory, a config drive will be generated from it. In case it's a JSON object with optional " +
  'keys `meta_data`, `user_data` and `network_data` or a JSON file, a config drive will be generated on the server ' +
  'side (see the bare metal API reference for more details). As with baremetal, a base64 string given on the command ' +
  'line is taken for a path: put it in a file.';

const stepsHelp = (kind, what) =>
  `The ${kind} steps. May be the path to a YAML file containing the ${kind} steps; OR '-', with the ${kind} steps ` +
  `being read from standard input; OR a JSON string. The value should be a list of ${kind}-step dictionaries; each ` +
  `dictionary should have keys 'interface' and 'step', and optional key 'args'.${what ?? ''}`;

const WAIT_NOTES =
  'Unlike baremetal: a timeout ends at its deadline (one last check there; baremetal overruns it by up to an ' +
  "interval), a negative timeout is refused before anything is sent, a server's unusable answer is an error naming " +
  'the node and field instead of a crash, and the PUTs go out up to 8 at a time (on an error, those in flight ' +
  'finish and no more are sent). Global options: --json prints the wait report as JSON on stdout; --settle all waits ' +
  'for every node and reports each failure; -q hides the progress on stderr; Ctrl-C stops waiting (exit 130; the ' +
  'action goes on in Ironic).';

const waitOption = (what) => ({
  flags: ['--wait'],
  dest: 'wait_timeout',
  type: 'int',
  nargs: '?',
  const: 0,
  metavar: '<time-out>',
  help: `${what} Optionally takes a timeout value (in seconds). The default value is 0, meaning it will wait indefinitely.`,
});

// Ours, on the waiting commands: exact name only, so that no prefix a
// baremetal option answered to (--di for --disable-ramdisk) becomes ambiguous.
const diagnoseOption = (extra = {}) => ({
  flags: ['--diagnose'],
  action: 'store_true',
  exactOnly: true,
  help: "On a failure, print each failed node's last 5 history events under its message (API 1.78; not in baremetal).",
  ...extra,
});

// cliff's ShowOne formatter options, in the order `baremetal` lists them.
function addShowOneOptions(parser) {
  parser.add({
    flags: ['-f', '--format'],
    dest: 'formatter',
    choices: FORMATS,
    default: 'table',
    help: 'the output format, defaults to table',
  });
  parser.add({
    flags: ['-c', '--column'],
    dest: 'columns',
    metavar: 'COLUMN',
    action: 'append',
    help: 'specify the column(s) to include, can be repeated to show multiple columns',
  });
  parser.add({ flags: ['--noindent'], action: 'store_true', help: 'whether to disable indenting the JSON' });
  parser.add({ flags: ['--prefix'], default: '', help: 'add a prefix to all variable names' });
  parser.add({
    flags: ['--max-width'],
    metavar: '<integer>',
    type: 'int',
    default: 0,
    help: 'Maximum display width, <1 to disable. (accepted; tables are not fitted)',
  });
  parser.add({
    flags: ['--fit-width'],
    action: 'store_true',
    help: 'Fit the table to the display width. (accepted; tables are not fitted)',
  });
  parser.add({ flags: ['--print-empty'], action: 'store_true', help: 'Print empty table if there is no data to show.' });
}

/** The parser of `node <action>` as baremetal builds it. */
function provisionParser(prog, name) {
  const spec = PROVISION[name];
  const what = name === 'deploy' ? 'deploy' : name;
  const parser = new Parser({
    prog,
    description: `Set provision state of baremetal node to '${what}'`,
    epilog: spec.expected ? WAIT_NOTES : '',
  });
  parser.addPositional({ dest: 'nodes', metavar: '<node>', nargs: '+', help: "Names or UUID's of the nodes." });
  parser.add({ flags: ['--provision-state'], default: spec.target, choices: [spec.target], hidden: true });
  if (spec.expected) parser.add(waitOption(`Wait for a node to reach the desired state, ${spec.expected}.`));
  // Not in baremetal's usage line, which errors print and must match.
  if (spec.expected) parser.add(diagnoseOption({ usageHidden: true }));
  for (const option of spec.options ?? []) {
    if (option === 'config-drive') parser.add({ flags: ['--config-drive'], metavar: '<config-drive>', help: CONFIG_DRIVE_HELP });
    if (option === 'deploy-steps') parser.add({ flags: ['--deploy-steps'], metavar: '<deploy-steps>', help: stepsHelp('deploy') });
    if (option === 'rescue-password') {
      parser.add({
        flags: ['--rescue-password'],
        metavar: '<rescue-password>',
        required: true,
        secret: true,
        help: 'The password that will be used to login to the rescue ramdisk. The value should be a non-empty string.',
      });
    }
    if (option.endsWith('|runbook')) {
      const kind = option.split('-')[0];
      const group = parser.addGroup({ required: true });
      group.add({ flags: [`--${kind}-steps`], metavar: `<${kind}-steps>`, help: stepsHelp(kind) });
      group.add({
        flags: ['--runbook'],
        metavar: '<runbook>',
        help: `The identifier of a predefined runbook to use for ${kind === 'clean' ? 'cleaning' : 'servicing'}.`,
      });
    }
    if (option === 'disable-ramdisk') {
      parser.add({
        flags: ['--disable-ramdisk'],
        action: 'store_true',
        default: null,
        help: 'ironic-python-agent will not be booted for cleaning. Only steps explicitly marked as not requiring ironic-python-agent can be executed with this set.',
      });
    }
  }
  return parser;
}

function nodeWaitParser(prog) {
  const parser = new Parser({
    prog,
    description: 'Wait for nodes to reach a provision state or a power state (sends nothing; not in baremetal).',
    epilog:
      'Fails as baremetal --wait does: a node in error or a "* failed" state (unless that is the state waited for), or resting in another stable state. ' +
      'With --power-state: fails when a power action ends short of the state with an error. ' +
      WAIT_NOTES,
  });
  parser.addPositional({ dest: 'nodes', metavar: '<node>', nargs: '+', help: "Names or UUID's of the nodes." });
  const what = parser.addGroup({ required: true });
  what.add({ flags: ['--state'], metavar: '<state>', help: 'The provision state to wait for, e.g. active.' });
  what.add({
    flags: ['--power-state'],
    metavar: '<power-state>',
    choices: POWER_STATES,
    help: "The power state to wait for: 'power on' or 'power off' (no power action under way).",
  });
  parser.add({
    flags: ['--timeout'],
    metavar: '<seconds>',
    type: 'float',
    default: 0,
    help: 'Give up after this many seconds (default 0: no limit).',
  });
  parser.add({ flags: ['--poll-interval'], metavar: '<seconds>', type: 'float', default: 2, help: 'Seconds between checks (default 2).' });
  parser.add(diagnoseOption());
  return parser;
}

/** The power states a wait can wait for: those the power actions end in, from the core's table. */
const POWER_STATES = [...new Set(tables().powerActions.map((a) => a.expected))];

/** The core's power action of `node power on|off` and `node reboot`, soft or not: python-ironicclient's words for it. */
const powerAction = (kind, soft) => tables().powerActions.find((a) => a.words === (soft ? `soft ${kind}` : kind));

/**
 * `node power on|off` and `node reboot` as baremetal builds them (nodes,
 * --power-timeout, --soft where it has it, in its order), with our --wait
 * and --diagnose.
 */
function powerParser(prog, kind) {
  const descriptions = { on: 'Power on a node', off: 'Power off a node', reboot: 'Reboot baremetal node' };
  const parser = new Parser({
    prog,
    description: descriptions[kind],
    epilog:
      'Prints nothing on success, as baremetal. --wait and --diagnose are not in baremetal: --wait waits until the power action is over ' +
      '(Ironic clears the target power state) and fails when it ends short of it with an error. ' +
      WAIT_NOTES,
  });
  parser.addPositional({ dest: 'nodes', metavar: '<node>', nargs: '+', help: "Names or UUID's of the nodes." });
  const soft = () =>
    parser.add({
      flags: ['--soft'],
      action: 'store_true',
      help: kind === 'off' ? 'Request graceful power-off.' : 'Request Graceful reboot.',
    });
  if (kind === 'reboot') soft();
  parser.add({
    flags: ['--power-timeout'],
    metavar: '<power-timeout>',
    type: 'int',
    help: 'Timeout (in seconds, positive integer) to wait for the target power state before erroring out.',
  });
  if (kind === 'off') soft();
  parser.add(waitOption(`Wait for the power action to end, with the node in ${powerAction(kind, false).expected}.`));
  parser.add(diagnoseOption());
  return parser;
}

function nodeWatchParser(prog) {
  const parser = new Parser({
    prog,
    description:
      'Watch nodes: each node of the scope once, then each change of its provision state (and of any --field), as `kubectl get -w` does (not in baremetal). Runs until Ctrl-C.',
    epilog:
      "A quiet round is one request whatever the fleet, by the nodes' provision_updated_at (--list-mode list: the scope in full each round; a --field always lists in full). A consumer slower than the changes (a pipe) gets the latest state of each node.",
  });
  parser.add({
    flags: ['-f', '--format'],
    dest: 'formatter',
    choices: ['table', 'json'],
    default: 'table',
    help: 'table: a line per change; json: a JSON document per line, {"type", "uuid", "node"}',
  });
  parser.add({ flags: ['--owner'], metavar: '<owner>', help: 'Only nodes of this owner (API 1.50).' });
  parser.add({ flags: ['--lessee'], metavar: '<lessee>', help: 'Only nodes of this lessee (API 1.65).' });
  parser.add({
    flags: ['--conductor-group'],
    dest: 'conductor_group',
    metavar: '<group>',
    help: 'Only nodes of this conductor group (API 1.46).',
  });
  parser.add({
    flags: ['--shard'],
    dest: 'shards',
    metavar: '<shard>',
    action: 'append',
    help: 'Only nodes of this shard; can be repeated (API 1.82).',
  });
  parser.add({
    flags: ['--resource-class'],
    dest: 'resource_class',
    metavar: '<class>',
    help: 'Only nodes of this resource class (API 1.21).',
  });
  parser.add({ flags: ['--provision-state'], dest: 'provision_state', metavar: '<state>', help: 'Only nodes in this provision state.' });
  parser.add({ flags: ['--fault'], metavar: '<fault>', help: 'Only nodes with this fault (API 1.42).' });
  parser.add({
    flags: ['--field'],
    dest: 'fields',
    metavar: '<field>',
    action: 'append',
    help: 'Also watch this node field (power_state, maintenance, ...); can be repeated.',
  });
  parser.add({
    flags: ['--list-mode'],
    dest: 'list_mode',
    choices: ['changes', 'list'],
    default: 'changes',
    help: 'changes (default) or list.',
  });
  parser.add({ flags: ['--poll-interval'], metavar: '<seconds>', type: 'float', default: 2, help: 'Seconds between rounds (default 2).' });
  parser.add({ flags: ['--no-initial'], dest: 'no_initial', action: 'store_true', help: 'Only changes: not every node at the start.' });
  return parser;
}

function allocationCreateParser(prog) {
  const parser = new Parser({
    prog,
    description: 'Create a new baremetal allocation.',
    epilog: 'Unlike baremetal: a negative --wait is refused before the allocation is made, and the wait ends at its deadline.',
  });
  addShowOneOptions(parser);
  parser.add({ flags: ['--resource-class'], dest: 'resource_class', help: 'Resource class to request.' });
  parser.add({ flags: ['--trait'], dest: 'traits', action: 'append', help: 'A trait to request. Can be specified multiple times.' });
  parser.add({
    flags: ['--candidate-node'],
    dest: 'candidate_nodes',
    action: 'append',
    help: 'A candidate node for this allocation. Can be specified multiple times. If at least one is specified, only the provided candidate nodes are considered for the allocation.',
  });
  parser.add({ flags: ['--name'], help: 'Unique name of the allocation.' });
  parser.add({ flags: ['--uuid'], help: 'UUID of the allocation.' });
  parser.add({ flags: ['--owner'], help: 'Owner of the allocation.' });
  parser.add({
    flags: ['--extra'],
    metavar: '<key=value>',
    action: 'append',
    help: 'Record arbitrary key/value metadata. Can be specified multiple times.',
  });
  parser.add(waitOption('Wait for the new allocation to become active. An error is returned if allocation fails and --wait is used.'));
  parser.add({
    flags: ['--node'],
    help: 'Backfill this allocation from the provided node that has already been deployed. Bypasses the normal allocation process.',
  });
  return parser;
}

function allocationWaitParser(prog) {
  const parser = new Parser({ prog, description: 'Wait for an allocation to become active, then show it (not in baremetal).' });
  addShowOneOptions(parser);
  parser.addPositional({ dest: 'allocation', metavar: '<id>', help: 'UUID or name of the allocation' });
  parser.add({
    flags: ['--timeout'],
    metavar: '<seconds>',
    type: 'float',
    default: 0,
    help: 'Give up after this many seconds (default 0: no limit).',
  });
  return parser;
}

/** Every command: its words, a one-line summary and its parser. */
export const COMMANDS = [
  ...Object.keys(PROVISION).map((name) => ({
    words: ['node', name],
    summary: `Set provision state of baremetal node to '${name}'`,
    parser: (prog) => provisionParser(prog, name),
    run: (ctx, values) => runProvision(ctx, name, values),
  })),
  ...[['power', 'on'], ['power', 'off'], ['reboot'], ['power', 'reboot']].map((words) => {
    const kind = words.at(-1);
    return {
      words: ['node', ...words],
      summary:
        { on: 'Power on a node', off: 'Power off a node', reboot: 'Reboot baremetal node' }[kind] +
        (words.length === 2 && kind === 'reboot' ? ' (node reboot)' : ''),
      parser: (prog) => powerParser(prog, kind),
      run: (ctx, values) => runPower(ctx, kind, values),
    };
  }),
  { words: ['node', 'wait'], summary: 'Wait for nodes to reach a provision or power state', parser: nodeWaitParser, run: runNodeWait },
  { words: ['node', 'watch'], summary: 'Watch nodes: each node, then each change', parser: nodeWatchParser, run: runNodeWatch },
  {
    words: ['allocation', 'create'],
    summary: 'Create a new baremetal allocation',
    parser: allocationCreateParser,
    run: runAllocationCreate,
  },
  {
    words: ['allocation', 'wait'],
    summary: 'Wait for an allocation to become active',
    parser: allocationWaitParser,
    run: runAllocationWait,
  },
  { words: ['resume'], summary: 'Go on with a wait saved by --checkpoint FILE', parser: resumeParser, run: runResume },
];

function resumeParser(prog) {
  const parser = new Parser({
    prog,
    description:
      'Go on with the wait whose checkpoint --checkpoint FILE saved (in another process, after a restart): no PUT is sent twice, the deadline is kept, and the output and exit code are those the original command would have given.',
  });
  parser.addPositional({ dest: 'file', metavar: '<file>', help: 'The file --checkpoint wrote.' });
  return parser;
}

// ------------------------------------------------------------ arguments

/**
 * handle_json_arg: '-' reads stdin, an existing file is YAML (or JSON), any
 * other text must be JSON. Returns undefined for nothing (empty stdin).
 */
export function handleJsonArg(arg, what, readStdin) {
  if (arg === undefined || arg === null) return undefined;
  let text = arg;
  if (arg === '-') {
    try {
      text = readStdin().trim();
    } catch (e) {
      throw new CommandError(`Cannot get ${what} from standard input. Error: ${e.message}`);
    }
  }
  if (!text) return undefined;
  if (isFile(text)) {
    try {
      return parseYaml(readFileSync(text, 'utf8'));
    } catch (e) {
      throw new CommandError(`Cannot get JSON/YAML from file '${text}'. Error: ${e.message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CommandError(`Value '${text}' is not a file and cannot be parsed as JSON: '${e.message}'`);
  }
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isDirectory(path) {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** --config-drive as baremetal reads it: a JSON object, a file, or a directory made into an ISO. */
export function readConfigDrive(value) {
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {
    // not JSON: a path
  }
  if (isFile(value)) {
    const bytes = readFileSync(value);
    const text = bytes.toString('utf8');
    if (/^\s*[[{]/.test(text)) {
      try {
        return JSON.parse(text);
      } catch {
        // not JSON after all: sent as text
      }
    }
    if (!Buffer.from(text, 'utf8').equals(bytes)) throw new CommandError('Config drive must be a dictionary or a base64 encoded string');
    return text;
  }
  if (isDirectory(value)) return makeConfigDrive(value);
  throw new CommandError(`Config drive seems to refer to a file or directory but this file/directory does not exist: ${value}.`);
}

// A directory becomes an ISO 9660 image (genisoimage, mkisofs or xorrisofs,
// with python-ironicclient's flags), gzipped and base64-encoded.
function makeConfigDrive(dir) {
  const work = mkdtempSync(join(tmpdir(), 'ironic-wait-configdrive-'));
  try {
    const iso = join(work, 'configdrive.iso');
    const args = [
      '-o',
      iso,
      '-ldots',
      '-allow-lowercase',
      '-allow-multidot',
      '-l',
      '-publisher',
      'ironicclient-configdrive 0.1',
      '-quiet',
      '-J',
      '-r',
      '-V',
      'config-2',
      dir,
    ];
    let lastError = null;
    for (const tool of ['genisoimage', 'mkisofs', 'xorrisofs']) {
      try {
        execFileSync(tool, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        return gzipSync(readFileSync(iso)).toString('base64');
      } catch (e) {
        if (e.code !== 'ENOENT')
          throw new CommandError(`Error generating the config drive. Stderr: ${String(e.stderr ?? e.message).trim()}`);
        lastError = e;
      }
    }
    throw new CommandError(
      `Error generating the config drive. Make sure the "genisoimage", "mkisofs", or "xorriso" tool is installed. Error: ${lastError.message}`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** --extra key=value pairs: the value JSON-decoded when it can be (split_and_deserialize). */
function extraToObject(pairs) {
  // No prototype: a key `__proto__` is a key like any other, as in Python.
  const out = Object.create(null);
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 0) throw new CommandError(`Attributes must be a list of PATH=VALUE not "${pair}"`);
    const raw = pair.slice(eq + 1);
    let value = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a plain string
    }
    out[pair.slice(0, eq)] = value;
  }
  return out;
}

/** The longest timeout a JS timer holds (the library's limit), in seconds. */
const MAX_TIMEOUT = tables().limits.maxSeconds;

/**
 * baremetal's seconds (`--wait N`, `--timeout N`; 0 waits without limit) as
 * the library's wait options: `{}` for 0 (no limit), `{ timeout: N }`
 * otherwise. Checked before anything is sent (baremetal sends the action
 * first, then fails).
 */
function waitFor(seconds) {
  const { messages } = tables();
  if (seconds < 0) throw new CommandError(messages.negativeTimeout);
  if (seconds > MAX_TIMEOUT) throw new CommandError(`${messages.longTimeout}; 0 waits without limit`);
  return seconds === 0 ? {} : { timeout: seconds };
}

// ------------------------------------------------------------- commands

/**
 * ctx: { client, signal, out(text), err(text), progress(targets) -> Progress,
 * json, settle, readStdin }. Each returns the exit code.
 */
async function runProvision(ctx, name, v) {
  const spec = PROVISION[name];
  // In take_action's order: the steps, the config drive, then the runbook rule.
  const cleanSteps = handleJsonArg(v.clean_steps, 'clean steps', ctx.readStdin);
  const deploySteps = handleJsonArg(v.deploy_steps, 'deploy steps', ctx.readStdin);
  const serviceSteps = handleJsonArg(v.service_steps, 'service steps', ctx.readStdin);
  if (v.runbook && v.disable_ramdisk) throw new CommandError('You cannot supply --runbook and --disable-ramdisk together');
  const configDrive = readConfigDrive(v.config_drive);
  const wait = v.wait_timeout ?? null;
  const limit = wait === null ? null : waitFor(wait);
  // What baremetal leaves to Ironic to refuse (a rescue without a password,
  // a clean without steps: an empty value is not sent at all) the library
  // refuses before anything is sent, in Ironic's words.
  const body = {};
  if (configDrive !== undefined) body.configDrive = configDrive;
  if (cleanSteps !== undefined) body.cleanSteps = cleanSteps;
  if (deploySteps !== undefined) body.deploySteps = deploySteps;
  if (serviceSteps !== undefined) body.serviceSteps = serviceSteps;
  if (v.runbook) body.runbook = v.runbook;
  if (v.rescue_password) body.rescuePassword = v.rescue_password;
  if (v.disable_ramdisk) body.disableRamdisk = true;

  if (wait === null) {
    const sent = await ctx.client.provision(v.nodes, spec.target, { ...body, signal: ctx.signal, settle: ctx.settle });
    const refused = sent.nodes.filter((n) => n.outcome === 'error' || n.outcome === 'not-found');
    printReport(ctx, sent);
    for (const n of refused) ctx.err(`${n.error?.message ?? `Node ${n.node}: ${n.outcome}`}\n`);
    return refused.length ? 1 : 0;
  }
  // One call sends the PUTs and waits, its deadline counting from the first
  // PUT; "Waiting for" is printed once they are sent (its first checkpoint).
  const view = { command: `node ${name}`, nodes: v.nodes, expected: spec.expected, timeout: wait };
  ctx.diagnose = Boolean(v.diagnose);
  const report = await runWait(ctx, view, (hooks) =>
    ctx.client.provision(v.nodes, spec.target, {
      ...body,
      wait: true,
      ...limit,
      settle: ctx.settle,
      signal: ctx.signal,
      ...diagnosed(ctx),
      ...hooks,
    }),
  );
  return finishReport(ctx, report, spec.expected, wait);
}

async function runNodeWait(ctx, v) {
  const limit = waitFor(v.timeout);
  if (!(v.poll_interval > 0)) throw new CommandError('The poll interval must be a positive number');
  ctx.diagnose = Boolean(v.diagnose);
  const power = v.power_state !== undefined && v.power_state !== null;
  const expected = power ? v.power_state : v.state.toLowerCase();
  const view = { command: 'node wait', nodes: v.nodes, expected, timeout: v.timeout, ...(power && { what: 'power state' }) };
  waitingLine(ctx, view);
  const options = { ...limit, pollInterval: v.poll_interval, settle: ctx.settle, signal: ctx.signal, ...diagnosed(ctx) };
  const report = await runWait(ctx, view, (hooks) =>
    power
      ? ctx.client.waitForPowerState(v.nodes, v.power_state, { ...options, ...hooks })
      : ctx.client.waitForProvisionState(v.nodes, v.state, { ...options, ...hooks }),
  );
  return finishReport(ctx, report, expected, v.timeout);
}

/** `node power on|off [--soft]`, `node reboot [--soft]`: the PUTs, and with --wait the wait, printing nothing on success. */
async function runPower(ctx, kind, v) {
  // python-ironicclient's check, before anything is sent.
  if (v.power_timeout !== undefined && v.power_timeout !== null && v.power_timeout <= 0) {
    throw new CommandError(tables().messages.powerTimeout);
  }
  const wait = v.wait_timeout ?? null;
  const limit = wait === null ? null : waitFor(wait);
  const { name: action, expected } = powerAction(kind, v.soft);
  const options = { settle: ctx.settle, signal: ctx.signal };
  if (v.power_timeout !== undefined && v.power_timeout !== null) options.powerTimeout = v.power_timeout;
  if (wait === null) {
    const sent = await ctx.client.setPowerState(v.nodes, action, options);
    const refused = sent.nodes.filter((n) => n.outcome === 'error' || n.outcome === 'not-found');
    printReport(ctx, sent);
    for (const n of refused) ctx.err(`${n.error?.message ?? `Node ${n.node}: ${n.outcome}`}\n`);
    return refused.length ? 1 : 0;
  }
  ctx.diagnose = Boolean(v.diagnose);
  // baremetal prints nothing for a power action: no "Waiting for" line either.
  const view = { command: kind === 'reboot' ? 'node reboot' : `node power ${kind}`, nodes: v.nodes, expected, timeout: wait, silent: true };
  const report = await runWait(ctx, view, (hooks) =>
    ctx.client.setPowerState(v.nodes, action, { ...options, wait: true, ...limit, ...diagnosed(ctx), ...hooks }),
  );
  return finishReport(ctx, report, expected, wait);
}

/** The library's diagnose option, only when --diagnose is given (the calls stay as they were otherwise). */
function diagnosed(ctx) {
  return ctx.diagnose ? { diagnose: true } : {};
}

/**
 * --diagnose: the history events of report entries that have them (or
 * why not), as lines to print under a failure's message. Several nodes:
 * each under a line naming it.
 */
function diagnosisLines(entries) {
  const shown = entries.filter((n) => n && (n.history !== undefined || n.historyError !== undefined));
  const events = (n, indent) =>
    n.history !== undefined
      ? n.history.map((h) => `${indent}${h.created_at} ${h.severity} ${h.event_type}: ${h.event}`)
      : [`${indent}(no history: ${n.historyError})`];
  if (shown.length === 1) return events(shown[0], '  ');
  return shown.flatMap((n) => [`  ${n.node}:`, ...events(n, '    ')]);
}

async function runNodeWatch(ctx, v) {
  if (!(v.poll_interval > 0)) throw new CommandError('The poll interval must be a positive number');
  const scope = {};
  for (const [key, value] of [
    ['owner', v.owner],
    ['lessee', v.lessee],
    ['conductorGroup', v.conductor_group],
    ['shard', v.shards],
    ['resourceClass', v.resource_class],
    ['provisionState', v.provision_state],
    ['fault', v.fault],
  ]) {
    if (value !== undefined && value !== null) scope[key] = value;
  }
  const options = { scope, listMode: v.list_mode, pollInterval: v.poll_interval, initial: !v.no_initial, signal: ctx.signal };
  if (v.fields) options.fields = v.fields;
  const columns = ['provision_state', 'target_provision_state', ...(v.fields ?? []), 'last_error'];
  try {
    for await (const change of ctx.client.watch(options)) {
      if (v.formatter === 'json') {
        ctx.out(`${JSON.stringify(change)}\n`);
        continue;
      }
      const node = change.node ?? {};
      const shown = columns.filter((c) => node[c] !== undefined && node[c] !== null).map((c) => `${c}=${JSON.stringify(node[c])}`);
      ctx.out(`${`${change.type.padEnd(8)} ${node.name ?? change.uuid} ${shown.join(' ')}`.trimEnd()}\n`);
    }
  } catch (e) {
    if (!ctx.signal.aborted) throw e;
    ctx.err('Stopped watching.\n');
    return 130;
  }
  return 0;
}

/** baremetal's line as a node wait begins. */
function waitingLine(ctx, view) {
  if (!ctx.json && !view.silent)
    ctx.out(`Waiting for ${view.what ?? 'provision state'} ${view.expected} on node(s) ${view.nodes.join(', ')}\n`);
}

/**
 * Runs a node wait (`start(hooks)`, a library call given `onProgress` and
 * `onCheckpoint`): progress on stderr, baremetal's "Waiting for" line at
 * the first checkpoint of a provision (its PUTs are sent), and with
 * --checkpoint each checkpoint saved with what the output needs (`view`).
 * The library's deadline counts the PUTs, baremetal's starts after them: a
 * wait whose time ran out while its PUTs were answered has no checkpoint,
 * but baremetal printed the line before timing out, so it is printed then.
 */
async function runWait(ctx, view, start) {
  const progress = ctx.progress(view.nodes);
  let begun = view.command === 'node wait' || view.resumed;
  const onCheckpoint = (checkpoint) => {
    if (!begun) waitingLine(ctx, view);
    begun = true;
    saveCheckpoint(ctx, view, checkpoint);
  };
  try {
    const report = await start({ onProgress: progress.event, onCheckpoint });
    // Settle 'all' with every PUT refused: nothing to wait for, no checkpoint.
    if (!begun) waitingLine(ctx, view);
    return report;
  } catch (e) {
    if (!begun && e instanceof StateTransitionTimeout) waitingLine(ctx, view);
    printReport(ctx, e?.report);
    // --diagnose: the failed node's history under the message (exit 1 all the same).
    if (ctx.diagnose && e?.report && !ctx.signal.aborted) {
      const named = e.node !== undefined ? [e.node] : Array.isArray(e.nodes) ? e.nodes : null;
      const entries = e.report.nodes.filter((n) => !named || named.includes(n.node));
      const lines = diagnosisLines(entries);
      if (lines.length) throw new CommandError([e.message, ...lines].join('\n'));
    }
    throw e;
  } finally {
    progress.end();
  }
}

/**
 * --checkpoint FILE: the wait's checkpoint and what the command's output
 * needs, written to a new file and renamed over FILE (a reader never sees
 * half of one). Readable by the user alone: it may hold a rescue password
 * until the PUT carrying it is sent, and never holds a credential.
 */
function saveCheckpoint(ctx, view, checkpoint) {
  if (!ctx.checkpointFile) return;
  const { resumed, ...saved } = view;
  const text = `${JSON.stringify({ ironicWaitCli: CLI_CHECKPOINT_FORMAT, ...saved, json: ctx.json, checkpoint })}\n`;
  const temporary = `${ctx.checkpointFile}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, text, { mode: 0o600 });
    renameSync(temporary, ctx.checkpointFile);
  } catch (e) {
    // The wait goes on; only the file is missing.
    if (!ctx.checkpointFailed) ctx.err(`Cannot write the checkpoint to ${ctx.checkpointFile}: ${e.message}\n`);
    ctx.checkpointFailed = true;
  }
}

const CLI_CHECKPOINT_FORMAT = 1;

/** `ironic-wait resume FILE`: goes on with the command whose checkpoint FILE holds, with its output. */
async function runResume(ctx, v) {
  let saved;
  try {
    saved = JSON.parse(readFileSync(v.file, 'utf8'));
  } catch (e) {
    throw new CommandError(`Cannot read the checkpoint file ${v.file}: ${e instanceof SyntaxError ? 'it is not JSON' : e.message}`);
  }
  const notOurs = () => new CommandError(`${v.file} is not a checkpoint file of ironic-wait --checkpoint`);
  if (typeof saved !== 'object' || saved === null || saved.ironicWaitCli !== CLI_CHECKPOINT_FORMAT) throw notOurs();
  const { command, checkpoint } = saved;
  if (typeof checkpoint !== 'string' || typeof command !== 'string') throw notOurs();
  ctx.json ||= saved.json === true;
  // Saved again as the wait goes, unless another file is named.
  ctx.checkpointFile ??= v.file;
  if (command.startsWith('node ')) {
    const { nodes, expected, timeout } = saved;
    if (!Array.isArray(nodes) || !nodes.every((n) => typeof n === 'string') || typeof expected !== 'string' || typeof timeout !== 'number')
      throw notOurs();
    const view = { command, nodes, expected, timeout, resumed: true, silent: saved.silent === true };
    if (saved.what === 'power state') view.what = saved.what;
    waitingLine(ctx, view);
    const report = await runWait(ctx, view, (hooks) => ctx.client.resume(checkpoint, { signal: ctx.signal, ...hooks }));
    return finishReport(ctx, report, expected, timeout);
  }
  if (command === 'allocation create' || command === 'allocation wait') {
    const { show, label } = saved;
    if (typeof show !== 'object' || show === null || typeof label !== 'string') throw notOurs();
    const answer = await allocationWait(ctx, { command, show, label }, (hooks) =>
      ctx.client.resume(checkpoint, { signal: ctx.signal, ...hooks }),
    );
    return command === 'allocation create'
      ? showAllocation(ctx, show, answer.allocation, answer.report)
      : showAllocation(ctx, show, answer.allocation.body ?? {}, answer);
  }
  throw notOurs();
}

// A settled report (settle 'all', or success): JSON if asked, then one line
// per node that did not make it, in python-ironicclient's words.
function finishReport(ctx, report, expected, timeout) {
  printReport(ctx, report);
  const timedOut = [];
  // --diagnose only: a failed node's history under its message (nothing otherwise).
  const diagnosis = (entries) => {
    for (const line of diagnosisLines(entries)) ctx.err(`${line}\n`);
  };
  for (const n of report.nodes) {
    // A failure's, a refusal's or a check's error, in the library's (python-ironicclient's) words.
    if (n.outcome === 'timed-out') timedOut.push(n.node);
    else if (n.outcome !== 'reached' && n.outcome !== 'accepted') ctx.err(`${n.error?.message ?? `Node ${n.node}: ${n.outcome}`}\n`);
    diagnosis([n]);
  }
  if (timedOut.length) ctx.err(`Node(s) ${timedOut.join(', ')} failed to reach state ${expected} in ${timeout} seconds\n`);
  return report.ok ? 0 : 1;
}

/** With --json, a report (of a success, or the one a failure carries) on stdout. */
function printReport(ctx, report) {
  if (ctx.json && report) ctx.out(`${JSON.stringify(reportJson(report), null, 2)}\n`);
}

/** A report as JSON data, in its own key order: errors as { name, message, status, requestId }. */
export function reportJson(report) {
  const error = (e) =>
    e && {
      name: e.name,
      message: e.message,
      ...(e.status !== undefined && { status: e.status }),
      ...(e.requestId !== undefined && { requestId: e.requestId }),
    };
  const node = (n) => Object.fromEntries(Object.entries(n).map(([k, v]) => [k, k === 'error' ? error(v) : v]));
  return Object.fromEntries(Object.entries(report).map(([k, v]) => [k, k === 'nodes' ? v.map(node) : v]));
}

async function runAllocationCreate(ctx, v) {
  if (!v.node && !v.resource_class) throw new CommandError('--resource-class is required except when --node is used');
  const fields = {};
  if (v.name !== undefined) fields.name = v.name;
  if (v.uuid !== undefined) fields.uuid = v.uuid;
  if (v.extra !== undefined) fields.extra = extraToObject(v.extra);
  if (v.resource_class !== undefined) fields.resourceClass = v.resource_class;
  if (v.traits !== undefined) fields.traits = v.traits;
  if (v.candidate_nodes !== undefined) fields.candidateNodes = v.candidate_nodes;
  if (v.node !== undefined) fields.node = v.node;
  if (v.owner !== undefined) fields.owner = v.owner;
  const wait = v.wait_timeout ?? null;
  const limit = wait === null ? null : waitFor(wait);
  if (wait === null) {
    const { allocation } = await ctx.client.createAllocation(fields, { signal: ctx.signal });
    return showAllocation(ctx, showOptions(v), allocation, null);
  }
  const view = { command: 'allocation create', show: showOptions(v), label: fields.name ?? '' };
  const result = await allocationWait(ctx, view, (hooks) =>
    ctx.client.createAllocation(fields, { signal: ctx.signal, wait: true, ...limit, ...hooks }),
  );
  return showAllocation(ctx, view.show, result.allocation, result.report);
}

async function runAllocationWait(ctx, v) {
  const limit = waitFor(v.timeout);
  const view = { command: 'allocation wait', show: showOptions(v), label: v.allocation };
  const report = await allocationWait(ctx, view, (hooks) =>
    ctx.client.waitForAllocation(v.allocation, { ...limit, signal: ctx.signal, ...hooks }),
  );
  return showAllocation(ctx, view.show, report.allocation.body ?? {}, report);
}

/**
 * An allocation's wait (`start(hooks)`), its progress line named by
 * `view.label` or, when that is empty, by the allocation's UUID at its
 * first event; with --checkpoint its checkpoints saved.
 */
async function allocationWait(ctx, view, start) {
  let progress = null;
  const onProgress = (e) => {
    const label = view.label || e.allocation;
    progress ??= ctx.progress([label]);
    progress.event({ ...e, allocation: label });
  };
  const onCheckpoint = (checkpoint) => saveCheckpoint(ctx, view, checkpoint);
  try {
    return await start({ onProgress, onCheckpoint });
  } catch (e) {
    printReport(ctx, e?.report);
    throw e;
  } finally {
    progress?.end();
  }
}

/** How an allocation is shown: the formatter's options, saved with a checkpoint. */
function showOptions(v) {
  return { formatter: v.formatter, columns: v.columns ?? [], noindent: v.noindent, prefix: v.prefix };
}

function showAllocation(ctx, show, allocation, report) {
  if (ctx.json) {
    ctx.out(`${JSON.stringify({ allocation, report: report && reportJson(report) }, null, 2)}\n`);
    return 0;
  }
  const data = ALLOCATION_FIELDS.map((f) => (f in allocation ? allocation[f] : ''));
  try {
    ctx.out(
      formatShowOne(ALLOCATION_FIELDS, data, { format: show.formatter, only: show.columns, noindent: show.noindent, prefix: show.prefix }),
    );
  } catch (e) {
    throw new CommandError(e.message);
  }
  return 0;
}
