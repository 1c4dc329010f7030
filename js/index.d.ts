// Types of the package's JS API (js/index.js). Times are in seconds, as in
// python-ironicclient; every method returns a promise and never throws
// synchronously.
//
// Arguments are read once, when a method is called: option objects must be
// plain objects (`{ ... }` literals or `Object.create(null)`) whose options are
// own data properties (a getter is refused, not called); lists are arrays of
// at most 1,000,000 strings; JSON data (steps, config drive, allocation
// fields) is cloned through JSON text. Strings must be well-formed Unicode
// (no lone UTF-16 surrogate). An option the constructor or method does not
// take (a misspelt name) is refused, as is a value of the wrong type; an
// option set to `undefined` or `null` is absent. Anything else is an
// `InvalidArgumentError` of that call, naming the option, and nothing is sent.

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
}

/**
 * What the core knows and callers show or check too, written once in Rust:
 * the CLI and the console read these instead of keeping copies. Frozen.
 */
export interface Tables {
  actions: readonly ProvisionActionRow[];
  actionsByName: Readonly<Record<string, ProvisionActionRow>>;
  /** `setPowerState`'s actions: `target` is Ironic's (`rebooting`), `expected` the power state each ends in. */
  powerActions: readonly ProvisionActionRow[];
  provisionStates: readonly string[];
  stableStates: readonly string[];
  /** The failure rule: a state in `failureStates` (`error` and Ironic's `* failed` states) or any state that ends with `failureSuffix`. */
  failureStates: readonly string[];
  failureSuffix: string;
  holdStates: readonly string[];
  allocationStates: readonly string[];
  /** Every outcome a report entry or progress event may carry. */
  outcomes: readonly Outcome[];
  /**
   * Each `scope` filter as `[option, node field, x]`: the option of {@link Scope}, the node field it matches,
   * and the API version `1.x` that brought both the filter and the field.
   */
  scopeFilters: readonly (readonly [option: keyof Scope, field: string, minor: number])[];
  /**
   * The API version `1.x` (its `x`) each optional part of the API needs: `fields` on node reads (and with it
   * `power_state`, `target_power_state` and `maintenance` in a projection), `history` a node's history.
   */
  versions: Readonly<{ fields: number; history: number }>;
  /** Seconds unless named otherwise. */
  defaults: Readonly<{
    pollInterval: number;
    allocationPollInterval: number;
    concurrency: number;
    listThreshold: number;
    pageSize: number;
    requestTimeout: number;
    maxRetries: number;
    retryInterval: number;
    maxResponseBytes: number;
  }>;
  /** `maxSeconds`: the longest timeout or interval (a JS timer's limit); `maxRetryAfter` in seconds. */
  limits: Readonly<{ maxSeconds: number; maxPageSize: number; maxPages: number; maxRetryAfter: number }>;
}

/** The core's tables. */
export function tables(): Tables;

/** Ironic's node list filters, as a wait's `scope`. */
export interface Scope {
  provisionState?: string;
  resourceClass?: string;
  fault?: string;
  conductorGroup?: string;
  owner?: string;
  lessee?: string;
  /** Any of these shards. */
  shard?: string | string[];
}

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
  basicAuth?: { username: string; password: string };
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
  username?: string;
  userId?: string;
  password?: string;
  userDomainName?: string;
  userDomainId?: string;
  /** The scope (`password`, `token`): one of a project, a domain, or `systemScope: 'all'`; none = unscoped. */
  projectName?: string;
  projectId?: string;
  projectDomainName?: string;
  projectDomainId?: string;
  domainName?: string;
  domainId?: string;
  systemScope?: 'all';
  /** `v3applicationcredential`: the id, or the name with the user; and the secret. */
  applicationCredentialId?: string;
  applicationCredentialName?: string;
  applicationCredentialSecret?: string;
  /** `token`: a Keystone token to exchange for a new (scoped) one. */
  token?: string;
}

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
  state: string | null;
  targetState: string | null;
  lastError: string | null;
  /** Seconds since the wait began. */
  elapsed: number;
}

/**
 * An observed state change (`done: false`) or a settled target (`done: true`, with its `outcome`), of a node (`node`:
 * as the caller named it) or, for allocation waits, of an allocation (`allocation`).
 */
export type ProgressEvent = ({ node: string; allocation?: never } | { allocation: string; node?: never }) &
  ProgressFields &
  ({ done: false; outcome: null } | { done: true; outcome: Outcome });

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
   * From this many unfinished nodes on, one paginated list per round replaces per-node GETs (default 50); after a
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

export type WaitOptions = WaitTuning;

/** `setPowerState`'s actions (openstacksdk's names; Ironic's `rebooting` and `soft rebooting` are taken too). */
export type PowerAction = 'power on' | 'power off' | 'reboot' | 'soft power off' | 'soft reboot';

