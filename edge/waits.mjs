// What the edge hosts (cloudflare.mjs, deno.mjs) share. Waits: each wait a
// checkpoint in the host's storage, each round one `step()` of every wait
// that is due, all begun in one turn on one client, so that they share the
// client's poll loop (and its change feed while the host stays in memory).
// What a step sends, when the next is due and how a wait ends are the
// client's decisions, as for any caller of `step()`; Waits keeps the records
// and answers the HTTP API:
//   POST   /waits        { method, args }  -> 201 { id }  (its PUTs sent)
//   GET    /waits                          -> 200 [{ id, method, done }]
//   GET    /waits/{id}                     -> 200 { id, method, done, wakeAtMs, outages, report, error }
//   DELETE /waits/{id}                     -> 204: nothing more is sent for it
//   GET    /stats                          -> 200 { loads, rounds, checkpointWrites } since the host came into memory
// A record holds the checkpoint (which never holds a credential), the
// report and the error as JSON: never a token, since the client's
// credentials are the host's and stay in its environment.
//
// Memory: the records are read from storage once, at the first request or
// round after the host came into memory (after an eviction or a restart),
// and held; every change is written through. A round steps each wait with
// its id as `step`'s `key`, so that the client goes on from the state it
// keeps rather than reading the checkpoint again. A record is stored in two
// parts, `wait:ID` (what moves every round: wakeAtMs, outages, the end) and
// `cp:ID` (the checkpoint), and the checkpoint is written only when a step
// answers a new one: a round where only the clock and the counts moved
// writes a few bytes. The checkpoint stored is then a step or more behind
// in its counts, and still a point to go on from (see docs/edge.md).
//
// Ironic down: python-ironicclient's wait fails once its retries of a
// connection error (or a 409 or 503) are spent, about ten seconds. A
// host's waits last longer than the processes python runs in, so its
// rounds step with `retryOutages`: a round lost that way gives the wait's
// last checkpoint back, due later and later, until the wait's deadline
// (the client's rule). Its listeners get { type: 'outage', error } for
// each round lost; GET /waits/{id} counts those in a row.
//
// WaitsHost does what the hosts do alike; each extends it with what is its
// platform's. It makes the client from IRONIC_URL (or OS_ENDPOINT) with
// IRONIC_TOKEN (or OS_TOKEN), or the OS_* variables the CLI reads (whose
// errors name no configured value), routes requests, runs rounds (backed off
// while they fail), and streams messages, each a JSON object:
//   GET /waits/{id}/events  { type: 'progress', event } and { type: 'outage', error }, then
//                           { type: 'done', report, error } or { type: 'deleted' }, and the end
//   GET /watch?scope=JSON&fields=a,b&listMode=&pollInterval=&initial=
//                           `client.watch()` on the host's client (so on the loop of its waits):
//                           { type: 'change', change } for each change, { type: 'error', error } if it fails
// A host says when rounds run (`schedule`), how streams are refused and
// opened (`refuseStream`, `listen`, `watch`), and who a wait's listeners are
// (`listenersOf`: each with `send(text)` and `close(code, reason)`, as a WebSocket).

import { OS_FLAGS, optionsFromEnvironment } from '../cli/settings.mjs';

/** A request body larger than this is refused (a checkpoint of 10,000 UUIDs is at most about 290 KB). */
const MAX_BODY = 1024 * 1024;

/** Waits due this soon are stepped in the same round: the client gathers them into one. */
const LOOKAHEAD_MS = 1000;

/**
 * The most requests a round of the Cloudflare host sends (its `roundRequests`): the free plan allows 50 subrequests an
 * invocation, and a few are kept for a Keystone token and the version.
 */
export const WORKER_ROUND_REQUESTS = 45;

/** A finished wait's record is kept this long for its report, then dropped. */
const KEEP_MS = 24 * 3600 * 1000;

