// Types of `ironic-wait/cloudflare` (edge/cloudflare.mjs).

/**
 * A Durable Object class keeping waits on one Ironic: re-export it from the Worker, bind it as a SQLite-backed class
 * (`new_sqlite_classes`) and forward requests to `env.WAITS.get(env.WAITS.idFromName(IRONIC_URL))`. Its HTTP API:
 * `POST /waits` `{ method, args }`, `GET /waits`, `GET /waits/{id}`, `DELETE /waits/{id}`, and the WebSockets
 * `GET /waits/{id}/events` and `GET /watch?scope=...`. The client is made from `env`: `IRONIC_URL` with `IRONIC_TOKEN`,
 * or the `OS_*` variables the ironic-wait CLI reads.
 */
export class IronicWaits {
  constructor(ctx: unknown, env: Record<string, unknown>);
  fetch(request: Request): Promise<Response>;
  /** One round of the waits due, then the next alarm. */
  alarm(): Promise<void>;
  webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void;
  webSocketClose(ws: WebSocket, code: number, reason: string, wasClean: boolean): void;
}