/** The options of the power and lock waits: those of every wait but the provision-state rules and `listMode`. */
export type NodeFieldWaitTuning = Omit<WaitTuning, 'holdIsTerminal' | 'failOnUnexpectedState' | 'listMode'>;

export interface PowerOptions extends NodeFieldWaitTuning {
  /** `true`: after the PUTs, wait until each power action is over (within `timeout`, if given). Absent or `false`: send only. */
  wait?: boolean;
  /** Ironic's own time limit for the action, whole seconds (`timeout` in the request; API 1.27). */
  powerTimeout?: number;
}

/** One event of a node's history, as Ironic gives it (API 1.78; later versions add fields). */
export interface NodeHistoryEvent {
  uuid: string;
  created_at: string;
  severity: string;
  event_type: string;
  event: string;
  conductor?: string | null;
  user?: string | null;
  [field: string]: unknown;
}

export interface NodeReport {
  node: string;
  outcome: Outcome;
  /**
   * For outcomes `failed` and `unexpected-stable` (a `StateTransitionFailed`, in python-ironicclient's words), `error`
   * and `not-found` (an IronicHttpError, say, with its request id): what went wrong.
   */
  error?: IronicWaitError;
  state: string | null;
  targetState: string | null;
  lastError: string | null;
  polls: number;
  /** Seconds from the start of the wait until this node settled. */
  elapsed: number;
  /** With `diagnose`, a failed node's last history events, oldest first. */
  history?: NodeHistoryEvent[];
  /** With `diagnose`, why a failed node has no `history` (an older Ironic, a failed request). */
  historyError?: string;
}

export interface WaitReport {
  /** True when every node reached the expected state. */
  ok: boolean;
  nodes: NodeReport[];
  /** Requests sent by this call, retries included. */
  requests: number;
  retries: number;
  elapsed: number;
}

export interface AllocationReport {
  ok: boolean;
  allocation: {
    allocation: string;
    outcome: Outcome;
    state: string | null;
    lastError: string | null;
    polls: number;
    elapsed: number;
    /** The allocation as Ironic last sent it. */
    body: Allocation | null;
    /** For outcomes `error` and `not-found`: what went wrong. */
    error?: IronicWaitError;
  };
  requests: number;
  retries: number;
  elapsed: number;
}

/** The options of `waitForAllocation`: an allocation wait has no provision-state rules, lists or concurrency. */
export type AllocationWaitOptions = Pick<WaitTuning, 'timeout' | 'pollInterval' | 'budget' | 'signal' | 'onProgress' | 'onCheckpoint'>;

/** The options of `createAllocation`. */
export interface CreateAllocationOptions extends AllocationWaitOptions {
  /** `true`: wait until the allocation is active (within `timeout`, if given). Absent or `false`: create only. */
  wait?: boolean;
}

export interface AllocationFields {
  resourceClass?: string;
  traits?: string[];
  candidateNodes?: string[];
  name?: string;
  uuid?: string;
  node?: string;
  owner?: string;
  extra?: Record<string, unknown>;
}

/** `createAllocation`'s answer: the allocation as created, and with `wait` its report. */
export interface CreatedAllocation {
  allocation: Allocation;
  report: AllocationReport | null;
}

/** The waits a checkpoint can be made of, and what each call settles with. */
export interface WaitResults {
  provision: WaitReport;
  waitForProvisionState: WaitReport;
  setPowerState: WaitReport;
  waitForPowerState: WaitReport;
  waitForReservation: WaitReport;
  createAllocation: CreatedAllocation;
  waitForAllocation: AllocationReport;
}
export type WaitMethod = keyof WaitResults;

/**
 * A checkpoint's text (JSON), typed by the method of the call it is of, so that `resume` and `step` answer what that
 * call would. Any string read back from storage is taken too (its method is then not known to the types).
 */
export type Checkpoint<M extends WaitMethod = WaitMethod> = string & { readonly __method?: M };

/**
 * One step's answer: a checkpoint to go on from at `wakeAtMs`, or (both null) the end with the call's answer in
 * `report` and, if it failed, its error.
 */
export type StepResult<M extends WaitMethod = WaitMethod> =
  | {
      checkpoint: Checkpoint<M>;
      wakeAtMs: number;
      report: null;
      error: null;
      /** With `retryOutages`: the outage this step's round was lost to (`checkpoint` is the one it began from). */
      outage?: IronicWaitError;
    }
  | { checkpoint: null; wakeAtMs: null; report: WaitResults[M] | null; error: IronicWaitError | null };

export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * One change of `watch()`: a node `added` to the scope or `modified` (with the fields listed: uuid, name,
 * provision_state, target_provision_state, last_error, provision_updated_at and `fields`), or `removed` (deleted or
 * gone from the scope; `node` is null).
 */
export type NodeChange = { type: 'added' | 'modified'; uuid: string; node: Node } | { type: 'removed'; uuid: string; node: null };