/** The keys of wait `id` in the host's storage: the record without its checkpoint, and the checkpoint. */
const keyOf = (id) => `wait:${id}`;
const checkpointKey = (id) => `cp:${id}`;

export class Waits {
  /**
   * @param {object} host
   * @param {import('../pkg/index.js').IronicClient} host.client the one client every wait steps on
   * @param {{ get(key): Promise<object|undefined>, put(key, value): Promise<void>, delete(key): Promise<void>, list(prefix): Promise<object[]> }} host.storage
   * @param {(id: string, message: object, last: boolean) => void} [host.publish] to the wait's listeners
   * @param {() => number} [host.now] ms since the epoch
   */
  constructor({ client, storage, publish = () => {}, now = () => Date.now() }) {
    this.client = client;
    this.storage = storage;
    this.publish = publish;
    this.now = now;
    /** Waits with a step under way: id -> its AbortController. */
    this.running = new Map();
    /** Every record by id, once read from storage (`records()`). */
    this.held = null;
    /** What this host did since it came into memory, for GET /stats. */
    this.stats = { loads: 0, rounds: 0, checkpointWrites: 0 };
    /** Waits whose checkpoint is not under its own key yet (records of an earlier version). */
    this.unstored = new Set();
  }

  /**
   * The records, read from storage at the first call (each with its
   * checkpoint: a record of an earlier version that holds its own is taken
   * as it is, and stored in two parts at its next write).
   */
  records() {
    this.held ??= (async () => {
      const [records, checkpoints] = await Promise.all([this.storage.list('wait:'), this.storage.list('cp:')]);
      const texts = new Map(checkpoints.map((c) => [c.id, c.text]));
      const held = new Map();
      for (const record of records) {
        if (record.checkpoint === undefined) record.checkpoint = texts.get(record.id) ?? null;
        else this.unstored.add(record.id);
        held.set(record.id, record);
      }
      this.stats.loads += 1;
      return held;
    })().catch((e) => {
      this.held = null;
      throw e;
    });
    return this.held;
  }

  /** Stores `record`, its checkpoint first when it is new (`checkpointChanged`), as two parts. */
  async store(record, checkpointChanged) {
    const { checkpoint, ...rest } = record;
    if (checkpoint && (checkpointChanged || this.unstored.delete(record.id))) {
      await this.storage.put(checkpointKey(record.id), { id: record.id, text: checkpoint });
      this.stats.checkpointWrites += 1;
    }
    await this.storage.put(keyOf(record.id), rest);
    if (!checkpoint) await this.storage.delete(checkpointKey(record.id));
  }

  /** The answer to an HTTP request of the API, or null for a path that is not the API's. */
  async handle(request) {
    const { pathname } = new URL(request.url);
    const [, root, id, rest] = pathname.split('/');
    if (root === 'stats' && id === undefined && request.method === 'GET') return Response.json(this.stats);
    if (root !== 'waits' || rest !== undefined) return null;
    try {
      if (!id) {
        if (request.method === 'POST') return await this.create(request);
        if (request.method === 'GET') return Response.json(await this.summaries());
        return refused(405, 'use GET or POST on /waits', { allow: 'GET, POST' });
      }
      if (request.method === 'GET') {
        const record = await this.get(id);
        return record ? Response.json(view(record)) : refused(404, 'no such wait');
      }
      if (request.method === 'DELETE') return (await this.remove(id)) ? new Response(null, { status: 204 }) : refused(404, 'no such wait');
      return refused(405, 'use GET or DELETE on /waits/{id}', { allow: 'GET, DELETE' });
    } catch (e) {
      return refused(e instanceof BadRequest ? 400 : 500, String(e?.message ?? e));
    }
  }

  /** The record of wait `id`, if there is one. */
  async get(id) {
    return (await this.records()).get(id);
  }

