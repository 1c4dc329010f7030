// Types of the package's JS API (js/index.js), and the API reference's text
// for it (`npm run docs`).

/**
 * Drive OpenStack Ironic from JavaScript and wait for it, as python-ironicclient's `--wait` does: {@link IronicClient}
 * is a client of one Ironic endpoint whose methods send provision and power actions, wait for nodes and allocations to
 * settle, read nodes, watch them change, and make and resume checkpoints of waits. The same API in Node, Deno, browsers
 * and Workers: the package's `exports` conditions pick each runtime's entry, which loads the WebAssembly core first.
 *
 * Times are in seconds, as in python-ironicclient. Every method of a client returns a promise and never throws
 * synchronously, except `checkpoint` (which makes its text at once) and `watch` (which reads its options at once);
 * those two and the constructor throw their {@link InvalidArgumentError} at the call.
 *
 * Arguments are read once, when a method is called: option objects must be plain objects (`{ ... }` literals or
 * `Object.create(null)`) whose options are own data properties (a getter is refused, not called); lists are arrays of
 * at most 1,000,000 strings; JSON data (steps, config drive, allocation fields) is cloned through JSON text. Strings
 * must be well-formed Unicode (no lone UTF-16 surrogate). An option the constructor or method does not take (a
 * misspelt name) is refused, as is a value of the wrong type; an option set to `undefined` or `null` is absent.
 * Anything else is an {@link InvalidArgumentError} of that call, naming the option, and nothing is sent.
 *
 * Every error the package raises is an {@link IronicWaitError}; an aborted call rejects with its signal's reason.
 *
 * @module
 */

/** The version of the ironic-wait build (the Rust crate's version). */
export function version(): string;

/** One row of python-ironicclient's action table. */
export interface ProvisionActionRow {
  /** The name a caller uses (`deploy`, `undeploy`, or Ironic's `active`, `deleted`). */
  name: string;
  /** The `target` sent in `PUT /v1/nodes/{id}/states/provision`. */
  target: string;
  /** The state a wait after it waits for; `null`: it cannot be waited on (`abort`, `unhold`). */
  expected: string | null;
  /** Seconds between the checks of that wait. */
  pollInterval: number | null;
  /**
   * The states Ironic takes a node through on its way to `expected`, in order (`deploying` comes twice for a
   * deploy, around `wait call-back`): for a progress indicator; a wait does not depend on it. Empty for a power
   * action and for `abort` and `unhold`.
   */
  via: readonly string[];
  /** The option Ironic requires with it: `cleanSteps` (or a runbook) for `clean`, `serviceSteps` (or a runbook) for `service`, `rescuePassword` for `rescue`; else `null`. */
  needs: 'cleanSteps' | 'serviceSteps' | 'rescuePassword' | null;
  /** A power action's words in python-ironicclient (`node power off --soft` is `soft off`); absent on a provision action. */
  words?: 'on' | 'off' | 'reboot' | 'soft off' | 'soft reboot';
}

/**
 * What the core knows and callers show or check too, written once in Rust:
 * the CLI and the console read these instead of keeping copies. Frozen.
 */
export interface Tables {
  /** python-ironicclient's action table, in its order, with the OpenStack client's names as well as Ironic's. */
  actions: readonly ProvisionActionRow[];
  /** The rows of `actions`, keyed by their `name`. */
  actionsByName: Readonly<Record<string, ProvisionActionRow>>;
  /** `setPowerState`'s actions: `target` is Ironic's (`rebooting`), `expected` the power state each ends in. */
  powerActions: readonly ProvisionActionRow[];
  /** Every provision state Ironic has. */
  provisionStates: readonly string[];
  /** The states a node rests in with no target: a wait that finds a node resting in another one than it waits for fails it (`failOnUnexpectedState`). */
  stableStates: readonly string[];
  /** The failure rule: a state in `failureStates` (`error` and Ironic's `* failed` states) or any state that ends with `failureSuffix`. */
  failureStates: readonly string[];
  /** `' failed'`: a state ending with it is a failure, whether Ironic has it yet or not. */
  failureSuffix: string;
  /** The states a node is held in until it is told to go on (`deploy hold`, `clean hold`, `service hold`): see `holdIsTerminal`. */
  holdStates: readonly string[];
  /** Every state an allocation has (`allocating`, `active`, `error`). */
  allocationStates: readonly string[];
  /** The values of a node's `fault` ({@link Scope}'s `fault` filter): `power failure`, `clean failure`, `rescue abort failure`, `service failure`. */
  faults: readonly string[];
  /** Every outcome a report entry or progress event may carry. */
  outcomes: readonly Outcome[];
  /**
   * Each `scope` filter as `[option, node field, x]`: the option of {@link Scope}, the node field it matches,
   * and the API version `1.x` that brought both the filter and the field.
   */
  scopeFilters: readonly (readonly [option: keyof Scope, field: string, minor: number])[];
  /**
   * The API version `1.x` (its `x`) each optional part of the API needs: `fields` on node reads (and with it
   * `power_state`, `target_power_state` and `maintenance` in a projection), 8; `history` a node's history, 78;
   * `softPower` soft power actions and a power action's `timeout`, 27.
   */
  versions: Readonly<{
    /** `fields` on node reads: 8. */
    fields: number;
    /** A node's history: 78. */
    history: number;
    /** Soft power actions (`soft power off`, `soft reboot`) and `powerTimeout`: 27. */
    softPower: number;
  }>;
  /**
   * How a round lost to an outage is put off (`retryOutages`), in seconds: the `n`th outage in a row waits
   * `outageDelays[n - 1]`, and the last entry for every one after (2 s doubling to 5 minutes).
   */
  outageDelays: readonly number[];
  /**
   * The defaults, in seconds unless named otherwise:
   * - `pollInterval` (2): between rounds where no action's row gives an interval (direct, power and lock waits,
   *   watches);
   * - `allocationPollInterval` (1): between the checks of an allocation wait;
   * - `concurrency` (8): requests in flight at once;
   * - `listThreshold` (10): unfinished nodes from which a round lists the nodes rather than getting each;
   * - `pageSize` (1000): nodes asked for in each page of a list;
   * - `requestTimeout` (60): how long one request may take;
   * - `maxRetries` (5) and `retryInterval` (2): the retries of a 409, a 503 or a connection failure;
   * - `maxResponseBytes` (16777216, 16 MiB): the bytes an answer may have.
   */
  defaults: Readonly<{
    /** Seconds between rounds where no action's row gives them (direct, power and lock waits; watches): 2. */
    pollInterval: number;
    /** Seconds between the checks of an allocation wait: 1. */
    allocationPollInterval: number;
    /** Requests in flight at once (`concurrency`): 8. */
    concurrency: number;
    /** Unfinished nodes from which a round lists the nodes rather than getting each (`listThreshold`): 10. */
    listThreshold: number;
    /** Nodes asked for in each page of a list: 1000. */
    pageSize: number;
    /** Seconds one request may take (`requestTimeout`): 60. */
    requestTimeout: number;
    /** Retries of a 409, a 503 or a connection failure (`maxRetries`): 5. */
    maxRetries: number;
    /** Seconds between those retries (`retryInterval`): 2. */
    retryInterval: number;
    /** Bytes an answer may have (`maxResponseBytes`): 16777216. */
    maxResponseBytes: number;
  }>;
  /**
   * The limits:
   * - `maxSeconds` (2147483, about 24.8 days): the longest timeout or interval in seconds, what a JS timer holds;
   * - `maxPageSize` (1000): the largest page Ironic serves by default (its `[api]max_limit`), and so the largest
   *   asked for;
   * - `maxPages` (1000): the most pages one listing follows (a list still not at its end after them is an
   *   {@link InvalidResponseError});
   * - `maxRetryAfter` (60): the longest `Retry-After` honoured, in seconds (a longer one counts as this).
   */
  limits: Readonly<{
    /** The longest timeout or interval in seconds, what a JS timer holds: 2147483 (about 24.8 days). */
    maxSeconds: number;
    /** The largest page Ironic serves by default (its `[api]max_limit`), and so the largest page asked for: 1000. */
    maxPageSize: number;
    /** The most pages one listing follows; a list still not at its end after them is an `InvalidResponseError`: 1000. */
    maxPages: number;
    /** The longest `Retry-After` honoured, in seconds; a longer one counts as this: 60. */
    maxRetryAfter: number;
  }>;
  /** python-ironicclient's refusals of its own timeouts, where 0 waits without limit (as the CLI's `--wait 0`). */
  messages: Readonly<{
    /** A negative timeout: `Timeout must be a non-negative number`. */
    negativeTimeout: string;
    /** A timeout above `limits.maxSeconds`. */
    longTimeout: string;
    /** A power timeout that is not a positive whole number (where `powerTimeout` is refused in the library's words). */
    powerTimeout: string;
  }>;
}

