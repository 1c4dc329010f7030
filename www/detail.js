// A node's detail, opened from its row: its fields (GET /v1/nodes/{id}), and
// its history (GET /v1/nodes/{id}/history, API 1.78 and later) as a
// timeline: each event with its time, severity, type and text, errors
// marked, and the time the node spent in each state, as far as the history
// tells. Everything from the server is set as text.
import { badge, byId, el, seconds, setText, shortId } from './dom.js';
import { errorBlock } from './errors.js';
import { stateKind } from './states.js';

// Shown first, in this order; the rest under "All fields".
const MAIN_FIELDS = [
  'name',
  'uuid',
  'provision_state',
  'target_provision_state',
  'power_state',
  'target_power_state',
  'maintenance',
  'maintenance_reason',
  'fault',
  'last_error',
  'resource_class',
  'conductor_group',
  'conductor',
  'reservation',
  'shard',
  'owner',
  'lessee',
  'driver',
  'instance_uuid',
  'allocation_uuid',
  'provision_updated_at',
  'created_at',
  'updated_at',
];

const when = (iso) => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso ?? '') : d.toLocaleString();
};
const valueText = (v) => (v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v, null, 1) : String(v));

export function createDetail({ hub }) {
  const panel = byId('detail-panel');
  const title = byId('detail-title');
  const fields = byId('detail-fields');
  const more = byId('detail-more');
  const historyBox = byId('detail-history');
  let current = null;

  byId('detail-close').addEventListener('click', () => {
    panel.hidden = true;
    current = null;
  });

  async function open(uuid) {
    current = uuid;
    panel.hidden = false;
    panel.dataset.uuid = uuid;
    panel.dataset.loaded = 'false';
    setText(title, shortId(uuid));
    fields.replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
    more.replaceChildren();
    historyBox.replaceChildren(el('p', { class: 'muted', text: 'Loading the history…' }));
    panel.scrollIntoView({ block: 'nearest' });
    const [node, history] = await Promise.allSettled([hub.request('node', { uuid }), hub.request('history', { uuid })]);
    if (current !== uuid) return; // another node was opened meanwhile
    if (node.status === 'fulfilled') drawFields(node.value);
    else fields.replaceChildren(errorBlock(node.reason, 'The node'));
    if (history.status === 'fulfilled') drawHistory(history.value, node.value);
    else historyBox.replaceChildren(errorBlock(history.reason, 'Its history'));
    panel.dataset.loaded = 'true';
  }

  function drawFields(node) {
    setText(title, node.name ?? shortId(node.uuid));
    const row = (k) => [el('dt', { text: k }), el('dd', { class: `field-${k.replaceAll('_', '-')}`, text: valueText(node[k]) })];
    fields.replaceChildren(...MAIN_FIELDS.filter((k) => k in node).flatMap(row));
    const rest = Object.keys(node)
      .filter((k) => !MAIN_FIELDS.includes(k) && k !== 'links')
      .sort();
    more.replaceChildren(
      el('summary', { text: `All fields (${rest.length} more)` }),
      el('dl', { class: 'fields-list' }, rest.flatMap(row)),
    );
  }

  function drawHistory(answer, node) {
    if (answer.unsupported) {
      historyBox.replaceChildren(
        el('p', {
          class: 'notice history-unsupported',
          text: answer.unsupported,
        }),
      );
      return;
    }
    const events = [...(answer.events ?? [])].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    if (events.length === 0) {
      historyBox.replaceChildren(el('p', { class: 'muted', text: 'No history recorded for this node.' }));
      return;
    }
    historyBox.replaceChildren(
      el('h4', { text: 'Time in each state' }),
      stints(events, node),
      el('h4', { text: `Events (${events.length})` }),
      timeline(events),
    );
  }

  return { open };
}

/**
 * The states the history shows the node in, in order, with the time spent
 * in each: from API 1.115 an event says the node's state and the seconds
 * since it entered it (duration_seconds), so a run of events in one state
 * spent at least the largest of them there. Older events say neither: then
 * the time between one event and the next is what is known.
 */
