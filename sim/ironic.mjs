// The simulated Ironic: nodes, allocations, the provision state machine and
// a clock. Transitions advance lazily: every accepted action becomes a plan
// (a list of phases with durations) and one heap of due instants is drained
// up to "now" before each request is served, so 10,000 idle nodes cost
// nothing and a run is a pure function of the seed, the scenario and the
// timing of the requests.

import { Budget, FAILURE_EVENT_TYPE, flowEvent, NodeHistory, POWER_EVENT_TYPE, pyFormat } from './history.mjs';
import { SortedIndex } from './order.mjs';
import { draw, rng, UUID_RE, uuidFrom } from './rng.mjs';
import {
  ABORT_ERROR,
  ALL_STATES,
  FAIL_STATE,
  FAULT_OF,
  LATE_TARGET_MIN_VERSION,
  nextState,
  STABLE,
  TARGET_MIN_VERSION,
  TARGET_OF,
  VERBS,
} from './states.mjs';

/** Sim milliseconds each working state lasts: a number, or [min, max] drawn per transition. 0 skips a wait state. */
export const DEFAULT_TIMING = {
  verifying: 1000,
  deploying: 1500,
  'wait call-back': 1000,
  deleting: 1000,
  cleaning: 2000,
  'clean wait': 0,
  inspecting: 1500,
  'inspect wait': 0,
  adopting: 500,
  rescuing: 1000,
  'rescue wait': 0,
  unrescuing: 1000,
  servicing: 1000,
  'service wait': 0,
  allocating: 30,
  // A power action: from the PUT until power_state is set and the lock released.
  power: 1000,
};

/**
 * The targets PUT /v1/nodes/{id}/states/power accepts (node.py
 * ALLOWED_TARGET_POWER_STATES; python-ironicclient and openstacksdk send
 * these strings) and the power state each ends in (_calculate_target_state).
 */
export const POWER_TARGETS = {
  'power on': 'power on',
  'power off': 'power off',
  rebooting: 'power on',
  'soft rebooting': 'power on',
  'soft power off': 'power off',
};
/** The soft targets, which (like `timeout`) need API 1.27. */
const SOFT_POWER = new Set(['soft rebooting', 'soft power off']);

export const HOST = 'localhost';

/** An error Ironic reports with its usual body (`faultcode` Client for 4xx). */
export class ApiError extends Error {
  constructor(status, faultstring, extra = {}) {
    super(faultstring);
    this.status = status;
    this.faultstring = faultstring;
    Object.assign(this, extra);
  }
}

export const notAcceptable = () => new ApiError(406, 'Request not acceptable.');

// Empty dicts and lists shared by every record (frozen: a change replaces them).
const EMPTY = Object.freeze({});
const NONE = Object.freeze([]);

/**
 * A fake-hardware node as Ironic stores it, in the order Ironic lists the
 * fields (api/controllers/v1/node.py `_get_fields_for_node_query`).
 * Timestamps are sim-clock milliseconds (or null) and rendered against the epoch.
 */
const RECORD = Object.freeze({
  uuid: null,
  created_at: 0,
  updated_at: null,
  automated_clean: null,
  bios_interface: 'fake',
  boot_interface: 'fake',
  boot_mode: null,
  clean_step: EMPTY,
  conductor_group: '',
  console_enabled: false,
  console_interface: 'fake',
  disable_power_off: false,
  deploy_interface: 'fake',
  deploy_step: EMPTY,
  description: null,
  driver: 'fake-hardware',
  driver_info: EMPTY,
  driver_internal_info: EMPTY,
  extra: EMPTY,
  fault: null,
  firmware_interface: 'fake',
  health: null,
  inspection_finished_at: null,
  inspection_started_at: null,
  inspect_interface: 'fake',
  instance_info: EMPTY,
  instance_name: null,
  instance_uuid: null,
  last_error: null,
  lessee: null,
  maintenance: false,
  maintenance_reason: null,
  management_interface: 'fake',
  name: null,
  network_data: EMPTY,
  network_interface: 'noop',
  owner: null,
  parent_node: null,
  power_interface: 'fake',
  power_state: null,
  properties: EMPTY,
  protected: false,
  protected_reason: null,
  provision_state: 'enroll',
  provision_updated_at: null,
  raid_config: EMPTY,
  raid_interface: 'fake',
  rescue_interface: 'fake',
  reservation: null,
  resource_class: null,
  retired: false,
  retired_reason: null,
  secure_boot: null,
  service_step: EMPTY,
  shard: null,
  storage_interface: 'noop',
  target_power_state: null,
  target_provision_state: null,
  target_raid_config: EMPTY,
  traits: NONE,
  vendor_interface: 'fake',
  // Not a column of the node table: filled from the allocation, like the API does.
  allocation_uuid: null,
});
// A spread copy of one template: about three times cheaper than a literal of 70 fields (100,000 nodes load).
const defaultRecord = () => ({ ...RECORD });

export const NODE_FIELDS = Object.keys(RECORD);
export const TIMESTAMP_FIELDS = new Set([
  'created_at',
  'updated_at',
  'provision_updated_at',
  'inspection_started_at',
  'inspection_finished_at',
]);

/**
 * Columns of Ironic's node table a list may sort by (db/sqlalchemy/models.py
 * NodeBase): the stored fields but `allocation_uuid` (the table has
 * `allocation_id`) and `traits` (a relationship), plus the columns the API
 * never shows. The node controller refuses some of them first (api.mjs).
 */
export const SORT_COLUMNS = new Set([
  ...NODE_FIELDS.filter((f) => f !== 'allocation_uuid' && f !== 'traits'),
  'id',
  'chassis_id',
  'conductor_affinity',
  'allocation_id',
  'version',
]);

/** Ironic's Node object version, stored in every row's `version` column. */
const NODE_VERSION = '1.44';

/**
 * The conductor that serves a node: the simulator plays one per conductor
 * group, `localhost` for the default group ('') and `conductor-<group>` for
 * the others. It is the node's `conductor` and holds its lock (`reservation`).
 */
export const conductorOf = (rec) => (rec.conductor_group ? `conductor-${rec.conductor_group}` : HOST);

/** How the database keeps timestamps: SQLite microseconds; MySQL/MariaDB whole seconds. */
export const RESOLUTIONS = ['microsecond', 'second', 'second-rounded'];

/** Wall-clock milliseconds of an ISO 8601 text, microseconds kept (Date.parse keeps only milliseconds). */
function parseIso(text) {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$/i.exec(text);
  const ms = m ? Date.parse(`${m[1]}${m[3] ?? 'Z'}`) + (m[2] ? Number(`0.${m[2]}`) * 1000 : 0) : Date.parse(text);
  if (!Number.isFinite(ms)) throw new Error(`not a timestamp: ${JSON.stringify(text)}`);
  return ms;
}

/** The demo fleet's spread of scopes, drawn from a stream of its own (the states and classes keep their draws). */
const GROUPS = ['', '', 'rack-a', 'rack-b'];
const OWNERS = [null, 'project-a', 'project-a', 'project-b', 'project-b'];
const LESSEES = [null, null, null, 'tenant-a', 'tenant-b'];
const pick = (list, rand) => list[Math.floor(rand() * list.length)];

const DAY = 24 * 3600 * 1000;

const SIM_ONLY_KEYS = new Set(['timing']);

// ---------------------------------------------------------------- agent heartbeats
//
// An agent-based node (ironic-python-agent in the ramdisk) heartbeats to
// Ironic all through a deploy, clean or service. IPA waits
// `heartbeat_timeout * random.uniform(0.3, 0.6)` between heartbeats, drawn
// afresh after each (ironic_python_agent/agent.py,
// IronicPythonAgentHeartbeater: min_jitter_multiplier 0.3,
// max_jitter_multiplier 0.6), and takes heartbeat_timeout from its lookup,
// which passes Ironic's `[api]ramdisk_heartbeat_timeout` (ironic/conf/api.py,
// default 300; api/controllers/v1/ramdisk.py): a heartbeat every 90 to 180 s.
// Each one saves `agent_last_heartbeat` in driver_internal_info (node.save():
// updated_at moves) and, in the wait states below, calls
// node.touch_provisioning() (ironic/drivers/modules/agent_base.py,
// HeartbeatMixin._heartbeat_deploy_wait, _heartbeat_clean_wait,
// _heartbeat_service_wait), whose UPDATE sets provision_updated_at to now
// and leaves provision_state alone (db/sqlalchemy/api.py
// touch_node_provisioning). Ironic's callback timeouts read that stamp: a
// live agent keeps a long wait from timing out, and a change feed sorted by
// provision_updated_at sees the node move with no change of state.

