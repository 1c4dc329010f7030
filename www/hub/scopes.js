// The node table's scopes, as the tabs show them: one `client.watch()` per
// scope some tab shows (the same scope in five tabs is one watch), its nodes
// (the model), their counts by provision state and the fleet chart's series,
// and the changes not sent yet, flushed to the scope's tabs in slices. A
// scope nobody shows is no longer watched, nor kept.

import { inScope, normalScope, scopeKey, useScopeFilters } from '../scope.js';
import { FLUSH_MS, plainError } from './tabs.js';

/** Seconds between the table's rounds (the change feed: one request a quiet round). */
const FEED_INTERVAL = 2;
/** Nodes per message of a table snapshot, so that a tab takes 100,000 in slices. */
const SNAPSHOT_SLICE = 5000;
/** The fleet chart: a point every SAMPLE_MS, the last SERIES_MAX of them (15 minutes). */
export const SAMPLE_MS = 2000;
export const SERIES_MAX = 450;
/** A scope whose listing brought nothing after this long is shown as empty (a watch says nothing of an empty scope). */
const EMPTY_AFTER_MS = 2500;

/**
 * The table's columns beyond the change feed's, watched by listing the scope
 * in full (Ironic's provision stamp does not move for them).
 */
const COLUMNS = ['power_state', 'target_power_state', 'maintenance', 'resource_class', 'fault', 'conductor_group', 'owner', 'shard'];

const minor = (v) => Number(/^1\.(\d+)$/.exec(v ?? '')?.[1] ?? 0);

/** `client()`: the hub's client of the moment; `microversion`: the version it negotiated (get, and set by a watch). */
export function createScopes({ client, post, microversion }) {
  const scopes = new Map(); // key -> scope state (`subscribe` has its fields)
  const shown = new Map(); // tab -> the key of the scope it shows
  const extras = new Map(); // uuid -> its columns as a full listing last showed them, in any scope
  /** [column, the API version 1.x (its x) that brought it], from the package's tables. */
  let extraFields = [];

  /** Takes the scope filters and the columns' versions from the package's tables (at each boot). */
  function useTables({ scopeFilters, versions }) {
    useScopeFilters(scopeFilters);
    // Each column with the API version that brought it (a `fields` naming
    // a newer one is a 406): a scope filter's field came with the filter.
    extraFields = COLUMNS.map((f) => [f, scopeFilters.find(([, field]) => field === f)?.[2] ?? versions.fields]);
  }

  function subscribe(tab, scope) {
    const key = scopeKey(scope);
    if (shown.get(tab) === key) return sendSnapshot(tab, scopes.get(key));
    leave(tab);
    let s = scopes.get(key);
    if (!s) {
      s = {
        key,
        scope: normalScope(scope),
        subs: new Set(), // the tabs showing it
        model: new Map(), // uuid -> node
        counts: new Map(), // provision state -> nodes
        pending: new Map(), // uuid -> what its tabs are still to get of it (null: removed)
        gen: 0, // the watch's generation: a stopped one's late changes are dropped
        watch: null,
        error: null,
        columns: false, // whether every column has something
        timers: new Set(),
        flushTimer: null,
        loaded: false,
        status: { at: null, error: null },
        series: [],
      };
      scopes.set(key, s);
    }
    shown.set(tab, key);
    s.subs.add(tab);
    if (s.subs.size === 1) startWatch(s);
    sendSnapshot(tab, s);
  }

  /** The tab no longer shows its scope; a scope nobody shows is no longer watched (nothing is listed for it). */
  function leave(tab) {
    const s = scopes.get(shown.get(tab));
    shown.delete(tab);
    if (!s) return;
    s.subs.delete(tab);
    if (s.subs.size === 0) {
      stopWatch(s);
      scopes.delete(s.key);
    }
  }

  /** Lists the tab's scope afresh (after the demo fleet was reset, say). */
  function refresh(tab) {
    const s = scopes.get(shown.get(tab));
    if (!s) return;
    stopWatch(s);
    s.model.clear();
    s.counts.clear();
    s.pending.clear();
    s.loaded = false;
    for (const tab of s.subs) sendSnapshot(tab, s);
    startWatch(s);
  }

  // A new client: the watches stop, and start again on it where some tab shows their scope.
  const stopAll = () => scopes.forEach(stopWatch);
  const startAll = () => [...scopes.values()].filter((s) => s.subs.size).forEach(startWatch);

  function sendSnapshot(tab, s) {
    const nodes = [...s.model.values()];
    const last = Math.max(1, Math.ceil(nodes.length / SNAPSHOT_SLICE));
    for (let i = 0; i < last; i++) {
      const end = i === last - 1;
      const upserts = nodes.slice(i * SNAPSHOT_SLICE, (i + 1) * SNAPSHOT_SLICE);
      const rest = end ? { ...tableState(s), series: s.series } : { series: undefined };
      post(tab, { t: 'table', key: s.key, reset: i === 0, upserts, removes: [], ...rest });
    }
  }

  const tableState = (s) => ({ total: s.model.size, counts: Object.fromEntries(s.counts), status: s.status, loaded: s.loaded });

  /**
   * The scope's watch on the client's loop: provision states by the change
   * feed (one request a quiet round, and the listing the scope's waits
   * share), the other columns (power, maintenance, ...) by a full listing
   * at the package's `auto` cadence (slower on a large fleet), merged by the
   * package. An outage is shown in place until the package says the rounds
   * go through again; another error ends the watch and stays shown until a
   * refresh.
   */
  async function startWatch(s) {
    const gen = ++s.gen;
    s.columns = false;
    // The fields depend on the microversion: wait for the negotiation, shared with the watch's.
    const negotiation = client().microversion();
    await negotiation.then(microversion.set, () => {});
    if (s.gen !== gen) return;
    // The extra fields this Ironic has.
    const v = minor(microversion.get());
    const fields = extraFields.filter(([, since]) => v >= since).map(([f]) => f);
    const columns = fields.length ? { fields, fieldsInterval: 'auto' } : {};
    s.columns = fields.length === 0;
    const empty = { clear: () => clearTimeout(timer) };
    const timer = setTimeout(() => {
      s.timers.delete(empty);
      if (s.gen !== gen || s.loaded) return;
      s.status = { at: s.status.at, error: s.error };
      becameLoaded(s);
    }, EMPTY_AFTER_MS);
    s.timers.add(empty);
    const sampler = setInterval(() => sample(s), SAMPLE_MS);
    s.timers.add({ clear: () => clearInterval(sampler) });
    const it = client().watch({ scope: s.scope, pollInterval: FEED_INTERVAL, retryOutages: true, ...columns });
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

  function stopWatch(s) {
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

  /** A wait's node moved (`fields`): the table shows it at once, before the next round of its watches. */
  function patch(uuid, fields) {
    for (const s of scopes.values()) {
      const current = s.model.get(uuid);
      if (current && Object.entries(fields).some(([k, v]) => current[k] !== v)) put(s, uuid, { ...current, ...fields });
    }
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

  return { useTables, subscribe, leave, refresh, stopAll, startAll, patch, waitScope };
}
