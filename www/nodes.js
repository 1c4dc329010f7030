// The node table: one listNodes per refresh (the fields shown; the loop adds its stamp),
// every REFRESH_MS while the page is visible; sortable, filterable by state
// and text; selection kept by UUID across refreshes.
import { el, setText, byId, shortId, badge } from './dom.js';
import { describe } from './errors.js';
import { stateKind } from './states.js';

const REFRESH_MS = 2000;
const FIELDS = [
  'uuid', 'name', 'provision_state', 'target_provision_state', 'power_state', 'maintenance', 'last_error', 'resource_class',
];
// Cells after the checkbox, in column order.
const COLUMNS = [
  ['name', (n) => n.name ?? ''],
  ['uuid', (n) => shortId(n.uuid)],
  ['provision_state', (n) => badge(n.provision_state, stateKind(n.provision_state))],
  ['target_provision_state', (n) => n.target_provision_state ?? ''],
  ['power_state', (n) => n.power_state ?? ''],
  ['maintenance', (n) => (n.maintenance ? badge('yes', 'failed') : '')],
  ['resource_class', (n) => n.resource_class ?? ''],
  ['last_error', (n) => n.last_error ?? ''],
];

/**
 * @param {{ client: import('/pkg/index.js').IronicClient, onSelection: (nodes: object[]) => void }} options
 */