/** `[api]ramdisk_heartbeat_timeout`'s default, in seconds. */
export const HEARTBEAT_TIMEOUT = 300;
/** IPA's jitter: the next heartbeat is due this share of the timeout later, drawn uniformly. */
const HEARTBEAT_JITTER = [0.3, 0.6];
/**
 * Where a heartbeat touches provision_updated_at. Not `rescue wait` (its
 * first heartbeat finalizes the rescue: a state change, which the
 * simulator plays as the end of the wait's duration) nor `inspect wait`
 * (not in agent_base's HEARTBEAT_ALLOWED: Ironic logs and drops it).
 */
export const HEARTBEAT_TOUCHES = new Set(['wait call-back', 'clean wait', 'service wait']);

/** `heartbeatTimeout`: seconds (Ironic's default when absent), or 0/false for no heartbeats. */
function checkHeartbeatTimeout(v) {
  if (v === undefined || v === true) return HEARTBEAT_TIMEOUT;
  if (v === false || v === 0) return 0;
  if (!(typeof v === 'number' && Number.isFinite(v) && v > 0))
    throw new Error(`heartbeatTimeout must be a positive number of seconds, or 0 or false for none, not ${JSON.stringify(v)}`);
  return v;
}

// ---------------------------------------------------------------- the clock

function createClock(manual) {
  const t0 = performance.now();
  let manualNow = 0;
  return {
    manual,
    now: manual ? () => manualNow : () => performance.now() - t0,
    advance(ms) {
      if (!manual) throw new Error('the clock is real: only a manual clock can be advanced');
      if (!(ms >= 0)) throw new Error('advance needs a non-negative number of milliseconds');
      manualNow += ms;
    },
  };
}

// ---------------------------------------------------------------- the heap of due instants

class DueHeap {
  constructor() {
    this.a = [];
    this.seq = 0;
  }
  get size() {
    return this.a.length;
  }
  peek() {
    return this.a[0];
  }
  /** `commit`: a change made at an earlier instant that becomes visible at `due` (a late commit). */
  push(due, ref, gen, commit) {
    const a = this.a;
    const e = { due, seq: this.seq++, ref, gen, commit };
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(e, a[p])) break;
      a[i] = a[p];
      i = p;
    }
    a[i] = e;
  }
  pop() {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    const n = a.length;
    if (n) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const c = l + 1 < n && before(a[l + 1], a[l]) ? l + 1 : l;
        if (!before(a[c], last)) break;
        a[i] = a[c];
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}
const before = (x, y) => x.due < y.due || (x.due === y.due && x.seq < y.seq);

// ---------------------------------------------------------------- plans

const phase = (state, target, ms, lock = true) => ({ state, target, ms, lock });
const rest = (state, target = null, extra = {}) => ({ state, target, ...extra });

/** working state [-> wait state -> working state again], as the agent-based interfaces do */
function withWait(work, wait, target, d) {
  const p = [phase(work, target, d(work))];
  const w = d(wait);
  if (w > 0) p.push(phase(wait, target, w, false), phase(work, target, d(work)));
  return p;
}

const HOLD_OF = { deploying: 'deploy hold', cleaning: 'clean hold', servicing: 'service hold' };
const HOLD_WORK = {
  deploy: 'deploying',
  rebuild: 'deploying',
  provide: 'cleaning',
  clean: 'cleaning',
  delete: 'cleaning',
  service: 'servicing',
};
const RESUME = {
  'deploy hold': ['wait call-back', 'deploying'],
  'clean hold': ['clean wait', 'cleaning'],
  'service hold': ['service wait', 'servicing'],
};

function clearInstance(world, node) {
  const alloc = node.rec.allocation_uuid && world.allocations.get(node.rec.allocation_uuid);
  if (alloc) world.removeAllocation(alloc);
  node.rec.instance_uuid = null;
  node.rec.allocation_uuid = null;
  node.rec.instance_info = EMPTY;
}

/**
 * The demo churn's moves and their shares of a round. Out of and into each
 * state: available loses deploy + manage + failing deploy, gains undeploy +
 * provide + recovery (0.50 each way); active 0.42 each way.
 */
const CHURN_MOVES = [
  { from: 'available', verb: 'deploy', action: 'active', share: 0.42 },
  { from: 'active', verb: 'delete', action: 'deleted', share: 0.42 },
  { from: 'available', verb: 'manage', action: 'manage', share: 0.05 },
  { from: 'manageable', verb: 'provide', action: 'provide', share: 0.05 },
  { from: 'available', verb: 'deploy', action: 'active', share: 0.03, fail: true },
  { from: 'deploy failed', verb: 'delete', action: 'deleted', share: 0.03 },
];

/** `count` split by the moves' shares, remainders to the largest fractions: the same split every round. */
const sharesCache = new Map();
function shares(count) {
  let split = sharesCache.get(count);
  if (split) return split;
  const exact = CHURN_MOVES.map((m) => m.share * count);
  split = exact.map(Math.floor);
  let left = count - split.reduce((a, b) => a + b, 0);
  const order = exact.map((x, k) => [x - Math.floor(x), k]).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, k] of order) if (left-- > 0) split[k]++;
  if (sharesCache.size < 64) sharesCache.set(count, split);
  return split;
}

/** What the churn's failing deploys leave in last_error: the kind of text a real deployment shows. */
const CHURN_FAILURES = [
  'Deploy step deploy.write_image failed: Image download timed out after 3 attempts',
  'Timeout reached while waiting for callback for node',
  'Deploy step deploy.prepare_instance_boot failed: Failed to set boot device: IPMI call failed: chassis bootdev pxe',
  "Agent returned error for deploy step {'step': 'write_image', 'priority': 80, 'argsinfo': None, 'interface': 'deploy'}: No space left on device",
];

/** The working state a failure state comes from (FAIL_STATE backwards, the first one): what a loaded failed node's ERROR row shows. */
const FAILED_FROM = {
  enroll: 'verifying',
  'deploy failed': 'deploying',
  error: 'deleting',
  'clean failed': 'cleaning',
  'inspect failed': 'inspecting',
  'adopt failed': 'adopting',
  'rescue failed': 'rescuing',
  'unrescue failed': 'unrescuing',
  'service failed': 'servicing',
};

/** What churn flips. */
const FLIP = { available: 'manageable', manageable: 'available' };

/**
 * Marks a step flow on a plan (for node history): it starts on entering
 * phase `at` and ends when the last phase (at rest) is reached. A scripted
 * failure or hold cuts the plan before its end, so no end is written then.
 */
function flow(name, phases, { at = 0, steps } = {}) {
  phases[at].flowStart = name;
  if (steps !== undefined) phases[at].steps = steps;
  phases[phases.length - 1].flowEnd = name;
  return phases;
}

/** The flow a hold interrupted, to end when `unhold` resumes it. */
const HOLD_FLOW = { 'deploy hold': 'deployment', 'service hold': 'servicing' };

/** The phases `verb` walks from the node's current state, real Ironic's sequence. */
function phasesFor(verb, node, d, body = {}) {
  const { provision_state: state, target_provision_state: target } = node.rec;
  switch (verb) {
    case 'deploy':
    case 'rebuild':
      return flow('deployment', [...withWait('deploying', 'wait call-back', 'active', d), rest('active')]);
    case 'provide':
      return flow('automated_cleaning', [...withWait('cleaning', 'clean wait', 'available', d), rest('available')]);
    case 'clean':
      return flow('manual_cleaning', [...withWait('cleaning', 'clean wait', 'manageable', d), rest('manageable')], {
        steps: body.clean_steps,
      });
    case 'delete': {
      const cleaning = withWait('cleaning', 'clean wait', 'available', d);
      cleaning[0].apply = clearInstance;
      return flow('automated_cleaning', [phase('deleting', 'available', d('deleting')), ...cleaning, rest('available')], { at: 1 });
    }
    case 'manage':
      return state === 'enroll' ? [phase('verifying', 'manageable', d('verifying')), rest('manageable')] : [rest('manageable')];
    case 'inspect': {
      const p = [phase('inspecting', 'manageable', d('inspecting'))];
      const w = d('inspect wait');
      if (w > 0) p.push(phase('inspect wait', 'manageable', w, false));
      return [...p, rest('manageable')];
    }
    case 'adopt':
      return [phase('adopting', 'active', d('adopting')), rest('active')];
    case 'rescue':
      return [...withWait('rescuing', 'rescue wait', 'rescue', d), rest('rescue')];
    case 'unrescue':
      return [phase('unrescuing', 'active', d('unrescuing')), rest('active')];
    case 'service':
      return flow('servicing', [...withWait('servicing', 'service wait', 'active', d), rest('active')], { steps: body.service_steps });
    case 'abort': {
      if (state === 'service failed') return [rest('active')];
      const failed = FAIL_STATE[state];
      const end = rest(failed, target, { last_error: ABORT_ERROR[failed] });
      // The rescue abort journals its text as an INFO event (manager.py _do_node_rescue_abort); the others write none.
      if (failed === 'rescue failed') end.note = { event_type: 'rescue', event: ABORT_ERROR[failed] };
      return [end];
    }
    case 'unhold': {
      const [wait, work] = RESUME[state];
      const end = rest(target);
      end.flowEnd = HOLD_FLOW[state] ?? (target === 'manageable' ? 'manual_cleaning' : 'automated_cleaning');
      return [phase(wait, target, d(wait), false), phase(work, target, d(work)), end];
    }
    default:
      throw new Error(`no plan for ${verb}`);
  }
}

