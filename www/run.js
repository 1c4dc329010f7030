// The action form and the wait panel: one `client.provision` call per run
// (settle: 'all', so every node gets its own outcome), a live row per node
// fed by progress events, and Cancel, which aborts the wait (not the action).
import { el, setText, byId, shortId, seconds, badge } from './dom.js';
import { errorBlock } from './errors.js';
import { ACTIONS, EXAMPLE_STEPS, OUTCOMES, stepOf, stateKind } from './states.js';

// Summary counters; those after the first four only show when not zero.
const GROUPS = [
  ['waiting', 'waiting'], ['reached', 'reached'], ['failed', 'failed'], ['timed-out', 'timed out'],
  ['cancelled', 'cancelled'], ['sent', 'sent'], ['other', 'other'],
];

export function createRunPanel({ client, table }) {
  const form = byId('action-form');
  const action = byId('action');
  const timeout = byId('timeout');
  const poll = byId('poll');
  const steps = byId('steps');
  const password = byId('rescue-password');
  const runButton = byId('run');
  const cancel = byId('cancel');
  const status = byId('run-status');
  const list = byId('run-rows');
  const summary = byId('run-summary');

  let selection = [];
  let run = null; // the current or last run

  action.replaceChildren(...Object.entries(ACTIONS).map(([value, a]) => el('option', { value, text: a.label })));
  action.addEventListener('change', actionChanged);
  actionChanged();

  function actionChanged() {
    const a = ACTIONS[action.value];
    const needsSteps = a.needs === 'cleanSteps' || a.needs === 'serviceSteps';
    byId('steps-field').hidden = !needsSteps;
    if (needsSteps) steps.value = JSON.stringify(EXAMPLE_STEPS[a.needs]);
    byId('password-field').hidden = a.needs !== 'rescuePassword';
    timeout.disabled = poll.disabled = !a.path;
    setText(byId('action-note'), a.path
      ? `Waits for ${a.path.at(-1)}: ${a.path.join(' → ')}`
      : 'Sent without waiting: Ironic gives this action no state to wait for.');
  }

  function canRun() {
    runButton.disabled = selection.length === 0 || Boolean(run?.active);
  }

  function setSelection(nodes) {
    selection = nodes;
    const names = nodes.map((n) => n.name ?? shortId(n.uuid));
    setText(byId('selection'), nodes.length === 0
      ? 'No nodes selected: tick them in the table.'
      : `${nodes.length} selected: ${names.slice(0, 6).join(', ')}${names.length > 6 ? ', …' : ''}`);
    canRun();
  }

  /** The options of `client.provision` from the form, or throws a readable Error. */
  function options(a) {
    const o = { settle: 'all', holdIsTerminal: true };
    if (a.path) {
      const t = Number(timeout.value);
      o.wait = t > 0 ? t : true;
      o.pollInterval = Number(poll.value) || 1;
    }
    if (a.needs === 'cleanSteps' || a.needs === 'serviceSteps') {
      try {
        o[a.needs] = JSON.parse(steps.value);
      } catch (e) {
        throw Object.assign(new Error(`The steps are not valid JSON: ${e.message}`), { name: 'InvalidArgumentError' });
      }
    }
    if (a.needs === 'rescuePassword') {
      o.rescuePassword = password.value;
      password.value = ''; // sent once, not kept in the page
    }
    return o;
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (run?.active || selection.length === 0) return;
    const name = action.value;
    const a = ACTIONS[name];
    let opts;
    try {
      opts = options(a);
    } catch (e) {
      status.replaceChildren(errorBlock(e, `${name} not sent`));
      return;
    }
    await start(name, a, selection, opts);
  });

  cancel.addEventListener('click', () => run?.controller.abort());

  async function start(name, a, nodes, opts) {
    const controller = new AbortController();
    const started = performance.now();
    const now = () => (performance.now() - started) / 1000;
    const rows = new Map(nodes.map((n) => [n.uuid, {
      uuid: n.uuid, name: n.name, state: n.provision_state, lastError: null, pos: -1, outcome: null, elapsed: null, seen: [],
    }]));
    const current = (run = { active: true, controller, watching: false });
    canRun();
    cancel.disabled = !a.path;
    list.replaceChildren(...[...rows.values()].map((r) => (r.li = el('li', { class: 'run-row', 'data-uuid': r.uuid }))));
    rows.forEach((r) => drawRow(r, a.path, now));
    status.replaceChildren(a.path ? `Sending ${name} to ${nodes.length} node(s) and waiting for ${a.path.at(-1)}…` : `Sending ${name}…`);
    drawSummary(rows);
    const ticker = setInterval(() => rows.forEach((r) => r.outcome || drawRow(r, a.path, now)), 250);

    opts.signal = controller.signal;
    opts.onProgress = (e) => {
      const r = rows.get(e.node);
      if (!r) return;
      Object.assign(r, { state: e.state, lastError: e.lastError });
      if (r.seen.at(-1) !== e.state) r.seen.push(e.state);
      if (a.path) r.pos = stepOf(a.path, e.state, r.pos);
      if (e.done) Object.assign(r, { outcome: e.outcome, elapsed: now() });
      if (!current.watching) {
        current.watching = true;
        if (a.path) status.replaceChildren(`Waiting for ${rows.size} node(s) to reach ${a.path.at(-1)}…`);
      }
      table.patch(r.uuid, { provision_state: e.state, target_provision_state: e.targetState, last_error: e.lastError });
      drawRow(r, a.path, now);
      drawSummary(rows);
    };

    try {
      const report = await client.provision(nodes.map((n) => n.uuid), name, opts);
      for (const n of report.nodes) {
        const r = rows.get(n.node);
        if (!r) continue;
        r.outcome = n.outcome;
        if (n.state !== undefined) r.state = n.state;
        if (n.lastError !== undefined) r.lastError = n.lastError;
        // A refused PUT or a failed check: Ironic's error, with its request id.
        r.error = n.error ?? null;
        r.elapsed ??= now();
      }
      status.replaceChildren(finished(name, a, rows, now()));
    } catch (e) {
      const cancelled = e?.name === 'AbortError';
      for (const r of rows.values()) r.outcome ??= cancelled ? 'aborted' : 'not-watched';
      if (cancelled) {
        status.replaceChildren(el('span', { class: 'notice', text: `Cancelled after ${seconds(now())}: this page stopped waiting, `
          + `but the ${name} action goes on in Ironic. The node table keeps showing where the nodes are.` }));
      } else {
        status.replaceChildren(errorBlock(e, `${name} failed`));
      }
    } finally {
      clearInterval(ticker);
      current.active = false;
      cancel.disabled = true;
      canRun();
      rows.forEach((r) => drawRow(r, a.path, now));
      drawSummary(rows);
      table.refresh();
    }
  }

  function finished(name, a, rows, elapsed) {
    const all = [...rows.values()];
    if (!a.path) return `${name} sent to ${all.length} node(s); Ironic gives it no state to wait for.`;
    const reached = all.filter((r) => r.outcome === 'reached').length;
    if (reached === all.length) return `All ${all.length} node(s) reached ${a.path.at(-1)} in ${seconds(elapsed)}.`;
    return `${reached} of ${all.length} node(s) reached ${a.path.at(-1)}; see the rows below.`;
  }

  function drawSummary(rows) {
    const counts = Object.fromEntries(GROUPS.map(([g]) => [g, 0]));
    for (const r of rows.values()) counts[outcomeOf(r)[1]] += 1;
    summary.replaceChildren(...GROUPS.filter(([g], i) => i < 4 || counts[g] > 0).map(([g, text]) =>
      el('li', { class: `count count-${g}`, 'data-group': g }, [el('strong', { text: String(counts[g]) }), ` ${text}`])));
  }

  return { setSelection };
}

