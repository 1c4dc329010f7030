// The hub: the one place that holds the IronicClient, so that every tab of
// the console is served by one client and its one poll loop. It runs as a
// module SharedWorker (app.js starts it; N tabs, one hub) or, in a browser
// without SharedWorker, inside the page (one hub per tab). Tabs talk to it
// over MessagePorts (connection.js has the page's side and the messages).
//
// It keeps:
// - one `client.watch()` per scope some tab shows (the same scope in five
//   tabs is one watch), whose changes it forwards to those tabs;
// - every wait any tab started, with its progress sent to every tab;
// - each running wait's latest checkpoint in IndexedDB (store.js), so that a
//   reload or a browser restart takes it up again with `client.resume()`.
// The console server's token comes from a tab's message and lives in this
// hub's memory only: not in IndexedDB, not in a checkpoint.

import { inScope, normalScope, scopeKey, useScopeFilters } from './scope.js';
import { OUTCOMES } from './states.js';
import { openStore, recordWriter } from './store.js';

// A module SharedWorker gets its first `connect` event as soon as its script
// has run; a listener added after an await would miss it. So: no top-level
// await here, no static import of the package (its entry awaits the wasm).
const inSharedWorker = typeof SharedWorkerGlobalScope === 'function' && globalThis instanceof SharedWorkerGlobalScope;
if (inSharedWorker) {
  const hub = createHub({ mode: 'shared' });
  globalThis.addEventListener('connect', (event) => hub.accept(event.ports[0]));
}

/** Seconds between the table's rounds (the change feed: one request a quiet round). */
const FEED_INTERVAL = 2;
/** Table changes and wait progress are sent to tabs at most this often (ms). */
const FLUSH_MS = 200;
/** Nodes per message of a table snapshot, so that a tab takes 100,000 in slices. */
const SNAPSHOT_SLICE = 5000;
/** The fleet chart: a point every SAMPLE_MS, the last SERIES_MAX of them (15 minutes). */
const SAMPLE_MS = 2000;
const SERIES_MAX = 450;
/** A wait of at most this many nodes shows a row per node; a larger one counts and lists its failures. */
export const ROWS_MAX = 60;
const FAILURES_MAX = 200;
/** Waits of at most this many nodes ask for their failed nodes' history (`diagnose`). */
const DIAGNOSE_MAX = 200;
/** Finished waits kept to show (new tabs see them too). */
const FINISHED_KEPT = 20;
/** A scope whose listing brought nothing after this long is shown as empty (a watch says nothing of an empty scope). */
const EMPTY_AFTER_MS = 2500;

/**
 * The table's columns beyond the change feed's, watched by listing the scope
 * in full (Ironic's provision stamp does not move for them).
 */
const COLUMNS = ['power_state', 'target_power_state', 'maintenance', 'resource_class', 'fault', 'conductor_group', 'owner', 'shard'];

/** An error as plain data for postMessage (a structured clone keeps neither the class nor its fields). */
export function plainError(e) {
  if (e == null) return null;
  if (typeof e !== 'object') return { name: 'Error', message: String(e) };
  const out = { name: e.name ?? 'Error', message: e.message ?? String(e) };
  for (const k of ['status', 'requestId', 'detail', 'node', 'allocation', 'state', 'lastError', 'expected']) {
    if (e[k] !== undefined && (e[k] === null || typeof e[k] !== 'object')) out[k] = e[k];
  }
  return out;
}

const group = (outcome) => (outcome ? (OUTCOMES[outcome] ?? [outcome, 'other'])[1] : 'waiting');
const minor = (v) => Number(/^1\.(\d+)$/.exec(v ?? '')?.[1] ?? 0);

/**
 * A hub. `accept(port)` serves one tab over `port`.
 * @param {{ mode: 'shared' | 'page' }} options
 */