const TRANSITION_OUTCOMES = ['fail', 'hold', 'delete', 'stall'];
const TRANSITION_KEYS = new Set([...TRANSITION_OUTCOMES, 'node', 'action', 'at', 'after', 'times', 'maintenance']);
/** A power rule's action: one PUT target, or `power` for any of them. */
const POWER_RULE_KEYS = new Set(['node', 'action', 'fail', 'stall', 'after', 'times', 'maintenance']);
const isPowerAction = (action) => action === 'power' || Object.hasOwn(POWER_TARGETS, action);

/** Reshape `phases` by a scripted outcome; false when the rule does not fit this transition. */
function applyOutcome(phases, rule, verb, toClock) {
  if (rule.hold) {
    const work = HOLD_WORK[verb];
    const i = phases.findIndex((p) => p.state === work);
    if (i < 0) return false;
    phases.splice(i + 1, Infinity, phase(HOLD_OF[work], phases[i].target, Infinity, false));
    return true;
  }
  let i = -1;
  for (let k = phases.length - 2; k >= 0; k--) {
    if (rule.at ? phases[k].state === rule.at : phases[k].lock) {
      i = k;
      break;
    }
  }
  if (i < 0) return false;
  const at = phases[i];
  phases.length = i + 1;
  if (rule.after != null) at.ms = toClock(rule.after);
  if (rule.stall) {
    at.ms = Infinity;
  } else if (rule.delete) {
    phases.push({ delete: true });
  } else {
    const failed = FAIL_STATE[at.state];
    const last_error = typeof rule.fail === 'string' ? rule.fail : `Simulated failure of "${rule.action ?? verb}" in state ${at.state}`;
    const extra = { last_error, failure: true }; // the error handler journals an ERROR event
    if (rule.maintenance) Object.assign(extra, { maintenance: true, fault: FAULT_OF[failed] ?? null });
    phases.push(rest(failed, STABLE.has(failed) ? null : at.target, extra));
  }
  return true;
}

function checkTransitionRule(rule) {
  if (rule === null || typeof rule !== 'object') throw new Error('a transition rule is an object');
  for (const k of Object.keys(rule)) if (!TRANSITION_KEYS.has(k)) throw new Error(`unknown key "${k}" in transition rule`);
  if (rule.times !== undefined && !(Number.isInteger(rule.times) && rule.times >= 1)) throw new Error('"times" must be an integer >= 1');
  const outcomes = TRANSITION_OUTCOMES.filter((k) => rule[k] !== undefined && rule[k] !== false);
  if (outcomes.length !== 1)
    throw new Error(`a transition rule needs exactly one of ${TRANSITION_OUTCOMES.join(', ')}: ${JSON.stringify(rule)}`);
  if (isPowerAction(rule.action)) {
    // Power actions have no states to walk: they fail or hang, after their duration or `after`.
    for (const k of Object.keys(rule))
      if (!POWER_RULE_KEYS.has(k)) throw new Error(`"${k}" does not apply to power actions: ${JSON.stringify(rule)}`);
    if (rule.after !== undefined && !(rule.after >= 0)) throw new Error('"after" must be a non-negative number of milliseconds');
    return { ...rule, event: rule.action, power: true, used: 0 };
  }
  const event = rule.action === undefined || rule.action === '*' ? '*' : VERBS[rule.action];
  if (!event) throw new Error(`unknown action "${rule.action}" in transition rule`);
  if (rule.hold && event !== '*' && !HOLD_WORK[event]) throw new Error(`action "${rule.action}" has no hold state`);
  if (rule.at !== undefined && !FAIL_STATE[rule.at]) throw new Error(`"at" must be a working state, not "${rule.at}"`);
  if (rule.after !== undefined && !(rule.after >= 0)) throw new Error('"after" must be a non-negative number of milliseconds');
  return { ...rule, event, used: 0 };
}

/** The microversions this Ironic speaks: 1.1 to 1.115 (ironic master). */
export const MIN_MINOR = 1;
export const MAX_MINOR = 115;

/** `maxVersion: "1.N"` plays an older Ironic whose newest microversion is 1.N. */
function maxMinorOf(maxVersion) {
  if (maxVersion === undefined) return MAX_MINOR;
  const m = typeof maxVersion === 'string' ? /^1\.(\d+)$/.exec(maxVersion) : null;
  const minor = m ? Number(m[1]) : NaN;
  if (!(minor >= 1 && minor <= MAX_MINOR))
    throw new Error(`maxVersion must be "1.1" to "1.${MAX_MINOR}", not ${JSON.stringify(maxVersion)}`);
  return minor;
}

function checkTiming(timing = {}) {
  for (const [k, v] of Object.entries(timing)) {
    if (!(k in DEFAULT_TIMING)) throw new Error(`unknown timing key "${k}" (known: ${Object.keys(DEFAULT_TIMING).join(', ')})`);
    const ok = Array.isArray(v) ? v.length === 2 && v[0] >= 0 && v[1] >= v[0] : v >= 0;
    if (!ok) throw new Error(`timing "${k}" must be a non-negative number or [min, max]`);
  }
  return timing;
}

const matchesNode = (spec, node) =>
  spec === undefined ||
  spec === '*' ||
  (Array.isArray(spec) ? spec.includes(node.rec.name) || spec.includes(node.rec.uuid) : spec === node.rec.name || spec === node.rec.uuid);

/** `nodeHistory`: false ([conductor] node_history = False) or { steps, maxEntries }. */
function checkNodeHistory(spec) {
  if (spec === undefined || spec === true) return {};
  if (spec === false) return { enabled: false };
  if (spec === null || typeof spec !== 'object') throw new Error('"nodeHistory" is false or { steps, maxEntries }');
  for (const k of Object.keys(spec))
    if (k !== 'steps' && k !== 'maxEntries') throw new Error(`unknown key "${k}" in nodeHistory (known: steps, maxEntries)`);
  if (spec.steps !== undefined && typeof spec.steps !== 'boolean') throw new Error('nodeHistory "steps" is true or false');
  if (spec.maxEntries !== undefined && !(Number.isInteger(spec.maxEntries) && spec.maxEntries >= 1))
    throw new Error('nodeHistory "maxEntries" must be an integer >= 1');
  return { ...spec };
}

/** `churn`: { every (sim ms, 2000), fraction (of the fleet) or count (nodes) } a round; null when absent. */
function checkChurn(spec) {
  if (spec === undefined || spec === null || spec === false) return null;
  if (typeof spec !== 'object' || Array.isArray(spec)) throw new Error('"churn" is { every, fraction } or { every, count }');
  for (const k of Object.keys(spec))
    if (!['every', 'fraction', 'count'].includes(k)) throw new Error(`unknown key "${k}" in churn (known: every, fraction, count)`);
  const every = spec.every ?? 2000;
  if (!(every > 0)) throw new Error('churn "every" must be a positive number of milliseconds');
  if ((spec.fraction === undefined) === (spec.count === undefined)) throw new Error('churn needs one of "fraction" and "count"');
  if (spec.fraction !== undefined && !(spec.fraction > 0 && spec.fraction <= 1)) throw new Error('churn "fraction" must be in (0, 1]');
  if (spec.count !== undefined && !(Number.isInteger(spec.count) && spec.count >= 0))
    throw new Error('churn "count" must be an integer >= 0');
  return { every, fraction: spec.fraction, count: spec.count };
}

// ---------------------------------------------------------------- the demo fleet

/**
 * `count` nodes named node-000.. in a seeded mix of stable states, resource
 * classes, conductor groups, shards, owners and lessees.
 */
export function fleet(count, seed) {
  const rand = rng(seed, 'fleet');
  const scope = rng(seed, 'fleet scope');
  const width = Math.max(3, String(count - 1).length);
  const gpuTraits = Object.freeze(['CUSTOM_GPU']);
  const nodes = [];
  for (let i = 0; i < count; i++) {
    const r = rand();
    const provision_state = r < 0.1 ? 'enroll' : r < 0.3 ? 'manageable' : r < 0.75 ? 'available' : 'active';
    const gpu = rand() < 0.2;
    const s = scope();
    nodes.push({
      name: `node-${String(i).padStart(width, '0')}`,
      provision_state,
      resource_class: gpu ? 'gpu' : 'baremetal',
      traits: gpu ? gpuTraits : NONE,
      conductor_group: pick(GROUPS, scope),
      shard: s < 0.1 ? null : `shard-${Math.floor((s - 0.1) / 0.225)}`,
      owner: pick(OWNERS, scope),
      lessee: pick(LESSEES, scope),
    });
  }
  return nodes;
}

