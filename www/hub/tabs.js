// The hub's tabs: each connected over a MessagePort (connection.js has the
// page's side and the messages), its messages handled one at a time and in
// order, and the means to post to one tab or to all. A tab whose port is
// gone is dropped.

/** Table changes and wait progress are sent to tabs at most this often (ms). */
export const FLUSH_MS = 200;

/** An error as plain data for postMessage (a structured clone keeps neither the class nor its fields). */
export function plainError(e) {
  if (e == null) return null;
  if (typeof e !== 'object') return { name: 'Error', message: String(e) };
  const out = { name: e.name ?? 'Error', message: e.message ?? String(e) };
  for (const k of ['status', 'requestId', 'detail', 'node', 'allocation', 'state', 'lastError', 'expected']) {
    if (e[k] !== undefined && (e[k] === null || typeof e[k] !== 'object')) out[k] = e[k];
  }
  return out;
}

/** `handle(tab, message)` serves a tab's message; `left(tab)` is told when a tab is dropped. */
export function createTabs({ mode, handle, left }) {
  const tabs = new Set(); // { port, id, queue }: the queue is the tab's messages, one after another

  function accept(port) {
    const tab = { port, id: null, queue: Promise.resolve() };
    tabs.add(tab);
    port.onmessage = (event) => {
      // One message at a time per tab, in order: a subscribe waits for the hello's start-up.
      tab.queue = tab.queue
        .then(() => handle(tab, event.data))
        .catch((e) => post(tab, { t: 'error', context: 'Console hub', error: plainError(e) }));
    };
    port.start?.();
  }

  function post(tab, message) {
    try {
      tab.port.postMessage(message);
    } catch {
      drop(tab);
    }
  }

  const everyone = (message) => {
    for (const tab of tabs) post(tab, message);
  };

  function drop(tab) {
    if (!tabs.delete(tab)) return;
    left(tab);
    tab.port.close?.();
  }

  /** Answers a request of the tab with what `work` resolves to, or its error. */
  async function reply(tab, req, work) {
    try {
      post(tab, { t: 'reply', req, ok: true, value: await work() });
    } catch (e) {
      post(tab, { t: 'reply', req, ok: false, error: plainError(e) });
    }
  }

  /** The tab's id, from its hello. */
  function identify(tab, id) {
    tab.id = String(id ?? '');
    // A tab that goes away (closed, reloaded, crashed) sends no goodbye for
    // sure; the lock it holds for its life is released when it goes.
    if (mode === 'shared' && tab.id && globalThis.navigator?.locks) {
      navigator.locks.request(`ironic-wait-tab-${tab.id}`, () => drop(tab)).catch(() => {});
    }
  }

  return { accept, post, everyone, drop, reply, identify };
}
