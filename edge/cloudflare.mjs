// `ironic-wait/cloudflare`: IronicWaits, a Durable Object class that keeps
// waits on one Ironic and runs them from its alarm. A Worker re-exports it,
// binds it (SQLite-backed: `new_sqlite_classes`) and forwards requests to
// the object of its Ironic (`idFromName`), so every wait and listener of
// that Ironic shares one object, one client and one poll loop.
//
// The object answers the API of waits.mjs, its streams as WebSockets: a
// listener of GET /waits/{id}/events hibernates (an idle one costs nothing);
// a watcher of GET /watch polls on the client's timers, so the object stays
// in memory while one is connected.
// Rounds run from the alarm, one round per alarm: each wait's checkpoint is
// in the object's storage, so an eviction, a restart or a redeploy loses
// nothing. The client is made from the Worker's environment (waits.mjs): the
// settings never reach storage, a checkpoint, a report or a message.

import { IronicClient, tables } from '../pkg/worker.js';
import { plain, refused, WaitsHost, WORKER_ROUND_REQUESTS } from './waits.mjs';

export class IronicWaits extends WaitsHost {
  constructor(ctx, env) {
    super({
      IronicClient,
      tables,
      env,
      // (IRONIC_ROUND_REQUESTS sets another: the paid plan allows far more.)
      roundRequests: WORKER_ROUND_REQUESTS,
      storage: {
        get: (key) => ctx.storage.get(key),
        put: (key, value) => ctx.storage.put(key, value),
        delete: (key) => ctx.storage.delete(key),
        list: async (prefix) => [...(await ctx.storage.list({ prefix })).values()],
      },
    });
    this.ctx = ctx;
    /** Each /watch socket's AbortController. */
    this.watchers = new Map();
  }

  async fetch(request) {
    // No client from the Worker's settings: every request says so (the message names no secret).
    if (!this.client) return refused(500, `the Worker's Ironic settings: ${this.misconfigured?.message ?? this.misconfigured}`);
    return super.fetch(request);
  }

  /** The alarm: one round, then the next alarm. A round never throws to the platform: it backs off itself. */
  async alarm() {
    if (this.client) await this.schedule(await this.round());
  }

  /** The alarm at `next` (by default the next round due; later while rounds fail), or none. */
  async schedule(next) {
    const at = this.backedOff(next === undefined ? await this.waits.nextWake() : next);
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(at);
  }

  /** A stream here is a WebSocket. */
  refuseStream(request, path) {
    const upgrade = request.headers.get('upgrade')?.toLowerCase();
    if (upgrade !== 'websocket') return refused(426, `GET ${path} is a WebSocket`, { upgrade: 'websocket' });
  }

  /** GET /waits/{id}/events: a hibernatable WebSocket of the wait's events. */
  async listen(id) {
    const record = await this.waits.get(id);
    if (!record) return refused(404, 'no such wait');
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [id]);
    if (record.done) this.publish(id, { type: 'done', report: record.report, error: record.error }, true);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** A wait's listeners: the WebSockets tagged with its id, hibernated or not. */
  listenersOf(id) {
    return this.ctx.getWebSockets(id);
  }

  /** GET /watch: a WebSocket of the watch. Async: a failure of the platform's here is no bad request. */
  async watch(options) {
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, ['watch']);
    const stopped = new AbortController();
    this.watchers.set(server, stopped);
    (async () => {
      try {
        for await (const message of this.follow(options, stopped.signal)) {
          server.send(JSON.stringify(message));
          if (message.type === 'error') server.close(1011, 'the watch failed');
        }
      } catch (e) {
        // Options the client refused before watching, said as a failure is; or a socket closed under it.
        if (stopped.signal.aborted) return;
        server.send(JSON.stringify({ type: 'error', error: plain(e) }));
        server.close(1011, 'the watch failed');
      } finally {
        this.watchers.delete(server);
      }
    })().catch(() => {}); // a socket closed under it
    return new Response(null, { status: 101, webSocket: client });
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
