// `ironic-wait/deno`: KvWaits, the waits of waits.mjs kept in Deno KV and
// run from its queue, for a Deno server (examples/deno/server.mjs) that
// routes requests to `fetch`. Every wait of the server shares one client and
// one poll loop.
//
// It answers the API of waits.mjs, its streams as Server-Sent Events, each
// message a line `data: {...}`. A wait's listeners are those connected to
// this process; a watch is read as its listener reads (a slow one gets each
// node's latest state).
//
// Storage: each wait's record as JSON in KV, in parts of at most PART_BYTES
// (a KV value is at most 64 KiB; a checkpoint of 10,000 nodes is up to ~290 KB):
//   ['ironic-wait', 'wait', id]                     { gen, parts }
//   ['ironic-wait', 'part', 'wait', id, gen, i]     bytes of the JSON
// A record is rewritten by writing a new generation of parts, then switching
// the record to it and deleting the old parts in one atomic commit, so that
// KV never holds a half-written record. Parts left by a process that died
// mid-write are swept by start(). The records are held in memory too
// (KvStorage): rounds read them there, and KV is read only at start().
//
// Rounds: one round (Waits.round) per queue message. The next round due is
//   ['ironic-wait', 'alarm']                        { at, token }
// and a message counts only while its token is the alarm's: a round
// superseded by an earlier one, cancelled, or delivered again by Deno
// (its queue is at-least-once: a handler that dies or runs past ~60 s gets
// its message again) is ignored. The handler catches a round's failure and
// backs off itself; it throws only when it cannot queue the next round, and
// then Deno retries it on RETRIES, no sooner.
//
// The client is made from the environment (waits.mjs): the settings never
// reach KV, a checkpoint, a report or an event. One process serves a KV file:
// the records (JSON, all of them) and which steps are under way are in its
// memory.
import { IronicClient, tables } from '../pkg/deno.js';

// The package's API too: `ironic-wait/deno` is the Deno entry and its runner.
export * from '../pkg/deno.js';

import { refused, VARIABLES, WaitsHost } from './waits.mjs';

const ROOT = 'ironic-wait';
const ALARM = [ROOT, 'alarm'];

/** A part of a record: under KV's 64 KiB a value. */
const PART_BYTES = 60 * 1024;
/** Parts written per commit: under KV's 800 KiB a commit (and 1,000 mutations). */
const PARTS_PER_COMMIT = 12;

/** Rounds are at least this far apart, whatever the waits ask: never a busy loop. */
const MIN_GAP_MS = 250;
/** An alarm this overdue, with no round under way, lost its message (its retries spent): a new one is queued. */
const OVERDUE_MS = 30_000;
/** Deno KV's longest delay. A round due later is woken early, and finds nothing due. */
const MAX_DELAY_MS = 30 * 24 * 3600 * 1000;
/** Deno's redelivery of a round message whose handler threw: spaced, so that it never hammers Ironic. */
const RETRIES = [10_000, 60_000, 5 * 60_000];
/** A comment on each event stream this often, so that proxies keep idle listeners open. */
const HEARTBEAT_MS = 25_000;

const encoder = new TextEncoder();

export class KvWaits extends WaitsHost {
  /**
   * @param {object} options
   * @param {Deno.Kv} options.kv a Kv of its own: KvWaits listens to its queue
   * @param {Record<string, string>} [options.env] the settings; by default those of VARIABLES this process may read
   * @param {() => number} [options.now] ms since the epoch
   */
  constructor({ kv, env = readEnvironment(), now }) {
    super({ IronicClient, tables, env, storage: new KvStorage(kv), now });
    // A server fails at start, not at each request (the error names no secret).
    if (!this.client) throw this.misconfigured;
    this.kv = kv;
    /** Event streams: wait id -> Set of { send(text), close() }. */
    this.listeners = new Map();
    this.rounding = false;
    /** schedule() calls, one after the other: each sees what the one before stored. */
    this.scheduling = Promise.resolve();
  }

  /**
   * Loads the records (and sweeps parts no record points to), queues the
   * round due (a message of a process that died is delivered again only
   * ~60 s after it was taken, and is stale by then), and listens to the
   * queue. Before any request.
   */
  async start() {
    await this.waits.storage.load();
    await this.schedule(true);
    this.listening = this.kv.listenQueue((message) => this.onMessage(message));
  }

  refuseStream(request, path) {
    if (request.method !== 'GET') return refused(405, `use GET on ${path}`, { allow: 'GET' });
  }

  /** A queue message: the round it stands for, if it is still the one due. */
  async onMessage(message) {
    if (message?.[ROOT] !== 'round') return;
    const alarm = (await this.kv.get(ALARM)).value;
    if (alarm?.token !== message.token) return;
    // A round under way here: this is its message again (Deno delivers it
    // anew when its handler runs past ~60 s); that round queues the next.
    if (this.rounding) return;
    this.rounding = true;
    try {
      await this.round();
    } finally {
      this.rounding = false;
    }
    await this.schedule(true);
  }

