// Allocations: create one (resource class, optional traits and name) and
// wait until Ironic makes it active or gives up with an error. The hub runs
// the wait (so it is kept across reloads like the others); this panel shows
// the allocation waits of every tab.
import { badge, byId, el, seconds, shortId } from './dom.js';
import { errorBlock } from './errors.js';
import { stateKind } from './states.js';

export function createAllocations({ hub, table }) {
  const form = byId('alloc-form');
  const list = byId('alloc-rows');
  const items = new Map(); // wait id -> li

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const fields = { resourceClass: byId('alloc-rc').value.trim() };
    const traits = byId('alloc-traits')
      .value.split(/[\s,]+/)
      .filter(Boolean);
    if (traits.length) fields.traits = traits;
    const name = byId('alloc-name').value.trim();
    if (name) fields.name = name;
    const t = Number(byId('alloc-timeout').value);
    const label = name || `${fields.resourceClass}${traits.length ? ` + ${traits.join(', ')}` : ''}`;
    try {
      await hub.request('run', {
        kind: 'allocation',
        fields,
        label,
        options: { wait: true, ...(t > 0 && { timeout: t }), pollInterval: 0.5 },
      });
    } catch (e) {
      const li = el('li', { class: 'alloc-row', 'data-state': 'not created' });
      li.append(
        el('div', { class: 'run-line' }, [el('span', { class: 'run-name', text: label }), badge('not created', 'failed')]),
        errorBlock(e, 'Allocation'),
      );
      list.prepend(li);
    }
  });

  function show(w) {
    if (w.kind !== 'allocation') return;
    let li = items.get(w.id);
    if (!li) {
      li = el('li', { class: 'alloc-row' });
      items.set(w.id, li);
      list.prepend(li);
    }
    const row = w.rows?.[0] ?? {};
    const uuid = w.allocation?.uuid ?? null;
    const nodeUuid = w.allocation?.node ?? null;
    const node = nodeUuid && table.node(nodeUuid);
    const state = row.state ?? (w.status === 'running' ? 'allocating' : 'not created');
    li.dataset.state = state;
    li.dataset.waitId = w.id;
    const ended = w.status !== 'running';
    li.replaceChildren(
      el('div', { class: 'run-line' }, [
        el('span', { class: 'run-name', text: w.label }),
        uuid ? el('code', { class: 'run-uuid', title: uuid, text: shortId(uuid) }) : '',
        badge(state, stateKind(state)),
        ended ? el('span', { class: 'run-elapsed', text: seconds(((w.endedAt ?? Date.now()) - w.startedAt) / 1000) }) : '',
      ]),
      nodeUuid ? el('p', { class: 'alloc-node' }, ['Node: ', el('strong', { text: node?.name ?? nodeUuid })]) : '',
      row.lastError ? el('p', { class: 'run-error', text: row.lastError }) : '',
      w.error ? errorBlock(w.error, 'Allocation') : '',
    );
  }

  hub.on('wait', ({ wait }) => show(wait));
  hub.on('forget', ({ id }) => {
    items.get(id)?.remove();
    items.delete(id);
  });
  for (const w of hub.hello.waits) show(w);
}
