// The action form and the wait panels. An action (or a power button) on the
// selection asks the hub to start a wait (settle 'all': every node gets its
// own outcome); the hub runs it and tells every tab how it goes, so each
// tab has a panel per wait, several at once, each with its counts, its chart
// of outcomes over time, Cancel, and a row per node (or, past ROWS_MAX
// nodes, its failures).

import { drawStacked, legend } from './chart.js';
import { badge, byId, el, seconds, setText, shortId } from './dom.js';
import { errorBlock } from './errors.js';
import { EXAMPLE_STEPS, OUTCOMES, offeredActions, stateKind, stepOf } from './states.js';

// Summary counters; those after the first four only show when not zero.
const GROUPS = [
  ['waiting', 'waiting'],
  ['reached', 'reached'],
  ['failed', 'failed'],
  ['timed-out', 'timed out'],
  ['cancelled', 'cancelled'],
  ['sent', 'sent'],
  ['other', 'other'],
];
// The wait chart's series: [index in a series point, name, class].
const SERIES = [
  [2, 'reached', 'area-reached'],
  [1, 'waiting', 'area-waiting'],
  [3, 'failed', 'area-failed'],
  [4, 'other', 'area-other'],
];

export function createRunPanel({ hub, table, tables, waitsList }) {
  const form = byId('action-form');
  const action = byId('action');
  const timeout = byId('timeout');
  const poll = byId('poll');
  const steps = byId('steps');
  const password = byId('rescue-password');
  const runButton = byId('run');
  const actionStatus = byId('action-status');

  let selection = { count: 0, names: [] };
  let microversion = null;
  const panels = new Map(); // wait id -> { wait, article, ... }
  const ACTIONS = offeredActions(tables);

  action.replaceChildren(...Object.entries(ACTIONS).map(([value, a]) => el('option', { value, text: a.label })));
  action.addEventListener('change', actionChanged);
  actionChanged();

  const powerButtons = [...document.querySelectorAll('#power-buttons button[data-power]')];
  for (const b of powerButtons) b.addEventListener('click', () => power(b.dataset.power));

  function actionChanged() {
    const a = ACTIONS[action.value];
    const needsSteps = a.needs === 'cleanSteps' || a.needs === 'serviceSteps';
    byId('steps-field').hidden = !needsSteps;
    if (needsSteps) steps.value = JSON.stringify(EXAMPLE_STEPS[a.needs]);
    byId('password-field').hidden = a.needs !== 'rescuePassword';
    setText(
      byId('action-note'),
      a.path ? `Waits for ${a.path.at(-1)}: ${a.path.join(' → ')}` : 'Sent without waiting: Ironic gives this action no state to wait for.',
    );
  }

  function canRun() {
    runButton.disabled = selection.count === 0;
    const minor = Number(/^1\.(\d+)$/.exec(microversion ?? '')?.[1] ?? 0);
    for (const b of powerButtons) {
      const soft = b.dataset.power.startsWith('soft');
      const needs = tables.versions.softPower;
      const old = soft && microversion !== null && minor < needs;
      b.disabled = selection.count === 0 || old;
      b.title = old ? `Soft power actions need Ironic API 1.${needs}; this Ironic speaks ${microversion}` : '';
    }
  }

  function setSelection(s) {
    selection = s;
    const { count, names } = s;
    setText(
      byId('selection'),
      count === 0
        ? 'No nodes selected: tick them in the table.'
        : `${count.toLocaleString('en')} selected: ${names.slice(0, 6).join(', ')}${count > 6 ? ', …' : ''}`,
    );
    canRun();
  }

  function setMicroversion(v) {
    microversion = v;
    canRun();
  }

  /** The wait options from the form, or throws a readable Error. */
  function options(a) {
    const o = {};
    if (!a || a.path) {
      // 0 (or empty) waits without limit: no timeout.
      const t = Number(timeout.value);
      o.wait = true;
      if (t > 0) o.timeout = t;
      o.pollInterval = Number(poll.value) || 1;
    }
    if (a?.needs === 'cleanSteps' || a?.needs === 'serviceSteps') {
      try {
        o[a.needs] = JSON.parse(steps.value);
      } catch (e) {
        throw Object.assign(new Error(`The steps are not valid JSON: ${e.message}`), { name: 'InvalidArgumentError' });
      }
    }
    if (a?.needs === 'rescuePassword') {
      o.rescuePassword = password.value;
      password.value = ''; // sent once, not kept in the page
    }
    return o;
  }

  async function start(body, name) {
    actionStatus.replaceChildren();
    const nodes = table.selection();
    if (nodes.length === 0) return;
    try {
      await hub.request('run', {
        ...body,
        nodes,
        scope: table.scope(),
        label: `${name} · ${nodes.length.toLocaleString('en')} node(s)${describe()}`,
      });
    } catch (e) {
      actionStatus.replaceChildren(errorBlock(e, `${name} not sent`));
    }
  }
  const describe = () => {
    const d = table.describeScope();
    return d ? ` of ${d}` : '';
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (selection.count === 0) return;
    const name = action.value;
    const a = ACTIONS[name];
    let o;
    try {
      o = options(a);
    } catch (e) {
      actionStatus.replaceChildren(errorBlock(e, `${name} not sent`));
      return;
    }
    start({ kind: 'provision', action: name, options: o, expected: a.path?.at(-1) ?? null, path: a.path }, name);
  });

  function power(target) {
    if (selection.count === 0) return;
    // The power state the action ends in, from the package's table.
    const { expected } = tables.powerActions.find((row) => row.name === target);
    start({ kind: 'power', action: target, options: options(null), expected, path: [expected] }, target);
  }

  // ---------------------------------------------------------- the panels

  function show(w) {
    if (w.kind === 'allocation') return;
    let p = panels.get(w.id);
    if (!p) {
      p = { article: el('article', { class: 'wait-panel', 'data-wait-id': w.id }) };
      panels.set(w.id, p);
      waitsList.prepend(p.article);
      byId('waits-empty').hidden = true;
    }
    p.wait = w;
    draw(p);
  }

  function forget(id) {
    panels.get(id)?.article.remove();
    panels.delete(id);
    byId('waits-empty').hidden = panels.size > 0;
  }

  const now = (w) => ((w.endedAt ?? Date.now()) - w.startedAt) / 1000;

  function draw(p) {
    const w = p.wait;
    const running = w.status === 'running';
    const article = p.article;
    article.dataset.status = w.status;
    article.dataset.kind = w.kind;
    article.dataset.saved = String(w.saved);
    article.dataset.persisted = String(w.persisted);
    article.dataset.resumed = String(w.resumed);
    if (!p.head) {
      p.title = el('h3', { class: 'wait-title' });
      p.meta = el('p', { class: 'wait-meta muted' });
      p.cancel = el('button', { type: 'button', class: 'wait-cancel', text: 'Cancel wait', 'aria-describedby': 'cancel-hint' });
      p.cancel.addEventListener('click', () => hub.send('cancel', { id: p.wait.id }));
      p.dismiss = el('button', { type: 'button', class: 'wait-dismiss quiet', text: 'Dismiss' });
      p.dismiss.addEventListener('click', () => forget(p.wait.id));
      p.head = el('div', { class: 'wait-head' }, [el('div', {}, [p.title, p.meta]), p.cancel, p.dismiss]);
      p.status = el('div', { class: 'run-status', 'aria-live': 'polite' });
      p.summary = el('ul', { class: 'summary', 'aria-label': 'Summary' });
      p.chart = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
      p.chart.setAttribute('class', 'chart wait-chart');
      p.legend = el('ul', { class: 'chart-legend', 'aria-hidden': 'true' });
      p.failuresTitle = el('h4', { class: 'failures-title' });
      p.rows = el('ol', { class: 'run-rows', 'aria-label': 'Nodes in this wait' });
      article.append(p.head, p.status, p.summary, el('figure', { class: 'chart-box' }, [p.chart, p.legend]), p.failuresTitle, p.rows);
    }
    setText(p.title, w.label);
    const bits = [`started ${new Date(w.startedAt).toLocaleTimeString()}`];
    if (w.resumed) bits.push('taken up again from the checkpoint kept in this browser');
    else if (w.persisted) bits.push('kept in this browser: a reload takes it up again');
    setText(p.meta, bits.join(' · '));
    p.cancel.hidden = !running || !w.expected;
    p.cancel.disabled = !running;
    p.dismiss.hidden = running;
    p.status.replaceChildren(statusOf(w));
    drawSummary(p.summary, w.counts);
    drawStacked(p.chart, {
      points: w.series.map(([t, ...v]) => ({ t, values: Object.fromEntries(SERIES.map(([i, name]) => [name, v[i - 1]])) })),
      classOf: (k) => SERIES.find(([, name]) => name === k)[2],
      order: (k) => SERIES.findIndex(([, name]) => name === k),
      xLabel: (t) => seconds(t),
      label: `Nodes of this wait by outcome over time: ${w.counts.reached} reached, ${w.counts.failed} failed, ${w.counts.waiting} waiting`,
    });
    legend(
      p.legend,
      SERIES.map(([i, name, cls]) => [name, w.series.at(-1)?.[i] ?? 0, cls]),
    );
    if (w.rows) {
      p.failuresTitle.hidden = true;
      p.rows.replaceChildren(...w.rows.map((r) => drawRow(r, w)));
    } else {
      p.failuresTitle.hidden = false;
      const more = w.failedCount - w.failures.length;
      setText(
        p.failuresTitle,
        w.failedCount === 0
          ? 'No failures so far'
          : `Failures: ${w.failedCount.toLocaleString('en')}${more > 0 ? ` (the first ${w.failures.length} shown)` : ''}`,
      );
      p.rows.replaceChildren(...w.failures.map((r) => drawRow(r, w)));
    }
  }

  function statusOf(w) {
    const expected = w.expected;
    const n = w.total.toLocaleString('en');
    const moved = w.series.length > 1 || w.counts.waiting < w.total;
    switch (w.status) {
      case 'running':
        if (!expected) return `Sending ${w.action}…`;
        return moved || w.resumed
          ? `Waiting for ${n} node(s) to reach ${expected}…`
          : `Sending ${w.action} to ${n} node(s) and waiting for ${expected}…`;
      case 'cancelled':
        return el('span', {
          class: 'notice',
          text:
            `Cancelled after ${seconds(now(w))}: the console stopped waiting, ` +
            `but the ${w.action} action goes on in Ironic. The node table keeps showing where the nodes are.`,
        });
      case 'failed':
        return errorBlock(w.error, `${w.action} failed`);
      default: {
        if (!expected) return `${w.action} sent to ${n} node(s); Ironic gives it no state to wait for.`;
        const reached = w.counts.reached;
        if (reached === w.total) return `All ${n} node(s) reached ${expected} in ${seconds(now(w))}.`;
        return `${reached.toLocaleString('en')} of ${n} node(s) reached ${expected}; see the ${w.rows ? 'rows' : 'failures'} below.`;
      }
    }
  }

  function drawSummary(list, counts) {
    list.replaceChildren(
      ...GROUPS.filter(([g], i) => i < 4 || counts[g] > 0).map(([g, text]) =>
        el('li', { class: `count count-${g}`, 'data-group': g }, [el('strong', { text: counts[g].toLocaleString('en') }), ` ${text}`]),
      ),
    );
  }

  // Unsettled rows' elapsed time goes on between the hub's updates.
  setInterval(() => {
    for (const p of panels.values()) {
      if (p.wait.status !== 'running') continue;
      for (const span of p.rows.querySelectorAll('.run-row[data-outcome="waiting"] .run-elapsed')) setText(span, seconds(now(p.wait)));
    }
  }, 250);

  hub.on('wait', ({ wait }) => show(wait));
  hub.on('forget', ({ id }) => forget(id));
  for (const w of hub.hello.waits) show(w);

  return { setSelection, setMicroversion };
}