// ---------------------------------------------------------------- the world

export class World {
  /**
   * A world built from `opts.scenario`; seed, timeScale, nodes (a count),
   * manualClock and epoch fall back to the other options. Throws on a bad scenario.
   */
  constructor(opts = {}) {
    const { scenario = {}, ...o } = opts;
    if (scenario === null || typeof scenario !== 'object' || Array.isArray(scenario)) throw new Error('a scenario is a JSON object');
    const seed = scenario.seed ?? o.seed ?? 1;
    const timeScale = scenario.timeScale ?? o.timeScale ?? 1;
    if (!(timeScale > 0)) throw new Error('timeScale must be a positive number');
    const timing = { ...DEFAULT_TIMING, ...checkTiming(scenario.timing) };
    const nodeDefs = scenario.nodes ?? o.nodes ?? 0;
    const defs = typeof nodeDefs === 'number' ? fleet(nodeDefs, seed) : nodeDefs;
    if (!Array.isArray(defs)) throw new Error('"nodes" is a count or a list of node objects');

    const resolution = scenario.timestampResolution ?? o.timestampResolution ?? 'microsecond';
    if (!RESOLUTIONS.includes(resolution))
      throw new Error(`timestampResolution must be one of ${RESOLUTIONS.join(', ')}, not ${JSON.stringify(resolution)}`);

    this.seed = seed;
    this.resolution = resolution;
    this.skew = 0; // sim ms added to the clock when a timestamp is written
    this.lateCommit = () => 0; // ms a provision state change of (node, new state) stays invisible: the late-commit faults
    this.maxMinor = maxMinorOf(scenario.maxVersion);
    this.timeScale = timeScale;
    this.timing = timing;
    this.transitions = [];
    this.addTransitions(scenario.transitions ?? []);
    this.clock = createClock(scenario.manualClock ?? o.manualClock ?? false);
    const epoch = scenario.epoch ?? o.epoch;
    this.epoch = epoch === undefined ? Date.now() : typeof epoch === 'string' ? Date.parse(epoch) : epoch;
    if (!Number.isFinite(this.epoch)) throw new Error('epoch must be a date string or milliseconds');
    this.heap = new DueHeap();
    this.nodes = new Map(); // uuid -> node
    this.names = new Map(); // name -> node
    this.order = []; // nodes by id, for pagination
    this.indexes = new Map(); // sort key -> SortedIndex, built on first use and kept up to date
    this.cachedChars = 0; // of the node texts api.mjs caches on nodes (fullCache, subsetCache)
    this.cacheBudget = 96 * 1024 * 1024; // a detail listing of 100,000 nodes would otherwise keep 250 MB
    this.nextId = 1;
    this.allocations = new Map(); // uuid -> allocation
    this.allocationNames = new Map();
    this.nextAllocationId = 1;
    this.histories = new Map(); // uuid -> { uuid, name, entries }, made when a node is created, changed or looked at
    this.uuids = rng(seed, 'uuid');
    this.requestIds = rng(seed, 'request');
    this.loadStamps = rng(seed, 'stamps');
    this.churns = 0;
    // Both histories are bounded in all (oldest dropped first): a churning demo fleet writes thousands of entries a second.
    const historyLimit = scenario.historyLimit ?? o.historyLimit ?? 300_000;
    if (!(Number.isInteger(historyLimit) && historyLimit >= 1)) throw new Error('historyLimit must be an integer >= 1');
    this.historyBudget = new Budget(historyLimit);
    this.nodeHistory = new NodeHistory({ seed, budget: historyLimit, ...checkNodeHistory(scenario.nodeHistory) });
    this.churnSpec = checkChurn(scenario.churn);
    this.heartbeatTimeout = checkHeartbeatTimeout(scenario.heartbeatTimeout ?? o.heartbeatTimeout);
    this.heartbeats = 0; // heartbeats the conductor took (a locked node skips one)
    this.churnMoveRounds = 0;
    this.churnInstances = rng(seed, 'churn instances');
    for (const def of defs) this.addNode(def, 0, 'load');
    this.index('provision_updated_at'); // the change feed's order, ready before the first page
    if (this.churnSpec) this.heap.push(this.toClock(this.churnSpec.every), { kind: 'churn', gen: 0 }, 0);
  }

  now() {
    return this.clock.now();
  }
  toClock(simMs) {
    return simMs / this.timeScale;
  }

  /** Sim ms `ms` as the database keeps it: whole microseconds, or whole seconds (truncated, or rounded). */
  quantize(ms) {
    const wall = this.epoch + ms;
    const us =
      this.resolution === 'second'
        ? Math.floor(wall / 1000) * 1e6
        : this.resolution === 'second-rounded'
          ? Math.round(wall / 1000) * 1e6
          : Math.round(wall * 1000);
    return us / 1000 - this.epoch;
  }

  /** The timestamp a change at instant `t` writes: the server's (maybe skewed) clock at the column's resolution. */
  stamp(t) {
    return this.quantize(t + this.skew);
  }

  /** A stored timestamp as Ironic renders it (Python's isoformat: no fraction when it is 0). */
  iso(ms) {
    if (ms === null || ms === undefined) return null;
    const us = Math.round((this.epoch + ms) * 1000);
    const seconds = Math.floor(us / 1e6);
    const base = new Date(seconds * 1000).toISOString().slice(0, 19);
    const fraction = us - seconds * 1e6;
    return fraction ? `${base}.${String(fraction).padStart(6, '0')}+00:00` : `${base}+00:00`;
  }

  /** A timestamp given by a scenario or the control API: sim ms, an ISO text, or null. */
  parseStamp(v, field) {
    if (v === null) return null;
    if (typeof v === 'number' && Number.isFinite(v)) return this.quantize(v);
    if (typeof v === 'string') return this.quantize(parseIso(v) - this.epoch);
    throw new Error(`${field} must be null, sim milliseconds or an ISO 8601 text`);
  }

  /** From now on, timestamps are written `ms` off the clock (negative: the server's clock jumped back). */
  setSkew(ms) {
    if (!Number.isFinite(ms)) throw new Error('skew needs a number of milliseconds');
    this.advance(); // what fell due before keeps the skew of its instant
    this.skew = ms;
  }
  newUuid() {
    return uuidFrom(this.uuids);
  }
  requestId() {
    return `req-${uuidFrom(this.requestIds)}`;
  }

  /** Scripted outcomes of transitions (validated first: one bad rule adds none). */
  addTransitions(list) {
    this.transitions.push(...(Array.isArray(list) ? list : [list]).map(checkTransitionRule));
  }

  /** Apply every phase change and allocation due by `now`, in order of due instant. */
  advance(now = this.now()) {
    const heap = this.heap;
    while (heap.size && heap.peek().due <= now) {
      const { due, ref, gen, commit } = heap.pop();
      if (ref.gen !== gen) continue; // superseded
      if (ref.kind === 'allocation') this.processAllocation(ref, due);
      else if (ref.kind === 'power') this.finishPower(ref, due);
      else if (ref.kind === 'churn') this.churnRound(ref, due);
      else if (ref.kind === 'heartbeat') this.heartbeat(ref, due);
      else if (commit) this.commit(ref, commit, due);
      else this.enterPhase(ref, ref.plan.i + 1, due);
    }
  }

  // ------------------------------------------------------------ nodes

  findNode(ident) {
    return this.nodes.get(ident) ?? this.names.get(ident);
  }