  /**
   * POST /waits: the checkpoint of the call (the client checks its arguments
   * as the method would), kept before anything is sent, so that a host that
   * dies while the PUTs are under way goes on with them at its next round;
   * then the first step (the PUTs).
   */
  async create(request) {
    const body = await readJson(request);
    if (!isPlainObject(body)) throw new BadRequest('the body must be a JSON object { "method": ..., "args": [...] }');
    const { method, args = [] } = body;
    if (!Array.isArray(args)) throw new BadRequest('args must be an array: the arguments of the method');
    let checkpoint;
    try {
      // The client refuses what is not a wait (`method must be one of ...`) as it refuses bad arguments.
      checkpoint = this.client.checkpoint(method, ...args);
    } catch (e) {
      throw new BadRequest(`${e?.name ?? 'Error'}: ${e?.message ?? e}`);
    }
    const id = crypto.randomUUID();
    const record = { id, method, created: this.now(), checkpoint, wakeAtMs: this.now(), done: false, report: null, error: null };
    // Running from before it is stored: a round meanwhile (a write to Deno
    // KV takes a while) must leave its PUTs to this request.
    const controller = new AbortController();
    this.running.set(id, controller);
    const records = await this.records().catch((e) => {
      this.running.delete(id);
      throw e;
    });
    records.set(id, record);
    try {
      await this.store(record, true);
    } catch (e) {
      records.delete(id);
      this.running.delete(id);
      throw e;
    }
    await this.stepOne(record, false, controller);
    return Response.json({ id }, { status: 201, headers: { location: `/waits/${id}` } });
  }

  /** DELETE /waits/{id}: its step under way aborted, its record gone, its listeners told. */
  async remove(id) {
    const record = await this.get(id);
    if (!record) return false;
    this.running.get(id)?.abort();
    await this.drop(id);
    this.publish(id, { type: 'deleted' }, true);
    return true;
  }

  /** Wait `id` forgotten: its record, its checkpoint, the state the client keeps of it. */
  async drop(id) {
    (await this.records()).delete(id);
    this.client.forget(id);
    await Promise.all([this.storage.delete(keyOf(id)), this.storage.delete(checkpointKey(id))]);
  }

  async summaries() {
    const records = await this.records();
    return [...records.values()].map((r) => ({ id: r.id, method: r.method, done: r.done }));
  }

  /**
   * One round: a step of every wait due (or due within LOOKAHEAD_MS), all
   * begun in this turn so that the client serves them with one round of
   * requests; finished records past KEEP_MS dropped. Safe to repeat: a
   * round cut short leaves each record at its last stored checkpoint, and
   * a step from it sends again only checks (or a PUT that was never
   * answered, which Ironic refuses on a node already moving). Resolves
   * with when the next round is due, from the records it read (reading
   * them again costs a host whose storage serializes them).
   */
  async round() {
    const now = this.now();
    const records = [...(await this.records()).values()];
    this.stats.rounds += 1;
    const due = records.filter((r) => !r.done && !this.running.has(r.id) && r.wakeAtMs <= now + LOOKAHEAD_MS);
    const old = records.filter((r) => r.done && now - r.ended > KEEP_MS);
    await Promise.all([this.step(due, true), ...old.map((r) => this.drop(r.id))]);
    return this.earliest(records);
  }

  /** When the next round is due (ms since the epoch), or null when no wait is waiting. */
  async nextWake() {
    return this.earliest([...(await this.records()).values()]);
  }

  /** The earliest wake of `records` still waiting, not counting those a step is under way for (it will say). */
  earliest(records) {
    const times = records.filter((r) => !r.done && !this.running.has(r.id)).map((r) => r.wakeAtMs);
    return times.length ? Math.min(...times) : null;
  }

  /**
   * A step of each of `records`, begun together; each record stored with
   * what its step made of it. With `retryOutages`, a round lost to Ironic
   * being down is taken again later (see the module's comment).
   */
  step(records, retryOutages = false) {
    return Promise.all(records.map((record) => this.stepOne(record, retryOutages)));
  }

