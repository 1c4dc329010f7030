// Allocations: create one (resource class, optional traits and name) and
// wait until Ironic makes it active or gives up with an error.
import { el, byId, shortId, seconds, badge } from './dom.js';
import { errorBlock } from './errors.js';

const ALLOCATION_KIND = { allocating: 'working', active: 'active', error: 'failed' };

export function createAllocations({ client, table }) {
  const form = byId('alloc-form');
  const list = byId('alloc-rows');

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const fields = { resourceClass: byId('alloc-rc').value.trim() };
    const traits = byId('alloc-traits').value.split(/[\s,]+/).filter(Boolean);
    if (traits.length) fields.traits = traits;
    const name = byId('alloc-name').value.trim();
    if (name) fields.name = name;
    const t = Number(byId('alloc-timeout').value);

    const item = { label: name || `${fields.resourceClass}${traits.length ? ` + ${traits.join(', ')}` : ''}`, state: 'allocating' };
    item.li = el('li', { class: 'alloc-row' });
    list.prepend(item.li);
    const started = performance.now();
    draw(item);
    try {
      const { allocation, report } = await client.createAllocation(fields, {
        wait: t > 0 ? t : true,
        pollInterval: 0.5,
        onProgress: (e) => draw(Object.assign(item, { uuid: e.allocation ?? item.uuid, state: e.state, lastError: e.lastError })),
      });
      const body = report?.allocation.body ?? allocation;
      Object.assign(item, { uuid: body.uuid, state: body.state, lastError: body.last_error, node: body.node_uuid });
    } catch (e) {
      if (e?.name === 'StateTransitionFailed') Object.assign(item, { uuid: e.allocation, state: e.state, lastError: e.lastError });
      else Object.assign(item, { state: null, problem: e });
    }
    item.elapsed = (performance.now() - started) / 1000;
    draw(item);
    table.refresh();
  });

  function draw(item) {
    const node = item.node && table.node(item.node);
    const state = item.state ?? 'not created';
    item.li.dataset.state = state;
    item.li.replaceChildren(
      el('div', { class: 'run-line' }, [
        el('span', { class: 'run-name', text: item.label }),
        item.uuid ? el('code', { class: 'run-uuid', title: item.uuid, text: shortId(item.uuid) }) : '',
        badge(state, ALLOCATION_KIND[state] ?? 'failed'),
        item.elapsed != null ? el('span', { class: 'run-elapsed', text: seconds(item.elapsed) }) : '',
      ]),
      item.node ? el('p', { class: 'alloc-node' }, ['Node: ', el('strong', { text: node?.name ?? item.node })]) : '',
      item.lastError ? el('p', { class: 'run-error', text: item.lastError }) : '',
      item.problem ? errorBlock(item.problem, 'Allocation') : '',
    );
  }
}
