// Ironic's node history (the node_history table behind
// GET /v1/nodes/{id}/history, API 1.78): what the conductor journals about a
// node. Ironic writes an ERROR event wherever it sets last_error (the error
// handlers of each operation, and a failed power action), and, with
// `[conductor] record_step_flows_in_history` (True by default since Ironic
// 31.0), an INFO event when a deploy, cleaning or servicing step flow
// starts and ends. The texts, event types and fields below are those of
// ironic/conductor/utils.py (node_history_record, log_step_flow_history) and
// of a running Ironic 39 with fake-hardware.

import { rng, uuidFrom } from './rng.mjs';

/**
 * The event_type of the ERROR event a failure in a working state records:
 * each operation's error handler names its own (utils.py deploying_error_handler
 * -> 'deploying', cleaning_error_handler -> 'cleaning', inspection ->
 * 'introspection', a failed tear down -> 'unprovision', ...).
 */
export const FAILURE_EVENT_TYPE = {
  verifying: 'verifying',
  deploying: 'deploying',
  'wait call-back': 'deploying',
  'deploy hold': 'deploying',
  deleting: 'unprovision',
  cleaning: 'cleaning',
  'clean wait': 'cleaning',
  'clean hold': 'cleaning',
  inspecting: 'introspection',
  'inspect wait': 'introspection',
  adopting: 'adoption',
  rescuing: 'rescue',
  'rescue wait': 'rescue',
  unrescuing: 'rescue',
  servicing: 'servicing',
  'service wait': 'servicing',
  'service hold': 'servicing',
};

/**
 * node_power_action records its failure without an event_type, so the row
 * says "UNKNOWN" (node_history_record's default).
 */
export const POWER_EVENT_TYPE = 'UNKNOWN';

/** The steps fake-hardware runs, as the conductor's step list holds them (seen on Ironic 39). */
const DEPLOY_STEPS = Object.freeze([{ step: 'deploy', priority: 100, abortable: true, argsinfo: null, interface: 'deploy' }]);
const AUTOMATED_CLEAN_STEPS = Object.freeze([
  { step: 'log_passthrough', priority: 1, abortable: false, argsinfo: null, interface: 'vendor', requires_ramdisk: true },
]);

/**
 * The step flows (utils.StepFlow). The end event lists the steps still in
 * driver_internal_info: cleaning and servicing wipe theirs before it is
 * written (so "steps=[]"), deployment does not.
 */
export const FLOWS = {
  deployment: { start: () => DEPLOY_STEPS, end: () => DEPLOY_STEPS },
  automated_cleaning: { start: () => AUTOMATED_CLEAN_STEPS, end: () => [] },
  manual_cleaning: { start: (steps) => steps ?? [], end: () => [] },
  servicing: { start: (steps) => steps ?? [], end: () => [] },
};

/** The INFO event of a flow's start or successful end (log_step_flow_history). */
export function flowEvent(flow, status, steps) {
  // Without steps of the caller's the text is always the same: made once (a churning fleet writes thousands).
  const key = steps === undefined ? `${flow} ${status}` : null;
  const known = key && fixedEvents.get(key);
  if (known) return known;
  const words = flow.replace(/_/g, ' ');
  const list = pyRepr(FLOWS[flow][status](steps));
  const made =
    status === 'start'
      ? { event_type: `${flow}_start`, event: `Starting ${words} with steps=${list}` }
      : { event_type: `${flow}_end`, event: `${titleCase(words)} completed successfully with steps=${list}` };
  if (key) fixedEvents.set(key, Object.freeze(made));
  return made;
}
const fixedEvents = new Map();

/** Python's str.title(): "automated cleaning" -> "Automated Cleaning". */
const titleCase = (s) => s.replace(/[A-Za-z]+/g, (w) => w[0].toUpperCase() + w.slice(1).toLowerCase());

