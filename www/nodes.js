// The node table, fed by the hub's watch of the shown scope (no refresh
// timer): the scope filters (provision state, fault, conductor group, shard,
// owner, resource class) are the watch's scope, listed by Ironic; the text
// search and the sort are done here. Rows are virtual: the table holds the
// rows in view plus a margin, between two spacers, so 100,000 nodes cost what
// 60 do in the DOM. A round's changes (1% of 100,000 nodes: 1,000) move only
// the rows whose sort key or filter match changed; the rest are replaced in
// place. Selection is kept by UUID, in this tab.

import { drawStacked, legend, stateOrder } from './chart.js';
import { badge, byId, el, setText, shortId } from './dom.js';
import { describe } from './errors.js';
import { normalScope, scopeFilter, scopeKey } from './scope.js';
import { stateKind } from './states.js';

/** Rows drawn above and below the ones in view. */
const OVERSCAN = 12;
/** The hub's changes: applied this many at a time, for at most BUDGET_MS per task. */
const SLICE = 2000;
const BUDGET_MS = 8;
/** Past this many moved rows, one pass over the view beats a splice each. */
const SPLICE_MAX = 64;
// Cells after the checkbox, in column order.
const COLUMNS = [
  ['name', null],
  ['uuid', (n) => shortId(n.uuid)],
  ['provision_state', (n) => badge(n.provision_state, stateKind(n.provision_state))],
  ['target_provision_state', (n) => n.target_provision_state ?? ''],
  ['power_state', (n) => n.power_state ?? ''],
  ['maintenance', (n) => (n.maintenance ? badge('yes', 'failed') : '')],
  ['resource_class', (n) => n.resource_class ?? ''],
  ['conductor_group', (n) => n.conductor_group ?? ''],
  ['last_error', (n) => n.last_error ?? ''],
];
const SHOWN = COLUMNS.map(([k]) => k);
/** Every field the hub sends of a node. */
const FIELDS = [...new Set([...SHOWN, 'uuid', 'target_power_state', 'fault', 'owner', 'shard', 'provision_updated_at'])];
// The filter inputs: scope option -> element id.
const FILTER_INPUTS = {
  provisionState: 'state-filter',
  fault: 'fault-filter',
  conductorGroup: 'group-filter',
  shard: 'shard-filter',
  owner: 'owner-filter',
  resourceClass: 'class-filter',
};
/** Values offered in a filter's list, from what the table has seen. */
const SUGGESTIONS = { conductorGroup: 'conductor_group', shard: 'shard', owner: 'owner', resourceClass: 'resource_class' };

/** A value as it sorts: digit runs padded, so node-9 comes before node-10; empty last. */
function sortKey(value) {
  if (value == null || value === '') return null;
  return String(value)
    .toLowerCase()
    .replace(/\d+/g, (d) => d.padStart(12, '0'));
}

/**
 * @param {{ hub: object, tables: object, onSelection: (s: { count: number, names: string[] }) => void, onOpen: (uuid: string) => void }} options
 */
