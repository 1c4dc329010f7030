// The package's JS API. Every runtime's entry (node.js, web.js, worker.js)
// initialises the wasm first, then re-exports this module.
//
// The wasm's RawClient does the work and rejects with plain
// `{ kind, message, ... }` objects; this layer owns the public surface:
// real Error subclasses, option docs (index.d.ts), and the first line of
// defence against hostile arguments: every call's arguments are read once,
// here, into fresh plain data (strings, numbers, booleans, JSON-cloned
// data, wrapped callbacks, an AbortSignal of our own), so the wasm never
// touches a caller's object, getter, proxy or signal. Anything unreadable is
// an InvalidArgumentError of that call, naming the argument but never
// quoting its value (it may be a secret).
// Do not call into the wasm at module top level: under top-level await
// (web.js) this module may be evaluated before the wasm is instantiated.
import { RawClient, tables as rawTables, version } from './ironic_wait.js';

export { version };

let frozenTables;
/**
 * The core's tables: the action table (also keyed by name, `actionsByName`),
 * the provision and allocation states with the failure rule, the outcome
 * names, the defaults and the limits. Made once, deeply frozen.
 */
export function tables() {
  if (!frozenTables) {
    const t = parse(rawTables());
    t.actionsByName = Object.fromEntries(t.actions.map((a) => [a.name, a]));
    frozenTables = deepFreeze(t);
  }
  return frozenTables;
}

function deepFreeze(value) {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Base class of every error this package raises itself. */
export class IronicWaitError extends Error {
  /** `fields.cause`, where there is one, is the error's `cause` (what the runtime's fetch or getToken() threw). */
  constructor(message, { cause, ...fields } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    Object.assign(this, fields);
  }
}

/** A caller's argument is wrong; nothing was sent. */
export class InvalidArgumentError extends IronicWaitError {}
/** The server's answer cannot be used (not JSON, a node without provision_state, ...). */
export class InvalidResponseError extends IronicWaitError {}
/** Ironic answered with an HTTP error (after retries). `status`, `requestId`. */
export class IronicHttpError extends IronicWaitError {}
/** Ironic could not be reached (after retries). */
export class ConnectionError extends IronicWaitError {}
/** No credentials: Keystone refused them, its catalog has no Ironic, or `getToken()` failed. */
export class AuthError extends IronicWaitError {}
/** The server speaks no API microversion the client can use. */
export class UnsupportedVersionError extends IronicWaitError {}
/** A node or allocation reached a failure (or unexpected stable) state. */
export class StateTransitionFailed extends IronicWaitError {}
/** The wait ran out of time. */
export class StateTransitionTimeout extends IronicWaitError {}

// Each class's `name` is a string of its own, on its prototype as for the
// built-in errors: a minifier renames classes, so `new.target.name` would
// not survive bundling.
for (const [Class, name] of [
  [IronicWaitError, 'IronicWaitError'],
  [InvalidArgumentError, 'InvalidArgumentError'],
  [InvalidResponseError, 'InvalidResponseError'],
  [IronicHttpError, 'IronicHttpError'],
  [ConnectionError, 'ConnectionError'],
  [AuthError, 'AuthError'],
  [UnsupportedVersionError, 'UnsupportedVersionError'],
  [StateTransitionFailed, 'StateTransitionFailed'],
  [StateTransitionTimeout, 'StateTransitionTimeout'],
]) {
  Object.defineProperty(Class.prototype, 'name', { value: name, writable: true, configurable: true });
}

const KINDS = {
  InvalidArgument: InvalidArgumentError,
  InvalidResponse: InvalidResponseError,
  IronicHttpError,
  ConnectionError,
  AuthError,
  UnsupportedVersion: UnsupportedVersionError,
  StateTransitionFailed,
  StateTransitionTimeout,
};

/** The wasm's `{ kind, message, ... }` -> its Error class; anything else as is. */
function toError(raw) {
  const Kind = raw && typeof raw === 'object' && !(raw instanceof Error) ? KINDS[raw.kind] : undefined;
  if (!Kind) return raw;
  const { kind: _kind, message, report, ...fields } = raw;
  return new Kind(message, report ? { ...fields, report: withErrors(report) } : fields);
}

/**
 * A report whose nodes' `error`s (outcomes `error` and `not-found`) are Error objects too. An `ok` report has none: not
 * walked (10,000 entries take a millisecond).
 */
function withErrors(report) {
  if (report?.ok) return report;
  for (const node of report?.nodes ?? []) {
    if (node.error) node.error = toError(node.error);
  }
  return report;
}

const sendsUserAgent =
  typeof navigator === 'undefined' || typeof navigator.userAgent !== 'string' || !navigator.userAgent.startsWith('Mozilla/');

// ---------------------------------------------------------------------------
// Reading arguments. The built-ins used on callers' values are taken now, so
// a caller's own properties (a signal's `aborted`, a function's `call`)
// are never what runs.

/** Items in a list (node identifiers, fields) and values in JSON data, at most. */
const MAX_ITEMS = 1_000_000;

const apply = Reflect.apply;
const getPrototypeOf = Object.getPrototypeOf;
const ownDescriptor = Object.getOwnPropertyDescriptor;
const ownKeys = Object.keys;
const isArray = Array.isArray;
const stringify = JSON.stringify;
const parse = JSON.parse;
const promiseThen = Promise.prototype.then;
const stringIsWellFormed = String.prototype.isWellFormed;
const isWellFormed = (s) => (stringIsWellFormed ? apply(stringIsWellFormed, s, []) : !hasLoneSurrogate(s));

/** For runtimes without String.prototype.isWellFormed (Safari before 16.4, say). */
function hasLoneSurrogate(s) {
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    if (unit >= 0xdc00 && unit <= 0xdfff) return true;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    }
  }
  return false;
}