/** The core's tables. */
export function tables(): Tables;

/**
 * Ironic's node list filters, as a wait's, a watch's or `listNodes`' `scope`: the nodes listed are those matching every
 * filter given. Each needs the API version that brought it (see {@link Tables.scopeFilters}); one the server's version
 * lacks is an {@link UnsupportedVersionError}.
 */
export interface Scope {
  /** Nodes in this provision state (`provision_state`, API 1.9). */
  provisionState?: string;
  /** Nodes of this resource class (`resource_class`, API 1.21). */
  resourceClass?: string;
  /** Nodes with this fault (`fault`, API 1.42), such as `power failure`. */
  fault?: string;
  /** Nodes of this conductor group (`conductor_group`, API 1.46). */
  conductorGroup?: string;
  /** Nodes this project owns (`owner`, API 1.50). */
  owner?: string;
  /** Nodes lent to this project (`lessee`, API 1.65). */
  lessee?: string;
  /** Any of these shards. */
  shard?: string | string[];
}

/**
 * The options of `new IronicClient(options)`: where Ironic is, how to authenticate, which API version to speak, and how
 * requests are sent and retried. Every call of the client shares them (and one token, one negotiated version).
 */
export interface IronicClientOptions {
  /**
   * Ironic's endpoint, e.g. `http://127.0.0.1:6385` (a trailing `/v1` is accepted). Required unless `auth` logs in to
   * Keystone, whose catalog then gives it (service type `baremetal`); a given one wins.
   */
  endpoint?: string;
  /** How to authenticate, as keystoneauth's auth plugins (not with `token`, `getToken` or `basicAuth`). */
  auth?: AuthOptions;
  /** The catalog region of Ironic's endpoint (with a Keystone `auth`; default: the first listed). */
  region?: string;
  /** The catalog interface of Ironic's endpoint (with a Keystone `auth`; default `'public'`). */
  interface?: 'public' | 'internal' | 'admin';
  /** A Keystone token, sent as `X-Auth-Token`. */
  token?: string;
  /** Called for a token before the first request and once more after a 401; may return a promise. Throwing, or giving no string, is an `AuthError`. */
  getToken?: () => string | Promise<string>;
  /** HTTP Basic credentials (Ironic's `auth_strategy = http_basic`). */
  basicAuth?: {
    /** The user, without `:`. */
    username: string;
    /** The password. */
    password: string;
  };
  /** `'latest'` (default: negotiated once per client, capped at 1.115) or a pinned `'1.N'`. */
  microversion?: string;
  /** Retries of 409, 503 and connection failures (default 5, as python-ironicclient). */
  maxRetries?: number;
  /** Seconds between retries (default 2); a `Retry-After` in seconds takes precedence. */
  retryInterval?: number;
  /** Seconds one request may take before it counts as a connection failure (default 60; a positive number). */
  requestTimeout?: number;
  /**
   * Bytes an answer may have, after decompression (default 16 MiB = 16777216; a whole number from 1024); a larger one
   * is an `InvalidResponseError`, and reading it stops.
   */
  maxResponseBytes?: number;
  /**
   * The most requests one round of the client's waits and watchers sends, retries included (default: no limit; a
   * whole number from 1): a Cloudflare Worker may make 50 subrequests an invocation on the free plan. A round that
   * reaches it sends nothing more, and what it did not check waits for the next round; a listing of the change feed
   * goes on from its next page, so a feed of any fleet fills over rounds, and a wait's final check reads the changes
   * rather than a listing longer than a round. GETs beyond it are taken in turn, round by round.
   */
  maxRoundRequests?: number;
  /** Extra headers sent with every request (e.g. a global request id). */
  headers?: Record<string, string>;
  /** The `User-Agent` sent outside browsers (default `ironic-wait/<version>`). */
  userAgent?: string;
  /**
   * The `fetch` every request goes through, Keystone's included (default: the platform's): a function with its
   * signature, called with a `Request` and no `init`. Use it for a private CA, a proxy, mTLS or a test double (in Node,
   * undici's `fetch` with a `dispatcher`). It must follow the request's `signal`: an abort, a deadline or
   * `requestTimeout` cancel the request through it. What it throws or rejects with is a connection failure of that
   * request (retried as one); it may answer with any `Response`-like object (`status`, `headers.get`, `body`).
   */
  fetch?: (request: Request) => Promise<Response>;
  /** Told of each request once it is answered or has failed; what it throws is ignored. */
  onRequest?: (request: RequestRecord) => void;
}

/** What `onRequest` sees of a request: never a header or a body. */
export interface RequestRecord {
  /** The HTTP method. */
  method: 'GET' | 'PUT' | 'POST';
  /** The URL's path and query, e.g. `/v1/nodes/n1?fields=uuid,provision_state`. */
  path: string;
  /** The HTTP status; null when no answer came (a connection failure, a time limit). */
  status: number | null;
  /** Seconds from the request's start to its answer read whole (or its failure). */
  duration: number;
  /** The answer's `X-OpenStack-Request-Id`, if it has one. */
  requestId: string | null;
}

/**
 * Keystone v3 (`password`, `v3applicationcredential`, `token`: a login, renewed before the token expires and once
 * after a 401; concurrent calls share it), Ironic's `http_basic`, or `none`. Each type takes only its own fields:
 * another is refused. A name needs its domain (`username` + `userDomainName`/`userDomainId`, `projectName` +
 * `projectDomainName`/`projectDomainId`). Secrets go in the login request's body only.
 */