export function createNodeTable({ client, onSelection }) {
  const tbody = byId('node-rows');
  const stateFilter = byId('state-filter');
  const textFilter = byId('text-filter');
  const selectAll = byId('select-all');
  const status = byId('refresh-status');

  const nodes = new Map(); // uuid -> node fields
  const rows = new Map(); // uuid -> { tr, box, cells, key }
  const selected = new Set();
  let sort = { key: 'name', dir: 1 };
  let timer = null;
  let inflight = null;

  const label = (n) => n.name ?? n.uuid;

  function rowFor(n) {
    let row = rows.get(n.uuid);
    if (!row) {
      const box = el('input', { type: 'checkbox', 'aria-label': `Select ${label(n)}` });
      box.addEventListener('change', () => {
        box.checked ? selected.add(n.uuid) : selected.delete(n.uuid);
        selectionChanged();
      });
      const cells = COLUMNS.map(([key]) => el('td', { class: `col-${key.replaceAll('_', '-')}` }));
      const tr = el('tr', { 'data-uuid': n.uuid }, [el('td', { class: 'col-select' }, [box]), ...cells]);
      row = { tr, box, cells, key: '' };
      rows.set(n.uuid, row);
    }
    // Re-render a row only when one of its fields changed.
    const key = JSON.stringify(FIELDS.map((f) => n[f]));
    if (row.key !== key) {
      row.key = key;
      COLUMNS.forEach(([field, render], i) => {
        const content = render(n);
        if (typeof content === 'string') setText(row.cells[i], content);
        else row.cells[i].replaceChildren(content);
        if (field === 'uuid') row.cells[i].title = n.uuid;
      });
      row.tr.dataset.state = n.provision_state ?? '';
      row.tr.dataset.name = n.name ?? '';
    }
    row.box.checked = selected.has(n.uuid);
    return row;
  }

  function compare(a, b) {
    const va = a[sort.key];
    const vb = b[sort.key];
    if (va == null || va === '') return vb == null || vb === '' ? 0 : 1;
    if (vb == null || vb === '') return -1;
    return sort.dir * String(va).localeCompare(String(vb), undefined, { numeric: true });
  }

  function shown() {
    const state = stateFilter.value;
    const text = textFilter.value.trim().toLowerCase();
    return [...nodes.values()]
      .filter((n) => !state || n.provision_state === state)
      .filter((n) => !text || `${n.name ?? ''} ${n.uuid}`.toLowerCase().includes(text))
      .sort((a, b) => compare(a, b) || a.uuid.localeCompare(b.uuid));
  }

  function render() {
    const list = shown();
    const wanted = list.map((n) => rowFor(n).tr);
    // Move rows only where the order changed, so focus stays where it is.
    wanted.forEach((tr, i) => {
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] ?? null);
    });
    while (tbody.children.length > wanted.length) tbody.lastElementChild.remove();
    byId('nodes-empty').hidden = list.length > 0;
    setText(byId('node-count'), nodes.size ? `${list.length} of ${nodes.size}` : '');
    const ticked = list.filter((n) => selected.has(n.uuid)).length;
    selectAll.checked = list.length > 0 && ticked === list.length;
    selectAll.indeterminate = ticked > 0 && ticked < list.length;
    renderStateOptions();
  }

  function renderStateOptions() {
    const counts = new Map();
    for (const n of nodes.values()) counts.set(n.provision_state, (counts.get(n.provision_state) ?? 0) + 1);
    const current = stateFilter.value;
    const options = [['', `all states (${nodes.size})`],
      ...[...counts].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([s, c]) => [s ?? '', `${s} (${c})`])];
    if (current && !counts.has(current)) options.push([current, `${current} (0)`]);
    const same = stateFilter.options.length === options.length &&
      options.every(([v, t], i) => stateFilter.options[i].value === v && stateFilter.options[i].text === t);
    if (same) return;
    stateFilter.replaceChildren(...options.map(([value, text]) => el('option', { value, text })));
    stateFilter.value = current;
  }

  function selectionChanged() {
    render();
    onSelection([...selected].map((uuid) => nodes.get(uuid)).filter(Boolean));
  }

  function update(list) {
    const seen = new Set();
    for (const n of list) {
      seen.add(n.uuid);
      nodes.set(n.uuid, n);
    }
    for (const uuid of [...nodes.keys()]) {
      if (seen.has(uuid)) continue;
      nodes.delete(uuid);
      rows.delete(uuid);
      selected.delete(uuid);
    }
    selectionChanged();
  }

  async function refresh() {
    if (inflight) return inflight;
    clearTimeout(timer);
    inflight = (async () => {
      try {
        update(await client.listNodes({ fields: FIELDS }));
        status.classList.remove('is-error');
        setText(status, `Updated ${new Date().toLocaleTimeString()}`);
      } catch (e) {
        // Shown in place (not as a new message every two seconds) until it recovers.
        const { title, detail, requestId } = describe(e);
        status.classList.add('is-error');
        setText(status, `Refresh failed: ${title}: ${detail}${requestId ? ` (request ${requestId})` : ''}`);
      } finally {
        inflight = null;
        schedule();
      }
    })();
    return inflight;
  }

  function schedule() {
    clearTimeout(timer);
    if (document.hidden) {
      setText(status, 'Paused while the page is hidden');
      return;
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  document.addEventListener('visibilitychange', () => (document.hidden ? schedule() : refresh()));
  stateFilter.addEventListener('change', render);
  textFilter.addEventListener('input', render);
  selectAll.addEventListener('change', () => {
    for (const n of shown()) selectAll.checked ? selected.add(n.uuid) : selected.delete(n.uuid);
    selectionChanged();
  });
  for (const button of document.querySelectorAll('#node-table th button[data-sort]')) {
    button.addEventListener('click', () => {
      const key = button.dataset.sort;
      sort = { key, dir: sort.key === key ? -sort.dir : 1 };
      for (const th of document.querySelectorAll('#node-table th')) th.removeAttribute('aria-sort');
      button.parentElement.setAttribute('aria-sort', sort.dir === 1 ? 'ascending' : 'descending');
      render();
    });
  }

  return {
    refresh,
    /** Applies a progress event's fields at once, between refreshes. */
    patch(uuid, fields) {
      const n = nodes.get(uuid);
      if (!n) return;
      nodes.set(uuid, { ...n, ...fields });
      render();
    },
    node: (uuid) => nodes.get(uuid),
    nodes: () => [...nodes.values()],
    clearSelection() {
      selected.clear();
      selectionChanged();
    },
  };
}