const signalGetter = (name) => {
  const proto = globalThis.AbortSignal?.prototype;
  return proto && ownDescriptor(proto, name)?.get;
};
const signalAborted = signalGetter('aborted');
const signalReason = signalGetter('reason');
const addListener = globalThis.EventTarget?.prototype.addEventListener;
const removeListener = globalThis.EventTarget?.prototype.removeEventListener;

const refuse = (message) => new InvalidArgumentError(message);
const unreadable = (what) => refuse(`${what} could not be read`);

/** Runs `read`, which may run the caller's code (proxy traps, getters); whatever it throws means `what` is unreadable. */
function readable(what, read) {
  try {
    return read();
  } catch {
    throw unreadable(what);
  }
}

function wellFormed(what, s) {
  if (!isWellFormed(s)) throw refuse(`${what} is not well-formed Unicode (it has a lone UTF-16 surrogate)`);
  return s;
}

/**
 * An object of options or fields: absent (`undefined`/`null`), or a plain
 * object (its prototype is Object.prototype, of any realm, or null).
 */
function plainObject(what, value) {
  if (value === undefined || value === null) return null;
  if ((typeof value !== 'object' && typeof value !== 'function') || readable(what, () => isArray(value))) {
    throw refuse(`${what} must be an object`);
  }
  const plain = readable(what, () => {
    const proto = getPrototypeOf(value);
    return proto === null || getPrototypeOf(proto) === null;
  });
  if (typeof value === 'function' || !plain) throw refuse(`${what} must be a plain object`);
  return value;
}

/**
 * An own, enumerable data property's value (`undefined` when absent or not
 * enumerable). A getter is refused, not called: what it would return, once
 * or each time, is not data.
 */
function ownValue(what, object, key) {
  const descriptor = readable(what, () => ownDescriptor(object, key));
  if (!descriptor?.enumerable) return undefined;
  if (!('value' in descriptor)) throw refuse(`${what} must be a value, not a getter`);
  return descriptor.value;
}

/** `what`'s own enumerable string keys. */
function keysOf(what, object) {
  const keys = readable(what, () => ownKeys(object));
  if (keys.length > MAX_ITEMS) throw refuse(`${what} has too many keys`);
  return keys;
}

/** A list of strings (its items own data properties, as in an array literal), or one string as given. */
function strings(what, value, message = `${what} must be a string or a list of strings`) {
  if (typeof value === 'string') return wellFormed(what, value);
  if (typeof value !== 'object' || value === null || !readable(what, () => isArray(value))) throw refuse(message);
  const length = readable(what, () => value.length);
  if (!Number.isSafeInteger(length) || length < 0) throw refuse(message);
  if (length > MAX_ITEMS) throw refuse(`${what} has more than ${MAX_ITEMS} items`);
  const copy = [];
  for (let i = 0; i < length; i++) {
    // As for options, the item's own data, never a getter's answer.
    const item = readable(what, () => ownDescriptor(value, i))?.value;
    if (typeof item !== 'string') throw refuse(message);
    copy.push(wellFormed(`${what}[${i}]`, item));
  }
  return copy;
}