export interface AuthOptions {
  /** Default `'password'`. */
  type?: 'password' | 'v3applicationcredential' | 'token' | 'none' | 'http_basic';
  /** Keystone's v3 URL (`http://keystone:5000/v3`) or its root. Required for the Keystone types. */
  authUrl?: string;
  /** The user's name (`password`; `v3applicationcredential` with a credential's name; `http_basic`), with its domain for Keystone. */
  username?: string;
  /** The user's id, in place of `username` and its domain (it wins if both are given). */
  userId?: string;
  /** The user's password (`password`, `http_basic`). */
  password?: string;
  /** The name of the domain of `username`. */
  userDomainName?: string;
  /** The id of the domain of `username` (it wins over `userDomainName`). */
  userDomainId?: string;
  /**
   * The scope (`password`, `token`): one of a project, a domain, or `systemScope: 'all'`; none = unscoped (a token
   * without a catalog: `endpoint` is then required). This one: the project's name, with its domain.
   */
  projectName?: string;
  /** The project's id, in place of `projectName` and its domain (it wins if both are given). */
  projectId?: string;
  /** The name of the domain of `projectName`. */
  projectDomainName?: string;
  /** The id of the domain of `projectName` (it wins over `projectDomainName`). */
  projectDomainId?: string;
  /** A domain scope, by the domain's name. */
  domainName?: string;
  /** A domain scope, by the domain's id (it wins over `domainName`). */
  domainId?: string;
  /** The system scope: the whole deployment (`"system": {"all": true}`). */
  systemScope?: 'all';
  /**
   * `v3applicationcredential`: the id, or the name with the user; and the secret. The credential's scope is the one it
   * was made with: no scope field is taken with it.
   */
  applicationCredentialId?: string;
  /** The application credential's name, with the user who owns it (`username` and its domain, or `userId`). */
  applicationCredentialName?: string;
  /** The application credential's secret (required with that type). */
  applicationCredentialSecret?: string;
  /** `token`: a Keystone token to exchange for a new (scoped) one. */
  token?: string;
}

/**
 * The provision actions `provision` sends (`PUT /v1/nodes/{id}/states/provision`), with the OpenStack client's names
 * (`deploy`, `undeploy`) as well as Ironic's (`active`, `deleted`); {@link Tables.actions} has each one's target, the
 * state a wait after it waits for, and its interval. `abort` and `unhold` have nothing to wait for: with `wait` they are
 * an {@link InvalidArgumentError}.
 */
export type ProvisionAction =
  | 'manage'
  | 'provide'
  | 'active'
  | 'deploy'
  | 'deleted'
  | 'undeploy'
  | 'rebuild'
  | 'inspect'
  | 'clean'
  | 'adopt'
  | 'rescue'
  | 'unrescue'
  | 'service'
  | 'abort'
  | 'unhold';

/**
 * How a node settled. `error`: its PUT was refused (settle `all`) or its check failed (an HTTP error after
 * retries, an unusable body); `stopped`: unsettled when another node's failure ended a first-failure wait;
 * `accepted`: the action was sent and not waited for.
 */
export type Outcome =
  | 'reached'
  | 'failed'
  | 'unexpected-stable'
  | 'held'
  | 'timed-out'
  | 'aborted'
  | 'not-found'
  | 'error'
  | 'stopped'
  | 'accepted';

/** What every progress event has; see {@link ProgressEvent}. */
interface ProgressFields {
  /** The state seen: the provision state (the power state for power waits, the allocation's state, the conductor holding the lock for `waitForReservation`). */
  state: string | null;
  /** The target state seen (`target_provision_state`, or `target_power_state` for power waits). */
  targetState: string | null;
  /** The `last_error` seen. */
  lastError: string | null;
  /** Seconds since the wait began. */
  elapsed: number;
}

/**
 * An observed state change (`done: false`) or a settled target (`done: true`, with its `outcome`), of a node (`node`:
 * as the caller named it) or, for allocation waits, of an allocation (`allocation`).
 */
export type ProgressEvent = (
  | {
      /** The node, as the caller named it. */
      node: string;
      /** Absent: the event is a node's. */
      allocation?: never;
    }
  | {
      /** The allocation, as the caller named it. */
      allocation: string;
      /** Absent: the event is an allocation's. */
      node?: never;
    }
) &
  ProgressFields &
  (
    | {
        /** `false`: a state change seen, the target still unsettled. */
        done: false;
        /** `null` until the target settles. */
        outcome: null;
      }
    | {
        /** `true`: the target settled; no more events for it. */
        done: true;
        /** How it settled. */
        outcome: Outcome;
      }
  );

/**
 * How a wait runs: its time limit, how often and how it checks, what ends it, and what it tells along the way.
 * `waitForProvisionState` takes them as they are, `provision` with its action's ({@link ProvisionOptions}); the power
 * and lock waits take a part of them ({@link NodeFieldWaitTuning}), as do the allocation waits
 * ({@link AllocationWaitOptions}).
 */
export interface WaitTuning {
  /**
   * The wait's time limit in seconds: a positive number, at most `tables().limits.maxSeconds` (about 24.8 days).
   * Omitted: no limit, as python-ironicclient. The last check happens at the deadline and covers every node still
   * waiting (every page of a list); nothing else starts after it. `0`, a negative or a non-finite value is refused.
   */
  timeout?: number;
  /**
   * Seconds between rounds of checks (default: the action's interval, 2 or 10; 2 for direct waits), or `'auto'`:
   * rounds as often as `budget` allows (never more often than every 250 ms), so a round of the change feed that
   * costs one request is followed sooner; slower after a 429 or 503 and never sooner than its `Retry-After`.
   */
  pollInterval?: number | 'auto';
  /**
   * With `pollInterval: 'auto'`: requests a minute, on average. Default: what a poller at the fixed interval spends
   * for the same nodes (a full listing of the scope, or a GET per node, every round).
   */
  budget?: number;
  /**
   * `'first-failure'` (default, python-ironicclient) rejects on the first failure; `'all'` resolves with every
   * node's outcome (for `provision`, a refused PUT too: the others are still sent and waited for).
   */
  settle?: 'first-failure' | 'all';
  /** End a node in `deploy hold`/`clean hold`/`service hold` with outcome `held` instead of waiting through it. */
  holdIsTerminal?: boolean;
  /** Fail a node resting in a stable state other than the expected one (default true). */
  failOnUnexpectedState?: boolean;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /**
   * From this many unfinished nodes on, one paginated list per round replaces per-node GETs (default 10); after a
   * list, rounds keep listing while it takes fewer requests than the unfinished nodes.
   */
  listThreshold?: number;
  /**
   * How those lists are made (default `changes`): `changes` lists the fleet in full once, then each round asks only
   * for the nodes whose provision state changed since (`sort_key=provision_updated_at&sort_dir=desc`), so a quiet round
   * is one request whatever the fleet's size; it lists in full again every minute per page of the fleet, at a final
   * check, and wherever the server cannot sort by `provision_updated_at`. `list` lists in full every round.
   */
  listMode?: 'changes' | 'list';
  /**
   * The part of the fleet those lists ask for, as Ironic's own list filters (each needs the microversion that
   * brought it: provisionState 1.9, resourceClass 1.21, fault 1.42, conductorGroup 1.46, owner 1.50, lessee 1.65,
   * shard 1.82). A waited node outside it is checked by a GET of its own each round.
   */
  scope?: Scope;
  /**
   * Aborts the wait: the in-flight fetch is cancelled and nothing more is sent; each unsettled node gets a last
   * progress event with outcome `aborted`, then the promise rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /** Called on each observed state change and each settled node; what it throws (or its promise rejects with) is ignored. */
  onProgress?: (event: ProgressEvent) => void;
  /**
   * Called with the wait's checkpoint (JSON text) after the PUTs are sent and after each round in which something
   * changed: keep the last one to `resume` or `step` from in another process. It holds no credential; a request body
   * not yet sent (a rescue password) is in it until sent. What the callback throws is ignored.
   */
  onCheckpoint?: (checkpoint: Checkpoint) => void;
  /**
   * After the wait, each node that failed gets `history` in its report entry: its last 5 node history events,
   * oldest first (`GET /v1/nodes/{id}/history`, API 1.78; one request per failed node, made even when the wait ended
   * at its deadline). Where there are none to give, `historyError` says why.
   */
  diagnose?: boolean;
}