  async stepOne(record, retryOutages, controller = new AbortController()) {
    this.running.set(record.id, controller);
    const publish = (message, last = false) => this.publish(record.id, message, last);
    let answer;
    try {
      answer = await this.client.step(record.checkpoint, {
        signal: controller.signal,
        onProgress: (event) => publish({ type: 'progress', event }),
        retryOutages,
        key: record.id,
      });
    } catch (e) {
      // step() answers a wait's failure; it throws only for a checkpoint it
      // cannot take up (and an abort: DELETE, whose record is gone).
      answer = controller.signal.aborted ? null : { checkpoint: null, wakeAtMs: null, report: null, error: e };
    }
    let changed = true;
    try {
      // Deleted while it stepped: nothing of it is kept.
      if (!answer || controller.signal.aborted) return;
      if (answer.checkpoint) {
        // A round lost to an outage gives the checkpoint it began from back.
        const outages = answer.outage ? (record.outages ?? 0) + 1 : 0;
        // Not changed: the checkpoint stored goes on (only its counts would move).
        changed = answer.changed !== false;
        Object.assign(record, { checkpoint: answer.checkpoint, wakeAtMs: answer.wakeAtMs, outages });
        if (answer.outage) publish({ type: 'outage', error: plain(answer.outage) });
      } else {
        Object.assign(record, {
          checkpoint: null,
          wakeAtMs: null,
          done: true,
          outages: 0,
          ended: this.now(),
          report: plain(answer.report),
          error: plain(answer.error),
        });
      }
      await this.store(record, changed);
    } finally {
      // Running until stored: with a storage whose writes take time (Deno
      // KV), a round that read the record before it was stored would
      // otherwise step its old checkpoint again, and send its PUTs twice.
      this.running.delete(record.id);
    }
    if (record.done) publish({ type: 'done', report: record.report, error: record.error }, true);
  }
}

/** The variables the client is made from. */
export const VARIABLES = ['IRONIC_URL', 'IRONIC_TOKEN', 'IRONIC_ROUND_REQUESTS', ...OS_FLAGS.map((o) => o.env)];

export class WaitsHost {
  /**
   * One client of the platform's `IronicClient` from `env` (VARIABLES), or the error `misconfigured`; `storage` as Waits
   * takes it; `tables` the platform's package's; `roundRequests` the most requests a round sends (the client's
   * `maxRoundRequests`; IRONIC_ROUND_REQUESTS overrides it, `0` for no limit).
   */
  constructor({ IronicClient, tables, env, storage, now = () => Date.now(), roundRequests }) {
    this.outageDelays = tables().outageDelays;
    try {
      const settings = { ...env, OS_ENDPOINT: env.IRONIC_URL ?? env.OS_ENDPOINT, OS_TOKEN: env.IRONIC_TOKEN ?? env.OS_TOKEN };
      const given = env.IRONIC_ROUND_REQUESTS;
      const cap = given === undefined || given === '' ? roundRequests : given.trim() === '0' ? undefined : Number(given);
      this.client = new IronicClient({ ...optionsFromEnvironment(settings), maxRoundRequests: cap });
    } catch (e) {
      this.misconfigured = e;
    }
    this.now = now;
    this.waits = new Waits({ client: this.client, storage, now, publish: (id, message, last) => this.publish(id, message, last) });
    /** Rounds failed in a row. */
    this.failures = 0;
  }

  /** The answer to a request: the API of waits, a stream, or 404. */
  async fetch(request) {
    const url = new URL(request.url);
    const events = url.pathname.match(/^\/waits\/([^/]+)\/events$/);
    if (events || url.pathname === '/watch') {
      const refusal = this.refuseStream(request, events ? '/waits/{id}/events' : '/watch');
      if (refusal) return refusal;
      if (events) return this.listen(events[1]);
      try {
        // Also what `watch` throws at once: options the client refuses before watching.
        return this.watch(watchOptions(url.searchParams));
      } catch (e) {
        return refused(400, e.message);
      }
    }
    const response = (await this.waits.handle(request)) ?? refused(404, 'not found');
    // Only a new or deleted wait moves the next round. A failure to schedule
    // is not the request's: the wait is stored (an error answer to a POST
    // whose PUTs were sent would only invite sending them again).
    if (request.method === 'POST' || request.method === 'DELETE') {
      await Promise.resolve(this.schedule()).catch((e) =>
        console.error(`ironic-wait: could not schedule the next round: ${e?.message ?? e}`),
      );
    }
    return response;
  }