/**
 * JSON data as it would go on the wire, cloned through JSON text (its
 * `toJSON`s and getters run once, here). Cycles, BigInts, throwing getters
 * and proxies, lone surrogates, and more than MAX_ITEMS values are refused.
 */
function jsonData(what, value) {
  let problem = null;
  let count = 0;
  const check = (key, v) => {
    if (++count > MAX_ITEMS) problem = `${what} is too large (more than ${MAX_ITEMS} values)`;
    else if (!isWellFormed(key) || (typeof v === 'string' && !isWellFormed(v))) {
      problem = `${what} has a string that is not well-formed Unicode (a lone UTF-16 surrogate)`;
    }
    if (problem) throw new Error(problem);
    return v;
  };
  let text;
  try {
    text = stringify(value, check);
  } catch {
    throw refuse(problem ?? `${what} must be JSON data`);
  }
  if (text === undefined) throw refuse(`${what} must be JSON data`);
  return parse(text);
}

// Node's (and Deno's) AbortSignal getters check their brand through
// ordinary property reads, which a Proxy forwards; Node can tell a proxy
// itself. Browsers' and workerd's getters refuse proxies on their own.
const isProxy = globalThis.process?.getBuiltinModule?.('node:util')?.types?.isProxy ?? (() => false);

/** A genuine AbortSignal (the platform's own getter accepts it; a look-alike or a proxy throws). */
function abortSignal(what, value) {
  try {
    apply(signalAborted, value, []);
    if (!isProxy(value)) return value;
  } catch {
    // refused below
  }
  throw refuse(`${what} must be an AbortSignal`);
}

/**
 * `getToken`: the wasm always gets a real promise, never a synchronous
 * throw, and it resolves to a string or null (which the wasm refuses as no
 * token), never to an object of the caller's.
 */
function tokenSource(getToken) {
  return async () => {
    const token = await apply(getToken, undefined, []);
    if (typeof token !== 'string') return null;
    if (!isWellFormed(token)) throw new Error('the token is not well-formed Unicode (it has a lone UTF-16 surrogate)');
    return token;
  };
}

/** The `fetch` option, checked to be a function; `transport` wraps it. */
const fetchFunction = (fetch) => fetch;

const clock = () => globalThis.performance?.now() ?? Date.now();

/**
 * The `fetch` the wasm calls when the caller gave `fetch` or `onRequest`:
 * the caller's (or the platform's), called as the platform's is, with the
 * Request and without `this`. Its answer is always a promise, which
 * rejects when the request's signal aborts even if the caller's fetch does
 * not follow it (a call is never held by it), and rejects with what it
 * throws. `onRequest` is told of each request once its answer's headers
 * came (or it failed): method, path and query, status, seconds, request id.
 */
function transport(fetch = globalThis.fetch, onRequest) {
  return (request) => {
    const signal = request.signal;
    const started = clock();
    const answer = new Promise((resolve, reject) => {
      apply(addListener, signal, ['abort', () => reject(reasonOf(signal)), { once: true }]);
      // Settled by the fetch's answer, not resolved to it: a promise
      // resolved to one that never settles could no longer be rejected.
      const fetched = new Promise((settle) => settle(apply(fetch, undefined, [request])));
      apply(promiseThen, fetched, [resolve, reject]);
    });
    if (onRequest) {
      const { method, url } = request;
      const at = url.indexOf('/', url.indexOf('//') + 2);
      const tell = (status, requestId) =>
        onRequest({ method, path: at < 0 ? '/' : url.slice(at), status, duration: (clock() - started) / 1000, requestId });
      apply(promiseThen, answer, [
        (response) => {
          try {
            const status = response.status;
            tell(typeof status === 'number' ? status : null, response.headers.get('x-openstack-request-id'));
          } catch {
            tell(null, null);
          }
        },
        () => tell(null, null),
      ]);
    }
    return answer;
  };
}

/** `onProgress`, `onCheckpoint` and `onRequest`: what it throws, or its promise rejects with, is ignored. */
function progressListener(onProgress) {
  const ignore = () => {};
  return (event) => {
    try {
      const result = apply(onProgress, undefined, [event]);
      if (typeof result === 'object' && result !== null) apply(promiseThen, result, [undefined, ignore]);
    } catch {
      // Not a promise, or the callback threw: either way, ignored.
    }
  };
}