/**
 * What a watch with `retryOutages` says of its own rounds: `outage`, a round lost to an outage (a connection failure, a
 * 409, 429 or 5xx, or an answer that cannot be used, still failing after the retries), taken again 2 s later, doubling
 * to 5 minutes while it lasts; `restored`, the rounds go through again.
 */
export type WatchHealth = { type: 'outage'; error: IronicWaitError } | { type: 'restored' };

/**
 * A node as Ironic gives it: the fields asked for (all of them without `fields`), those of ironic-wait's decisions
 * typed; any other as `unknown`.
 */
export interface Node {
  uuid?: string;
  name?: string | null;
  provision_state?: string;
  target_provision_state?: string | null;
  provision_updated_at?: string | null;
  power_state?: string | null;
  target_power_state?: string | null;
  maintenance?: boolean;
  maintenance_reason?: string | null;
  fault?: string | null;
  last_error?: string | null;
  reservation?: string | null;
  driver?: string;
  resource_class?: string | null;
  conductor_group?: string;
  conductor?: string | null;
  owner?: string | null;
  lessee?: string | null;
  shard?: string | null;
  instance_uuid?: string | null;
  created_at?: string;
  updated_at?: string | null;
  [field: string]: unknown;
}

/** An allocation as Ironic gives it. */
export interface Allocation {
  uuid: string;
  name: string | null;
  state: string;
  last_error: string | null;
  resource_class: string | null;
  traits: string[];
  candidate_nodes: string[];
  node_uuid: string | null;
  owner?: string | null;
  extra: Record<string, unknown>;
  created_at?: string;
  updated_at?: string | null;
  [field: string]: unknown;
}

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
  signal?: AbortSignal;
}

export class IronicClient {
  /**
   * A client of one Ironic endpoint (one poll loop and one token for all its calls).
   * @example
   * ```js
   * const client = new IronicClient({ endpoint: 'http://127.0.0.1:6385' });
   * console.log(await client.microversion());
   * ```
   */
  constructor(options: IronicClientOptions);
  /**
   * Sends the action to each node (one PUT each, in order) and, with `wait`, waits for the action's expected state.
   * @example
   * ```js
   * const report = await client.provision(['node-1', 'node-2'], 'deploy', { wait: true, timeout: 1800 });
   * for (const n of report.nodes) console.log(`${n.node}: ${n.outcome} in ${n.elapsed} s`);
   * ```
   */
  provision(nodes: string | string[], action: ProvisionAction, options?: ProvisionOptions): Promise<WaitReport>;
  /**
   * Waits until every node is in `expectedState` (lower-cased), fails, or time runs out.
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
   * @example
   * ```js
   * await client.setPowerState(['node-1', 'node-2'], 'power on', { wait: true, timeout: 300 });
   * ```
   */
  setPowerState(nodes: string | string[], action: PowerAction, options?: PowerOptions): Promise<WaitReport>;
  /**
   * Waits until every node is in `state` with no power action under way, a power action fails, or time runs out.
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
   * @example
   * ```js
   * await client.waitForReservation(['node-1', 'node-2'], { timeout: 120 });
   * ```
   */
  waitForReservation(nodes: string | string[], options?: Omit<NodeFieldWaitTuning, 'diagnose'>): Promise<WaitReport>;
  /**
   * A node's history (API 1.78): its events as Ironic lists them, oldest first (one page: Ironic keeps 300 a node by default).
   * @example
   * ```js
   * for (const e of await client.getNodeHistory('node-1')) console.log(e.created_at, e.severity, e.event);
   * ```
   */
  getNodeHistory(node: string, options?: CallOptions): Promise<NodeHistoryEvent[]>;
  /**
   * Creates an allocation and, with `wait`, waits until it is active.
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
    },
  ): Promise<StepResult<M>>;
  /**
   * The API microversion in use, negotiated first if needed.
   * @example
   * ```js
   * console.log(await client.microversion()); // e.g. '1.115', negotiated once per client
   * ```
   */
  microversion(options?: CallOptions): Promise<string>;
  /**
   * The endpoint in use and a current token, for requests of the caller's own (a proxy): logs in or asks `getToken()`
   * when there is no token, it is due for renewal, or it is `refused` (the token a 401 answered) and still current.
   * @example
   * ```js
   * const { endpoint, token } = await client.authenticate();
   * console.log(endpoint, token === null ? 'no token (noauth)' : 'a token');
   * ```
   */
  authenticate(options?: CallOptions & { refused?: string }): Promise<{ endpoint: string; token: string | null; expiresAt: string | null }>;
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
  /** The node or allocation whose body was unusable, and the field, where known. */
  target?: string;
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
  status: number;
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
  cause?: unknown;
  status?: number;
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
  node?: string;
  allocation?: string;
  expected: string;
  state: string;
  lastError: string | null;
  unexpectedStable: boolean;
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
  nodes?: string[];
  allocations?: string[];
  expected: string;
  timeout: number;
  report: WaitReport | AllocationReport;
}