  /**
   * Queues the round at the next wake (later while rounds fail), unless the
   * alarm queued already comes first; `force` queues anew whatever is
   * queued (after a round: its own message is spent, or at start()).
   * Unforced, after a new or deleted wait, a failure to queue is not the
   * request's: the wait is stored, and a round already queued, the next POST
   * or DELETE, or the next start() queues it (an error answer to a POST whose
   * PUTs were sent would only invite sending them again).
   */
  schedule(force = false) {
    const run = this.scheduling.then(() => this.scheduleNow(force));
    this.scheduling = run.catch(() => {});
    return force ? run : run.catch((e) => console.error(`ironic-wait: could not queue the next round: ${e?.message ?? e}`));
  }

  async scheduleNow(force) {
    // The round's end schedules, from what it made of the waits.
    if (this.rounding && !force) return;
    const now = this.now();
    let next = await this.waits.nextWake();
    const alarm = (await this.kv.get(ALARM)).value;
    if (next === null) {
      // Nothing waits: a message still queued finds no alarm and is ignored.
      if (alarm) await this.kv.delete(ALARM);
      return;
    }
    if (!force && alarm && alarm.at <= next && alarm.at > now - OVERDUE_MS) return;
    if (force) next = Math.max(next, now + MIN_GAP_MS);
    next = this.backedOff(next, now);
    const token = crypto.randomUUID();
    const delay = Math.min(MAX_DELAY_MS, Math.max(0, next - now));
    await this.kv
      .atomic()
      .set(ALARM, { at: next, token })
      .enqueue({ [ROOT]: 'round', token }, { delay, backoffSchedule: RETRIES })
      .commit();
  }

  /** GET /waits/{id}/events: an event stream of the wait, from now on. */
  async listen(id) {
    let listener;
    const body = new ReadableStream({
      start: (stream) => {
        let open = true;
        // Never after close(): the heartbeat stops, and publish no longer finds the listener.
        const write = (text) => stream.enqueue(encoder.encode(text));
        const heartbeat = setInterval(() => write(': keep-alive\n\n'), HEARTBEAT_MS);
        listener = {
          send: (text) => write(`data: ${text}\n\n`),
          close: () => {
            if (!open) return;
            open = false;
            clearInterval(heartbeat);
            this.listeners.get(id)?.delete(listener);
            if (!this.listeners.get(id)?.size) this.listeners.delete(id);
            try {
              stream.close();
            } catch {
              // Cancelled by the listener already.
            }
          },
        };
      },
      cancel: () => listener.close(),
    });
    // Listening before reading the record: an end published meanwhile is heard, not missed.
    (this.listeners.get(id) ?? this.listeners.set(id, new Set()).get(id)).add(listener);
    const record = await this.waits.get(id).catch((e) => {
      listener.close();
      throw e;
    });
    if (!record) {
      listener.close();
      return refused(404, 'no such wait');
    }
    if (record.done) this.publish(id, { type: 'done', report: record.report, error: record.error }, true);
    return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } });
  }

  /** A wait's listeners: its event streams in this process. */
  listenersOf(id) {
    return [...(this.listeners.get(id) ?? [])];
  }

  /** GET /watch: an event stream of the watch, pulled as the listener reads. */
  watch(options) {
    const stopped = new AbortController();
    const messages = this.follow(options, stopped.signal);
    const body = new ReadableStream({
      async pull(stream) {
        const { value } = await messages.next();
        if (value) stream.enqueue(encoder.encode(`data: ${JSON.stringify(value)}\n\n`));
        if (value?.type !== 'change') stream.close();
      },
      // The listener went away: the watch ends, nothing more is sent for it.
      cancel: () => stopped.abort(),
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } });
  }
}

/**
 * The Waits storage interface on KV: key 'wait:ID' at ['ironic-wait',
 * 'wait', ID], the value as JSON bytes in parts (see the module's comment).
 * What is read is what this process wrote last: every record is held here
 * too, as JSON, loaded by load() and changed at once by put() and delete(),
 * whose writes to KV follow, one after the other for each key. A round
 * thus never reads a checkpoint older than one a step has stored (it would
 * send that step's PUTs again), and reads nothing from KV.
 */
export class KvStorage {
  constructor(kv) {
    this.kv = kv;
    /** Key -> the record's JSON; null until load(). */
    this.records = null;
    /** Keys deleted: a late put() of one (a step that ended meanwhile) brings nothing back. Ids are never reused. */
    this.deleted = new Set();
    /** Key -> its last write to KV under way. */
    this.writing = new Map();
  }

