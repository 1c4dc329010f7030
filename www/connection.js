// The page's side of the hub (hub.js): a module SharedWorker shared by every
// tab of the console, or, where there is no SharedWorker, the same hub module
// run in this page over a MessageChannel. The console server's token goes to
// the hub in a message, in memory: it is never stored.
//
// Messages, tab -> hub: hello { token, tab }, subscribe { scope }, unsubscribe,
// refresh, run { req, kind, action, nodes, options, ... }, cancel { id },
// node { req, uuid }, history { req, uuid }, bye.
// Hub -> tab: hello { mode, version, tables, microversion, waits },
// fatal { error }, microversion, table { key, reset, upserts, removes, total,
// counts, status, loaded, series }, series { key, point }, wait { wait },
// forget { id }, reply { req, ok, value | error }, error { context, error }.

const HUB_URL = '/hub.js';

/**
 * Connects to the hub; resolves to `{ mode, hello, send, request, on }` once
 * it has answered the hello. Rejects with the hub's fatal error (the
 * package missing, say).
 */
export async function connect(token) {
  const tab = crypto.randomUUID();
  // Held for this page's life: the shared hub learns that the tab is gone
  // when the lock is released (a page sends no reliable goodbye).
  if (navigator.locks) {
    await new Promise((resolve) => {
      navigator.locks
        .request(`ironic-wait-tab-${tab}`, () => {
          resolve();
          return new Promise(() => {});
        })
        .catch(resolve);
    });
  }
  let hub = null;
  if (typeof SharedWorker === 'function') {
    try {
      const worker = new SharedWorker(HUB_URL, { type: 'module', name: 'ironic-wait' });
      // A browser that cannot run a module SharedWorker (its script fails to
      // load or run) says so here: then the hub runs in the page.
      const failed = new Promise((resolve) => {
        worker.onerror = () => resolve(null);
      });
      hub = await Promise.race([speak(worker.port, token, tab), failed]);
      if (!hub) worker.port.close();
    } catch (e) {
      if (e?.fatal) throw e; // the hub's own answer: it started and cannot serve
      hub = null;
    }
  }
  hub ??= await speak(await pageHub(), token, tab);
  addEventListener('pagehide', () => hub.send('bye'));
  // Back from the back/forward cache: the hub let this tab go at pagehide; a fresh start joins it again.
  addEventListener('pageshow', (event) => {
    if (event.persisted) location.reload();
  });
  return hub;
}

/** The hub module run in this page; resolves to this page's end of a channel to it. */
async function pageHub() {
  const { createHub } = await import(HUB_URL);
  const channel = new MessageChannel();
  createHub({ mode: 'page' }).accept(channel.port2);
  return channel.port1;
}

/** The protocol on `port`: says hello, resolves with the hub's answer and the means to talk. */
function speak(port, token, tab) {
  const listeners = new Map();
  const replies = new Map();
  let nextReq = 1;
  const on = (type, fn) => {
    if (!listeners.has(type)) listeners.set(type, new Set());
    listeners.get(type).add(fn);
    return () => listeners.get(type).delete(fn);
  };
  port.onmessage = (event) => {
    const msg = event.data;
    if (msg?.t === 'reply') {
      const pending = replies.get(msg.req);
      replies.delete(msg.req);
      if (pending) msg.ok ? pending.resolve(msg.value) : pending.reject(msg.error);
      return;
    }
    for (const fn of listeners.get(msg?.t) ?? []) fn(msg);
  };
  const send = (t, body = {}) => port.postMessage({ ...body, t });
  const request = (t, body = {}) =>
    new Promise((resolve, reject) => {
      const req = nextReq++;
      replies.set(req, { resolve, reject });
      send(t, { ...body, req });
    });
  return new Promise((resolve, reject) => {
    const offHello = on('hello', (hello) => {
      offHello();
      resolve({ mode: hello.mode, hello, send, request, on });
    });
    on('fatal', (msg) =>
      reject(Object.assign(new Error(msg.error?.message ?? 'The console hub failed'), { name: msg.error?.name ?? 'Error', fatal: true })),
    );
    send('hello', { token, tab });
  });
}
