// The simulated Ironic: nodes, allocations, the provision state machine and
// a clock. Transitions advance lazily: every accepted action becomes a plan
// (a list of phases with durations) and one heap of due instants is drained
// up to "now" before each request is served, so 10,000 idle nodes cost
// nothing and a run is a pure function of the seed, the scenario and the
// timing of the requests.

import { rng, uuidFrom, draw, UUID_RE } from './rng.mjs';
import {
  STABLE, ALL_STATES, VERBS, FAIL_STATE, ABORT_ERROR, FAULT_OF, TARGET_OF,
  TARGET_MIN_VERSION, LATE_TARGET_MIN_VERSION, nextState,
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
};

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

/**
 * A fake-hardware node as Ironic stores it, in the order Ironic lists the
 * fields (api/controllers/v1/node.py `_get_fields_for_node_query`).
 * Timestamps are sim-clock milliseconds (or null) and rendered against the epoch.
 */
function defaultRecord() {
  return {
    uuid: null, created_at: 0, updated_at: null,
    automated_clean: null, bios_interface: 'fake', boot_interface: 'fake', boot_mode: null,
    clean_step: {}, conductor_group: '', console_enabled: false, console_interface: 'fake',
    disable_power_off: false, deploy_interface: 'fake', deploy_step: {}, description: null,
    driver: 'fake-hardware', driver_info: {}, driver_internal_info: {}, extra: {}, fault: null,
    firmware_interface: 'fake', health: null, inspection_finished_at: null,
    inspection_started_at: null, inspect_interface: 'fake', instance_info: {},
    instance_name: null, instance_uuid: null, last_error: null, lessee: null, maintenance: false,
    maintenance_reason: null, management_interface: 'fake', name: null, network_data: {},
    network_interface: 'noop', owner: null, parent_node: null, power_interface: 'fake',
    power_state: null, properties: {}, protected: false, protected_reason: null,
    provision_state: 'enroll', provision_updated_at: null, raid_config: {}, raid_interface: 'fake',
    rescue_interface: 'fake', reservation: null, resource_class: null, retired: false,
    retired_reason: null, secure_boot: null, service_step: {}, shard: null,
    storage_interface: 'noop', target_power_state: null, target_provision_state: null,
    target_raid_config: {}, traits: [], vendor_interface: 'fake',
    // Not a column of the node table: filled from the allocation, like the API does.
    allocation_uuid: null,
  };
}

export const NODE_FIELDS = Object.keys(defaultRecord());
export const TIMESTAMP_FIELDS = new Set(['created_at', 'updated_at', 'provision_updated_at', 'inspection_started_at', 'inspection_finished_at']);

const SIM_ONLY_KEYS = new Set(['timing']);

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
  constructor() { this.a = []; this.seq = 0; }
  get size() { return this.a.length; }
  peek() { return this.a[0]; }
  push(due, ref, gen) {
    const a = this.a;
    const e = { due, seq: this.seq++, ref, gen };
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(e, a[p])) break;
      a[i] = a[p]; i = p;
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
const HOLD_WORK = { deploy: 'deploying', rebuild: 'deploying', provide: 'cleaning', clean: 'cleaning', delete: 'cleaning', service: 'servicing' };
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
  node.rec.instance_info = {};
}

/** The phases `verb` walks from the node's current state, real Ironic's sequence. */
function phasesFor(verb, node, d) {
  const { provision_state: state, target_provision_state: target } = node.rec;
  switch (verb) {
    case 'deploy':
    case 'rebuild':
      return [...withWait('deploying', 'wait call-back', 'active', d), rest('active')];
    case 'provide':
      return [...withWait('cleaning', 'clean wait', 'available', d), rest('available')];
    case 'clean':
      return [...withWait('cleaning', 'clean wait', 'manageable', d), rest('manageable')];
    case 'delete': {
      const cleaning = withWait('cleaning', 'clean wait', 'available', d);
      cleaning[0].apply = clearInstance;
      return [phase('deleting', 'available', d('deleting')), ...cleaning, rest('available')];
    }
    case 'manage':
      return state === 'enroll'
        ? [phase('verifying', 'manageable', d('verifying')), rest('manageable')]
        : [rest('manageable')];
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
      return [...withWait('servicing', 'service wait', 'active', d), rest('active')];
    case 'abort': {
      if (state === 'service failed') return [rest('active')];
      const failed = FAIL_STATE[state];
      return [rest(failed, target, { last_error: ABORT_ERROR[failed] })];
    }
    case 'unhold': {
      const [wait, work] = RESUME[state];
      return [phase(wait, target, d(wait), false), phase(work, target, d(work)), rest(target)];
    }
    default:
      throw new Error(`no plan for ${verb}`);
  }
}