  /** Create a node from a scenario definition or a POST body (already validated). */
  addNode(def, t, action) {
    const rec = defaultRecord();
    for (const k in def) {
      if (SIM_ONLY_KEYS.has(k)) continue;
      if (!(k in rec)) throw new Error(`unknown node field "${k}"`);
      rec[k] = TIMESTAMP_FIELDS.has(k) ? this.parseStamp(def[k], k) : def[k];
    }
    rec.uuid ??= this.newUuid();
    if (!UUID_RE.test(rec.uuid)) throw new Error(`node uuid "${rec.uuid}" is not a UUID`);
    if (this.nodes.has(rec.uuid)) throw new ApiError(409, `A node with UUID ${rec.uuid} already exists.`);
    if (rec.name !== null && this.names.has(rec.name)) throw new ApiError(409, `A node with name ${rec.name} already exists.`);
    const state = rec.provision_state;
    if (!ALL_STATES.has(state)) throw new Error(`unknown provision_state "${state}"`);
    if (!('target_provision_state' in def)) rec.target_provision_state = TARGET_OF[state] ?? null;
    if (action === 'load') {
      if (!('power_state' in def)) {
        rec.power_state = state === 'enroll' ? null : state === 'active' || state === 'rescue' ? 'power on' : 'power off';
      }
      if (!('instance_uuid' in def) && state === 'active') rec.instance_uuid = this.newUuid();
      // A loaded node was made 30 to 90 days before the epoch and last moved between then and a second before it.
      const created = this.quantize(-DAY * (30 + 60 * this.loadStamps()));
      const moved = this.quantize(created + this.loadStamps() * (-created - 1000));
      if (!('created_at' in def)) rec.created_at = created;
      if (!('provision_updated_at' in def)) rec.provision_updated_at = moved;
      if (!('updated_at' in def)) rec.updated_at = rec.provision_updated_at ?? rec.created_at;
    } else {
      rec.created_at = this.stamp(t); // a new node was never moved nor updated: both stamps null, as in Ironic
    }
    // rev counts changes to rec: rendered documents are cached against it (api.mjs).
    // power: the power action in progress; events: its node history rows (history.mjs).
    const node = {
      kind: 'node',
      id: this.nextId++,
      rec,
      timing: checkTiming(def.timing),
      plan: null,
      gen: 0,
      actions: 0,
      rev: 0,
      power: null,
      powerActions: 0,
      events: null,
      heartbeat: null, // its agent's heartbeats while it waits (syncHeartbeat)
      waits: 0, // the waits its agent heartbeated through: one stream of draws each
    };
    this.nodes.set(rec.uuid, node);
    if (rec.name !== null) this.names.set(rec.name, node);
    this.order.push(node);
    for (const index of this.indexes.values()) index.insert(node);
    if (action !== 'load')
      this.record(node, t, action); // a loaded node's history starts when it is first needed
    else if (rec.last_error) this.journalLoaded(node);
    this.syncHeartbeat(node, null, t, Infinity, action === 'load');
    return node;
  }

  /**
   * A node loaded with last_error failed before the simulator started: its
   * node history has the ERROR row Ironic wrote then, stamped when it last
   * moved (by the power sync, `monitoring`, for a power failure fault).
   */
  journalLoaded(node) {
    const r = node.rec;
    const monitoring = r.fault === 'power failure';
    const working = monitoring ? undefined : FAILED_FROM[r.provision_state];
    if (!monitoring && !working) return; // last_error on a stable node (a manage out of a failed state keeps it): no failure to journal here
    const stamp = (monitoring ? r.updated_at : r.provision_updated_at) ?? r.created_at;
    this.nodeHistory.add(
      node,
      stamp,
      conductorOf(r),
      {
        severity: 'ERROR',
        event_type: monitoring ? 'monitoring' : FAILURE_EVENT_TYPE[working],
        event: r.last_error,
        state: monitoring ? r.provision_state : working,
        target: monitoring ? r.target_provision_state : (TARGET_OF[working] ?? null),
        since: null,
      },
      { loaded: true },
    );
  }

  removeNode(node, t, action) {
    const history = this.historyOf(node);
    node.gen++;
    node.plan = null;
    this.cancelPower(node);
    this.stopHeartbeat(node);
    this.nodeHistory.drop(node);
    this.nodes.delete(node.rec.uuid);
    if (node.rec.name !== null) this.names.delete(node.rec.name);
    this.order.splice(this.orderIndex(node.id), 1);
    for (const index of this.indexes.values()) index.remove(node);
    for (const slot of ['fullCache', 'subsetCache']) if (node[slot]) this.cachedChars -= node[slot].text.length;
    const alloc = node.rec.allocation_uuid && this.allocations.get(node.rec.allocation_uuid);
    if (alloc) this.removeAllocation(alloc);
    this.addEntry(history, { t, deleted: true, action });
  }

  /** After any change to a node's record: its documents are stale, its place in the sorted indexes may move. */
  changed(node) {
    node.rev++;
    for (const index of this.indexes.values()) index.update(node);
  }

