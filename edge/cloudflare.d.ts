// Types of `ironic-wait/cloudflare` (edge/cloudflare.mjs).

/**
 * Waits on Ironic that outlive any one request, in a Cloudflare Worker: {@link IronicWaits}, a Durable Object class
 * that keeps each wait's checkpoint in its storage and runs the waits from its alarm, so that an eviction, a restart or
 * a redeploy loses nothing.
 *
 * @module
 */

/**
 * A Durable Object class keeping waits on one Ironic: re-export it from the Worker, bind it as a SQLite-backed class
 * (`new_sqlite_classes`) and forward requests to `env.WAITS.get(env.WAITS.idFromName(IRONIC_URL))`. Its HTTP API:
 * `POST /waits` `{ method, args }`, `GET /waits`, `GET /waits/{id}`, `DELETE /waits/{id}`, `GET /stats`, and the WebSockets
 * `GET /waits/{id}/events` and `GET /watch?scope=...`. The client is made from `env`: `IRONIC_URL` with `IRONIC_TOKEN`,
 * or the `OS_*` variables the ironic-wait CLI reads. A round sends at most 45 requests (the free plan's 50 subrequests
 * an invocation, less a few for a token and the version); `IRONIC_ROUND_REQUESTS` sets another number, `0` none.
 */
export class IronicWaits {
  /**
   * Called by the platform. Makes the object's one client from `env`; settings it refuses do not throw here: every
   * request is then answered 500 with the reason (which names no secret).
   */
  constructor(ctx: unknown, env: Record<string, unknown>);
  /**
   * Answers a request forwarded to the object: `POST /waits` `{ method, args }` makes a wait (the checkpoint of that
   * method of `IronicClient` on `args`, stored before its PUTs are sent) and answers 201 `{ id }`; `GET /waits` lists
   * `{ id, method, done }`; `GET /waits/{id}` gives `{ id, method, done, wakeAtMs, outages, report, error }`;
   * `DELETE /waits/{id}` drops it (204; nothing more is sent for it). `GET /waits/{id}/events` (a hibernatable
   * WebSocket) sends `{ type: 'progress', event }` and `{ type: 'outage', error }`, then `{ type: 'done', report, error }`
   * or `{ type: 'deleted' }`; `GET /watch` (a WebSocket, query `scope` as JSON, `fields` comma-separated, `listMode`,
   * `pollInterval`, `initial`) sends `{ type: 'change', change }` for each change of `client.watch()`. Errors are
   * `{ error }` with a 4xx or 5xx status.
   */
  fetch(request: Request): Promise<Response>;
  /** One round of the waits due, then the next alarm. */
  alarm(): Promise<void>;
  /** Called by the platform for a message on a listener's WebSocket: listeners say nothing the object needs, so it is ignored. */
  webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void;
  /** Called by the platform when a WebSocket closes: a watch on it ends (nothing more is sent for it), and the socket is closed in turn. */
  webSocketClose(ws: WebSocket, code: number, reason: string, wasClean: boolean): void;
}
