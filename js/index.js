// The package's JS API. Every runtime's entry (node.js, web.js, worker.js)
// initialises the wasm first, then re-exports this module.
//
// The wasm's RawClient does the work and rejects with plain
// `{ kind, message, ... }` objects; this layer owns the public surface:
// real Error subclasses, option docs (index.d.ts) and nothing else.
// Do not call into the wasm at module top level: under top-level await
// (web.js) this module may be evaluated before the wasm is instantiated.
import { RawClient, version } from './ironic_wait.js';

export { version };

/** Base class of every error this package raises itself. */
export class IronicWaitError extends Error {
  constructor(message, fields = {}) {
    super(message);
    this.name = new.target.name;
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
/** `getToken()` failed or gave no token. */
export class AuthError extends IronicWaitError {}
/** The server speaks no API microversion the client can use. */
export class UnsupportedVersionError extends IronicWaitError {}
/** A node or allocation reached a failure (or unexpected stable) state. */
export class StateTransitionFailed extends IronicWaitError {}
/** The wait ran out of time. */
export class StateTransitionTimeout extends IronicWaitError {}

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

/** The wasm's `{ kind, message, ... }` -> its Error class; anything else (an abort reason) as is. */
function toError(raw) {
  const Kind = raw && typeof raw === 'object' && !(raw instanceof Error) ? KINDS[raw.kind] : undefined;
  if (!Kind) return raw;
  const { kind: _kind, message, report, ...fields } = raw;
  return new Kind(message, report ? { ...fields, report: withErrors(report) } : fields);
}

/** A report whose nodes' `error`s (outcomes `error` and `not-found`) are Error objects too. */
function withErrors(report) {
  for (const node of report?.nodes ?? []) {
    if (node.error) node.error = toError(node.error);
  }
  return report;
}

const sendsUserAgent =
  typeof navigator === 'undefined' || typeof navigator.userAgent !== 'string' || !navigator.userAgent.startsWith('Mozilla/');

/**
 * A client of one Ironic endpoint. Options and methods are documented in
 * index.d.ts and the README.
 */
export class IronicClient {
  #raw;

  constructor(options = {}) {
    // Browsers refuse to let pages set User-Agent; elsewhere identify ourselves.
    const userAgent = sendsUserAgent ? `ironic-wait/${version()}` : undefined;
    try {
      this.#raw = new RawClient({ userAgent, ...options });
    } catch (e) {
      throw toError(e);
    }
  }

  async #call(method, ...args) {
    try {
      return withErrors(await this.#raw[method](...args));
    } catch (e) {
      throw toError(e);
    }
  }

  provision(nodes, action, options) {
    return this.#call('provision', nodes, action, options);
  }

  waitForProvisionState(nodes, expectedState, options) {
    return this.#call('waitForProvisionState', nodes, expectedState, options);
  }

  createAllocation(fields, options) {
    return this.#call('createAllocation', fields, options);
  }

  waitForAllocation(id, options) {
    return this.#call('waitForAllocation', id, options);
  }

  getNode(id, options) {
    return this.#call('getNode', id, options);
  }

  listNodes(options) {
    return this.#call('listNodes', options);
  }

  microversion(options) {
    return this.#call('microversion', options);
  }
}