  /** Index in `order` of the first node whose id is >= `id`. */
  orderIndex(id) {
    let lo = 0,
      hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.order[mid].id < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** A node's value of a sort column (SORT_COLUMNS). */
  sortValue(key) {
    switch (key) {
      case 'id':
        return (node) => node.id;
      case 'chassis_id':
      case 'conductor_affinity':
        return () => null;
      case 'version':
        return () => NODE_VERSION;
      case 'allocation_id':
        return (node) => (node.rec.allocation_uuid && this.allocations.get(node.rec.allocation_uuid)?.id) ?? null;
      default:
        return (node) => node.rec[key];
    }
  }

  /** The nodes in (key, id) order, built on first use and kept in step with every change after. */
  index(key) {
    let index = this.indexes.get(key);
    if (!index) {
      index = new SortedIndex(this.sortValue(key), this.order);
      this.indexes.set(key, index);
    }
    return index;
  }

  /**
   * One page of `limit` nodes that `match`, in the order of `sortKey` then id,
   * both `desc` or not, after `marker` (a node) as oslo.db's paginate_query
   * bounds it with the marker's current values:
   *   (key op m.key) OR (key = m.key AND id op m.id), op `>` (asc) or `<` (desc).
   * A NULL key fails both comparisons, so a page after a marker with a value
   * never holds a node whose key is NULL (in desc, where NULLs come last, they
   * are out of reach). A marker whose own key is NULL skips the key's
   * comparison: the page is every node with id op m.id, in the sort order
   * (asc skips, desc repeats nodes with a value).
   */
  listNodes({ sortKey = 'id', desc = false, marker, limit, match }) {
    const out = [];
    const take = (node) => {
      if (!match || match(node)) out.push(node);
      return out.length >= limit;
    };
    if (sortKey === 'id' || sortKey === '') {
      // paginate_query adds an empty sort_key to nothing: by id
      const order = this.order;
      if (!desc) {
        for (let i = marker ? this.orderIndex(marker.id + 1) : 0; i < order.length; i++) if (take(order[i])) break;
      } else {
        for (let i = (marker ? this.orderIndex(marker.id) : order.length) - 1; i >= 0; i--) if (take(order[i])) break;
      }
      return out;
    }
    const index = this.index(sortKey);
    const first = desc ? index.last() : { b: 0, i: 0 };
    const dir = desc ? -1 : 1;
    if (!marker) {
      index.walk(first, dir, (e) => take(e.node));
      return out;
    }
    const value = index.sortValueOf(marker);
    const id = marker.id;
    if (value == null) {
      index.walk(first, dir, (e) => (desc ? e.id < id : e.id > id) && take(e.node));
    } else if (!desc) {
      index.walk(index.bound(value, id, true), 1, (e) => take(e.node)); // NULLs sort first: none after a value
    } else {
      const at = index.bound(value, id, false);
      index.walk(index.previous(at), -1, (e) => e.v == null || take(e.node));
    }
    return out;
  }

  /**
   * The node's history { uuid, name, entries }. A loaded node's starts with
   * the node as loaded, so it must be asked for before its first change
   * (startPlan, churn, patchNode and removeNode do).
   */
  historyOf(node) {
    const r = node.rec;
    let history = this.histories.get(r.uuid);
    if (!history) {
      history = { uuid: r.uuid, name: r.name, entries: [] };
      this.histories.set(r.uuid, history);
      this.record(node, 0, 'load');
    }
    return history;
  }

  /**
   * A history entry of the node as it is; `committed`: when a late change
   * became visible. A power action's entries also show the power state.
   */
  record(node, t, action, committed, power = false) {
    const r = node.rec;
    const entry = {
      t,
      provision_state: r.provision_state,
      target_provision_state: r.target_provision_state,
      last_error: r.last_error,
      action,
    };
    if (power) Object.assign(entry, { power_state: r.power_state, target_power_state: r.target_power_state });
    if (committed !== undefined && committed !== t) entry.committed = committed;
    let history = this.histories.get(r.uuid);
    if (!history) this.histories.set(r.uuid, (history = { uuid: r.uuid, name: r.name, entries: [] }));
    this.addEntry(history, entry);
  }

  addEntry(history, entry) {
    history.entries.push(entry);
    this.historyBudget.added(entry, history.entries);
  }

  /** A node history row (GET /v1/nodes/{id}/history) stamped `stamp` (as stored) by the node's conductor. */
  journal(node, stamp, fields) {
    return this.nodeHistory.add(node, stamp, conductorOf(node.rec), fields);
  }

  /** Durations for one transition of `node`, drawn from a stream of its own. */
  durations(node) {
    const spec = { ...this.timing, ...node.timing };
    const rand = rng(this.seed, 'timing', node.rec.uuid, node.actions);
    return (state) => this.toClock(draw(spec[state], rand));
  }

  /**
   * Start `verb` on `node` at `t`. `body`: the PUT's (steps for the history);
   * `rules: false` skips the transition rules (churn), `outcome` is a rule of
   * the caller's own.
   */
  startPlan(node, verb, action, t, { body, rules = true, outcome } = {}) {
    this.historyOf(node);
    node.actions++;
    const phases = phasesFor(verb, node, this.durations(node), body);
    const toClock = (ms) => this.toClock(ms);
    if (outcome) applyOutcome(phases, outcome, verb, toClock);
    for (const rule of rules ? this.transitions : []) {
      if (rule.power || (rule.times !== undefined && rule.used >= rule.times)) continue;
      if ((rule.event !== '*' && rule.event !== verb) || !matchesNode(rule.node, node)) continue;
      if (applyOutcome(phases, rule, verb, toClock)) {
        rule.used++;
        break;
      }
    }
    if (phases[0].ms !== undefined) node.rec.last_error = null; // a new operation starts afresh
    node.gen++;
    node.plan = { phases, i: -1, action };
    this.enterPhase(node, 0, t);
  }

  /**
   * The conductor moves `node` to phase `i` at instant `t`. A late-commit
   * fault keeps the change invisible (the old row, old stamps) until its
   * transaction commits; then it shows with the stamps of `t`.
   */
  enterPhase(node, i, t) {
    const p = node.plan.phases[i];
    const delay = p.delete ? 0 : this.lateCommit(node, p.state);
    if (delay > 0) {
      this.heap.push(t + delay, node, node.gen, { phase: i, t, stamp: this.stamp(t) });
      if (node.heartbeat) this.queueHeartbeat(node.heartbeat, t + delay); // the wait lasts until the change commits
    } else this.applyPhase(node, i, t, t, this.stamp(t));
  }

  /** Phase `i` made at `t` with the timestamp `stamp`, visible from `now`; the plan goes on from `now`. */
  applyPhase(node, i, t, now, stamp) {
    const { phases, action } = node.plan;
    const p = phases[i];
    node.plan.i = i;
    if (p.delete) return this.removeNode(node, t, action);
    const r = node.rec;
    const from = r.provision_state;
    // Written by the conductor before the state machine moves on: the row shows the working state it ends.
    const before = { state: from, target: r.target_provision_state, since: r.provision_updated_at };
    if (p.failure) {
      this.journal(node, stamp, { severity: 'ERROR', event_type: FAILURE_EVENT_TYPE[from] ?? from, event: p.last_error, ...before });
    } else if (p.flowEnd && this.nodeHistory.steps) {
      this.journal(node, stamp, { severity: 'INFO', ...flowEvent(p.flowEnd, 'end'), ...before });
    }
    r.provision_state = p.state;
    r.target_provision_state = p.target;
    r.reservation = p.lock || node.power ? conductorOf(r) : null; // a power action in progress keeps the lock
    if (p.last_error !== undefined) r.last_error = p.last_error;
    if (p.maintenance) {
      r.maintenance = true;
      r.fault = p.fault;
      r.maintenance_reason = p.last_error;
    }
    p.apply?.(this, node);
    this.stampProvision(r, from, stamp);
    this.syncHeartbeat(node, from, now, p.ms === undefined ? Infinity : now + p.ms);
    const after = { state: r.provision_state, target: r.target_provision_state, since: r.provision_updated_at };
    if (p.flowStart && this.nodeHistory.steps)
      this.journal(node, stamp, { severity: 'INFO', ...flowEvent(p.flowStart, 'start', p.steps), ...after });
    if (p.note) this.journal(node, stamp, { severity: 'INFO', ...p.note, ...after });
    this.changed(node);
    this.record(node, t, action, now);
    if (p.ms === undefined)
      node.plan = null; // at rest
    else if (p.ms !== Infinity) this.heap.push(now + p.ms, node, node.gen);
  }

  /** What the database layer writes with every provision state change (db/sqlalchemy/api.py _do_update_node). */
  stampProvision(r, from, stamp) {
    r.provision_updated_at = stamp;
    r.updated_at = stamp;
    const to = r.provision_state;
    if (to === 'inspecting') {
      r.inspection_started_at = stamp;
      r.inspection_finished_at = null;
    } else if (from === 'inspecting' || from === 'inspect wait') {
      if (to === 'manageable') {
        r.inspection_finished_at = stamp;
        r.inspection_started_at = null;
      } else if (to === 'inspect failed') {
        r.inspection_started_at = null;
      }
    }
  }

  /** A late change becomes visible (a heap entry of enterPhase or churn). */
  commit(node, commit, now) {
    if (commit.phase !== undefined) return this.applyPhase(node, commit.phase, commit.t, now, commit.stamp);
    this.applyChurn(node, commit.to, commit.t, now, commit.stamp);
  }

  /**
   * Benchmarks' churn: `count` nodes in `states` (available, manageable),
   * picked from the seed, each flips available <-> manageable at once (no
   * cleaning), stamped `t`. Late-commit faults apply. Returns what changed.
   */
  churn({ count, states = ['available', 'manageable'] } = {}, t = this.now()) {
    if (!Number.isInteger(count) || count < 0) throw new Error('churn needs "count", an integer >= 0');
    if (!Array.isArray(states) || !states.length || !states.every((st) => st in FLIP)) {
      throw new Error(`churn "states" must be a non-empty list of ${Object.keys(FLIP).join(', ')}`);
    }
    this.advance(t);
    const wanted = new Set(states);
    const candidates = [];
    for (const node of this.order) {
      if (wanted.has(node.rec.provision_state) && !node.plan && !node.rec.reservation) candidates.push(node);
    }
    const n = Math.min(count, candidates.length);
    const rand = rng(this.seed, 'churn', this.churns++);
    const changed = [];
    for (let k = 0; k < n; k++) {
      // a partial Fisher-Yates shuffle: the first n of a seeded permutation
      const j = k + Math.floor(rand() * (candidates.length - k));
      const node = candidates[j];
      candidates[j] = candidates[k];
      const from = node.rec.provision_state;
      const to = FLIP[from];
      this.historyOf(node);
      node.gen++;
      const delay = this.lateCommit(node, to);
      if (delay > 0) this.heap.push(t + delay, node, node.gen, { to, t, stamp: this.stamp(t) });
      else this.applyChurn(node, to, t, t, this.stamp(t));
      changed.push({ uuid: node.rec.uuid, name: node.rec.name, from, to, visible: t + delay });
    }
    return { t, changed };
  }

  applyChurn(node, to, t, now, stamp) {
    const r = node.rec;
    const from = r.provision_state;
    r.provision_state = to;
    r.target_provision_state = null;
    this.stampProvision(r, from, stamp);
    this.syncHeartbeat(node, from, now, Infinity);
    this.changed(node);
    this.record(node, t, 'churn', now);
  }

  /**
   * PUT /v1/nodes/{id}/states/provision, with the API's checks in the API's order
   * (api/controllers/v1/node.py NodeStatesController.provision).
   */
  provision(node, body, minor, t) {
    const r = node.rec;
    const { target } = body;
    if (typeof target !== 'string') throw new ApiError(400, 'Missing mandatory parameter: target');
    if (TARGET_MIN_VERSION[target] > minor) throw notAcceptable();
    if ((target === 'active' || target === 'rebuild') && r.maintenance) {
      throw new ApiError(400, `The provisioning operation can't be performed on node ${r.uuid} because it's in maintenance mode.`);
    }
    const verb = VERBS[target] ?? target;
    if (!nextState(r.provision_state, verb)) {
      if (r.reservation) throw nodeLocked(r);
      throw new ApiError(
        400,
        `The requested action "${target}" can not be performed on node "${r.uuid}" while it is in state "${r.provision_state}".`,
      );
    }
    if (body.configdrive && target !== 'active' && target !== 'rebuild') {
      throw new ApiError(
        400,
        `Adding a config drive is only supported when setting provision state to active${minor >= 35 ? ', rebuild' : ''}`,
      );
    }
    if (body.disable_ramdisk != null) {
      if (target === 'clean' || target === 'service') {
        if (minor < (target === 'clean' ? 70 : 108)) throw new ApiError(406, 'disable_ramdisk is not acceptable in this API version');
      } else {
        throw new ApiError(400, 'disable_ramdisk is supported only with manual cleaning or servicing');
      }
    }
    if (body.clean_steps?.length && target !== 'clean')
      throw new ApiError(400, '"clean_steps" is only valid when setting target provision state to clean');
    if (body.deploy_steps?.length) {
      if (minor < 69) throw new ApiError(406, 'Request not acceptable. The minimal required API version should be 1.69');
      if (target !== 'active' && target !== 'rebuild')
        throw new ApiError(400, '"deploy_steps" is only valid when setting target provision state to active or rebuild');
    }
    if (body.rescue_password != null && target !== 'rescue')
      throw new ApiError(400, '"rescue_password" is only valid when setting target provision state to rescue');
    if (
      target === 'abort' &&
      ((r.provision_state === 'inspect wait' && minor < 41) || (r.provision_state === 'wait call-back' && minor < 110))
    )
      throw notAcceptable();
    if (LATE_TARGET_MIN_VERSION[target] > minor) throw notAcceptable();
    if (body.service_steps?.length && target !== 'service')
      throw new ApiError(400, '"service_steps" is only valid when setting target provision state to service');
    // A transition in progress holds the node's lock: the conductor answers NodeLocked.
    if (r.reservation) throw nodeLocked(r);
    if (target === 'rescue' && !(typeof body.rescue_password === 'string' && body.rescue_password.trim())) {
      throw new ApiError(400, 'A non-empty "rescue_password" is required when setting target provision state to rescue');
    }
    if (target === 'clean' && !body.clean_steps?.length)
      throw new ApiError(400, '"clean_steps" is required when setting target provision state to clean');
    if (target === 'service' && !body.service_steps?.length)
      throw new ApiError(400, '"service_steps" is required when setting target provision state to service');
    this.startPlan(node, verb, target, t, { body });
  }

  // ------------------------------------------------------------ power

  /**
   * PUT /v1/nodes/{id}/states/power once its arguments are read (api.mjs):
   * NodeStatesController.power's checks in its order, then the conductor's
   * lock. `ident` is the node as the client named it (Ironic's texts say so).
   */
  power(node, { target, timeout }, minor, t, ident) {
    const r = node.rec;
    if ((SOFT_POWER.has(target) || timeout) && minor < 27) throw notAcceptable(); // a timeout of 0 is falsy: it gets the 400 below
    if (timeout != null && timeout < 1) throw new ApiError(400, 'timeout has to be positive integer');
    const refuse = (state) =>
      new ApiError(
        400,
        `The requested action "${pyFormat(target)}" can not be performed on node "${ident}" while it is in state "${pyFormat(state)}".`,
      );
    if (!Object.hasOwn(POWER_TARGETS, target)) throw refuse(r.power_state);
    // "Don't change power state for nodes being cleaned"
    if (r.provision_state === 'cleaning' || r.provision_state === 'clean wait') throw refuse(r.provision_state);
    if ((target === 'power off' || target === 'soft power off') && r.disable_power_off) {
      throw new ApiError(409, `Failed to set node power state to ${target}.`);
    }
    if (r.reservation) throw nodeLocked(r);
    this.startPower(node, target, t);
  }

  /**
   * The conductor's change_node_power_state: target_power_state set (on for
   * the reboots), last_error cleared and the lock held until the action ends
   * (a target already reached ends the same way, power_state unchanged).
   */
  startPower(node, target, t) {
    const r = node.rec;
    this.historyOf(node);
    const rand = rng(this.seed, 'power', r.uuid, node.powerActions++);
    let ms = this.toClock(draw({ ...this.timing, ...node.timing }.power, rand));
    let rule = null;
    for (const candidate of this.transitions) {
      if (!candidate.power || (candidate.times !== undefined && candidate.used >= candidate.times)) continue;
      if ((candidate.event !== 'power' && candidate.event !== target) || !matchesNode(candidate.node, node)) continue;
      candidate.used++;
      rule = candidate;
      break;
    }
    if (rule?.after != null) ms = this.toClock(rule.after);
    r.target_power_state = POWER_TARGETS[target];
    r.last_error = null;
    r.reservation = conductorOf(r);
    r.updated_at = this.stamp(t);
    node.power = { kind: 'power', node, gen: 0, target, rule };
    this.changed(node);
    this.record(node, t, target, undefined, true);
    if (!rule?.stall) this.heap.push(t + ms, node.power, 0); // a stalled action never ends: target kept, node locked
  }

  /** node_power_action's end: the new power state, or (a failure) the target dropped and last_error set. */
  finishPower(task, t) {
    const { node, rule } = task;
    const r = node.rec;
    const stamp = this.stamp(t);
    node.power = null;
    if (rule?.fail) {
      const cause = typeof rule.fail === 'string' ? rule.fail : 'Simulated power driver failure';
      const error = `Failed to change power state to '${r.target_power_state}' by '${task.target}': ${cause}`;
      r.target_power_state = null;
      this.journal(node, stamp, {
        severity: 'ERROR',
        event_type: POWER_EVENT_TYPE,
        event: error,
        state: r.provision_state,
        target: r.target_provision_state,
        since: r.provision_updated_at,
      });
      r.last_error = error;
      if (rule.maintenance) {
        // what the power state sync does after repeated failures
        r.maintenance = true;
        r.fault = 'power failure';
        r.maintenance_reason = error;
      }
    } else {
      r.power_state = r.target_power_state;
      r.target_power_state = null;
    }
    const phase = node.plan?.phases[node.plan.i];
    r.reservation = phase?.lock ? conductorOf(r) : null; // a provision working state keeps its lock
    r.updated_at = stamp;
    this.changed(node);
    this.record(node, t, task.target, undefined, true);
  }

  cancelPower(node) {
    if (!node.power) return;
    node.power.gen++;
    node.power = null;
  }

  // ------------------------------------------------------------ agent heartbeats

  /**
   * After `node`'s provision state may have changed from `from` at `t`:
   * its agent heartbeats while it is in a state that heartbeats touch
   * (HEARTBEAT_TOUCHES), from a stream of draws of its own for each wait.
   * `until`: when the wait ends as planned (Infinity: not planned to end);
   * a heartbeat due after it is never queued, so that the many short waits
   * of a busy fleet cost the heap nothing. `loaded`: the node was waiting
   * when the simulator started, its agent somewhere in an interval.
   */
  syncHeartbeat(node, from, t, until, loaded = false) {
    if (node.heartbeat && node.rec.provision_state === from) {
      this.queueHeartbeat(node.heartbeat, until); // the same wait goes on, maybe for longer than planned (a plan cancelled)
      return;
    }
    this.stopHeartbeat(node);
    if (!this.heartbeatTimeout || !HEARTBEAT_TOUCHES.has(node.rec.provision_state)) return;
    const rand = rng(this.seed, 'heartbeat', node.rec.uuid, node.waits++);
    const ref = { kind: 'heartbeat', node, gen: 0, rand, due: 0, queued: false };
    // The agent boots and heartbeats at once: the first comes an interval after the wait began, as a boot takes about
    // that long; a loaded node's agent is part of the way through one.
    const first = this.heartbeatInterval(rand);
    ref.due = t + (loaded ? first * rand() : first);
    node.heartbeat = ref;
    this.queueHeartbeat(ref, until);
  }

  /** Puts `ref`'s next heartbeat on the heap if it falls before `until`, when the wait is to end. */
  queueHeartbeat(ref, until) {
    if (ref.queued || ref.due >= until) return;
    ref.queued = true;
    this.heap.push(ref.due, ref, ref.gen);
  }

  stopHeartbeat(node) {
    if (!node.heartbeat) return;
    node.heartbeat.gen++;
    node.heartbeat = null;
  }

  /** Clock ms to the next heartbeat: IPA's `heartbeat_timeout * random.uniform(0.3, 0.6)`. */
  heartbeatInterval(rand) {
    const [lo, hi] = HEARTBEAT_JITTER;
    return this.toClock(this.heartbeatTimeout * 1000 * (lo + (hi - lo) * rand()));
  }

  /**
   * One heartbeat of `ref.node`'s agent, due at `t`, as the conductor takes
   * it (agent_base.py HeartbeatMixin.heartbeat): provision_updated_at and
   * updated_at stamped, the state as it was. The agent draws the next one
   * at once; a wait that lasted this long may last longer, so it is queued
   * whatever the plan.
   */
  heartbeat(ref, t) {
    const { node } = ref;
    const r = node.rec;
    ref.queued = false;
    ref.due = t + this.heartbeatInterval(ref.rand);
    this.queueHeartbeat(ref, Infinity);
    // upgrade_lock(retry=False) fails on a node a power action holds: the heartbeat is dropped ("will retry on the next heartbeat").
    if (r.reservation) return;
    const stamp = this.stamp(t);
    r.updated_at = stamp; // node.save() of driver_internal_info's agent_last_heartbeat
    // touch_provisioning; in maintenance, _heartbeat_in_maintenance only logs ([conductor]allow_provisioning_in_maintenance is True by default)
    if (!r.maintenance) r.provision_updated_at = stamp;
    this.heartbeats++;
    this.changed(node);
  }

  // ------------------------------------------------------------ the demo churn

  /** A round of the scenario's churn, due at `t`; the next one is due `every` later. */
  churnRound(ref, t) {
    const { every, fraction, count } = this.churnSpec;
    this.churnMoves(count ?? Math.round(fraction * this.order.length), t);
    this.heap.push(t + this.toClock(every), ref, ref.gen);
  }

  /**
   * `count` idle nodes (no transition, no lock, not in maintenance), picked
   * from the seed, start a provision action at `t` as an operator or Nova
   * would: deploys and undeploys mostly, some manage/provide, a few deploys
   * that fail and failed nodes undeployed. The shares move as many nodes
   * out of each state as into it, so the fleet's mix holds over time. They
   * walk the working states with the scenario's timing (transition rules
   * do not apply). Returns what started.
   */
  churnMoves(count, t = this.now()) {
    if (!Number.isInteger(count) || count < 0) throw new Error('churn needs "count", an integer >= 0');
    const rand = rng(this.seed, 'churn moves', this.churnMoveRounds++);
    const buckets = {};
    for (const m of CHURN_MOVES) buckets[m.from] = { nodes: [], taken: 0 };
    for (const node of this.order) {
      const r = node.rec;
      const bucket = buckets[r.provision_state];
      if (bucket && !node.plan && !node.power && !r.reservation && !r.maintenance) bucket.nodes.push(node);
    }
    const started = [];
    CHURN_MOVES.forEach((move, k) => {
      const bucket = buckets[move.from];
      const wanted = Math.min(shares(count)[k], bucket.nodes.length - bucket.taken);
      for (let n = 0; n < wanted; n++) {
        // a partial Fisher-Yates shuffle of the bucket, shared by its moves
        const i = bucket.taken++;
        const j = i + Math.floor(rand() * (bucket.nodes.length - i));
        const node = bucket.nodes[j];
        bucket.nodes[j] = bucket.nodes[i];
        if (move.verb === 'deploy') node.rec.instance_uuid = uuidFrom(this.churnInstances); // Nova sets it before deploying
        const outcome = move.fail ? { fail: CHURN_FAILURES[Math.floor(rand() * CHURN_FAILURES.length)] } : undefined;
        this.startPlan(node, move.verb, 'churn', t, { rules: false, outcome });
        started.push({ uuid: node.rec.uuid, name: node.rec.name, from: move.from, action: move.action, fails: Boolean(move.fail) });
      }
    });
    return { t, started };
  }

  /** Control API: set fields at once (cancels any transition in progress). */
  patchNode(node, fields, t) {
    const r = node.rec;
    for (const k of Object.keys(fields)) {
      if (!(k in r) || k === 'uuid') throw new Error(`cannot set node field "${k}"`);
    }
    if (fields.provision_state !== undefined && !ALL_STATES.has(fields.provision_state)) {
      throw new Error(`unknown provision_state "${fields.provision_state}"`);
    }
    const stamps = {};
    for (const k of Object.keys(fields)) if (TIMESTAMP_FIELDS.has(k)) stamps[k] = this.parseStamp(fields[k], k);
    const history = this.historyOf(node);
    if (fields.name !== undefined && fields.name !== r.name) {
      if (fields.name !== null && this.names.has(fields.name)) throw new Error(`a node named ${fields.name} exists`);
      if (r.name !== null) this.names.delete(r.name);
      if (fields.name !== null) this.names.set(fields.name, node);
      history.name = fields.name;
    }
    const from = r.provision_state;
    node.gen++;
    node.plan = null;
    const powering = node.power !== null;
    this.cancelPower(node);
    Object.assign(r, fields, stamps);
    if (powering && !('target_power_state' in fields)) r.target_power_state = null; // the cancelled action will not end it
    if (fields.provision_state !== undefined && !('target_provision_state' in fields)) {
      r.target_provision_state = TARGET_OF[r.provision_state] ?? null;
    }
    if (!('reservation' in fields)) r.reservation = null;
    // As the database does: a provision state written stamps provision_updated_at; any write, updated_at.
    const stamp = this.stamp(t);
    if (fields.provision_state !== undefined && !('provision_updated_at' in fields)) r.provision_updated_at = stamp;
    if (!('updated_at' in fields)) r.updated_at = stamp;
    this.syncHeartbeat(node, from, t, Infinity); // a node set into a wait state waits there for good, its agent heartbeating
    this.changed(node);
    this.record(node, t, 'set');
  }

  // ------------------------------------------------------------ allocations

  findAllocation(ident) {
    return this.allocations.get(ident) ?? this.allocationNames.get(ident);
  }

  createAllocation(fields, t) {
    const alloc = {
      kind: 'allocation',
      gen: 0,
      id: this.nextAllocationId++,
      uuid: fields.uuid ?? this.newUuid(),
      created_at: this.stamp(t),
      updated_at: null,
      candidate_nodes: fields.candidate_nodes ?? [],
      extra: fields.extra ?? {},
      last_error: null,
      name: fields.name ?? null,
      owner: fields.owner ?? null,
      resource_class: fields.resource_class,
      state: 'allocating',
      traits: fields.traits ?? [],
      node_uuid: null,
    };
    if (this.allocations.has(alloc.uuid)) throw new ApiError(409, `An allocation with UUID ${alloc.uuid} already exists.`);
    if (alloc.name !== null && this.allocationNames.has(alloc.name))
      throw new ApiError(409, `An allocation with name ${alloc.name} already exists.`);
    this.allocations.set(alloc.uuid, alloc);
    if (alloc.name !== null) this.allocationNames.set(alloc.name, alloc);
    const rand = rng(this.seed, 'allocating', alloc.uuid);
    this.heap.push(t + this.toClock(draw(this.timing.allocating, rand)), alloc, alloc.gen);
    return alloc;
  }

  removeAllocation(alloc) {
    alloc.gen++;
    this.allocations.delete(alloc.uuid);
    if (alloc.name !== null) this.allocationNames.delete(alloc.name);
  }

  /** The conductor's do_allocate (conductor/allocations.py): filter, then reserve one node. */
  processAllocation(alloc, t) {
    const fail = (error) => {
      alloc.state = 'error';
      alloc.last_error = `Failed to process allocation ${alloc.uuid}: ${error}.`;
      alloc.updated_at = this.stamp(t);
    };
    const wanted = alloc.candidate_nodes.length ? new Set(alloc.candidate_nodes) : null;
    let nodes = this.order.filter(
      ({ rec: n }) =>
        n.resource_class === alloc.resource_class &&
        n.provision_state === 'available' &&
        !n.instance_uuid &&
        n.power_state !== null &&
        !n.maintenance &&
        (!wanted || wanted.has(n.uuid)),
    );
    if (!nodes.length) {
      return fail(
        wanted
          ? `none of the requested nodes are available and match the resource class ${alloc.resource_class}`
          : `no available nodes match the resource class ${alloc.resource_class}`,
      );
    }
    if (alloc.traits.length) {
      nodes = nodes.filter(({ rec }) => alloc.traits.every((tr) => rec.traits.includes(tr)));
      if (!nodes.length) return fail(`no suitable nodes have the requested traits ${alloc.traits.join(', ')}`);
    }
    // Ironic shuffles the candidates, trying a node named like the allocation first.
    const named = alloc.name !== null && nodes.find(({ rec }) => rec.name === alloc.name);
    const node = named || nodes[Math.floor(rng(this.seed, 'pick', alloc.uuid)() * nodes.length)];
    node.rec.allocation_uuid = alloc.uuid;
    node.rec.instance_uuid = alloc.uuid;
    node.rec.updated_at = this.stamp(t);
    this.changed(node);
    alloc.node_uuid = node.rec.uuid;
    alloc.state = 'active';
    alloc.updated_at = this.stamp(t);
  }

  // ------------------------------------------------------------ for the control API

  summary() {
    const byState = {};
    for (const n of this.order) byState[n.rec.provision_state] = (byState[n.rec.provision_state] ?? 0) + 1;
    return {
      now: this.now(),
      seed: this.seed,
      timeScale: this.timeScale,
      manualClock: this.clock.manual,
      epoch: new Date(this.epoch).toISOString(),
      timestampResolution: this.resolution,
      skew: this.skew,
      heartbeatTimeout: this.heartbeatTimeout,
      heartbeats: this.heartbeats,
      nodes: this.order.length,
      byState,
      allocations: this.allocations.size,
      pending: this.heap.size,
    };
  }
}

/** Ironic's NodeLocked text. */
export const lockedText = (uuid, host = HOST) =>
  `Node ${uuid} is locked by host ${host}, please retry after the current operation is completed.`;

const nodeLocked = (rec) => new ApiError(409, lockedText(rec.uuid, rec.reservation));
