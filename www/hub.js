// The hub: the one place that holds the IronicClient, so that every tab of
// the console is served by one client and its one poll loop. It runs as a
// module SharedWorker (app.js starts it; N tabs, one hub) or, in a browser
// without SharedWorker, inside the page (one hub per tab). Tabs talk to it
// over MessagePorts (connection.js has the page's side and the messages).
// This module makes the client and routes the tabs' messages to its parts:
// hub/tabs.js (the tabs), hub/scopes.js (a watch per scope some tab shows)
// and hub/waits.js (the waits, kept in IndexedDB while they run). The console
// server's token comes from a tab's message and lives in this hub's memory
// only (`session`): not in IndexedDB, not in a checkpoint.

import { createScopes } from './hub/scopes.js';
import { createTabs, plainError } from './hub/tabs.js';
import { createWaits } from './hub/waits.js';
import { openStore } from './store.js';

// A module SharedWorker gets its first `connect` event as soon as its script
// has run; a listener added after an await would miss it. So: no top-level
// await here nor in hub/, no static import of the package (its entry awaits the wasm).
const inSharedWorker = typeof SharedWorkerGlobalScope === 'function' && globalThis instanceof SharedWorkerGlobalScope;
if (inSharedWorker) {
  const hub = createHub({ mode: 'shared' });
  globalThis.addEventListener('connect', (event) => hub.accept(event.ports[0]));
}

/**
 * A hub. `accept(port)` serves one tab over `port`.
 * @param {{ mode: 'shared' | 'page' }} options
 */
export function createHub({ mode }) {
  // The package, the client made with the token, its start-up, the microversion it
  // negotiated, and the waits' store (undefined: not opened yet; null: none).
  const session = { pkg: null, client: null, token: null, booting: null, microversion: null, store: undefined };
  const client = () => session.client;
  const tabs = createTabs({ mode, handle, left: (tab) => scopes.leave(tab) });
  const microversion = { get: () => session.microversion, set: (v) => (session.microversion = v) };
  const scopes = createScopes({ client, post: tabs.post, microversion });
  const waits = createWaits({ client, token: () => session.token, store: () => session.store, everyone: tabs.everyone, scopes });

  // What a tab asks once the client is started, and the part that answers it.
  const routes = new Map([
    ['subscribe', (tab, msg) => scopes.subscribe(tab, msg.scope)],
    ['unsubscribe', (tab) => scopes.leave(tab)],
    ['refresh', (tab) => scopes.refresh(tab)],
    ['run', (tab, msg) => tabs.reply(tab, msg.req, () => waits.start(msg))],
    ['cancel', (_, msg) => waits.cancel(msg.id)],
    ['node', (tab, msg) => tabs.reply(tab, msg.req, () => session.client.getNode(msg.uuid))],
    ['history', (tab, msg) => tabs.reply(tab, msg.req, () => history(msg.uuid))],
  ]);

  async function handle(tab, msg) {
    if (!msg || typeof msg !== 'object') return;
    if (msg.t === 'hello') return hello(tab, msg);
    if (msg.t === 'bye') return tabs.drop(tab);
    if (!session.client) return; // nothing before a hello started the client
    await session.booting;
    return routes.get(msg.t)?.(tab, msg);
  }

  async function hello(tab, { token, tab: id }) {
    tabs.identify(tab, id);
    try {
      await boot(String(token ?? ''));
    } catch (e) {
      tabs.post(tab, { t: 'fatal', error: plainError(e) });
      return;
    }
    const { pkg, microversion } = session;
    tabs.post(tab, { t: 'hello', mode, version: pkg.version(), tables: pkg.tables(), microversion, waits: waits.snapshots() });
  }

  /**
   * Makes the client with `newToken`. A token other than the current one
   * means the console server was restarted (a new token each start): the
   * old client's requests are refused from now on, so its watches and waits
   * are taken up again on a new client (the waits from their checkpoints).
   */
  function boot(newToken) {
    if (session.client && newToken === session.token) return session.booting;
    session.token = newToken;
    session.booting = (async () => {
      try {
        session.pkg ??= await import('/pkg/web.js');
      } catch (e) {
        throw new Error(
          `The ironic-wait package could not be loaded from /pkg/ (${e.message}). Build it with \`npm run build\` (\`npm start\` does).`,
        );
      }
      scopes.useTables(session.pkg.tables());
      if (session.store === undefined) session.store = await openStore().catch(() => null);
      if (session.client) {
        waits.restart();
        scopes.stopAll();
      }
      const current = new session.pkg.IronicClient({ endpoint: location.origin, headers: { 'X-Console-Token': session.token } });
      session.client = current;
      session.microversion = null;
      // Negotiated once, in the background: the watches need the answer for
      // their fields, and they wait on the same negotiation anyway.
      current.microversion().then(
        (v) => {
          if (session.client !== current) return;
          session.microversion = v;
          tabs.everyone({ t: 'microversion', microversion: v });
        },
        (e) => {
          if (session.client !== current) return;
          tabs.everyone({ t: 'microversion', microversion: null, error: plainError(e) });
        },
      );
      scopes.startAll();
      waits.resumeStored();
    })();
    session.booting.catch(() => {
      session.client = null; // the next hello tries again
    });
    return session.booting;
  }

  /** A node's history, or `{ unsupported }`: the package's word for an Ironic without it. */
  async function history(uuid) {
    try {
      return { events: await session.client.getNodeHistory(uuid) };
    } catch (e) {
      if (e instanceof session.pkg.UnsupportedVersionError) return { unsupported: e.message };
      throw e;
    }
  }

  return { accept: tabs.accept };
}