export interface ProvisionOptions extends WaitTuning {
  /** `true`: after the PUTs, wait for the action's expected state (within `timeout`, if given). Absent or `false`: send only. */
  wait?: boolean;
  /** deploy/rebuild: a config drive (gzip+base64 ISO text, a URL, or an object). */
  configDrive?: string | object;
  /** clean: the steps (exactly one of cleanSteps and runbook). */
  cleanSteps?: object[];
  /** deploy/rebuild: deploy steps. */
  deploySteps?: object[];
  /** service: the steps (exactly one of serviceSteps and runbook). */
  serviceSteps?: object[];
  /** clean/service: a runbook name or UUID. */
  runbook?: string;
  /** rescue: the password for the rescue ramdisk (required; never logged or reported). */
  rescuePassword?: string;
  /** clean/service: do not boot the ramdisk. */
  disableRamdisk?: boolean;
}

/** The options of `waitForProvisionState`: those of every wait ({@link WaitTuning}). */
export type WaitOptions = WaitTuning;

/** `setPowerState`'s actions (openstacksdk's names; Ironic's `rebooting` and `soft rebooting` are taken too). */
export type PowerAction = 'power on' | 'power off' | 'reboot' | 'soft power off' | 'soft reboot';

/** The options of the power and lock waits: those of every wait but the provision-state rules and `listMode`. */
export type NodeFieldWaitTuning = Omit<WaitTuning, 'holdIsTerminal' | 'failOnUnexpectedState' | 'listMode'>;

/** The options of `setPowerState`: whether to wait, Ironic's own time limit, and those of the power waits. */
export interface PowerOptions extends NodeFieldWaitTuning {
  /** `true`: after the PUTs, wait until each power action is over (within `timeout`, if given). Absent or `false`: send only. */
  wait?: boolean;
  /** Ironic's own time limit for the action, whole seconds (`timeout` in the request; API 1.27). */
  powerTimeout?: number;
}

/** One event of a node's history, as Ironic gives it (API 1.78; later versions add fields). */
export interface NodeHistoryEvent {
  /** The event's UUID. */
  uuid: string;
  /** When it happened (ISO 8601, as Ironic writes it). */
  created_at: string;
  /** The event's level, as Ironic records it (`INFO`, `ERROR`, ...). */
  severity: string;
  /** What kind of event, as Ironic names it (such as `deploying` or `cleaning`). */
  event_type: string;
  /** The event's text: for a failure, the error. */
  event: string;
  /** The conductor that recorded it, where Ironic says. */
  conductor?: string | null;
  /** The user whose request it followed, where Ironic says. */
  user?: string | null;
  [field: string]: unknown;
}

/** One node's entry in a {@link WaitReport}: how it settled, what was last seen of it, and when. */
export interface NodeReport {
  /** The node, as the caller named it. */
  node: string;
  /** How it settled. */
  outcome: Outcome;
  /**
   * For outcomes `failed` and `unexpected-stable` (a `StateTransitionFailed`, in python-ironicclient's words), `error`
   * and `not-found` (an IronicHttpError, say, with its request id): what went wrong.
   */
  error?: IronicWaitError;
  /** The state its last check showed (null when none did): as {@link ProgressEvent}'s `state`. */
  state: string | null;
  /** The target state its last check showed. */
  targetState: string | null;
  /** The `last_error` its last check showed. */
  lastError: string | null;
  /** Checks of this node that got an answer (0 for a node settled unchecked: a refused PUT, an action not waited for). */
  polls: number;
  /** Seconds from the start of the wait until this node settled. */
  elapsed: number;
  /** With `diagnose`, a failed node's last history events, oldest first. */
  history?: NodeHistoryEvent[];
  /** With `diagnose`, why a failed node has no `history` (an older Ironic, a failed request). */
  historyError?: string;
}

/** What a node wait resolves with (and a state-transition error carries): one entry per node, and the call's totals. */
export interface WaitReport {
  /** True when every node reached the expected state (without `wait`: when every PUT was accepted). */
  ok: boolean;
  /** Each node's entry, in the caller's order. */
  nodes: NodeReport[];
  /** Requests sent by this call, retries included. */
  requests: number;
  /** Of those, the retries (of a 409, a 503 or a connection failure). */
  retries: number;
  /** Seconds from the start of the wait to its end. */
  elapsed: number;
}

/** What an allocation wait resolves with (and a state-transition error of one carries). */
export interface AllocationReport {
  /** True when the allocation became active. */
  ok: boolean;
  /** The allocation's entry. */
  allocation: {
    /** The allocation, as the caller named it (its UUID, for `createAllocation`). */
    allocation: string;
    /** How it settled. */
    outcome: Outcome;
    /** Its `state` when last checked (`allocating`, `active`, `error`). */
    state: string | null;
    /** Its `last_error` when last checked. */
    lastError: string | null;
    /** Checks of it that got an answer. */
    polls: number;
    /** Seconds from the start of the wait until it settled. */
    elapsed: number;
    /** The allocation as Ironic last sent it. */
    body: Allocation | null;
    /** For outcomes `error` and `not-found`: what went wrong. */
    error?: IronicWaitError;
  };
  /** Requests sent by this call, retries included. */
  requests: number;
  /** Of those, the retries. */
  retries: number;
  /** Seconds from the start of the wait to its end. */
  elapsed: number;
}

/** The options of `waitForAllocation`: an allocation wait has no provision-state rules, lists or concurrency. */
export type AllocationWaitOptions = Pick<WaitTuning, 'timeout' | 'pollInterval' | 'budget' | 'signal' | 'onProgress' | 'onCheckpoint'>;

/** The options of `createAllocation`. */
export interface CreateAllocationOptions extends AllocationWaitOptions {
  /** `true`: wait until the allocation is active (within `timeout`, if given). Absent or `false`: create only. */
  wait?: boolean;
}

/**
 * The fields of the allocation `createAllocation` makes (`POST /v1/allocations`, under Ironic's names); a field set to
 * `null` is left out, any other name is refused. `resourceClass` is required unless `node` is given.
 */
export interface AllocationFields {
  /** The resource class the node must have (`resource_class`). */
  resourceClass?: string;
  /** Traits the node must have. */
  traits?: string[];
  /** The nodes it may pick from, by name or UUID (`candidate_nodes`). */
  candidateNodes?: string[];
  /** The allocation's name. */
  name?: string;
  /** The allocation's UUID (Ironic makes one if absent). */
  uuid?: string;
  /** The node to allocate, by name or UUID (a backfill of a node in use). */
  node?: string;
  /** The project owning the allocation. */
  owner?: string;
  /** Free-form data kept with it. */
  extra?: Record<string, unknown>;
}