export function createHub({ mode }) {
  const tabs = new Set();
  const scopes = new Map(); // key -> scope state
  const waits = new Map(); // id -> wait
  const extras = new Map(); // uuid -> the fields watch's fields last seen of it, for every scope
  let pkg = null;
  let client = null;
  let token = null;
  let booting = null;
  let store; // undefined: not opened yet; null: none
  let microversion = null;
  /** [column, the API version 1.x (its x) that brought it], from the package's tables. */
  let extraFields = [];

  // ------------------------------------------------------------------ tabs

  function accept(port) {
    const tab = { port, id: null, scope: null, queue: Promise.resolve() };
    tabs.add(tab);
    port.onmessage = (event) => {
      // One message at a time per tab, in order: a subscribe waits for the hello's start-up.
      tab.queue = tab.queue
        .then(() => handle(tab, event.data))
        .catch((e) => post(tab, { t: 'error', context: 'Console hub', error: plainError(e) }));
    };
    port.start?.();
  }

  function post(tab, message) {
    try {
      tab.port.postMessage(message);
    } catch {
      drop(tab);
    }
  }

  const everyone = (message) => {
    for (const tab of tabs) post(tab, message);
  };

  function drop(tab) {
    if (!tabs.delete(tab)) return;
    leave(tab);
    tab.port.close?.();
  }

  async function handle(tab, msg) {
    if (!msg || typeof msg !== 'object') return;
    if (msg.t === 'hello') return hello(tab, msg);
    if (msg.t === 'bye') return drop(tab);
    if (!client) return; // nothing before a hello started the client
    await booting;
    switch (msg.t) {
      case 'subscribe':
        return subscribe(tab, msg.scope);
      case 'unsubscribe':
        return leave(tab);
      case 'refresh':
        return refresh(tab);
      case 'run':
        return reply(tab, msg.req, () => startWait(msg));
      case 'cancel':
        return cancelWait(msg.id);
      case 'node':
        return reply(tab, msg.req, () => client.getNode(msg.uuid));
      case 'history':
        return reply(tab, msg.req, () => history(msg.uuid));
      default:
    }
  }

  async function reply(tab, req, work) {
    try {
      post(tab, { t: 'reply', req, ok: true, value: await work() });
    } catch (e) {
      post(tab, { t: 'reply', req, ok: false, error: plainError(e) });
    }
  }

  async function hello(tab, { token: given, tab: id }) {
    tab.id = String(id ?? '');
    // A tab that goes away (closed, reloaded, crashed) sends no goodbye for
    // sure; the lock it holds for its life is released when it goes.
    if (mode === 'shared' && tab.id && globalThis.navigator?.locks) {
      navigator.locks.request(`ironic-wait-tab-${tab.id}`, () => drop(tab)).catch(() => {});
    }
    try {
      await boot(String(given ?? ''));
    } catch (e) {
      post(tab, { t: 'fatal', error: plainError(e) });
      return;
    }
    post(tab, {
      t: 'hello',
      mode,
      version: pkg.version(),
      tables: pkg.tables(),
      microversion,
      waits: [...waits.values()].map(snapshot),
    });
  }

  /**
   * Makes the client with `newToken`. A token other than the current one
   * means the console server was restarted (a new token each start): the
   * old client's requests are refused from now on, so its watches and waits
   * are taken up again on a new client (the waits from their checkpoints).
   */
  function boot(newToken) {
    if (client && newToken === token) return booting;
    token = newToken;
    booting = (async () => {
      try {
        pkg ??= await import('/pkg/web.js');
      } catch (e) {
        throw new Error(
          `The ironic-wait package could not be loaded from /pkg/ (${e.message}). Build it with \`npm run build\` (\`npm start\` does).`,
        );
      }
      const { scopeFilters, versions } = pkg.tables();
      useScopeFilters(scopeFilters);
      // Each column with the API version that brought it (a `fields` naming
      // a newer one is a 406): a scope filter's field came with the filter.
      extraFields = COLUMNS.map((f) => [f, scopeFilters.find(([, field]) => field === f)?.[2] ?? versions.fields]);
      if (store === undefined) store = await openStore().catch(() => null);
      if (client) {
        for (const w of waits.values()) {
          if (w.status !== 'running') continue;
          w.restarting = true;
          w.controller.abort();
          waits.delete(w.id);
        }
        for (const s of scopes.values()) stopWatches(s);
      }
      client = new pkg.IronicClient({ endpoint: location.origin, headers: { 'X-Console-Token': token } });
      const current = client;
      microversion = null;
      // Negotiated once, in the background: the watches need the answer for
      // their fields, and they wait on the same negotiation anyway.
      current.microversion().then(
        (v) => {
          if (client !== current) return;
          microversion = v;
          everyone({ t: 'microversion', microversion: v });
        },
        (e) => {
          if (client !== current) return;
          everyone({ t: 'microversion', microversion: null, error: plainError(e) });
        },
      );
      for (const s of scopes.values()) if (s.subs.size) startWatches(s);
      resumeStored();
    })();
    booting.catch(() => {
      client = null; // the next hello tries again
    });
    return booting;
  }

  // ----------------------------------------------------------- the table

  function subscribe(tab, scope) {
    const key = scopeKey(scope);
    if (tab.scope === key) return sendSnapshot(tab, scopes.get(key));
    leave(tab);
    let s = scopes.get(key);
    if (!s) {
      s = {
        key,
        scope: normalScope(scope),
        subs: new Set(),
        model: new Map(),
        counts: new Map(),
        pending: new Map(),
        gen: 0,
        watch: null,
        error: null,
        columns: false,
        timers: new Set(),
        loaded: false,
        status: { at: null, error: null },
        series: [],
      };
      scopes.set(key, s);
    }
    tab.scope = key;
    s.subs.add(tab);
    if (s.subs.size === 1) startWatches(s);
    sendSnapshot(tab, s);
  }

  /** The tab no longer shows its scope; a scope nobody shows is no longer watched (nothing is listed for it). */
  function leave(tab) {
    const s = tab.scope && scopes.get(tab.scope);
    tab.scope = null;
    if (!s) return;
    s.subs.delete(tab);
    if (s.subs.size === 0) {
      stopWatches(s);
      scopes.delete(s.key);
    }
  }

  /** Lists the tab's scope afresh (after the demo fleet was reset, say). */
  function refresh(tab) {
    const s = tab.scope && scopes.get(tab.scope);
    if (!s) return;
    stopWatches(s);
    clearModel(s);
    startWatches(s);
  }

  function clearModel(s) {
    s.model.clear();
    s.counts.clear();
    s.pending.clear();
    s.loaded = false;
    for (const tab of s.subs) sendSnapshot(tab, s);
  }

  function sendSnapshot(tab, s) {
    const nodes = [...s.model.values()];
    const last = Math.max(1, Math.ceil(nodes.length / SNAPSHOT_SLICE));
    for (let i = 0; i < last; i++) {
      const end = i === last - 1;
      post(tab, {
        t: 'table',
        key: s.key,
        reset: i === 0,
        upserts: nodes.slice(i * SNAPSHOT_SLICE, (i + 1) * SNAPSHOT_SLICE),
        removes: [],
        ...(end ? tableState(s) : {}),
        series: end ? s.series : undefined,
      });
    }
  }

  const tableState = (s) => ({ total: s.model.size, counts: Object.fromEntries(s.counts), status: s.status, loaded: s.loaded });

  /** The extra fields this Ironic has. */
  function fieldsWatched() {
    const v = minor(microversion);
    return extraFields.filter(([, since]) => v >= since).map(([f]) => f);
  }

  /**
   * The scope's watch on the client's loop: provision states by the change
   * feed (one request a quiet round, and the listing the scope's waits
   * share), the other columns (power, maintenance, ...) by a full listing
   * at the package's `auto` cadence (slower on a large fleet), merged by the
   * package. An outage is shown in place until the package says the rounds
   * go through again; another error ends the watch and stays shown until a
   * refresh.
   */
  async function startWatches(s) {
    const gen = ++s.gen;
    s.columns = false;
    s.startedAt = Date.now();
    // The fields depend on the microversion: wait for the negotiation, shared with the watch's.
    await client.microversion().then(
      (v) => {
        microversion = v;
      },
      () => {},
    );
    if (s.gen !== gen) return;
    const fields = fieldsWatched();
    const columns = fields.length ? { fields, fieldsInterval: 'auto' } : {};
    s.columns = fields.length === 0;
    later(s, EMPTY_AFTER_MS, () => {
      if (s.gen !== gen || s.loaded) return;
      s.status = { at: s.status.at, error: s.error };
      becameLoaded(s);
    });
    const sampler = setInterval(() => sample(s), SAMPLE_MS);
    s.timers.add({ clear: () => clearInterval(sampler) });
    const it = client.watch({ scope: s.scope, pollInterval: FEED_INTERVAL, retryOutages: true, ...columns });
    s.watch = it;
    try {
      for await (const change of it) {
        if (s.gen !== gen) break;
        if (change.type === 'outage' || change.type === 'restored') {
          showError(s, change.type === 'outage' ? plainError(change.error) : null);
        } else {
          apply(s, change);
        }
      }
    } catch (e) {
      if (s.gen === gen) showError(s, plainError(e));
    }
  }

  function showError(s, error) {
    s.error = error;
    s.status = { at: s.status.at, error };
    flush(s);
  }

  function later(s, ms, fn) {
    const timer = setTimeout(() => {
      s.timers.delete(handle);
      fn();
    }, ms);
    const handle = { clear: () => clearTimeout(timer) };
    s.timers.add(handle);
  }

  function stopWatches(s) {
    s.gen += 1;
    s.error = null;
    s.watch?.return().catch(() => {});
    s.watch = null;
    for (const t of s.timers) t.clear();
    s.timers.clear();
    clearTimeout(s.flushTimer);
    s.flushTimer = null;
  }

  function apply(s, { type, uuid, node }) {
    if (type === 'removed') return remove(s, uuid);
    // Every column has something once the full listing has spoken.
    s.columns ||= COLUMNS[0] in node;
    put(s, uuid, node);
  }

  function put(s, uuid, node) {
    const clean = {};
    for (const [k, v] of Object.entries(node)) if (k !== 'links') clean[k] = v;
    clean.uuid = uuid;
    // The other columns, as any scope's full listing last saw them: a node
    // the feed brings to a new scope has them before its own listing comes.
    let extra = extras.get(uuid);
    for (const [k] of extraFields) {
      if (k in clean) (extra ??= {})[k] = clean[k];
      else if (extra && k in extra) clean[k] = extra[k];
    }
    if (extra) extras.set(uuid, extra);
    if (!inScope(s.scope, clean)) return remove(s, uuid);
    const old = s.model.get(uuid);
    if (old?.provision_state !== clean.provision_state) {
      if (old) count(s, old.provision_state, -1);
      count(s, clean.provision_state, 1);
    }
    s.model.set(uuid, clean);
    // Tabs get a known node's changed fields only (a churn round changes
    // three or four of fourteen); a node new to them, whole.
    const queued = s.pending.get(uuid);
    if (!old || queued === null || queued?.whole) {
      s.pending.set(uuid, Object.defineProperty(clean, 'whole', { value: true, enumerable: false, configurable: true }));
    } else {
      const delta = queued ?? { uuid };
      for (const k in clean) if (clean[k] !== old[k]) delta[k] = clean[k];
      s.pending.set(uuid, delta);
    }
    flushSoon(s);
  }

  function remove(s, uuid) {
    const old = s.model.get(uuid);
    if (!old) return;
    s.model.delete(uuid);
    count(s, old.provision_state, -1);
    s.pending.set(uuid, null);
    flushSoon(s);
  }

  function count(s, state, by) {
    const k = state ?? 'unknown';
    const n = (s.counts.get(k) ?? 0) + by;
    if (n > 0) s.counts.set(k, n);
    else s.counts.delete(k);
  }

  function flushSoon(s) {
    s.flushTimer ??= setTimeout(() => flush(s), FLUSH_MS);
  }

  function flush(s) {
    clearTimeout(s.flushTimer);
    s.flushTimer = null;
    const upserts = [];
    const removes = [];
    for (const [uuid, node] of s.pending) node ? upserts.push(node) : removes.push(uuid);
    s.pending.clear();
    if (upserts.length || removes.length) {
      s.status = { at: Date.now(), error: s.error };
      if (!s.loaded && s.columns) return becameLoaded(s);
    }
    const state = tableState(s);
    for (let i = 0; i < Math.max(1, upserts.length); i += SNAPSHOT_SLICE) {
      const message = { t: 'table', key: s.key, upserts: upserts.slice(i, i + SNAPSHOT_SLICE), removes: i === 0 ? removes : [], ...state };
      for (const tab of s.subs) post(tab, message);
    }
  }

  /**
   * The scope's first listing has come (or a wait for one has shown it
   * empty): its tabs get it whole. Until then they keep what they showed,
   * filtered by the new scope, rather than an empty table.
   */
  function becameLoaded(s) {
    s.loaded = true;
    sample(s);
    for (const tab of s.subs) sendSnapshot(tab, s);
  }

  function sample(s) {
    if (!s.loaded) return;
    const point = { t: Date.now(), counts: Object.fromEntries(s.counts) };
    s.series.push(point);
    if (s.series.length > SERIES_MAX) s.series.splice(0, s.series.length - SERIES_MAX);
    for (const tab of s.subs) post(tab, { t: 'series', key: s.key, point });
  }

  /** A wait's node moved: the table shows it at once, before the next round of its watches. */
  function patchTables(w, row) {
    if (row.state == null || w.kind === 'allocation') return;
    const fields =
      w.kind === 'power'
        ? { power_state: row.state, target_power_state: row.targetState }
        : { provision_state: row.state, target_provision_state: row.targetState, last_error: row.lastError };
    for (const s of scopes.values()) {
      const current = s.model.get(row.uuid);
      if (current && Object.entries(fields).some(([k, v]) => current[k] !== v)) put(s, row.uuid, { ...current, ...fields });
    }
  }

  // ------------------------------------------------------------- the waits

  /** What a tab shows of a wait: everything for a small one; counts, series and failures for a large one. */
  function snapshot(w) {
    const small = w.rows.size <= ROWS_MAX;
    const rows = small ? [...w.rows.values()] : null;
    const failed = small ? [] : w.failures.slice(0, FAILURES_MAX).map((uuid) => w.rows.get(uuid));
    return {
      id: w.id,
      kind: w.kind,
      action: w.action,
      label: w.label,
      expected: w.expected,
      path: w.path,
      total: w.rows.size,
      startedAt: w.startedAt,
      endedAt: w.endedAt,
      timeout: w.timeout,
      status: w.status,
      counts: w.counts,
      series: w.series,
      error: w.error,
      resumed: w.resumed,
      saved: w.writer?.writes ?? 0,
      persisted: Boolean(w.persisted),
      rows,
      failures: failed,
      failedCount: w.failures.length,
      allocation: w.allocation ?? null,
    };
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
    return {
      id,
      kind,
      method,
      action,
      label,
      expected,
      path,
      startedAt,
      endedAt: null,
      timeout,
      status: 'running',
      rows,
      counts,
      series: [],
      failures: [],
      failed: new Set(),
      error: null,
      resumed: Boolean(resumed),
      controller: new AbortController(),
      writer: null,
      meta: { kind, method, action, label, expected, path, names: nodes, startedAt, timeout },
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

  /** Whether a checkpoint may be kept: nothing secret in it (a rescue password is, until its PUT is answered). */
  const keepable = (w, text) => !(w.secret && text.includes(w.secret)) && !(token && text.includes(token));

  /**
   * Starts a wait a tab asked for. Made as a checkpoint first and stored,
   * then run with `client.resume()`: a reload at any moment finds it. Where
   * the checkpoint would hold a secret (rescue), it is run directly and
   * stored from its first checkpoint without it.
   */
  async function startWait(msg) {
    const nodes = Array.isArray(msg.nodes) ? msg.nodes.map(([uuid, name]) => [String(uuid), name == null ? null : String(name)]) : [];
    const uuids = nodes.map(([uuid]) => uuid);
    const o = msg.options ?? {};
    let method;
    let args;
    let options;
    const kind = msg.kind;
    if (kind === 'provision') {
      method = 'provision';
      args = [uuids, msg.action];
      options = { settle: 'all', holdIsTerminal: true };
      if (o.wait !== undefined) options.wait = o.wait;
      if (o.timeout !== undefined) options.timeout = o.timeout;
      if (o.pollInterval !== undefined) options.pollInterval = o.pollInterval;
      for (const k of ['cleanSteps', 'serviceSteps', 'rescuePassword']) if (o[k] !== undefined) options[k] = o[k];
    } else if (kind === 'power') {
      method = 'setPowerState';
      args = [uuids, msg.action];
      options = { settle: 'all', wait: o.wait ?? true };
      if (o.timeout !== undefined) options.timeout = o.timeout;
      if (o.pollInterval !== undefined) options.pollInterval = o.pollInterval;
    } else if (kind === 'allocation') {
      method = 'createAllocation';
      args = [msg.fields ?? {}];
      options = { wait: o.wait ?? true, pollInterval: o.pollInterval ?? 0.5 };
      if (o.timeout !== undefined) options.timeout = o.timeout;
      nodes.splice(0, nodes.length, ['allocation', msg.label ?? null]);
    } else {
      throw new Error(`Unknown kind of wait: ${kind}`);
    }
    // A failed node's last history events come with the report (one GET
    // each at the end): for waits small enough that this stays a handful.
    if (kind !== 'allocation' && uuids.length <= DIAGNOSE_MAX) options.diagnose = true;
    const scope = waitScope(msg.scope, uuids);
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
    const checkpoint = client.checkpoint(method, ...args, options);
    waits.set(w.id, w);
    w.writer = store ? recordWriter(store, { id: w.id, endpoint: location.origin, meta: w.meta }) : null;
    if (keepable(w, checkpoint)) {
      await w.writer?.save(checkpoint);
      w.persisted = Boolean(w.writer);
      execute(w, (callbacks) => client.resume(checkpoint, callbacks));
    } else {
      execute(w, (callbacks) => client[method](...args, { ...options, ...callbacks }));
    }
    prune();
    flushWait(w);
    return w.id;
  }

  /**
   * The wait lists what the table's scope lists (one listing for both when
   * no state filter is set) if every node it waits for is in it; the
   * provision state and fault are left out, as the action moves nodes out
   * of those.
   */
  function waitScope(scope, uuids) {
    const s = scopes.get(scopeKey(scope));
    if (!s || uuids.length === 0) return null;
    const { provisionState, fault, ...rest } = s.scope;
    if (Object.keys(rest).length === 0) return null;
    return uuids.every((u) => s.model.has(u)) ? rest : null;
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

  function cancelWait(id) {
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
    if (!store) return;
    const records = await store.all().catch(() => []);
    for (const record of records) {
      if (waits.has(record.id) || record.endpoint !== location.origin || typeof record.checkpoint !== 'string') continue;
      const m = record.meta ?? {};
      const w = newWait({ ...m, id: record.id, nodes: Array.isArray(m.names) ? m.names : [], resumed: true });
      w.writer = recordWriter(store, { id: w.id, endpoint: record.endpoint, meta: w.meta });
      w.persisted = true;
      const run = async (callbacks) => {
        // Another tab's hub may have run it to its end while this one waited for the lock.
        const still = await store.get(w.id).catch(() => null);
        if (!still || waits.has(w.id)) {
          w.restarting = true; // nothing of it to show or delete here
          return null;
        }
        waits.set(w.id, w);
        flushWait(w);
        return client.resume(still.checkpoint, callbacks);
      };
      execute(w, async (callbacks) => {
        const result = await run(callbacks);
        if (result === null) throw new Error('gone');
        return result;
      });
    }
  }

  /** A node's history, or `{ unsupported }`: the package's word for an Ironic without it. */
  async function history(uuid) {
    try {
      return { events: await client.getNodeHistory(uuid) };
    } catch (e) {
      if (e instanceof pkg.UnsupportedVersionError) return { unsupported: e.message };
      throw e;
    }
  }

  return { accept };
}