/** [what a row says, its summary counter]. */
const outcomeOf = (r) => (r.outcome ? OUTCOMES[r.outcome] ?? [r.outcome, 'other'] : ['waiting', 'waiting']);

/** One node's row: name (UUID as its title), state, elapsed, outcome, the expected states as steps, and last_error in full. */
function drawRow(r, path, now) {
  const [outcome, group] = outcomeOf(r);
  r.li.className = `run-row run-${group}`;
  r.li.dataset.outcome = r.outcome ?? 'waiting';
  r.li.dataset.state = r.state ?? '';
  r.li.dataset.seen = r.seen.join(' > ');
  const children = [
    el('div', { class: 'run-line' }, [
      el('span', { class: 'run-name', title: r.uuid, text: r.name ?? shortId(r.uuid) }),
      badge(r.state, stateKind(r.state)),
      el('span', { class: 'run-elapsed', text: seconds(r.elapsed ?? now()) }),
      el('span', { class: `outcome outcome-${group}`, text: outcome }),
    ]),
  ];
  if (path) {
    const reached = r.outcome === 'reached';
    const failed = group === 'failed';
    children.push(el('ol', { class: 'steps', 'aria-label': `Expected states for ${r.name ?? r.uuid}` }, path.map((s, i) => {
      const current = !reached && i === Math.max(r.pos, 0) && (r.pos >= 0 || failed);
      const cls = reached || i < r.pos ? 'done' : current ? (failed ? 'failed' : 'current') : 'todo';
      return el('li', { 'aria-current': cls === 'current' ? 'step' : null }, [el('span', { class: `step step-${cls}`, text: s })]);
    })));
  }
  if (r.lastError) children.push(el('p', { class: 'run-error', text: r.lastError }));
  if (r.error) children.push(errorBlock(r.error));
  r.li.replaceChildren(...children);
}