const TRANSITION_OUTCOMES = ['fail', 'hold', 'delete', 'stall'];
const TRANSITION_KEYS = new Set([...TRANSITION_OUTCOMES, 'node', 'action', 'at', 'after', 'times', 'maintenance']);

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
    if (rule.at ? phases[k].state === rule.at : phases[k].lock) { i = k; break; }
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
    const extra = { last_error };
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
  if (outcomes.length !== 1) throw new Error(`a transition rule needs exactly one of ${TRANSITION_OUTCOMES.join(', ')}: ${JSON.stringify(rule)}`);
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
  if (!(minor >= 1 && minor <= MAX_MINOR)) throw new Error(`maxVersion must be "1.1" to "1.${MAX_MINOR}", not ${JSON.stringify(maxVersion)}`);
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
  spec === undefined || spec === '*' ||
  (Array.isArray(spec) ? spec.includes(node.rec.name) || spec.includes(node.rec.uuid) : spec === node.rec.name || spec === node.rec.uuid);

// ---------------------------------------------------------------- the demo fleet

/** `count` nodes named node-000.. in a seeded mix of stable states. */
export function fleet(count, seed) {
  const rand = rng(seed, 'fleet');
  const width = Math.max(3, String(count - 1).length);
  const nodes = [];
  for (let i = 0; i < count; i++) {
    const r = rand();
    const provision_state = r < 0.1 ? 'enroll' : r < 0.3 ? 'manageable' : r < 0.75 ? 'available' : 'active';
    const gpu = rand() < 0.2;
    nodes.push({
      name: `node-${String(i).padStart(width, '0')}`,
      provision_state,
      resource_class: gpu ? 'gpu' : 'baremetal',
      traits: gpu ? ['CUSTOM_GPU'] : [],
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

    this.seed = seed;
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
    this.nextId = 1;
    this.allocations = new Map(); // uuid -> allocation
    this.allocationNames = new Map();
    this.histories = new Map(); // uuid -> { uuid, name, entries }
    this.uuids = rng(seed, 'uuid');
    this.requestIds = rng(seed, 'request');
    for (const def of defs) this.addNode(def, 0, 'load');
  }

  now() { return this.clock.now(); }
  toClock(simMs) { return simMs / this.timeScale; }
  iso(ms) { return ms === null ? null : new Date(this.epoch + ms).toISOString().replace('Z', '000+00:00'); }
  newUuid() { return uuidFrom(this.uuids); }
  requestId() { return `req-${uuidFrom(this.requestIds)}`; }

  /** Scripted outcomes of transitions (validated first: one bad rule adds none). */
  addTransitions(list) {
    this.transitions.push(...(Array.isArray(list) ? list : [list]).map(checkTransitionRule));
  }

  /** Apply every phase change and allocation due by `now`, in order of due instant. */
  advance(now = this.now()) {
    const heap = this.heap;
    while (heap.size && heap.peek().due <= now) {
      const { due, ref, gen } = heap.pop();
      if (ref.gen !== gen) continue; // superseded
      if (ref.kind === 'allocation') this.processAllocation(ref, due);
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
    for (const [k, v] of Object.entries(def)) {
      if (SIM_ONLY_KEYS.has(k)) continue;
      if (!(k in rec)) throw new Error(`unknown node field "${k}"`);
      rec[k] = v;
    }
    rec.uuid ??= this.newUuid();
    if (!UUID_RE.test(rec.uuid)) throw new Error(`node uuid "${rec.uuid}" is not a UUID`);
    if (this.nodes.has(rec.uuid)) throw new ApiError(409, `A node with UUID ${rec.uuid} already exists.`);
    if (rec.name !== null && this.names.has(rec.name)) throw new ApiError(409, `A node with name ${rec.name} already exists.`);
    const state = rec.provision_state;
    if (!ALL_STATES.has(state)) throw new Error(`unknown provision_state "${state}"`);
    if (!('target_provision_state' in def)) rec.target_provision_state = TARGET_OF[state] ?? null;
    if (!('power_state' in def) && action === 'load') {
      rec.power_state = state === 'enroll' ? null : ['active', 'rescue'].includes(state) ? 'power on' : 'power off';
    }
    if (!('instance_uuid' in def) && action === 'load' && state === 'active') rec.instance_uuid = this.newUuid();
    if (!('provision_updated_at' in def) && state !== 'enroll') rec.provision_updated_at = t;
    rec.created_at = t;
    // rev counts changes to rec: rendered documents are cached against it (api.mjs).
    const node = { kind: 'node', id: this.nextId++, rec, timing: checkTiming(def.timing), plan: null, gen: 0, actions: 0, rev: 0 };
    this.nodes.set(rec.uuid, node);
    if (rec.name !== null) this.names.set(rec.name, node);
    this.order.push(node);
    this.histories.set(rec.uuid, { uuid: rec.uuid, name: rec.name, entries: [] });
    this.record(node, t, action);
    return node;
  }

  removeNode(node, t, action) {
    node.gen++;
    node.plan = null;
    this.nodes.delete(node.rec.uuid);
    if (node.rec.name !== null) this.names.delete(node.rec.name);
    this.order.splice(this.orderIndex(node.id), 1);
    const alloc = node.rec.allocation_uuid && this.allocations.get(node.rec.allocation_uuid);
    if (alloc) this.removeAllocation(alloc);
    this.histories.get(node.rec.uuid).entries.push({ t, deleted: true, action });
  }

  /** Index in `order` of the first node whose id is >= `id`. */
  orderIndex(id) {
    let lo = 0, hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.order[mid].id < id) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /** One page of nodes after `marker` (a node) matching the provision state filter. */
  listNodes({ marker, limit, provisionState }) {
    const out = [];
    const order = this.order;
    for (let i = marker ? this.orderIndex(marker.id + 1) : 0; i < order.length && out.length < limit; i++) {
      if (provisionState === undefined || order[i].rec.provision_state === provisionState) out.push(order[i]);
    }
    return out;
  }

  record(node, t, action) {
    const r = node.rec;
    this.histories.get(r.uuid).entries.push({
      t, provision_state: r.provision_state, target_provision_state: r.target_provision_state,
      last_error: r.last_error, action,
    });
  }

  /** Durations for one transition of `node`, drawn from a stream of its own. */
  durations(node) {
    const spec = { ...this.timing, ...node.timing };
    const rand = rng(this.seed, 'timing', node.rec.uuid, node.actions);
    return (state) => this.toClock(draw(spec[state], rand));
  }

  startPlan(node, verb, action, t) {
    node.actions++;
    const phases = phasesFor(verb, node, this.durations(node));
    for (const rule of this.transitions) {
      if (rule.times !== undefined && rule.used >= rule.times) continue;
      if ((rule.event !== '*' && rule.event !== verb) || !matchesNode(rule.node, node)) continue;
      if (applyOutcome(phases, rule, verb, (ms) => this.toClock(ms))) { rule.used++; break; }
    }
    if (phases[0].ms !== undefined) node.rec.last_error = null; // a new operation starts afresh
    node.gen++;
    node.plan = { phases, i: -1, action };
    this.enterPhase(node, 0, t);
  }

  enterPhase(node, i, t) {
    const { phases, action } = node.plan;
    const p = phases[i];
    node.plan.i = i;
    if (p.delete) return this.removeNode(node, t, action);
    const r = node.rec;
    r.provision_state = p.state;
    r.target_provision_state = p.target;
    r.reservation = p.lock ? HOST : null;
    if (p.last_error !== undefined) r.last_error = p.last_error;
    if (p.maintenance) {
      r.maintenance = true;
      r.fault = p.fault;
      r.maintenance_reason = p.last_error;
    }
    p.apply?.(this, node);
    r.provision_updated_at = t;
    r.updated_at = t;
    node.rev++;
    this.record(node, t, action);
    if (p.ms === undefined) node.plan = null; // at rest
    else if (p.ms !== Infinity) this.heap.push(t + p.ms, node, node.gen);
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
      throw new ApiError(400, `The requested action "${target}" can not be performed on node "${r.uuid}" while it is in state "${r.provision_state}".`);
    }
    if (body.configdrive && target !== 'active' && target !== 'rebuild') {
      throw new ApiError(400, `Adding a config drive is only supported when setting provision state to active${minor >= 35 ? ', rebuild' : ''}`);
    }
    if (body.disable_ramdisk != null) {
      if (target === 'clean' || target === 'service') {
        if (minor < (target === 'clean' ? 70 : 108)) throw new ApiError(406, 'disable_ramdisk is not acceptable in this API version');
      } else {
        throw new ApiError(400, 'disable_ramdisk is supported only with manual cleaning or servicing');
      }
    }
    if (body.clean_steps?.length && target !== 'clean') throw new ApiError(400, '"clean_steps" is only valid when setting target provision state to clean');
    if (body.deploy_steps?.length) {
      if (minor < 69) throw new ApiError(406, 'Request not acceptable. The minimal required API version should be 1.69');
      if (target !== 'active' && target !== 'rebuild') throw new ApiError(400, '"deploy_steps" is only valid when setting target provision state to active or rebuild');
    }
    if (body.rescue_password != null && target !== 'rescue') throw new ApiError(400, '"rescue_password" is only valid when setting target provision state to rescue');
    if (target === 'abort' && ((r.provision_state === 'inspect wait' && minor < 41) || (r.provision_state === 'wait call-back' && minor < 110))) throw notAcceptable();
    if (LATE_TARGET_MIN_VERSION[target] > minor) throw notAcceptable();
    if (body.service_steps?.length && target !== 'service') throw new ApiError(400, '"service_steps" is only valid when setting target provision state to service');
    // A transition in progress holds the node's lock: the conductor answers NodeLocked.
    if (r.reservation) throw nodeLocked(r);
    if (target === 'rescue' && !(typeof body.rescue_password === 'string' && body.rescue_password.trim())) {
      throw new ApiError(400, 'A non-empty "rescue_password" is required when setting target provision state to rescue');
    }
    if (target === 'clean' && !body.clean_steps?.length) throw new ApiError(400, '"clean_steps" is required when setting target provision state to clean');
    if (target === 'service' && !body.service_steps?.length) throw new ApiError(400, '"service_steps" is required when setting target provision state to service');
    this.startPlan(node, verb, target, t);
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
    if (fields.name !== undefined && fields.name !== r.name) {
      if (fields.name !== null && this.names.has(fields.name)) throw new Error(`a node named ${fields.name} exists`);
      if (r.name !== null) this.names.delete(r.name);
      if (fields.name !== null) this.names.set(fields.name, node);
      this.histories.get(r.uuid).name = fields.name;
    }
    node.gen++;
    node.plan = null;
    Object.assign(r, fields);
    if (fields.provision_state !== undefined && !('target_provision_state' in fields)) {
      r.target_provision_state = TARGET_OF[r.provision_state] ?? null;
    }
    if (!('reservation' in fields)) r.reservation = null;
    r.provision_updated_at = t;
    r.updated_at = t;
    node.rev++;
    this.record(node, t, 'set');
  }

  // ------------------------------------------------------------ allocations

  findAllocation(ident) {
    return this.allocations.get(ident) ?? this.allocationNames.get(ident);
  }

  createAllocation(fields, t) {
    const alloc = {
      kind: 'allocation', gen: 0,
      uuid: fields.uuid ?? this.newUuid(), created_at: t, updated_at: null,
      candidate_nodes: fields.candidate_nodes ?? [], extra: fields.extra ?? {}, last_error: null,
      name: fields.name ?? null, owner: fields.owner ?? null, resource_class: fields.resource_class,
      state: 'allocating', traits: fields.traits ?? [], node_uuid: null,
    };
    if (this.allocations.has(alloc.uuid)) throw new ApiError(409, `An allocation with UUID ${alloc.uuid} already exists.`);
    if (alloc.name !== null && this.allocationNames.has(alloc.name)) throw new ApiError(409, `An allocation with name ${alloc.name} already exists.`);
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
      alloc.updated_at = t;
    };
    const wanted = alloc.candidate_nodes.length ? new Set(alloc.candidate_nodes) : null;
    let nodes = this.order.filter(({ rec: n }) =>
      n.resource_class === alloc.resource_class && n.provision_state === 'available' &&
      !n.instance_uuid && n.power_state !== null && !n.maintenance && (!wanted || wanted.has(n.uuid)));
    if (!nodes.length) {
      return fail(wanted
        ? `none of the requested nodes are available and match the resource class ${alloc.resource_class}`
        : `no available nodes match the resource class ${alloc.resource_class}`);
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
    node.rec.updated_at = t;
    node.rev++;
    alloc.node_uuid = node.rec.uuid;
    alloc.state = 'active';
    alloc.updated_at = t;
  }

  // ------------------------------------------------------------ for the control API

  summary() {
    const byState = {};
    for (const n of this.order) byState[n.rec.provision_state] = (byState[n.rec.provision_state] ?? 0) + 1;
    return {
      now: this.now(), seed: this.seed, timeScale: this.timeScale, manualClock: this.clock.manual,
      epoch: new Date(this.epoch).toISOString(), nodes: this.order.length, byState,
      allocations: this.allocations.size, pending: this.heap.size,
    };
  }
}

/** Ironic's NodeLocked text. */
export const lockedText = (uuid, host = HOST) =>
  `Node ${uuid} is locked by host ${host}, please retry after the current operation is completed.`;

const nodeLocked = (rec) => new ApiError(409, lockedText(rec.uuid, rec.reservation));

