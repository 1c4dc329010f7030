// `ironic-wait/cloudflare`: IronicWaits, a Durable Object class that keeps
// waits on one Ironic and runs them from its alarm. A Worker re-exports it,
// binds it (SQLite-backed: `new_sqlite_classes`) and forwards requests to
// the object of its Ironic (`idFromName`), so every wait and listener of
// that Ironic shares one object, one client and one poll loop.
//
// The object answers the API of waits.mjs, and two WebSockets:
//   GET /waits/{id}/events  { type: 'progress', event }, then { type: 'done', report, error } or
//                           { type: 'deleted' }, then it closes. Hibernatable: an idle listener
//                           costs nothing.
//   GET /watch?scope=JSON&fields=a,b&listMode=&pollInterval=&initial=
//                           `client.watch()` on the object's client (so on the loop of its waits):
//                           { type: 'change', change } for each NodeChange, { type: 'error', error }
//                           if the watch fails. A watcher polls on the client's timers, so the object
//                           stays in memory while one is connected.
// Rounds run from the alarm, one round per alarm: each wait's checkpoint is
// in the object's storage, so an eviction, a restart or a redeploy loses
// nothing. The client is made from the Worker's environment: IRONIC_URL
// (or OS_ENDPOINT) with IRONIC_TOKEN (or OS_TOKEN), or Keystone settings as
// OS_* variables, as the CLI reads them; they never reach storage, a
// checkpoint, a report or a message.

import { optionsFromEnvironment } from '../cli/settings.mjs';
import { IronicClient } from '../pkg/worker.js';
import { failedRoundDelayMs, plain, Waits, watchOptions } from './waits.mjs';

export class IronicWaits {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.failures = 0;
    /** Each /watch socket's AbortController. */
    this.watchers = new Map();
    const settings = { ...env, OS_ENDPOINT: env.IRONIC_URL ?? env.OS_ENDPOINT, OS_TOKEN: env.IRONIC_TOKEN ?? env.OS_TOKEN };
    let client;
    try {
      client = new IronicClient(optionsFromEnvironment(settings));
    } catch (e) {
      // Every request says so (the message names no configured value).
      this.misconfigured = `the Worker's Ironic settings: ${e?.message ?? e}`;
      return;
    }
    this.client = client;
    this.waits = new Waits({
      client,
      storage: {
        get: (key) => ctx.storage.get(key),
        put: (key, value) => ctx.storage.put(key, value),
        delete: (key) => ctx.storage.delete(key),
        list: async (prefix) => [...(await ctx.storage.list({ prefix })).values()],
      },
      publish: (id, message, last) => this.publish(id, message, last),
    });
  }

  async fetch(request) {
    if (this.misconfigured) return Response.json({ error: this.misconfigured }, { status: 500 });
    const { pathname } = new URL(request.url);
    const events = pathname.match(/^\/waits\/([^/]+)\/events$/);
    if (events) return this.listen(request, events[1]);
    if (pathname === '/watch') return this.watch(request);
    const response = (await this.waits.handle(request)) ?? Response.json({ error: 'not found' }, { status: 404 });
    // Only a new or deleted wait moves the next round.
    if (request.method === 'POST' || request.method === 'DELETE') await this.schedule();
    return response;
  }

  /** The alarm: one round, then the next alarm. A round never throws to the platform: it backs off itself. */
  async alarm() {
    if (this.misconfigured) return;
    let next;
    try {
      next = await this.waits.round();
      this.failures = 0;
    } catch (e) {
      this.failures += 1;
      console.error(`ironic-wait: a round failed (${this.failures} in a row): ${e?.message ?? e}`);
    }
    await this.schedule(next);
  }

  /** The alarm at `next` (by default the next round due; later while rounds fail), or none. */
  async schedule(next) {
    if (next === undefined) next = await this.waits.nextWake();
    if (next !== null && this.failures > 0) {
      next = Math.max(next, Date.now() + failedRoundDelayMs(this.failures));
    }
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }

  /** GET /waits/{id}/events: a hibernatable WebSocket of the wait's events. */
  async listen(request, id) {
    if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
      return Response.json({ error: 'GET /waits/{id}/events is a WebSocket' }, { status: 426, headers: { upgrade: 'websocket' } });
    }
    const record = await this.waits.get(id);
    if (!record) return Response.json({ error: 'no such wait' }, { status: 404 });
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [id]);
    if (record.done) this.publish(id, { type: 'done', report: record.report, error: record.error }, true);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** GET /watch: a WebSocket following `client.watch()` with the query's options. */
  watch(request) {
    if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
      return Response.json({ error: 'GET /watch is a WebSocket' }, { status: 426, headers: { upgrade: 'websocket' } });
    }
    let options;
    try {
      options = watchOptions(new URL(request.url).searchParams);
    } catch (e) {
      return Response.json({ error: e.message }, { status: 400 });
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, ['watch']);
    const controller = new AbortController();
    this.watchers.set(server, controller);
    const send = (message) => server.send(JSON.stringify(message));
    (async () => {
      try {
        for await (const change of this.client.watch({ ...options, signal: controller.signal })) send({ type: 'change', change });
      } catch (e) {
        if (controller.signal.aborted) return;
        send({ type: 'error', error: plain(e) });
        server.close(1011, 'the watch failed');
      } finally {
        this.watchers.delete(server);
      }
    })().catch(() => {}); // a socket closed under it
    return new Response(null, { status: 101, webSocket: client });
  }

  publish(id, message, last) {
    const text = JSON.stringify(message);
    for (const ws of this.ctx.getWebSockets(id)) {
      try {
        ws.send(text);
        if (last) ws.close(1000, message.type);
      } catch {
        // A socket closing already.
      }
    }
  }

  /** Listeners say nothing the object needs. */
  webSocketMessage() {}

  webSocketClose(ws, code) {
    this.watchers.get(ws)?.abort();
    try {
      ws.close(code === 1005 ? 1000 : code, 'closing');
    } catch {
      // Closed already.
    }
  }
}