  /** Every record from KV, and parts no record points to (of a process that died while writing) deleted. */
  async load() {
    const heads = new Map();
    const chunks = new Map();
    for await (const { key, value } of this.kv.list({ prefix: [ROOT] })) {
      if (key[1] === 'part') {
        const of = JSON.stringify(key.slice(2, -1));
        if (!chunks.has(of)) chunks.set(of, []);
        chunks.get(of).push({ key, value });
      } else if (key.length === 3 && value?.gen) {
        heads.set(JSON.stringify([...key.slice(1), value.gen]), { key: `${key[1]}:${key[2]}`, parts: value.parts });
      }
    }
    const records = new Map();
    const orphans = [];
    for (const [of, list] of chunks) {
      if (!heads.has(of)) orphans.push(...list.map((c) => c.key));
    }
    for (const [of, head] of heads) {
      const list = chunks.get(of) ?? [];
      // Only a bug or a damaged file: said, and the record left in KV as it is.
      if (list.length !== head.parts) console.error(`ironic-wait: the record ${head.key} lacks parts in KV: left out`);
      else records.set(head.key, new TextDecoder().decode(concat(list.map((c) => c.value))));
    }
    for (let first = 0; first < orphans.length; first += 500) {
      const op = this.kv.atomic();
      for (const key of orphans.slice(first, first + 500)) op.delete(key);
      await op.commit();
    }
    this.records = records;
  }

  get(key) {
    return Promise.resolve(this.json(key) === undefined ? undefined : JSON.parse(this.json(key)));
  }

  list(prefix) {
    this.json(prefix);
    return Promise.resolve([...this.records].filter(([key]) => key.startsWith(prefix)).map(([, json]) => JSON.parse(json)));
  }

  put(key, value) {
    this.json(key);
    if (this.deleted.has(key)) return Promise.resolve();
    const json = JSON.stringify(value);
    this.records.set(key, json);
    return this.write(key, () => this.store(keyOf(key), json));
  }

  delete(key) {
    this.json(key);
    this.records.delete(key);
    this.deleted.add(key);
    return this.write(key, () => this.remove(keyOf(key)));
  }

  /** The JSON of record `key`; throws before load(). */
  json(key) {
    if (!this.records) throw new Error('KvStorage: load() first (KvWaits.start())');
    return this.records.get(key);
  }

  /** `task` once the writes of `key` before it are done (failed or not). */
  write(key, task) {
    const run = (this.writing.get(key) ?? Promise.resolve()).then(task);
    const settled = run.catch(() => {});
    this.writing.set(key, settled);
    settled.then(() => {
      if (this.writing.get(key) === settled) this.writing.delete(key);
    });
    return run;
  }

  /** A new generation of parts, then the record switched to it and the old parts deleted, in one commit. */
  async store(k, json) {
    const bytes = new TextEncoder().encode(json);
    const gen = crypto.randomUUID();
    const parts = Math.max(1, Math.ceil(bytes.length / PART_BYTES));
    for (let first = 0; first < parts; first += PARTS_PER_COMMIT) {
      const op = this.kv.atomic();
      for (let i = first; i < Math.min(parts, first + PARTS_PER_COMMIT); i++) {
        op.set(partKey(k, gen, i), bytes.subarray(i * PART_BYTES, (i + 1) * PART_BYTES));
      }
      await op.commit();
    }
    const old = (await this.kv.get(k)).value;
    const op = this.kv.atomic().set(k, { gen, parts });
    if (old) for (let i = 0; i < old.parts; i++) op.delete(partKey(k, old.gen, i));
    await op.commit();
  }

  async remove(k) {
    const old = (await this.kv.get(k)).value;
    if (!old) return;
    const op = this.kv.atomic().delete(k);
    for (let i = 0; i < old.parts; i++) op.delete(partKey(k, old.gen, i));
    await op.commit();
  }
}

/** Waits' key 'kind:id' as a KV key. */
function keyOf(key) {
  const at = key.indexOf(':');
  return [ROOT, key.slice(0, at), key.slice(at + 1)];
}

const partKey = (k, gen, i) => [ROOT, 'part', ...k.slice(1), gen, i];

function concat(chunks) {
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return bytes;
}

/**
 * The client's settings from Deno's environment: each of VARIABLES this
 * process may read (a variable --allow-env does not grant is unset, with
 * no prompt), so that the server needs no more than the ones it uses.
 */
function readEnvironment() {
  const env = {};
  for (const variable of VARIABLES) {
    if (Deno.permissions.querySync({ name: 'env', variable }).state !== 'granted') continue;
    const value = Deno.env.get(variable);
    if (value !== undefined) env[variable] = value;
  }
  return env;
}