  /** One round; when the next is due, as it read the records. A failure is said and counted for `backedOff`, not thrown. */
  async round() {
    try {
      const next = await this.waits.round();
      this.failures = 0;
      return next;
    } catch (e) {
      this.failures += 1;
      console.error(`ironic-wait: a round failed (${this.failures} in a row): ${e?.message ?? e}`);
    }
  }

  /** The wake-up `next` (or null), put off while rounds fail for the host's own reasons, as the core backs off an outage. */
  backedOff(next, now = this.now()) {
    if (next === null || this.failures === 0) return next;
    const delays = this.outageDelays;
    return Math.max(next, now + delays[Math.min(this.failures, delays.length) - 1] * 1000);
  }

  /** `message` to each listener of wait `id`, each closed after the `last`. */
  publish(id, message, last) {
    const text = JSON.stringify(message);
    for (const listener of this.listenersOf(id)) {
      try {
        listener.send(text);
        if (last) listener.close(1000, message.type);
      } catch {
        // A listener closing already.
      }
    }
  }

  /**
   * GET /watch's messages: { type: 'change', change } for each of `client.watch(options)`, { type: 'error', error } if it
   * fails (or throws here, for options refused at once). `signal` aborts when the listener goes: nothing more is sent.
   */
  follow(options, signal) {
    const changes = this.client.watch({ ...options, signal });
    return (async function* () {
      try {
        for await (const change of changes) yield { type: 'change', change };
      } catch (e) {
        if (!signal.aborted) yield { type: 'error', error: plain(e) };
      }
    })();
  }
}

/** What GET /waits/{id} shows of a record. */
export function view(record) {
  const { id, method, done, wakeAtMs, report, error, outages = 0 } = record;
  return { id, method, done, wakeAtMs, outages, report, error };
}

class BadRequest extends Error {}

/** An error answer: `{ error: message }`. */
export function refused(status, message, headers = {}) {
  return Response.json({ error: message }, { status, headers });
}

/** The request's body as JSON, at most MAX_BODY bytes. */
async function readJson(request) {
  const declared = Number(request.headers.get('content-length'));
  if (declared > MAX_BODY) throw new BadRequest(`the body is larger than ${MAX_BODY} bytes`);
  const text = await request.text();
  if (text.length > MAX_BODY) throw new BadRequest(`the body is larger than ${MAX_BODY} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequest('the body is not JSON');
  }
}

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A report or an error as JSON data: an error becomes its name, message and
 * own fields (status, requestId, node, ...), at any depth.
 */
export function plain(value) {
  if (value instanceof Error) {
    const own = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
    return { name: value.name, message: value.message, ...own };
  }
  if (Array.isArray(value)) return value.map(plain);
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/**
 * The options of GET /watch: `scope` as JSON, `fields` comma-separated, the
 * others as given; the client checks each as `watch()` does.
 */
function watchOptions(query) {
  const options = {};
  for (const [name, value] of query) {
    if (name === 'scope') {
      try {
        options.scope = JSON.parse(value);
      } catch {
        throw new Error('scope must be JSON: {"provisionState": "deploying", ...}');
      }
    } else if (name === 'fields') options.fields = value.split(',').filter(Boolean);
    else if (name === 'listMode') options.listMode = value;
    else if (name === 'pollInterval') options.pollInterval = Number(value);
    else if (name === 'initial') options.initial = value !== 'false';
    else throw new Error(`unknown option ${name}: use scope, fields, listMode, pollInterval, initial`);
  }
  return options;
}