/** A stand-in for an option value that is no data (a function, a Symbol, a BigInt, a class instance): the wasm refuses it as of the wrong type, naming the option, without the caller's object. */
const NOT_DATA = Symbol('not data');
/** Lists and objects inside an option value, at most this deep (`headers`, `basicAuth`, `fields`: 1). */
const MAX_DEPTH = 2;

/** Option values that must stay JS values: callbacks, wrapped here (the wasm checks where each is allowed). */
const CALLBACKS = {
  __proto__: null,
  getToken: tokenSource,
  fetch: fetchFunction,
  onRequest: progressListener,
  onProgress: progressListener,
  onCheckpoint: progressListener,
};
/** Option values that are JSON data for the server, cloned as they would go on the wire. */
const JSON_OPTIONS = ['configDrive', 'cleanSteps', 'deploySteps', 'serviceSteps'];

/**
 * An option value as plain data: strings (well-formed), numbers, booleans,
 * and fresh lists and null-prototype objects of those, read from own data
 * properties (a getter is refused, not called); anything else is NOT_DATA.
 * Which names and types each option takes is the wasm's to say.
 */
function data(what, value, depth = 0) {
  if (typeof value === 'string') return wellFormed(what, value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return value;
  if (typeof value !== 'object' || depth >= MAX_DEPTH) return NOT_DATA;
  if (readable(what, () => isArray(value))) {
    const length = readable(what, () => value.length);
    if (!Number.isSafeInteger(length) || length > MAX_ITEMS) throw refuse(`${what} has more than ${MAX_ITEMS} items`);
    const copy = [];
    for (let i = 0; i < length; i++) copy.push(data(`${what}[${i}]`, ownValue(`${what}[${i}]`, value, i), depth + 1));
    return copy;
  }
  const plain = readable(what, () => {
    const proto = getPrototypeOf(value);
    return proto === null || getPrototypeOf(proto) === null;
  });
  return plain ? readOptions(what, value, (key) => `${what}.${key}`, depth + 1) : NOT_DATA;
}

/**
 * A plain object's own enumerable data properties, read once into a fresh
 * null-prototype object (so a key `__proto__` is a key like any other);
 * `undefined`/`null` values mean absent and are dropped.
 */
function readOptions(what, value, name = (key) => `Option ${key}`, depth = 0) {
  const given = plainObject(what, value);
  const options = Object.create(null);
  if (!given) return options;
  for (const key of keysOf(what, given)) {
    const option = name(wellFormed(`A key of ${what}`, key));
    const v = ownValue(option, given, key);
    if (v === undefined || v === null) continue;
    if (depth > 0) options[key] = data(option, v, depth);
    else if (key === 'signal') options[key] = abortSignal(option, v);
    else if (CALLBACKS[key]) options[key] = callback(option, v, CALLBACKS[key]);
    else if (JSON_OPTIONS.includes(key)) options[key] = jsonData(option, v);
    else options[key] = data(option, v);
  }
  return options;
}

function callback(what, value, wrap) {
  if (typeof value !== 'function') throw refuse(`${what} must be a function`);
  return wrap(value);
}

/** createAllocation's fields: every key is passed on (the wasm refuses unknown ones), each value as JSON data. */
function allocationFields(value) {
  const given = plainObject('allocation fields', value);
  if (!given) throw refuse('allocation fields must be an object');
  const fields = {};
  for (const key of keysOf('allocation fields', given)) {
    const what = `Allocation field ${wellFormed('An allocation field name', key)}`;
    const v = ownValue(what, given, key);
    if (v !== undefined) fields[key] = jsonData(what, v);
  }
  return fields;
}

function identifier(what, value, message = `${what} must be a string`) {
  if (typeof value !== 'string') throw refuse(message);
  return wellFormed(what, value);
}

/** Whether a genuine signal is aborted, and its reason, through the platform's own getters. */
const aborted = (signal) => apply(signalAborted, signal, []);
const reasonOf = (signal) => apply(signalReason, signal, []);

/**
 * A signal of our own that follows the caller's: it aborts, with the very
 * same reason, the moment the caller's does (then `onAbort` runs). The wasm
 * reads only this one.
 */
function follow(signal, onAbort) {
  const controller = new AbortController();
  const listener = () => {
    controller.abort(reasonOf(signal));
    onAbort();
  };
  apply(addListener, signal, ['abort', listener]);
  return { signal: controller.signal, stop: () => apply(removeListener, signal, ['abort', listener]) };
}

/**
 * A client of one Ironic endpoint. Options and methods are documented in
 * index.d.ts and the guides in docs/.
 */
export class IronicClient {
  #raw;

  constructor(options = {}) {
    const given = readOptions('IronicClient options', options);
    // Browsers refuse to let pages set User-Agent; elsewhere identify ourselves.
    if (given.userAgent === undefined && sendsUserAgent) given.userAgent = `ironic-wait/${version()}`;
    if (given.fetch || given.onRequest) given.fetch = transport(given.fetch, given.onRequest);
    try {
      this.#raw = new RawClient(given);
    } catch (e) {
      throw toError(e);
    }
  }

  /**
   * Runs `method` of the wasm's `run` on the arguments `args()` gives (two
   * at most before the options, the missing ones undefined), read now
   * (before any await, so the caller may change its objects as soon as the
   * call returns), and `options`. The call's start is marked before they
   * are read: a wait's deadline counts from the method's call.
   *
   * An abort before the call settles rejects it at once with the caller's
   * own reason, as is (as fetch does), whatever the wasm answers later: its
   * cancelled work winds down behind it.
   */
  async #run(method, args, options) {
    const raw = this.#raw;
    raw.began();
    const [a, b] = args();
    const given = readOptions('options', options);
    const start = () => this.#settle(raw.run(method, a, b, given));
    const signal = given.signal;
    if (!signal) return start();
    if (aborted(signal)) throw reasonOf(signal);
    let rejectNow;
    const abortedCall = new Promise((_, reject) => {
      rejectNow = reject;
    });
    const following = readable('Option signal', () => follow(signal, () => rejectNow(reasonOf(signal))));
    given.signal = following.signal;
    const work = start();
    // Whichever comes second is ignored, not left unhandled.
    work.catch(() => {});
    abortedCall.catch(() => {});
    try {
      return await Promise.race([work, abortedCall]);
    } finally {
      following.stop();
    }
  }

  /** The wasm's answer as the API gives it: reports with Error objects, errors as classes. */
  async #settle(answer) {
    try {
      return withErrors(await answer);
    } catch (e) {
      throw toError(e);
    }
  }

  async provision(nodes, action, options) {
    return this.#run('provision', () => WAIT_ARGUMENTS.provision(nodes, action), options);
  }

  async waitForProvisionState(nodes, expectedState, options) {
    return this.#run('waitForProvisionState', () => WAIT_ARGUMENTS.waitForProvisionState(nodes, expectedState), options);
  }

  async setPowerState(nodes, target, options) {
    return this.#run('setPowerState', () => WAIT_ARGUMENTS.setPowerState(nodes, target), options);
  }

  async waitForPowerState(nodes, state, options) {
    return this.#run('waitForPowerState', () => WAIT_ARGUMENTS.waitForPowerState(nodes, state), options);
  }

  async waitForReservation(nodes, options) {
    return this.#run('waitForReservation', () => WAIT_ARGUMENTS.waitForReservation(nodes), options);
  }

  async getNodeHistory(node, options) {
    return this.#run('getNodeHistory', () => [identifier('node', node)], options);
  }

  async createAllocation(fields, options) {
    return this.#run('createAllocation', () => WAIT_ARGUMENTS.createAllocation(fields), options);
  }

  async waitForAllocation(id, options) {
    return this.#run('waitForAllocation', () => WAIT_ARGUMENTS.waitForAllocation(id), options);
  }

  async getNode(id, options) {
    return this.#run('getNode', () => [identifier('id', id)], options);
  }

  /**
   * The nodes of a scope, then each change of them, as an async iterator
   * of `{ type: 'added' | 'modified' | 'removed', uuid, node }`. It starts
   * at the first `next()`. `return()` (a `break` out of `for await`) ends
   * it at once, even while a `next()` waits; `signal` aborting makes the
   * `next()` under way reject with its reason; a listing that fails (after
   * the retries) rejects it with its error. Nothing is sent after the end.
   */
  watch(options) {
    const raw = this.#raw;
    const given = readOptions('options', options);
    const signal = given.signal;
    const own = new AbortController();
    let started; // [id, end, following]
    let batch = [];
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      started?.[2]?.stop();
      // Ours, not the caller's: the watch ends in the wasm, nothing more is sent.
      own.abort();
    };
    const step = async () => {
      if (!closed && batch.length === 0) {
        if (!started) {
          if (signal && aborted(signal)) {
            close();
            throw reasonOf(signal);
          }
          const following = signal && readable('Option signal', () => follow(signal, () => own.abort(reasonOf(signal))));
          given.signal = own.signal;
          raw.began();
          started = [...raw.run('watch', undefined, undefined, given), following];
          started[1].catch(() => {});
        }
        batch = await raw.run('changes', started[0]);
        for (const change of batch) if (change.error) change.error = toError(change.error);
        if (batch.length === 0 && !closed) {
          // Over: `end` says why (an abort, or an error).
          close();
          try {
            await started[1];
          } catch (e) {
            throw toError(e);
          }
        }
      }
      if (closed || batch.length === 0) return { done: true, value: undefined };
      return { done: false, value: batch.shift() };
    };
    // One step at a time: calls of next() not awaited each get their own item.
    let queue = Promise.resolve();
    const next = () => {
      const result = queue.then(step);
      queue = result.catch(() => {});
      return result;
    };
    return {
      next,
      async return() {
        close();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  async listNodes(options) {
    return this.#run('listNodes', () => [], options);
  }

  async microversion(options) {
    return this.#run('microversion', () => [], options);
  }

  async authenticate(options) {
    return this.#run('authenticate', () => [], options);
  }

  /**
   * The checkpoint of a call, made without sending anything: `method` is
   * one of the waits (WAIT_ARGUMENTS' keys), `args` its arguments as it
   * takes them.
   */
  checkpoint(method, ...args) {
    const read = WAIT_ARGUMENTS[typeof method === 'string' ? method : ''];
    if (!read) throw refuse(`method must be one of ${Object.keys(WAIT_ARGUMENTS).join(', ')}`);
    // As the method reads them: its arguments (`read.length` of them), then its options.
    const [a, b] = read(...args.slice(0, read.length));
    const options = readOptions('options', args[read.length]);
    try {
      return this.#raw.run(method, a, b, options, true);
    } catch (e) {
      throw toError(e);
    }
  }

  /** Goes on with the call a checkpoint was made of, to the end it would have had. */
  async resume(checkpoint, options) {
    return this.#run('resume', () => [checkpointText(checkpoint)], options);
  }

  /**
   * One step of the call a checkpoint was made of (its PUTs, or one round
   * of checks): `{ checkpoint, wakeAtMs }` to go on from at `wakeAtMs`, or at
   * the end `{ checkpoint: null, wakeAtMs: null, report, error }`.
   */
  async step(checkpoint, options) {
    const answer = await this.#run('step', () => [checkpointText(checkpoint)], options);
    // Only counts moved (a step with a `key`): the checkpoint given goes on.
    if (answer.changed === false) answer.checkpoint = checkpoint;
    if (answer.error) answer.error = toError(answer.error);
    if (answer.outage) answer.outage = toError(answer.outage);
    if (answer.report) answer.report = withErrors(answer.report);
    return answer;
  }

  /** Drops the state kept in memory for the steps of `key` (a wait given up). */
  forget(key) {
    if (typeof key !== 'string') throw refuse('key must be a string');
    this.#raw.run('forget', key);
  }
}

/** How each wait reads its arguments before its options; `checkpoint` reads them the same way. */
const WAIT_ARGUMENTS = {
  __proto__: null,
  provision: (nodes, action) => [strings('nodes', nodes), identifier('action', action)],
  waitForProvisionState: (nodes, expected) => [
    strings('nodes', nodes),
    identifier('expectedState', expected, 'expectedState must be a provision state'),
  ],
  setPowerState: (nodes, target) => [strings('nodes', nodes), identifier('target', target, 'target must be a power action')],
  waitForPowerState: (nodes, state) => [strings('nodes', nodes), identifier('state', state, "state must be 'power on' or 'power off'")],
  waitForReservation: (nodes) => [strings('nodes', nodes)],
  createAllocation: (fields) => [allocationFields(fields)],
  waitForAllocation: (id) => [identifier('id', id)],
};

/** A checkpoint: the text `onCheckpoint`, `checkpoint()` and `step()` give. */
function checkpointText(value) {
  if (typeof value !== 'string') throw refuse('checkpoint must be a string, as onCheckpoint, checkpoint() and step() give it');
  if (value.length > MAX_CHECKPOINT_CHARS) throw refuse(`checkpoint is longer than ${MAX_CHECKPOINT_CHARS} characters`);
  return wellFormed('checkpoint', value);
}

/** The longest checkpoint read: far beyond 1,000,000 nodes' worth. */
const MAX_CHECKPOINT_CHARS = 256 * 1024 * 1024;