/** Python's repr of a string: single quotes unless the text has one and no double quote. */
function pyStr(s) {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/[\\\n\r\t]/g, (c) => ({ '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]);
  return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
}

/** Python's repr of a JSON value (how Ironic's texts print step lists and bad arguments). */
export function pyRepr(v) {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return pyStr(v);
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(v)
    .map(([k, x]) => `${pyStr(k)}: ${pyRepr(x)}`)
    .join(', ')}}`;
}

/** Python's `'%s' % value`: a string as is, anything else as its repr. */
export const pyFormat = (v) => (typeof v === 'string' ? v : pyRepr(v));

/**
 * Keeps at most `limit` items across many lists (oldest first in each),
 * dropping the oldest of all when over: a long demo with a churning fleet of
 * 100,000 nodes writes a thousand events a second and must not grow without
 * end. `owners` are the arrays the items were appended to; an item already
 * gone from its list (a per-node cap took it, its node was deleted) is
 * skipped.
 */
export class Budget {
  /** `pinned(item)`: an item outside the budget, which may stand first in a list before the counted ones. */
  constructor(limit, pinned = () => false) {
    this.limit = limit;
    this.pinned = pinned;
    this.count = 0;
    this.items = [];
    this.owners = [];
    this.head = 0;
  }

  /** `item` was just appended to `owner`. */
  added(item, owner) {
    this.items.push(item);
    this.owners.push(owner);
    this.count++;
    while (this.count > this.limit) this.dropOldest();
  }

  dropOldest() {
    const i = this.head++;
    const item = this.items[i];
    const owner = this.owners[i];
    this.items[i] = this.owners[i] = undefined;
    const at = owner[0] === item ? 0 : owner[1] === item && this.pinned(owner[0]) ? 1 : -1;
    if (at >= 0) {
      owner.splice(at, 1);
      this.count--;
    }
    if (this.head > 65536 && this.head * 2 > this.items.length) {
      // amortised: keep the queue short
      this.items = this.items.slice(this.head);
      this.owners = this.owners.slice(this.head);
      this.head = 0;
    }
  }
}

/**
 * The node_history table. Each node's events are on `node.events`, oldest
 * first (their ids rise with time). `maxEntries` is
 * `[conductor] node_history_max_entries` (300): Ironic prunes beyond it in a
 * periodic task, the simulator at once.
 */
export class NodeHistory {
  constructor({ seed, enabled = true, steps = true, maxEntries = 300, budget = 300_000 }) {
    this.enabled = enabled;
    this.steps = steps;
    this.maxEntries = maxEntries;
    this.uuids = rng(seed, 'node history');
    this.nextId = 1;
    // The rows of nodes loaded failed: outside the budget, so a long churn does not take them.
    this.loaded = new Set();
    this.budget = new Budget(budget, (ev) => this.loaded.has(ev));
  }

  /**
   * A row for `node`, written at `stamp` (sim ms, as stored) by its conductor,
   * with the node's provision state as it is when written and the seconds
   * since provision_updated_at (duration_seconds, an int() of them).
   */
  add(node, stamp, conductor, { severity, event_type, event, state, target, since }, { loaded = false } = {}) {
    if (!this.enabled) return undefined;
    const ev = {
      id: this.nextId++,
      uuid: uuidFrom(this.uuids),
      node_id: node.id,
      created_at: stamp,
      severity,
      event_type,
      event,
      conductor,
      user: null, // noauth: no user in the request context
      project: null,
      state,
      target_provision_state: target,
      duration_seconds: since == null ? null : Math.trunc((stamp - since) / 1000),
    };
    const events = (node.events ??= []);
    events.push(ev);
    if (events.length > this.maxEntries) this.forget(events.shift());
    if (loaded) this.loaded.add(ev);
    else this.budget.added(ev, events);
    return ev;
  }

  /** A row left its node's list (the budget's queue skips it when it comes up). */
  forget(ev) {
    if (!this.loaded.delete(ev)) this.budget.count--;
  }

  /** A deleted node's rows go with it (the table's rows reference the node). */
  drop(node) {
    if (!node.events) return;
    for (const ev of node.events) this.forget(ev);
    node.events.length = 0;
  }

  /** The row with this uuid, looked for in `first` (a node) and then in every node, as the table is one. */
  find(uuid, first, nodes) {
    const own = first?.events?.find((e) => e.uuid === uuid);
    if (own) return own;
    for (const node of nodes) {
      if (!node.events?.length || node === first) continue;
      const ev = node.events.find((e) => e.uuid === uuid);
      if (ev) return ev;
    }
    return undefined;
  }
}