/** [what a row says, its summary counter]. */
const outcomeOf = (r) => (r.outcome ? (OUTCOMES[r.outcome] ?? [r.outcome, 'other']) : ['waiting', 'waiting']);

/** One node's row: name (UUID as its title), state, elapsed, outcome, the expected states as steps, and last_error in full. */
function drawRow(r, w) {
  const [outcome, group] = outcomeOf(r);
  const path = w.path;
  const li = el('li', {
    class: `run-row run-${group}`,
    'data-uuid': r.uuid,
    'data-outcome': r.outcome ?? 'waiting',
    'data-state': r.state ?? '',
    'data-seen': r.seen.join(' > '),
  });
  const elapsed = r.elapsed ?? ((w.endedAt ?? Date.now()) - w.startedAt) / 1000;
  const children = [
    el('div', { class: 'run-line' }, [
      el('span', { class: 'run-name', title: r.uuid, text: r.name ?? shortId(r.uuid) }),
      badge(r.state, w.kind === 'power' ? 'working' : stateKind(r.state)),
      el('span', { class: 'run-elapsed', text: seconds(elapsed) }),
      el('span', { class: `outcome outcome-${group}`, text: outcome }),
    ]),
  ];
  if (path && w.rows) {
    const pos = r.seen.reduce((p, s) => stepOf(path, s, p), -1);
    const reached = r.outcome === 'reached';
    const failed = group === 'failed';
    children.push(
      el(
        'ol',
        { class: 'steps', 'aria-label': `Expected states for ${r.name ?? r.uuid}` },
        path.map((s, i) => {
          const current = !reached && i === Math.max(pos, 0) && (pos >= 0 || failed);
          const cls = reached || i < pos ? 'done' : current ? (failed ? 'failed' : 'current') : 'todo';
          return el('li', { 'aria-current': cls === 'current' ? 'step' : null }, [el('span', { class: `step step-${cls}`, text: s })]);
        }),
      ),
    );
  }
  if (r.lastError) children.push(el('p', { class: 'run-error', text: r.lastError }));
  if (r.error) children.push(errorBlock(r.error));
  // The wait's diagnosis: the failed node's last history events.
  if (r.history?.length) {
    children.push(
      el('details', { class: 'run-history' }, [
        el('summary', { text: `Last history events (${r.history.length})` }),
        el(
          'ol',
          {},
          r.history.map((e) =>
            el('li', { class: `event-${String(e.severity ?? '').toLowerCase()}` }, [
              el('time', { datetime: e.created_at ?? '', text: new Date(e.created_at).toLocaleTimeString() }),
              ` ${e.severity ?? ''} ${e.event_type ?? ''}: `,
              el('span', { text: e.event ?? '' }),
            ]),
          ),
        ),
      ]),
    );
  } else if (r.historyError) {
    children.push(el('p', { class: 'hint run-history-error', text: `No history: ${r.historyError}` }));
  }
  li.append(...children);
  return li;
}
