// The hub's waits: every wait any tab started, its progress sent to every tab.
// A wait is made as a checkpoint, stored, and run with `client.resume()`; its
// latest checkpoint stays in IndexedDB (store.js) while it runs, so that a
// reload, a browser restart or a new client takes it up again. A checkpoint
// holding a secret (a rescue password, the server's token) is not stored.

import { OUTCOMES } from '../states.js';
import { recordWriter } from '../store.js';
import { SAMPLE_MS, SERIES_MAX } from './scopes.js';
import { FLUSH_MS, plainError } from './tabs.js';

/** A wait of at most this many nodes shows a row per node; a larger one counts and lists its failures. */
export const ROWS_MAX = 60;
const FAILURES_MAX = 200;
/** A wait's fields a tab gets as they are. */
const SHOWN = 'id kind action label expected path startedAt endedAt timeout status counts series error resumed allocation'.split(' ');
/** Waits of at most this many nodes ask for their failed nodes' history (`diagnose`). */
const DIAGNOSE_MAX = 200;
/** Finished waits kept to show (new tabs see them too). */
const FINISHED_KEPT = 20;

const group = (outcome) => (outcome ? (OUTCOMES[outcome] ?? [outcome, 'other'])[1] : 'waiting');

/** `client()`, `token()`, `store()`: the hub's of the moment; `scopes` shows the waits' nodes moving, lends its listing. */
export function createWaits({ client, token, store, everyone, scopes }) {
  const waits = new Map(); // id -> wait (`newWait` has its fields)

  /** The running waits are dropped here, to be taken up from their checkpoints on a new client (`resumeStored`). */
  function restart() {
    for (const w of waits.values()) {
      if (w.status !== 'running') continue;
      w.restarting = true;
      w.controller.abort();
      waits.delete(w.id);
    }
  }

  /** What a tab shows of a wait: everything for a small one; counts, series and failures for a large one. */
  function snapshot(w) {
    const small = w.rows.size <= ROWS_MAX;
    const rows = small ? [...w.rows.values()] : null;
    const failures = small ? [] : w.failures.slice(0, FAILURES_MAX).map((uuid) => w.rows.get(uuid));
    const shown = Object.fromEntries(SHOWN.map((k) => [k, w[k]]));
    const saved = w.writer?.writes ?? 0;
    return { ...shown, total: w.rows.size, saved, persisted: w.persisted, rows, failures, failedCount: w.failures.length };
  }

  function markDirty(w) {
    w.flushTimer ??= setTimeout(() => flushWait(w), FLUSH_MS);
  }

  function flushWait(w) {
    clearTimeout(w.flushTimer);
    w.flushTimer = null;
    point(w);
    everyone({ t: 'wait', wait: snapshot(w) });
  }

  /** The wait's outcome counts over time: [seconds since start, waiting, reached, failed, other]. */
  function point(w) {
    const t = Math.max(0, (Date.now() - w.startedAt) / 1000);
    const c = w.counts;
    const p = [Math.round(t * 10) / 10, c.waiting, c.reached, c.failed + c['timed-out'], c.cancelled + c.sent + c.other];
    const last = w.series.at(-1);
    // One point per half second at most: a burst of events moves the last one.
    if (last && t - last[0] < 0.5 && w.series.length > 1) w.series[w.series.length - 1] = p;
    else w.series.push(p);
    if (w.series.length > SERIES_MAX) w.series = w.series.filter((_, i) => i % 2 === 0 || i === w.series.length - 1);
  }

  const ticker = setInterval(() => {
    for (const w of waits.values()) {
      if (w.status === 'running' && Date.now() - w.startedAt - (w.series.at(-1)?.[0] ?? 0) * 1000 > SAMPLE_MS) flushWait(w);
    }
  }, 1000);
  ticker.unref?.();

  function newWait({ id, kind, method, action, label, expected, path, nodes, startedAt, timeout, resumed }) {
    const counts = { waiting: 0, reached: 0, failed: 0, 'timed-out': 0, cancelled: 0, sent: 0, other: 0 };
    const rows = new Map();
    for (const [uuid, name] of nodes) {
      rows.set(uuid, { uuid, name, state: null, targetState: null, lastError: null, outcome: null, elapsed: null, seen: [], error: null });
      counts.waiting += 1;
    }
    const meta = { kind, method, action, label, expected, path, names: nodes, startedAt, timeout };
    return {
      ...meta, // kind, method, action, label, expected, path, names (of the nodes), startedAt, timeout
      id,
      endedAt: null,
      status: 'running',
      rows,
      counts,
      series: [],
      failures: [],
      failed: new Set(),
      error: null,
      resumed: Boolean(resumed),
      allocation: null, // an allocation's { uuid, node }
      controller: new AbortController(),
      restarting: false, // dropped for a new client: its end is not shown nor stored
      secret: null, // a rescue password: no checkpoint holding it is kept
      writer: null,
      persisted: false, // a checkpoint of it is in the store
      flushTimer: null,
      meta,
    };
  }

  function settleRow(w, row, outcome) {
    if (row.outcome === outcome) return;
    const before = group(row.outcome);
    row.outcome = outcome;
    const after = group(outcome);
    w.counts[before] -= 1;
    w.counts[after] += 1;
    if ((after === 'failed' || after === 'timed-out') && !w.failed.has(row.uuid)) {
      w.failed.add(row.uuid);
      w.failures.push(row.uuid);
    }
  }

  function progress(w, e) {
    const id = e.node ?? e.allocation;
    const row = w.kind === 'allocation' ? w.rows.values().next().value : w.rows.get(id);
    if (!row) return;
    if (w.kind === 'allocation' && e.allocation) w.allocation = { ...(w.allocation ?? {}), uuid: e.allocation };
    Object.assign(row, { state: e.state, targetState: e.targetState, lastError: e.lastError });
    if (row.seen.at(-1) !== e.state && row.seen.length < 30) row.seen.push(e.state);
    if (e.done) {
      settleRow(w, row, e.outcome);
      row.elapsed = e.elapsed;
    }
    patchTables(w, row);
    markDirty(w);
  }

  /** A wait's node moved: the table shows it at once, before the next round of its watches. */
  function patchTables(w, row) {
    if (row.state == null || w.kind === 'allocation') return;
    scopes.patch(
      row.uuid,
      w.kind === 'power'
        ? { power_state: row.state, target_power_state: row.targetState }
        : { provision_state: row.state, target_provision_state: row.targetState, last_error: row.lastError },
    );
  }

  /** Whether a checkpoint may be kept: nothing secret in it (a rescue password is, until its PUT is answered). */
  const keepable = (w, text) => !(w.secret && text.includes(w.secret)) && !(token() && text.includes(token()));

  /**
   * Starts a wait a tab asked for. Made as a checkpoint first and stored,
   * then run with `client.resume()`: a reload at any moment finds it. Where
   * the checkpoint would hold a secret (rescue), it is run directly and
   * stored from its first checkpoint without it.
   */
  async function start(msg) {
    const nodes = Array.isArray(msg.nodes) ? msg.nodes.map(([uuid, name]) => [String(uuid), name == null ? null : String(name)]) : [];
    const uuids = nodes.map(([uuid]) => uuid);
    const o = msg.options ?? {};
    // The options among `keys` that the tab gave.
    const given = (...keys) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
    let method, args, options;
    const kind = msg.kind;
    if (kind === 'provision') {
      method = 'provision';
      args = [uuids, msg.action];
      const more = given('wait', 'timeout', 'pollInterval', 'cleanSteps', 'serviceSteps', 'rescuePassword');
      options = { settle: 'all', holdIsTerminal: true, ...more };
    } else if (kind === 'power') {
      method = 'setPowerState';
      args = [uuids, msg.action];
      options = { settle: 'all', wait: o.wait ?? true, ...given('timeout', 'pollInterval') };
    } else if (kind === 'allocation') {
      method = 'createAllocation';
      args = [msg.fields ?? {}];
      options = { wait: o.wait ?? true, pollInterval: o.pollInterval ?? 0.5, ...given('timeout') };
      nodes.splice(0, nodes.length, ['allocation', msg.label ?? null]);
    } else {
      throw new Error(`Unknown kind of wait: ${kind}`);
    }
    // A failed node's last history events come with the report (one GET
    // each at the end): for waits small enough that this stays a handful.
    if (kind !== 'allocation' && uuids.length <= DIAGNOSE_MAX) options.diagnose = true;
    const scope = scopes.waitScope(msg.scope, uuids);
    if (scope && kind !== 'allocation') options.scope = scope;

    const w = newWait({
      id: crypto.randomUUID(),
      kind,
      method,
      action: msg.action ?? null,
      label: msg.label ?? msg.action ?? kind,
      expected: msg.expected ?? null,
      path: msg.path ?? null,
      nodes,
      startedAt: Date.now(),
      timeout: o.timeout ?? null,
    });
    w.secret = o.rescuePassword || null;
    const checkpoint = client().checkpoint(method, ...args, options);
    waits.set(w.id, w);
    w.writer = store() ? recordWriter(store(), { id: w.id, endpoint: location.origin, meta: w.meta }) : null;
    if (keepable(w, checkpoint)) {
      await w.writer?.save(checkpoint);
      w.persisted = Boolean(w.writer);
      execute(w, (callbacks) => client().resume(checkpoint, callbacks));
    } else {
      execute(w, (callbacks) => client()[method](...args, { ...options, ...callbacks }));
    }
    prune();
    flushWait(w);
    return w.id;
  }

  /** Runs a wait to its end, holding its lock (one hub runs a stored wait, when hubs are per tab). */
  function execute(w, call) {
    const body = async () => {
      const callbacks = {
        signal: w.controller.signal,
        onProgress: (e) => progress(w, e),
        onCheckpoint: (text) => {
          if (!w.writer || !keepable(w, text)) return;
          w.writer.save(text).then(() => {
            w.persisted = true;
            markDirty(w);
          });
        },
      };
      try {
        const result = await call(callbacks);
        finish(w, result);
      } catch (e) {
        if (w.restarting) return;
        if (e?.name === 'AbortError' || w.controller.signal.aborted) {
          w.status = 'cancelled';
          for (const row of w.rows.values()) if (!row.outcome) settleRow(w, row, 'aborted');
        } else {
          w.status = 'failed';
          w.error = plainError(e);
          if (w.kind === 'allocation' && e?.name === 'StateTransitionFailed') {
            const row = w.rows.values().next().value;
            Object.assign(row, { state: e.state, lastError: e.lastError });
            w.allocation = { ...(w.allocation ?? {}), uuid: e.allocation ?? w.allocation?.uuid };
            settleRow(w, row, 'failed');
            w.error = null;
          }
          for (const row of w.rows.values()) if (!row.outcome) settleRow(w, row, 'not-watched');
        }
      } finally {
        if (!w.restarting) {
          w.endedAt = Date.now();
          await w.writer?.end();
          flushWait(w);
        }
      }
    };
    if (globalThis.navigator?.locks) navigator.locks.request(`ironic-wait-wait-${w.id}`, body).catch(() => {});
    else body();
  }

  function finish(w, result) {
    w.status = 'done';
    if (w.kind === 'allocation') {
      const { allocation, report } = result;
      const body = report?.allocation?.body ?? allocation;
      const row = w.rows.values().next().value;
      Object.assign(row, { state: body?.state ?? row.state, lastError: body?.last_error ?? null });
      w.allocation = { uuid: body?.uuid ?? null, node: body?.node_uuid ?? null };
      // Created without a wait, it was sent and nothing more is known.
      settleRow(w, row, report?.allocation?.outcome ?? 'accepted');
      return;
    }
    for (const n of result.nodes ?? []) {
      const row = w.rows.get(n.node);
      if (!row) continue;
      if (n.state !== undefined) row.state = n.state;
      if (n.targetState !== undefined) row.targetState = n.targetState;
      if (n.lastError !== undefined) row.lastError = n.lastError;
      // A failed node's row shows its state and last error already.
      row.error = n.outcome === 'failed' ? null : plainError(n.error);
      if (Array.isArray(n.history))
        row.history = n.history.map((e) => ({ created_at: e.created_at, severity: e.severity, event_type: e.event_type, event: e.event }));
      if (n.historyError) row.historyError = String(n.historyError);
      row.elapsed ??= n.elapsed ?? null;
      settleRow(w, row, n.outcome);
      patchTables(w, row);
    }
  }

  function cancel(id) {
    const w = waits.get(id);
    if (w?.status === 'running') w.controller.abort();
  }

  /** Finished waits beyond FINISHED_KEPT are forgotten, oldest first. */
  function prune() {
    const done = [...waits.values()].filter((w) => w.status !== 'running');
    for (const w of done.slice(0, Math.max(0, done.length - FINISHED_KEPT))) {
      waits.delete(w.id);
      everyone({ t: 'forget', id: w.id });
    }
  }

  /** Takes up the waits kept in IndexedDB (a reload, a browser restart, a new token). */
  async function resumeStored() {
    const db = store();
    if (!db) return;
    const records = await db.all().catch(() => []);
    for (const record of records) {
      if (waits.has(record.id) || record.endpoint !== location.origin || typeof record.checkpoint !== 'string') continue;
      const m = record.meta ?? {};
      const w = newWait({ ...m, id: record.id, nodes: Array.isArray(m.names) ? m.names : [], resumed: true });
      w.writer = recordWriter(db, { id: w.id, endpoint: record.endpoint, meta: w.meta });
      w.persisted = true;
      execute(w, async (callbacks) => {
        // Another tab's hub may have run it to its end while this one waited for the lock.
        const still = await db.get(w.id).catch(() => null);
        if (!still || waits.has(w.id)) {
          w.restarting = true; // nothing of it to show or delete here
          throw new Error('gone');
        }
        waits.set(w.id, w);
        flushWait(w);
        return client().resume(still.checkpoint, callbacks);
      });
    }
  }

  const snapshots = () => [...waits.values()].map(snapshot);

  return { restart, snapshots, start, cancel, resumeStored };
}