function stints(events, node) {
  const rows = [];
  for (const e of events) {
    const state = e.state ?? null;
    const last = rows.at(-1);
    if (state && last?.state === state) {
      // Events of one stay: it lasted at least from the first one's entry to
      // the last event (states in between, like wait call-back, write no row).
      const span = (Date.parse(e.created_at) - Date.parse(last.at)) / 1000 + (last.entered ?? 0);
      last.seconds = Math.max(last.seconds ?? 0, e.duration_seconds ?? 0, Number.isFinite(span) ? span : 0);
      last.errors += e.severity === 'ERROR' ? 1 : 0;
      continue;
    }
    rows.push({
      state,
      seconds: e.duration_seconds ?? null,
      entered: e.duration_seconds ?? 0,
      errors: e.severity === 'ERROR' ? 1 : 0,
      at: e.created_at,
      type: e.event_type,
    });
  }
  const stated = rows.some((r) => r.state);
  const items = stated
    ? rows
        .filter((r) => r.state)
        .map((r) =>
          el('li', { class: r.errors ? 'stint stint-error' : 'stint' }, [
            badge(r.state, stateKind(r.state)),
            ` ${r.seconds == null ? 'time not recorded' : seconds(r.seconds)}`,
            r.errors ? el('span', { class: 'stint-errors', text: ` · ${r.errors} error${r.errors > 1 ? 's' : ''}` }) : '',
          ]),
        )
    : events
        .slice(0, -1)
        .map((e, i) =>
          el('li', { class: e.severity === 'ERROR' ? 'stint stint-error' : 'stint' }, [
            `${e.event_type ?? 'event'}: ${seconds((Date.parse(events[i + 1].created_at) - Date.parse(e.created_at)) / 1000)} until the next event`,
          ]),
        );
  // Where the node is now, and since when (its provision state's stamp).
  if (node?.provision_state && node.provision_updated_at) {
    const since = (Date.now() - Date.parse(node.provision_updated_at)) / 1000;
    if (Number.isFinite(since))
      items.push(
        el('li', { class: 'stint stint-now' }, [
          badge(node.provision_state, stateKind(node.provision_state)),
          ` now, for ${seconds(Math.max(0, since))}`,
        ]),
      );
  }
  return el('ol', { class: 'stints' }, items);
}

function timeline(events) {
  return el(
    'ol',
    { class: 'timeline', 'aria-label': 'Node history' },
    events.map((e, i) => {
      const severity = String(e.severity ?? 'INFO').toUpperCase();
      const gap = i > 0 ? (Date.parse(e.created_at) - Date.parse(events[i - 1].created_at)) / 1000 : null;
      return el('li', { class: `event event-${severity.toLowerCase()}`, 'data-severity': severity, 'data-type': e.event_type ?? '' }, [
        el('div', { class: 'event-head' }, [
          el('time', { datetime: e.created_at ?? '', text: when(e.created_at) }),
          badge(severity, severity === 'ERROR' ? 'failed' : severity === 'WARNING' ? 'hold' : 'none'),
          el('span', { class: 'event-type', text: e.event_type ?? '' }),
          e.state
            ? el('span', {
                class: 'event-state muted',
                text: `in ${e.state}${e.duration_seconds != null ? ` for ${seconds(e.duration_seconds)}` : ''}`,
              })
            : '',
          gap !== null && Number.isFinite(gap) ? el('span', { class: 'event-gap muted', text: `+${seconds(gap)}` }) : '',
        ]),
        el('p', { class: 'event-text', text: e.event ?? '' }),
        e.conductor || e.user
          ? el('p', {
              class: 'event-by muted',
              text: [e.conductor && `conductor ${e.conductor}`, e.user && `user ${e.user}`].filter(Boolean).join(' · '),
            })
          : '',
      ]);
    }),
  );
}