/** `createAllocation`'s answer: the allocation as created, and with `wait` its report. */
export interface CreatedAllocation {
  /** The allocation as Ironic answered the POST (still `allocating`, as a rule). */
  allocation: Allocation;
  /** With `wait`, the wait's report; null without. */
  report: AllocationReport | null;
}

/** The waits a checkpoint can be made of, and what each call settles with. */
export interface WaitResults {
  /** `provision` settles with a node report. */
  provision: WaitReport;
  /** `waitForProvisionState` settles with a node report. */
  waitForProvisionState: WaitReport;
  /** `setPowerState` settles with a node report. */
  setPowerState: WaitReport;
  /** `waitForPowerState` settles with a node report. */
  waitForPowerState: WaitReport;
  /** `waitForReservation` settles with a node report. */
  waitForReservation: WaitReport;
  /** `createAllocation` settles with the allocation and, with `wait`, its report. */
  createAllocation: CreatedAllocation;
  /** `waitForAllocation` settles with an allocation report. */
  waitForAllocation: AllocationReport;
}
/** The name of a method of {@link IronicClient} a checkpoint can be made of (`checkpoint`, `resume`, `step`). */
export type WaitMethod = keyof WaitResults;

/**
 * A checkpoint's text (JSON), typed by the method of the call it is of, so that `resume` and `step` answer what that
 * call would. Any string read back from storage is taken too (its method is then not known to the types).
 */
export type Checkpoint<M extends WaitMethod = WaitMethod> = string & {
  /** Never there: the method, for the types only. */
  readonly __method?: M;
};

/**
 * One step's answer: a checkpoint to go on from at `wakeAtMs`, or (both null) the end with the call's answer in
 * `report` and, if it failed, its error.
 */
export type StepResult<M extends WaitMethod = WaitMethod> =
  | {
      /** The checkpoint to call `step` with next. */
      checkpoint: Checkpoint<M>;
      /** When to: milliseconds since the epoch. */
      wakeAtMs: number;
      /** Null: the call goes on. */
      report: null;
      /** Null: the call goes on. */
      error: null;
      /** With `retryOutages`: the outage this step's round was lost to (`checkpoint` is the one it began from). */
      outage?: IronicWaitError;
      /**
       * False when `checkpoint` is the one the step was given (a step with a `key` whose round moved nothing but the
       * wait's counts): there is nothing new to store.
       */
      changed: boolean;
    }
  | {
      /** Null: the call is over. */
      checkpoint: null;
      /** Null: the call is over. */
      wakeAtMs: null;
      /** The call's answer, as the method would have resolved with it; when it failed, its wait's report if it had one, else null. */
      report: WaitResults[M] | null;
      /** The error the method would have rejected with (carrying the report too), or null when it succeeded. */
      error: IronicWaitError | null;
    };