export function createNodeTable({ hub, tables, onSelection, onOpen }) {
  const wrap = byId('table-scroll');
  const tbody = byId('node-rows');
  const padTop = byId('pad-top');
  const padBottom = byId('pad-bottom');
  const textFilter = byId('text-filter');
  const selectAll = byId('select-all');
  const status = byId('refresh-status');
  const chart = byId('fleet-chart');

  let all = new Map(); // uuid -> node, of the scope shown
  let view = []; // the nodes shown, in order
  let inView = new Set(); // their UUIDs
  const selected = new Set();
  const rows = new Map(); // uuid -> { tr, box, cells, node } for rows in the DOM
  let sort = { key: 'name', dir: 1 };
  let text = '';
  let scope = {}; // what the inputs say
  let key = scopeKey(scope); // the scope subscribed to
  let snapshot = null; // a snapshot arriving in slices: its map until the last one
  let applied = 0; // changes of the hub applied, shown on the table (data-changes) for tests and curious operators
  let total = 0;
  let counts = {};
  let hubStatus = { at: null, error: null };
  let loaded = false;
  let series = [];
  let rowHeight = 0;
  let frame = 0;
  let resolveReady;
  const ready = new Promise((resolve) => {
    resolveReady = resolve;
  });

  // ------------------------------------------------------------- filters

  const stateSelect = byId('state-filter');
  stateSelect.replaceChildren(
    el('option', { value: '', text: 'all states' }),
    ...tables.provisionStates.map((s) => el('option', { value: s, text: s })),
  );
  byId('fault-filter').replaceChildren(
    el('option', { value: '', text: 'any' }),
    ...tables.faults.map((f) => el('option', { value: f, text: f })),
  );
  for (const [name, id] of Object.entries(FILTER_INPUTS)) {
    byId(id).addEventListener('change', () => setScope({ ...scope, [name]: byId(id).value.trim() }));
  }

  /** Makes the inputs' scope the watch's: the rows shown now are filtered here until the hub's listing of it comes. */
  function setScope(next) {
    scope = normalScope(next);
    checks = Object.entries(scope).map(([name, value]) => [scopeFilter(name)[0], value]);
    for (const [name, id] of Object.entries(FILTER_INPUTS)) if (byId(id).value !== (scope[name] ?? '')) byId(id).value = scope[name] ?? '';
    const k = scopeKey(scope);
    if (k === key) return;
    key = k;
    snapshot = null;
    series = [];
    if (!document.hidden) hub.send('subscribe', { scope });
    rebuild();
    drawChart();
  }

  /** Filters a microversion does not have are disabled, saying which one they need. */
  function setMicroversion(v) {
    const minor = Number(/^1\.(\d+)$/.exec(v ?? '')?.[1] ?? 0);
    for (const [name, id] of Object.entries(FILTER_INPUTS)) {
      const need = scopeFilter(name)[1];
      const input = byId(id);
      input.disabled = v !== null && minor < need;
      input.title = input.disabled ? `Needs Ironic API 1.${need}; this Ironic speaks ${v}` : '';
    }
  }

  // ------------------------------------------------------------ the view

  const keyOf = (n) => {
    if (n._sortBy !== sort.key) {
      n._sortBy = sort.key;
      n._sort = sortKey(n[sort.key]);
    }
    return n._sort;
  };
  function compare(a, b) {
    const ka = keyOf(a);
    const kb = keyOf(b);
    if (ka !== kb) {
      if (ka === null) return 1;
      if (kb === null) return -1;
      return ka < kb ? -sort.dir : sort.dir;
    }
    return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
  }
  const textOf = (n) => (n._text ??= `${n.name ?? ''} ${n.uuid}`.toLowerCase());
  // The scope's filters as [field, value] pairs, made once per scope: passes() runs 100,000 times a filter.
  let checks = [];
  const passes = (n) => {
    for (let i = 0; i < checks.length; i++) {
      const v = n[checks[i][0]];
      if (v !== undefined && v !== checks[i][1]) return false;
    }
    return !text || textOf(n).includes(text);
  };

  /** The first index whose node sorts at or after `n`. */
  function lowerBound(n) {
    let lo = 0;
    let hi = view.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(view[mid], n) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The view made again from every node (a new filter or scope): it starts at the top. */
  function rebuild(keepPlace = false) {
    if (!keepPlace) wrap.scrollTop = 0;
    view = [];
    for (const n of all.values()) if (passes(n)) view.push(n);
    view.sort(compare);
    inView = new Set(view.map((n) => n.uuid));
    render();
  }

  /** Writes `n`'s fields into the node's own object; what it lacks, the object keeps. */
  /** Returns whether the node's sorted field changed. */
  function merge(old, n) {
    if (n.name !== undefined && n.name !== old.name) delete old._text;
    // Its sort key is made again only if its sorted field changed.
    const moved = n[sort.key] !== undefined && n[sort.key] !== old[sort.key];
    if (moved) old._sortBy = null;
    for (const k of FIELDS) if (k in n) old[k] = n[k];
    return moved;
  }

  /** The first index whose node sorts at or after (key, uuid): where a node sat before its fields changed. */
  function lowerBoundKey(key, uuid) {
    let lo = 0;
    let hi = view.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = view[mid];
      const km = keyOf(m);
      let c;
      if (km !== key) c = km === null ? 1 : key === null ? -1 : km < key ? -sort.dir : sort.dir;
      else c = m.uuid < uuid ? -1 : m.uuid > uuid ? 1 : 0;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Keeps only the shown nodes that still pass (the order holds). */
  function narrow() {
    wrap.scrollTop = 0;
    view = view.filter(passes);
    inView = new Set(view.map((n) => n.uuid));
    render();
  }

  /**
   * A batch of the hub's changes, applied to the view without sorting it
   * again. A node keeps one object for its life here, changed in place: a
   * change that moves neither its place nor its match (most of them) costs
   * a few property writes, and a redraw only if its row is in view.
   */
  function update(upserts, removes) {
    applied += upserts.length + removes.length;
    tbody.dataset.changes = String(applied);
    const out = []; // [node, its key before the change]
    const added = [];
    let drawn = false;
    for (const uuid of removes) {
      const old = all.get(uuid);
      if (!old) continue;
      all.delete(uuid);
      if (inView.has(uuid)) out.push([old, keyOf(old)]);
    }
    for (const n of upserts) {
      const old = all.get(n.uuid);
      if (!old) {
        noteValues(n);
        all.set(n.uuid, n);
        if (passes(n)) added.push(n);
        continue;
      }
      const was = inView.has(n.uuid);
      const before = was ? keyOf(old) : null;
      merge(old, n);
      const is = passes(old);
      if (was && is && keyOf(old) === before) {
        drawn ||= rows.has(n.uuid);
        continue;
      }
      if (was) out.push([old, before]);
      if (is) added.push(old);
    }
    if (out.length) {
      if (out.length <= SPLICE_MAX) {
        for (const [n, key] of out) {
          const i = lowerBoundKey(key, n.uuid);
          view.splice(view[i] === n ? i : view.indexOf(n), 1);
        }
      } else {
        const gone = new Set(out.map(([n]) => n));
        view = view.filter((n) => !gone.has(n));
      }
      for (const [n] of out) inView.delete(n.uuid);
    }
    if (added.length) {
      added.sort(compare);
      if (added.length <= SPLICE_MAX) {
        for (const n of added) view.splice(lowerBound(n), 0, n);
      } else {
        // One merge of two sorted lists.
        const merged = new Array(view.length + added.length);
        let i = 0;
        let j = 0;
        let k = 0;
        while (i < view.length && j < added.length) merged[k++] = compare(view[i], added[j]) <= 0 ? view[i++] : added[j++];
        while (i < view.length) merged[k++] = view[i++];
        while (j < added.length) merged[k++] = added[j++];
        view = merged;
      }
      for (const n of added) inView.add(n.uuid);
    }
    if (drawn || out.length || added.length) render();
  }

  // ----------------------------------------------------------- rendering

  function newRow() {
    const box = el('input', { type: 'checkbox' });
    const open = el('button', { type: 'button', class: 'link', title: 'Show this node' });
    const cells = COLUMNS.map(([k]) => el('td', { class: `col-${k.replaceAll('_', '-')}` }));
    cells[0].append(open);
    const tr = el('tr', {}, [el('td', { class: 'col-select' }, [box]), ...cells]);
    const row = { tr, box, open, cells, node: null, drawn: {}, uuid: null };
    // The row's node is whichever it shows now.
    box.addEventListener('change', () => {
      box.checked ? selected.add(row.uuid) : selected.delete(row.uuid);
      tr.classList.toggle('is-selected', box.checked);
      selectionChanged();
    });
    open.addEventListener('click', () => onOpen(row.uuid));
    return row;
  }

  // Rows that scrolled out of view, kept to draw the next ones with (no new elements while scrolling).
  const spare = [];

  function rowFor(n) {
    let row = rows.get(n.uuid);
    if (!row) {
      row = spare.pop() ?? newRow();
      row.uuid = n.uuid;
      row.drawn = {};
      row.tr.dataset.uuid = n.uuid;
      rows.set(n.uuid, row);
    }
    row.node = n;
    // Only the cells whose value changed are written to.
    let changed = false;
    COLUMNS.forEach(([field, draw], i) => {
      if (row.drawn[field] === n[field] && field in row.drawn) return;
      row.drawn[field] = n[field];
      changed = true;
      if (field === 'name') {
        setText(row.open, n.name ?? shortId(n.uuid));
        row.box.setAttribute('aria-label', `Select ${n.name ?? n.uuid}`);
        return;
      }
      const content = draw(n);
      if (typeof content === 'string') {
        setText(row.cells[i], content);
        if (field === 'last_error') row.cells[i].title = content;
      } else row.cells[i].replaceChildren(content);
      if (field === 'uuid') row.cells[i].title = n.uuid;
    });
    if (changed) {
      row.tr.dataset.state = n.provision_state ?? '';
      row.tr.dataset.name = n.name ?? '';
    }
    tick(row);
    return row;
  }

  /** Draws the rows in view and a margin; only rows whose node changed are written to. */
  function render() {
    cancelAnimationFrame(frame);
    frame = 0;
    if (!rowHeight) rowHeight = measureRow();
    // While the box grows to its maximum height it is shorter than it will be: draw for a full window.
    const height = Math.max(wrap.clientHeight, Math.min(innerHeight, 640));
    // Fewer rows than the scroll position reaches (a filter, nodes gone): back to the last ones.
    let top = wrap.scrollTop;
    const end = Math.max(0, view.length * rowHeight - wrap.clientHeight);
    if (top > end) top = wrap.scrollTop = end;
    const first = Math.max(0, Math.floor(top / rowHeight) - OVERSCAN);
    const last = Math.min(view.length, Math.ceil((top + height) / rowHeight) + OVERSCAN);
    padTop.firstElementChild.firstElementChild.style.height = `${first * rowHeight}px`;
    padBottom.firstElementChild.firstElementChild.style.height = `${(view.length - last) * rowHeight}px`;
    const wanted = [];
    const keep = new Set();
    for (let i = first; i < last; i++) {
      const row = rowFor(view[i]);
      row.tr.setAttribute('aria-rowindex', String(i + 2));
      wanted.push(row.tr);
      keep.add(view[i].uuid);
    }
    for (const [uuid, row] of rows) {
      if (keep.has(uuid)) continue;
      row.tr.remove();
      rows.delete(uuid);
      if (spare.length < 200) spare.push(row);
    }
    // Move rows only where the order changed, so focus stays where it is.
    wanted.forEach((tr, i) => {
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] ?? null);
    });
    byId('node-table').setAttribute('aria-rowcount', String(view.length + 1));
    byId('nodes-empty').hidden = view.length > 0 || !loaded;
    setText(byId('node-count'), loaded || all.size ? `${view.length.toLocaleString('en')} of ${all.size.toLocaleString('en')}` : '');
    setText(byId('select-matching'), `Select all ${view.length.toLocaleString('en')} shown`);
    byId('select-matching').disabled = view.length === 0;
    drawSelectAll();
  }

  function tick(row) {
    const on = selected.has(row.node.uuid);
    if (row.box.checked !== on) row.box.checked = on;
    row.tr.classList.toggle('is-selected', on);
  }

  function measureRow() {
    const probe = el('tr', {}, [el('td', { text: 'x' })]);
    tbody.append(probe);
    const h = probe.getBoundingClientRect().height;
    probe.remove();
    return h > 0 ? h : 31;
  }

  function drawSelectAll() {
    let ticked = 0;
    if (selected.size) for (const uuid of selected) if (inView.has(uuid)) ticked += 1;
    selectAll.checked = view.length > 0 && ticked === view.length;
    selectAll.indeterminate = ticked > 0 && ticked < view.length;
  }

  /** Per-state counts of the scope (the hub's), as buttons that filter by that state. */
  function drawCounts() {
    const list = byId('state-counts');
    const entries = Object.entries(counts).sort(([a], [b]) => stateOrder(a) - stateOrder(b) || a.localeCompare(b));
    const items = entries.map(([state, n]) => {
      const b = el(
        'button',
        {
          type: 'button',
          class: `count-chip badge badge-${stateKind(state)}`,
          'data-state': state,
          'aria-pressed': scope.provisionState === state ? 'true' : 'false',
          title: `Show only ${state}`,
        },
        [`${state} `, el('strong', { text: n.toLocaleString('en') })],
      );
      b.addEventListener('click', () => setScope({ ...scope, provisionState: scope.provisionState === state ? '' : state }));
      return el('li', {}, [b]);
    });
    list.replaceChildren(...items);
    drawLegend();
    // The state filter's options say how many nodes each state has, when the scope shows every state.
    const known = !scope.provisionState;
    for (const option of stateSelect.options) {
      const n = option.value ? counts[option.value] : total;
      const label = option.value || 'all states';
      setText(option, known && n ? `${label} (${n})` : label);
    }
  }

  function drawStatus() {
    status.classList.toggle('is-error', Boolean(hubStatus.error));
    if (document.hidden) return setText(status, 'Paused while the page is hidden');
    if (hubStatus.error) {
      const { title, detail, requestId } = describe(hubStatus.error);
      return setText(status, `Listing failed: ${title}: ${detail}${requestId ? ` (request ${requestId})` : ''}`);
    }
    if (!loaded) return setText(status, 'Listing…');
    setText(status, hubStatus.at ? `Updated ${new Date(hubStatus.at).toLocaleTimeString()}` : 'Listed; no nodes in this scope');
  }

  function drawChart() {
    drawStacked(chart, {
      points: series.map((p) => ({ t: p.t, values: p.counts })),
      classOf: (state) => `area-${stateKind(state)}`,
      order: stateOrder,
      xLabel: (t, last) => (t === last ? 'now' : `${Math.round((t - last) / 1000)} s`),
      label: 'Nodes of this scope by provision state over time',
    });
    drawLegend();
  }

  /** The chart's legend says the counts of now (the chart's last point may be two seconds old). */
  function drawLegend() {
    legend(
      byId('fleet-legend'),
      Object.keys(counts)
        .sort((a, b) => stateOrder(a) - stateOrder(b))
        .map((s) => [s, counts[s], `area-${stateKind(s)}`]),
    );
  }

  // Values offered in the filters' lists, gathered as nodes come (at most 100 a filter).
  const seenValues = Object.fromEntries(Object.keys(SUGGESTIONS).map((name) => [name, new Set()]));
  let valuesChanged = false;
  function noteValues(n) {
    for (const [name, field] of Object.entries(SUGGESTIONS)) {
      const v = n[field];
      const set = seenValues[name];
      if (v && set.size < 100 && !set.has(v)) {
        set.add(v);
        valuesChanged = true;
      }
    }
  }
  let suggested = 0;
  function suggest() {
    if (!valuesChanged || Date.now() - suggested < 2000) return;
    suggested = Date.now();
    valuesChanged = false;
    for (const [name, set] of Object.entries(seenValues)) {
      byId(`${FILTER_INPUTS[name]}-list`).replaceChildren(...[...set].sort().map((value) => el('option', { value })));
    }
  }

  // -------------------------------------------------------- the hub's news

  // The hub's messages are applied a slice at a time, a few milliseconds per
  // task, so that a large batch (the full listing of 100,000
  // nodes, say) never holds a frame for long.
  const inbox = [];
  let pumping = null;
  hub.on('table', (msg) => {
    if (msg.key !== key) return; // a scope left since
    inbox.push(msg);
    if (pumping === null) pumping = setTimeout(pump, 0);
  });

  function pump() {
    pumping = null;
    const start = performance.now();
    while (inbox.length && performance.now() - start < BUDGET_MS) {
      const msg = inbox[0];
      if (msg.key !== key) {
        inbox.shift();
        continue;
      }
      if (msg.reset) snapshot = new Map();
      if (snapshot) {
        for (const n of msg.upserts) {
          snapshot.set(n.uuid, n);
          noteValues(n);
        }
        for (const uuid of msg.removes) snapshot.delete(uuid);
        inbox.shift();
        if (msg.total !== undefined) done(msg);
        continue;
      }
      // A change batch, in slices.
      const at = msg.at ?? 0;
      const slice = msg.upserts.slice(at, at + SLICE);
      update(slice, at === 0 ? msg.removes : []);
      msg.at = at + SLICE;
      if (msg.at >= msg.upserts.length) {
        inbox.shift();
        if (msg.total !== undefined) done(msg);
      }
    }
    if (inbox.length) pumping = setTimeout(pump, 0);
  }

  /** The last message of a batch: its counts and status, and a snapshot complete. */
  function done(msg) {
    ({ total, counts, status: hubStatus, loaded } = msg);
    if (msg.series) series = msg.series;
    // A scope not listed yet: what is shown stays (filtered by the new scope) until its listing comes whole.
    if (snapshot && !msg.loaded && all.size > 0) snapshot = null;
    if (snapshot) {
      // A node the page knew keeps its object (and its sort key, and any
      // column the snapshot lacks); the new scope's view is then a filter and
      // a sort on keys already made.
      const next = new Map();
      let resort = false;
      for (const [uuid, n] of snapshot) {
        const old = all.get(uuid);
        if (old && merge(old, n)) resort = true;
        next.set(uuid, old ?? n);
      }
      all = next;
      snapshot = null;
      // Most often the page's own filtering of the new scope already shows
      // exactly these nodes: then nothing is sorted again.
      let same = 0;
      let differs = resort;
      for (const n of all.values()) {
        if (differs) break;
        if (!passes(n)) continue;
        if (!inView.has(n.uuid)) {
          differs = true;
          break;
        }
        same += 1;
      }
      if (differs || same !== view.length) rebuild(true);
      else render();
      drawChart();
    }
    drawCounts();
    drawStatus();
    suggest();
    // Ready once the first listing is in, or has failed (the error shows in place).
    if (loaded || hubStatus.error) resolveReady();
  }
  hub.on('series', (msg) => {
    if (msg.key !== key) return;
    series.push(msg.point);
    if (series.length > 450) series.shift();
    drawChart();
  });

  // ------------------------------------------------------------ controls

  function selectionChanged() {
    drawSelectAll();
    const names = [];
    for (const uuid of selected) {
      const n = all.get(uuid);
      names.push(n?.name ?? shortId(uuid));
      if (names.length > 6) break;
    }
    onSelection({ count: selected.size, names });
  }

  wrap.addEventListener(
    'scroll',
    () => {
      frame ||= requestAnimationFrame(() => render());
    },
    { passive: true },
  );
  addEventListener('resize', () => {
    frame ||= requestAnimationFrame(() => render());
  });

  let typing = 0;
  textFilter.addEventListener('input', () => {
    // One filter pass per frame however fast the typing.
    cancelAnimationFrame(typing);
    typing = requestAnimationFrame(() => {
      const before = text;
      text = textFilter.value.trim().toLowerCase();
      if (text === before) return;
      // A longer search only narrows: the shown rows, already in order, are filtered; no sort.
      if (text.includes(before)) narrow();
      else rebuild();
    });
  });
  const selectShown = (on) => {
    for (const n of view) on ? selected.add(n.uuid) : selected.delete(n.uuid);
    for (const row of rows.values()) tick(row);
    selectionChanged();
  };
  selectAll.addEventListener('change', () => selectShown(selectAll.checked));
  byId('select-matching').addEventListener('click', () => selectShown(true));
  byId('clear-selection').addEventListener('click', () => {
    selected.clear();
    for (const row of rows.values()) tick(row);
    selectionChanged();
  });
  for (const button of document.querySelectorAll('#node-table th button[data-sort]')) {
    button.addEventListener('click', () => {
      const k = button.dataset.sort;
      sort = { key: k, dir: sort.key === k ? -sort.dir : 1 };
      for (const th of document.querySelectorAll('#node-table th')) th.removeAttribute('aria-sort');
      button.parentElement.setAttribute('aria-sort', sort.dir === 1 ? 'ascending' : 'descending');
      view.sort(compare);
      render();
    });
  }
  // A hidden tab leaves its scope (nothing is listed for it unless another tab shows it) and takes it up when shown.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) hub.send('unsubscribe');
    else {
      snapshot = null;
      hub.send('subscribe', { scope });
    }
    drawStatus();
  });

  hub.send('subscribe', { scope });

  return {
    ready,
    setMicroversion,
    node: (uuid) => all.get(uuid),
    scope: () => ({ ...scope }),
    /** The selected nodes as [uuid, name] (a node no longer listed keeps its UUID as its name). */
    selection: () => [...selected].map((uuid) => [uuid, all.get(uuid)?.name ?? null]),
    describeScope() {
      const parts = Object.entries(scope).map(([k, v]) => `${k.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)} ${v}`);
      if (text) parts.push(`matching “${text}”`);
      return parts.join(', ');
    },
    refresh() {
      hub.send('refresh');
    },
    clearSelection() {
      selected.clear();
      selectionChanged();
    },
    shown: SHOWN,
  };
}
