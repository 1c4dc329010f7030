// The console's entry: loads the ironic-wait package from /pkg/ (its browser
// entry instantiates the wasm), talks to Ironic at this page's own origin
// (the console server serves the simulator or proxies a real Ironic there),
// and wires the node table, the action/wait panel and allocations together.
import { byId, setText } from './dom.js';
import { catchStrays, report } from './errors.js';
import { createNodeTable } from './nodes.js';
import { createRunPanel } from './run.js';
import { createAllocations } from './allocations.js';
import { useStateRules } from './states.js';

catchStrays();
start();

async function start() {
  let pkg;
  try {
    pkg = await import('/pkg/web.js');
  } catch (e) {
    report(new Error(`The ironic-wait package could not be loaded from /pkg/ (${e.message}). Build it with \`npm run build\` (\`npm start\` does).`), 'Start-up');
    return;
  }
  const { IronicClient, version, tables } = pkg;
  setText(byId('version'), version());
  useStateRules(tables());

  // The console server accepts writes only with the token it put in this page.
  const headers = { 'X-Console-Token': document.querySelector('meta[name="console-token"]')?.content ?? '' };
  const client = new IronicClient({ endpoint: location.origin, headers });
  // The table refreshes every two seconds: a failure shows at once and the
  // next refresh is the retry.
  const tableClient = new IronicClient({ endpoint: location.origin, headers, maxRetries: 0, requestTimeout: 15 });

  let runs = null;
  const table = createNodeTable({ client: tableClient, onSelection: (nodes) => runs?.setSelection(nodes) });
  runs = createRunPanel({ client, table });
  createAllocations({ client, table });

  // What /v1 is: the embedded simulator, or a real Ironic behind the server's proxy.
  const config = await fetch('/console.json').then((r) => r.json()).catch(() => ({}));
  setText(byId('endpoint'), {
    proxy: `${config.ironic} (through this server)`,
    simulator: `simulator at ${location.origin}/v1`,
  }[config.mode] ?? `${location.origin}/v1`);
  if (config.mode === 'simulator') {
    const reset = byId('reset-demo');
    reset.hidden = false;
    reset.addEventListener('click', async () => {
      const r = await fetch('/__sim/reset', { method: 'POST', headers }).catch((e) => e);
      if (!(r instanceof Response) || !r.ok) report(r instanceof Error ? r : new Error(`HTTP ${r.status}`), 'Reset');
      table.refresh();
    });
  }

  client.microversion().then(
    (v) => setText(byId('microversion'), v),
    (e) => {
      setText(byId('microversion'), 'unknown');
      report(e, 'Microversion negotiation');
    },
  );
  await table.refresh();
  document.body.dataset.ready = 'true';
}