/** The option every call takes. */
export interface CallOptions {
  /** Aborts the call: its requests in flight are cancelled, nothing more is sent, and it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * One change of `watch()`: a node `added` to the scope or `modified` (with the fields listed: uuid, name,
 * provision_state, target_provision_state, last_error, provision_updated_at and `fields`), or `removed` (deleted or
 * gone from the scope; `node` is null).
 */
export type NodeChange =
  | {
      /** `added`: new to the scope (or listed at the start); `modified`: changed. */
      type: 'added' | 'modified';
      /** The node's UUID. */
      uuid: string;
      /** The node as last listed. */
      node: Node;
    }
  | {
      /** Deleted, or gone from the scope. */
      type: 'removed';
      /** The node's UUID. */
      uuid: string;
      /** Null: the node is gone. */
      node: null;
    };

/**
 * What a watch with `retryOutages` says of its own rounds: `outage`, a round lost to an outage (a connection failure, a
 * 409, 429 or 5xx, or an answer that cannot be used, still failing after the retries), taken again 2 s later, doubling
 * to 5 minutes while it lasts; `restored`, the rounds go through again.
 */
export type WatchHealth =
  | {
      /** A round was lost to an outage. */
      type: 'outage';
      /** The error the round failed with. */
      error: IronicWaitError;
    }
  | {
      /** The rounds go through again after an outage. */
      type: 'restored';
    };

/**
 * A node as Ironic gives it: the fields asked for (all of them without `fields`), those of ironic-wait's decisions
 * typed; any other as `unknown`.
 */
export interface Node {
  /** The node's UUID. */
  uuid?: string;
  /** Its unique name, if it has one. */
  name?: string | null;
  /** Its provision state (`available`, `deploying`, `active`, `deploy failed`, ...). */
  provision_state?: string;
  /** The state its current transition heads for; null when it rests. */
  target_provision_state?: string | null;
  /** When its provision state last changed: the change feed's sort key. */
  provision_updated_at?: string | null;
  /** `power on`, `power off`, or null while unknown. */
  power_state?: string | null;
  /** The power state a power action under way ends in; null when none is. */
  target_power_state?: string | null;
  /** Whether it is in maintenance. */
  maintenance?: boolean;
  /** Why it is in maintenance. */
  maintenance_reason?: string | null;
  /** Why Ironic put it in maintenance (`power failure`, `clean failure`, ...). */
  fault?: string | null;
  /** The last failure's text. */
  last_error?: string | null;
  /** The conductor holding its lock, or null. */
  reservation?: string | null;
  /** Its hardware type (`ipmi`, `redfish`, ...). */
  driver?: string;
  /** Its resource class. */
  resource_class?: string | null;
  /** Its conductor group (`''` for the default one). */
  conductor_group?: string;
  /** The conductor managing it. */
  conductor?: string | null;
  /** The project owning it. */
  owner?: string | null;
  /** The project it is lent to. */
  lessee?: string | null;
  /** Its shard. */
  shard?: string | null;
  /** The instance deployed on it. */
  instance_uuid?: string | null;
  /** When it was enrolled. */
  created_at?: string;
  /** When it last changed. */
  updated_at?: string | null;
  /** Any other field Ironic gives. */
  [field: string]: unknown;
}

/** An allocation as Ironic gives it. */
export interface Allocation {
  /** The allocation's UUID. */
  uuid: string;
  /** Its name, if it has one. */
  name: string | null;
  /** `allocating`, `active` or `error`. */
  state: string;
  /** Why it failed (state `error`). */
  last_error: string | null;
  /** The resource class asked for. */
  resource_class: string | null;
  /** The traits asked for. */
  traits: string[];
  /** The nodes it may pick from (when empty, any node that matches). */
  candidate_nodes: string[];
  /** The node it picked, once active. */
  node_uuid: string | null;
  /** The project owning it. */
  owner?: string | null;
  /** Free-form data kept with it. */
  extra: Record<string, unknown>;
  /** When it was made. */
  created_at?: string;
  /** When it last changed. */
  updated_at?: string | null;
  /** Any other field Ironic gives. */
  [field: string]: unknown;
}

/** The options of `watch`: which nodes, which of their fields, and how often. */
export interface WatchOptions {
  /** Ironic's list filters, each checked against the server's microversion. */
  scope?: Scope;
  /** 'changes' (default): one request a quiet round, by `provision_updated_at`; 'list': the scope in full each round. */
  listMode?: 'changes' | 'list';
  /**
   * Node fields watched beyond the provision state's (`power_state`, `maintenance`, ...): the scope is then listed in
   * full each round, or every `fieldsInterval`.
   */
  fields?: string[];
  /**
   * With `fields`: those are listed in full every this many seconds, while the provision state follows the change feed
   * every `pollInterval`; each change has the node with the newest of both (the provision fields of the listing with
   * the later `provision_updated_at`). `'auto'`: every round while the scope has at most 2,000 nodes, then a round
   * every 0.6 s per 1,000 nodes (10 s to 2 minutes).
   */
  fieldsInterval?: number | 'auto';
  /** Seconds between rounds (2). */
  pollInterval?: number;
  /** Yield every node of the scope at the start (true). */
  initial?: boolean;
  /** A round lost to an outage is taken again later, and said as a {@link WatchHealth}, rather than ending the watch. */
  retryOutages?: boolean;
  /** Ends the watch: the `next()` under way rejects with the signal's reason, and nothing more is sent. */
  signal?: AbortSignal;
}

/**
 * A client of one Ironic endpoint. Its calls share one token (or login), one negotiated API version and one poll loop,
 * so that waits, watches and listings of the same nodes at once share their requests. Every method but `checkpoint` and
 * `watch` returns a promise; each call's arguments and options are read when it is made.
 */
export class IronicClient {
  /**
   * A client of one Ironic endpoint (one poll loop and one token for all its calls).
   * @param options Where Ironic is, how to authenticate, and how requests are sent; options it refuses throw an
   *   {@link InvalidArgumentError} here.
   * @example
   * ```js
   * const client = new IronicClient({ endpoint: 'http://127.0.0.1:6385' });
   * console.log(await client.microversion());
   * ```
   */
  constructor(options: IronicClientOptions);
  /**
   * Sends the action to each node (one PUT each, in order) and, with `wait`, waits for the action's expected state.
   * @param nodes The nodes, by name or UUID: one, or a list (their PUTs are sent in this order).
   * @param action The provision action (a row of {@link Tables.actions}).
   * @param options `wait` and the wait's options, and the action's own data (steps, config drive, rescue password).
   * @example
   * ```js
   * const report = await client.provision(['node-1', 'node-2'], 'deploy', { wait: true, timeout: 1800 });
   * for (const n of report.nodes) console.log(`${n.node}: ${n.outcome} in ${n.elapsed} s`);
   * ```
   */
  provision(nodes: string | string[], action: ProvisionAction, options?: ProvisionOptions): Promise<WaitReport>;
  /**
   * Waits until every node is in `expectedState` (lower-cased), fails, or time runs out.
   * @param nodes The nodes, by name or UUID: one, or a list.
   * @param expectedState The provision state to wait for (`active`, `available`, `manageable`, ...).
   * @param options How the wait runs.
   * @example
   * ```js
   * await client.provision('node-1', 'manage');
   * const report = await client.waitForProvisionState('node-1', 'manageable', { timeout: 600 });
   * console.log(report.ok);
   * ```
   */
  waitForProvisionState(nodes: string | string[], expectedState: string, options?: WaitOptions): Promise<WaitReport>;
  /**
   * Sends the power action to each node (`PUT /v1/nodes/{id}/states/power`) and, with `wait`, waits until it is
   * over: `target_power_state` cleared with the node in the power state the action ends in (`power on` for
   * the reboots) is `reached`; cleared short of it with a `last_error` is `failed`. Report entries' `state` is the
   * power state, `targetState` the target power state.
   * @param nodes The nodes, by name or UUID: one, or a list.
   * @param action The power action.
   * @param options `wait`, Ironic's own `powerTimeout`, and the wait's options.
   * @example
   * ```js
   * await client.setPowerState(['node-1', 'node-2'], 'power on', { wait: true, timeout: 300 });
   * ```
   */
  setPowerState(nodes: string | string[], action: PowerAction, options?: PowerOptions): Promise<WaitReport>;
  /**
   * Waits until every node is in `state` with no power action under way, a power action fails, or time runs out.
   * @param nodes The nodes, by name or UUID: one, or a list.
   * @param state The power state to wait for.
   * @param options How the wait runs.
   * @example
   * ```js
   * const report = await client.waitForPowerState('node-1', 'power off', { timeout: 60 });
   * console.log(report.nodes[0].state);
   * ```
   */
  waitForPowerState(nodes: string | string[], state: 'power on' | 'power off', options?: NodeFieldWaitTuning): Promise<WaitReport>;
  /**
   * Waits until no conductor holds each node's lock (`reservation` null); nothing fails. Report entries' `state` is
   * the conductor holding it when last seen (null once released).
   * @param nodes The nodes, by name or UUID: one, or a list.
   * @param options How the wait runs.
   * @example
   * ```js
   * await client.waitForReservation(['node-1', 'node-2'], { timeout: 120 });
   * ```
   */
  waitForReservation(nodes: string | string[], options?: Omit<NodeFieldWaitTuning, 'diagnose'>): Promise<WaitReport>;
  /**
   * A node's history (API 1.78): its events as Ironic lists them, oldest first (one page: Ironic keeps 300 a node by default).
   * @param node The node, by name or UUID.
   * @param options `signal`, to abort the call.
   * @example
   * ```js
   * for (const e of await client.getNodeHistory('node-1')) console.log(e.created_at, e.severity, e.event);
   * ```
   */
  getNodeHistory(node: string, options?: CallOptions): Promise<NodeHistoryEvent[]>;
  /**
   * Creates an allocation and, with `wait`, waits until it is active.
   * @param fields The allocation's fields.
   * @param options `wait` and the wait's options.
   * @example
   * ```js
   * const { allocation, report } = await client.createAllocation(
   *   { resourceClass: 'gold', name: 'web-3' },
   *   { wait: true, timeout: 120 },
   * );
   * console.log(allocation.uuid, report?.allocation.body?.node_uuid);
   * ```
   */
  createAllocation(fields: AllocationFields, options?: CreateAllocationOptions): Promise<CreatedAllocation>;
  /**
   * Waits until the allocation is active (every second by default).
   * @param id The allocation, by name or UUID.
   * @param options How the wait runs.
   * @example
   * ```js
   * const { allocation } = await client.createAllocation({ resourceClass: 'gold' });
   * const report = await client.waitForAllocation(allocation.uuid, { timeout: 120 });
   * console.log(report.allocation.state, report.allocation.body?.node_uuid);
   * ```
   */
  waitForAllocation(id: string, options?: AllocationWaitOptions): Promise<AllocationReport>;
  /**
   * One node; `fields` limits what is returned (API 1.8+).
   * @param id The node, by name or UUID.
   * @param options `fields`: the fields to return (API 1.8+), all of them without it; `signal`.
   * @example
   * ```js
   * const node = await client.getNode('node-1', { fields: ['uuid', 'provision_state', 'power_state'] });
   * console.log(node.provision_state, node.power_state);
   * ```
   */
  getNode(id: string, options?: CallOptions & { fields?: string[] }): Promise<Node>;
  /**
   * The nodes of a scope, once at the start (unless `initial: false`), then each change of them, in the manner of
   * `kubectl get -w`, on the client's one poll loop (shared with its waits). A consumer slower than the changes gets
   * the latest state of each node changed since its last item, never a growing queue. It starts at the first
   * `next()`. `return()` (or a `break` out of `for await`) ends it at once, even while a `next()` waits; `signal`
   * aborting makes the `next()` under way reject with its reason; a listing that fails (after the retries) rejects it
   * with its error, unless `retryOutages` takes an outage's round again later. Nothing is sent after the end.
   * @param options Which nodes and fields, and how often; with `retryOutages: true` the changes come with
   *   {@link WatchHealth} items.
   * @example
   * ```js
   * for await (const change of client.watch({ scope: { resourceClass: 'gold' } })) {
   *   console.log(change.type, change.uuid, change.node?.provision_state);
   *   if (change.type === 'added') break; // ends the watch: nothing more is sent
   * }
   * ```
   */
  watch(options: WatchOptions & { retryOutages: true }): AsyncIterableIterator<NodeChange | WatchHealth>;
  watch(options?: WatchOptions): AsyncIterableIterator<NodeChange>;
  /**
   * Nodes: every page (pages of 1000), read on the client's one poll loop, so that lists of one scope at once (and a
   * watcher's or a wait's listing of it) share the same requests; or, with `limit`, one page of that many, on its own.
   * `fields` (API 1.8+) limits what each node has, as Ironic lists it; without it, every field (`/v1/nodes/detail`).
   * @param options `scope`: the nodes to list; `fields`: the fields each has; `limit`: one page of that many (a whole
   *   number from 1) rather than every page; `signal`.
   * @example
   * ```js
   * const available = await client.listNodes({ scope: { provisionState: 'available' }, fields: ['uuid', 'name'] });
   * console.log(available.map((n) => n.name));
   * ```
   */
  listNodes(options?: CallOptions & { fields?: string[]; limit?: number; scope?: Scope }): Promise<Node[]>;
  /**
   * The checkpoint of a wait, made without sending anything: `method` and its arguments as that method takes them.
   * `resume` or `step` it to run the call.
   * @param method The method of the call; the arguments after it are that method's, as it takes them.
   * @example
   * ```js
   * const text = client.checkpoint('provision', ['node-1'], 'deploy', { wait: true, timeout: 1800 });
   * // Store `text`; any process of a client of this endpoint can run the call from it.
   * const report = await client.resume(text);
   * console.log(report.ok);
   * ```
   */
  checkpoint(method: 'provision', nodes: string | string[], action: ProvisionAction, options?: ProvisionOptions): Checkpoint<'provision'>;
  checkpoint(
    method: 'waitForProvisionState',
    nodes: string | string[],
    expectedState: string,
    options?: WaitOptions,
  ): Checkpoint<'waitForProvisionState'>;
  checkpoint(method: 'setPowerState', nodes: string | string[], action: PowerAction, options?: PowerOptions): Checkpoint<'setPowerState'>;
  checkpoint(
    method: 'waitForPowerState',
    nodes: string | string[],
    state: 'power on' | 'power off',
    options?: NodeFieldWaitTuning,
  ): Checkpoint<'waitForPowerState'>;
  checkpoint(
    method: 'waitForReservation',
    nodes: string | string[],
    options?: Omit<NodeFieldWaitTuning, 'diagnose'>,
  ): Checkpoint<'waitForReservation'>;
  checkpoint(method: 'createAllocation', fields: AllocationFields, options?: CreateAllocationOptions): Checkpoint<'createAllocation'>;
  checkpoint(method: 'waitForAllocation', id: string, options?: AllocationWaitOptions): Checkpoint<'waitForAllocation'>;
  /**
   * Goes on with the call a checkpoint was made of (in this process or another, of this client's endpoint) and
   * settles as that call would have: the same report or error, no PUT sent twice, its deadline kept (one last check
   * if it is past). A checkpoint that is not one, of another endpoint, tampered with or of a later format is an
   * InvalidArgumentError, nothing sent.
   * @param checkpoint A checkpoint's text, as `checkpoint`, `onCheckpoint` or `step` gave it.
   * @param options `onProgress` and `onCheckpoint`, as the call's own would be; `signal`.
   * @example
   * ```js
   * let saved = client.checkpoint('provision', ['node-1'], 'deploy', { wait: true });
   * await client.resume(saved, { onCheckpoint: (text) => (saved = text) }); // store each
   * // After a crash or a restart, from the last checkpoint stored:
   * const report = await client.resume(saved);
   * console.log(report.nodes[0].outcome);
   * ```
   */
  resume<M extends WaitMethod>(
    checkpoint: Checkpoint<M>,
    options?: CallOptions & { onProgress?: (event: ProgressEvent) => void; onCheckpoint?: (checkpoint: Checkpoint<M>) => void },
  ): Promise<WaitResults[M]>;
  /**
   * One step of the call a checkpoint was made of: the PUTs still due, or one round of checks. Call again with
   * `checkpoint` at `wakeAtMs` (ms since the epoch), in any process; at the end both are null and `report` is the
   * call's answer, with `error` when it failed (not thrown, so that a loop can keep it). `onProgress` gets the events
   * of the step's round.
   * @param checkpoint A checkpoint's text, as `checkpoint`, `onCheckpoint` or an earlier step gave it.
   * @param options `onProgress` for the events of the step's round, `retryOutages`, `key`, `signal`.
   * @example
   * ```js
   * let checkpoint = client.checkpoint('waitForProvisionState', ['node-1'], 'available', { timeout: 600 });
   * for (;;) {
   *   const result = await client.step(checkpoint);
   *   if (result.checkpoint === null) {
   *     console.log(result.report?.ok, result.error?.message);
   *     break;
   *   }
   *   checkpoint = result.checkpoint; // store it; call again at result.wakeAtMs, in any process
   *   await new Promise((resolve) => setTimeout(resolve, Math.max(0, result.wakeAtMs - Date.now())));
   * }
   * ```
   */
  step<M extends WaitMethod>(
    checkpoint: Checkpoint<M>,
    options?: CallOptions & {
      onProgress?: (event: ProgressEvent) => void;
      /**
       * A round lost to an outage (a connection failure, a 409, 429 or 5xx, or an answer that cannot be used, still
       * failing after the retries) before the deadline does not end the call: the step answers the checkpoint it began
       * from, due later and later (2 s doubling to 5 minutes), with the error in `outage`. For hosts whose waits
       * outlive an Ironic restart.
       */
      retryOutages?: boolean;
      /**
       * The caller's name for the wait (at most 256 bytes), for a caller that steps many waits on one client: the
       * client keeps the wait's state in memory between its steps, so that a step given the checkpoint the last step
       * of `key` answered goes on without reading it, and answers `changed: false` with that same checkpoint when
       * only the wait's counts moved (the stored one is still a checkpoint to go on from, in any process: it ends
       * the wait the same way, its report counting polls and requests from there). A step given another checkpoint
       * reads it, as without a key. The state goes when the call ends, or with `forget(key)`.
       */
      key?: string;
    },
  ): Promise<StepResult<M>>;
  /**
   * Drops the state kept in memory for the steps of `key` (see `step`'s `key`): for a wait given up between steps.
   * @param key The wait's name, as given to `step`.
   * @example
   * ```js
   * const checkpoint = client.checkpoint('waitForProvisionState', ['node-1'], 'available', { timeout: 600 });
   * const result = await client.step(checkpoint, { key: 'wait-1' });
   * console.log(result.checkpoint === null ? "over" : `changed: ${result.changed}`);
   * client.forget('wait-1'); // given up: nothing of it is kept
   * ```
   */
  forget(key: string): void;
  /**
   * The API microversion in use, negotiated first if needed.
   * @param options `signal`, to abort the call.
   * @example
   * ```js
   * console.log(await client.microversion()); // e.g. '1.115', negotiated once per client
   * ```
   */
  microversion(options?: CallOptions): Promise<string>;
  /**
   * The endpoint in use and a current token, for requests of the caller's own (a proxy): logs in or asks `getToken()`
   * when there is no token, it is due for renewal, or it is `refused` (the token a 401 answered) and still current.
   * @param options `refused`: a token a request of the caller's own got a 401 for (renewed if it is still the
   *   current one); `signal`.
   * @returns `endpoint`: Ironic's endpoint, the one given or the one Keystone's catalog gave; `token`: the token to
   *   send as `X-Auth-Token`, null without one (no auth, or HTTP Basic); `expiresAt`: when a Keystone token expires,
   *   as Keystone wrote it, null for a token not from a login.
   * @example
   * ```js
   * const { endpoint, token } = await client.authenticate();
   * console.log(endpoint, token === null ? 'no token (noauth)' : 'a token');
   * ```
   */
  authenticate(options?: CallOptions & { refused?: string }): Promise<{
    /** Ironic's endpoint: the one given, or the one Keystone's catalog gave. */
    endpoint: string;
    /** The token to send as `X-Auth-Token`; null without one (no auth, or HTTP Basic). */
    token: string | null;
    /** When a Keystone token expires, as Keystone wrote it; null for a token not from a login. */
    expiresAt: string | null;
  }>;
}

/**
 * The base class of every error the package raises itself (an abort rejects with the signal's own reason instead).
 * @example
 * ```js
 * try {
 *   await client.getNode('no-such-node');
 * } catch (e) {
 *   if (!(e instanceof IronicWaitError)) throw e;
 *   console.log(e.name, e.message);
 * }
 * ```
 */
export class IronicWaitError extends Error {}
/**
 * A caller's argument is wrong; nothing was sent.
 * @example
 * ```js
 * const e = await client.provision('node-1', 'deploy', { wait: true, timeout: 0 }).catch((e) => e);
 * console.log(e instanceof InvalidArgumentError, e.message); // Option timeout must be a positive number of seconds ...
 * ```
 */
export class InvalidArgumentError extends IronicWaitError {}
/**
 * Ironic's answer cannot be used (not JSON, a node without `provision_state`, larger than `maxResponseBytes`, ...).
 * @example
 * ```js
 * const small = new IronicClient({ endpoint: 'http://127.0.0.1:6385', maxResponseBytes: 1024 });
 * const e = await small.listNodes().catch((e) => e);
 * console.log(e instanceof InvalidResponseError, e.message);
 * ```
 */
export class InvalidResponseError extends IronicWaitError {
  /** The node or allocation whose body was unusable, where known. */
  target?: string;
  /** The field of that body that was missing or of the wrong type, where known. */
  field?: string;
}
/**
 * Ironic answered with an HTTP error, after the retries.
 * @example
 * ```js
 * const e = await client.getNode('no-such-node').catch((e) => e);
 * if (e instanceof IronicHttpError) console.log(e.status, e.requestId, e.detail); // 404 req-... Node no-such-node could not be found.
 * ```
 */
export class IronicHttpError extends IronicWaitError {
  /** The HTTP status (3xx for a redirect, which is never followed; 0 for one in a browser, which hides it). */
  status: number;
  /** The answer's `X-OpenStack-Request-Id`, for Ironic's logs; null without one. */
  requestId: string | null;
  /** Ironic's own message (`faultstring`). */
  detail: string;
}
/**
 * Ironic (or Keystone) could not be reached, after the retries; `cause` is what the runtime's `fetch` threw last.
 * @example
 * ```js
 * const down = new IronicClient({ endpoint: 'http://127.0.0.1:9', maxRetries: 1, retryInterval: 0 });
 * const e = await down.getNode('node-1').catch((e) => e);
 * if (e instanceof ConnectionError) console.log(e.message, e.cause);
 * ```
 */
export class ConnectionError extends IronicWaitError {
  /** What the runtime's `fetch` threw last (in Node, a `TypeError` whose own `cause` is the socket's error). */
  cause?: unknown;
}
/**
 * No credentials: Keystone refused them (`status`, `requestId`: its answer's), no Ironic in its catalog, `getToken()`
 * failed (`cause`: what it threw or rejected with).
 * @example
 * ```js
 * const sealed = new IronicClient({
 *   endpoint: 'http://127.0.0.1:6385',
 *   getToken: async () => {
 *     throw new Error('the vault is sealed');
 *   },
 * });
 * const e = await sealed.getNode('node-1').catch((e) => e);
 * if (e instanceof AuthError) console.log(e.message, e.cause); // Authentication failed: getToken() failed: the vault is sealed
 * ```
 */
export class AuthError extends IronicWaitError {
  /** What `getToken()` (or the login's `fetch`) threw or rejected with. */
  cause?: unknown;
  /** The HTTP status of Keystone's refusal. */
  status?: number;
  /** The `X-OpenStack-Request-Id` of Keystone's refusal. */
  requestId?: string | null;
}
/**
 * The server speaks no API microversion the call needs (or the client can use); nothing was sent for it.
 * @example
 * ```js
 * const old = new IronicClient({ endpoint: 'http://127.0.0.1:6385', microversion: '1.50' });
 * const e = await old.getNodeHistory('node-1').catch((e) => e); // node history needs API 1.78
 * console.log(e instanceof UnsupportedVersionError, e.message);
 * ```
 */
export class UnsupportedVersionError extends IronicWaitError {}
/**
 * A node reached a failure state (`error`, `* failed`) or rests in a stable state other than the expected one; an
 * allocation failed. Its message is python-ironicclient's.
 * @example
 * ```js
 * try {
 *   await client.provision('bad-1', 'deploy', { wait: true, timeout: 600 });
 * } catch (e) {
 *   if (!(e instanceof StateTransitionFailed)) throw e;
 *   console.log(e.node, e.state, e.lastError); // bad-1 deploy failed No deploy steps returned by the driver
 * }
 * ```
 */
export class StateTransitionFailed extends IronicWaitError {
  /** The node that failed, as the caller named it (a node wait). */
  node?: string;
  /** The allocation that failed (an allocation wait). */
  allocation?: string;
  /** The state waited for (lower-cased). */
  expected: string;
  /** The state it is in. */
  state: string;
  /** Its `last_error`, null if none. */
  lastError: string | null;
  /** True when it rests in a stable state other than the expected one, rather than in a failure state. */
  unexpectedStable: boolean;
  /** The wait's report when it ended: what became of the other targets too. */
  report: WaitReport | AllocationReport;
}
/**
 * The wait ran out of time (`Node(s) node-1 failed to reach state active in 0.5 seconds`).
 * @example
 * ```js
 * try {
 *   await client.provision('slow-1', 'deploy', { wait: true, timeout: 0.5 });
 * } catch (e) {
 *   if (!(e instanceof StateTransitionTimeout)) throw e;
 *   console.log(e.nodes, e.timeout, e.report.ok);
 * }
 * ```
 */
export class StateTransitionTimeout extends IronicWaitError {
  /** The nodes still unsettled, in the caller's order (a node wait). */
  nodes?: string[];
  /** The allocation still unsettled (an allocation wait). */
  allocations?: string[];
  /** The state waited for. */
  expected: string;
  /** The wait's `timeout`, in seconds, as given. */
  timeout: number;
  /** The wait's report when it ended: what became of every target. */
  report: WaitReport | AllocationReport;
}
