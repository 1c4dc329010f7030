// The console's entry. The ironic-wait client lives in the hub (hub.js), a
// SharedWorker every tab of this console shares (or, where there is none, a
// hub in this page): this page draws the node table, the action form, the
// wait panels, allocations and a node's detail, and talks to the hub. The
// console server's token, read from this page, goes to the hub in memory.

import { createAllocations } from './allocations.js';
import { connect } from './connection.js';
import { createDetail } from './detail.js';
import { byId, setText } from './dom.js';
import { catchStrays, report } from './errors.js';
import { createNodeTable } from './nodes.js';
import { createRunPanel } from './run.js';
import { useScopeFilters } from './scope.js';
import { useStateRules } from './states.js';

catchStrays();
start();

async function start() {
  // The console server accepts API requests and writes only with the token it put in this page.
  const token = document.querySelector('meta[name="console-token"]')?.content ?? '';
  let hub;
  try {
    hub = await connect(token);
  } catch (e) {
    report(e, 'Start-up');
    return;
  }
  const { version, tables, microversion } = hub.hello;
  setText(byId('version'), version);
  setText(byId('hub-mode'), hub.mode === 'shared' ? 'one for all tabs (SharedWorker)' : 'in this tab (no SharedWorker)');
  document.body.dataset.hub = hub.mode;
  useStateRules(tables);
  useScopeFilters(tables.scopeFilters);
  hub.on('error', (msg) => report(msg.error, msg.context));

  let runs = null;
  const detail = createDetail({ hub });
  const table = createNodeTable({ hub, tables, onSelection: (s) => runs?.setSelection(s), onOpen: (uuid) => detail.open(uuid) });
  runs = createRunPanel({ hub, table, tables, waitsList: byId('waits') });
  createAllocations({ hub, table });

  const showVersion = (v, error) => {
    setText(byId('microversion'), v ?? (error ? 'unknown' : '…'));
    table.setMicroversion(v);
    runs.setMicroversion(v);
    if (error) report(error, 'Microversion negotiation');
  };
  if (microversion) showVersion(microversion);
  hub.on('microversion', (msg) => showVersion(msg.microversion, msg.error));

  // What /v1 is: the embedded simulator, or a real Ironic behind the server's proxy.
  const config = await fetch('/console.json')
    .then((r) => r.json())
    .catch(() => ({}));
  setText(
    byId('endpoint'),
    {
      proxy: `${config.ironic} (through this server)`,
      simulator: `simulator at ${location.origin}/v1`,
    }[config.mode] ?? `${location.origin}/v1`,
  );
  if (config.mode === 'simulator') {
    const reset = byId('reset-demo');
    reset.hidden = false;
    reset.addEventListener('click', async () => {
      const r = await fetch('/__sim/reset', { method: 'POST', headers: { 'X-Console-Token': token } }).catch((e) => e);
      if (!(r instanceof Response) || !r.ok) report(r instanceof Error ? r : new Error(`HTTP ${r.status}`), 'Reset');
      table.refresh();
    });
  }
  await table.ready;
  document.body.dataset.ready = 'true';
}
