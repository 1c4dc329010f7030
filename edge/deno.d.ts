// Types of `ironic-wait/deno` (edge/deno.mjs): the package's API, and the runner.
export * from '../pkg/index.js';

/** The KV handle `Deno.openKv()` gives (Deno's own type, `Deno.Kv`, where Deno's types are loaded). */
type Kv = { [key: string]: unknown };

/**
 * Waits on one Ironic kept in Deno KV and run from its queue. `start()` before serving; `fetch(request)` answers
 * `POST /waits` `{ method, args }`, `GET /waits`, `GET /waits/{id}`, `DELETE /waits/{id}`, and the event streams
 * `GET /waits/{id}/events` and `GET /watch?scope=...` (Server-Sent Events). The client is made from `env`:
 * `IRONIC_URL` with `IRONIC_TOKEN`, or the `OS_*` variables the ironic-wait CLI reads (by default, those of them this
 * process may read).
 */
export class KvWaits {
  constructor(options: { kv: Kv; env?: Record<string, string>; now?: () => number });
  /** Loads the waits, queues the round due and listens to the queue. */
  start(): Promise<void>;
  fetch(request: Request): Promise<Response>;
}

/** The storage KvWaits keeps its records in: each as JSON in parts under KV's 64 KiB a value. */
export class KvStorage {
  constructor(kv: Kv);
}
