// Types of `ironic-wait/deno` (edge/deno.mjs): the package's API, and the runner.

/**
 * The package's API in Deno (everything `ironic-wait` exports), and {@link KvWaits}: waits on Ironic that outlive any
 * one request, kept in Deno KV and run from its queue, for a Deno server.
 *
 * @module
 */

export * from '../pkg/index.js';

/**
 * The KV handle `Deno.openKv()` gives (Deno's own type, `Deno.Kv`, where Deno's types are loaded).
 * @inline
 */
type Kv = { [key: string]: unknown };

/**
 * Waits on one Ironic kept in Deno KV and run from its queue. `start()` before serving; `fetch(request)` answers
 * `POST /waits` `{ method, args }`, `GET /waits`, `GET /waits/{id}`, `DELETE /waits/{id}`, `GET /stats`, and the event streams
 * `GET /waits/{id}/events` and `GET /watch?scope=...` (Server-Sent Events). The client is made from `env`:
 * `IRONIC_URL` with `IRONIC_TOKEN`, or the `OS_*` variables the ironic-wait CLI reads (by default, those of them this
 * process may read); `IRONIC_ROUND_REQUESTS` caps the requests of a round (none by default).
 */
export class KvWaits {
  /**
   * Makes the one client every wait steps on; settings it refuses throw here, so that a server fails at start (the
   * error names no secret).
   * @param options `kv`: a `Deno.Kv` of its own (KvWaits listens to its queue); `env`: the settings (by default, those
   * of `IRONIC_URL`, `IRONIC_TOKEN` and the CLI's `OS_*` variables this process may read, with no prompt); `now`:
   * milliseconds since the epoch.
   */
  constructor(options: { kv: Kv; env?: Record<string, string>; now?: () => number });
  /** Loads the waits, queues the round due and listens to the queue. */
  start(): Promise<void>;
  /**
   * Answers a request of the API: `POST /waits` `{ method, args }` makes a wait (the checkpoint of that method of
   * `IronicClient` on `args`, stored before its PUTs are sent) and answers 201 `{ id }`; `GET /waits` lists
   * `{ id, method, done }`; `GET /waits/{id}` gives `{ id, method, done, wakeAtMs, outages, report, error }`;
   * `DELETE /waits/{id}` drops it (204; nothing more is sent for it). `GET /waits/{id}/events` streams (`data:` lines)
   * `{ type: 'progress', event }` and `{ type: 'outage', error }`, then `{ type: 'done', report, error }` or
   * `{ type: 'deleted' }`; `GET /watch` (query `scope` as JSON, `fields` comma-separated, `listMode`, `pollInterval`,
   * `initial`) streams `{ type: 'change', change }` for each change of `client.watch()`. Errors are `{ error }` with a
   * 4xx or 5xx status.
   */
  fetch(request: Request): Promise<Response>;
}

/** The storage KvWaits keeps its records in: each as JSON in parts under KV's 64 KiB a value. */
export class KvStorage {
  /** Storage on `kv` (a `Deno.Kv`); nothing is read until the records are loaded (`KvWaits.start()` does it). */
  constructor(kv: Kv);
}
