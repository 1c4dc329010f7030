/**
 * `ironic-wait/sim`: a fake OpenStack Ironic for your own tests. It answers
 * Ironic's API (microversions 1.1 to 1.115) on a local port, walks nodes
 * through Ironic's provision and power states on a clock you may drive by
 * hand, and can be told to fail, hold, stall or misbehave on the wire. It
 * needs Node (it is an HTTP server) and nothing else.
 *
 * The simulator is documented in full in `sim/README.md` of the package
 * (every route, state walk, scenario key, fault kind and the control API
 * over HTTP); these types cover what a test reaches from JavaScript.
 *
 * Times: every instant the simulator reports (log `t`, history `t`,
 * `now()`) is sim milliseconds since the scenario loaded; durations in
 * `timing` are sim milliseconds too, and run `timeScale` times faster on
 * the clock.
 *
 * @example
 * ```js
 * import { IronicClient } from 'ironic-wait';
 * import { startSimulator } from 'ironic-wait/sim';
 *
 * // timeScale 20: the deploy's 4 s of sim time pass in 0.2 s.
 * const sim = await startSimulator({ timeScale: 20, scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
 * const client = new IronicClient({ endpoint: sim.url });
 * await client.provision('n1', 'deploy', { wait: true, timeout: 60, pollInterval: 0.1 });
 * console.log(sim.node('n1')?.provision_state); // 'active'
 * await sim.close();
 * ```
 *
 * @module
 */

// ------------------------------------------------------------------ states and names

/** Every provision state Ironic knows (ironic/common/states.py). */
export type ProvisionState =
  | 'enroll'
  | 'verifying'
  | 'manageable'
  | 'available'
  | 'deploying'
  | 'wait call-back'
  | 'deploy hold'
  | 'deploy failed'
  | 'active'
  | 'deleting'
  | 'error'
  | 'cleaning'
  | 'clean wait'
  | 'clean hold'
  | 'clean failed'
  | 'inspecting'
  | 'inspect wait'
  | 'inspect failed'
  | 'adopting'
  | 'adopt failed'
  | 'rescuing'
  | 'rescue wait'
  | 'rescue'
  | 'rescue failed'
  | 'unrescuing'
  | 'unrescue failed'
  | 'servicing'
  | 'service wait'
  | 'service hold'
  | 'service failed';

/** The states a transition works, waits or holds in: where a rule's failure (`at`) can happen. */
export type WorkingState =
  | 'verifying'
  | 'deploying'
  | 'wait call-back'
  | 'deploy hold'
  | 'deleting'
  | 'cleaning'
  | 'clean wait'
  | 'clean hold'
  | 'inspecting'
  | 'inspect wait'
  | 'adopting'
  | 'rescuing'
  | 'rescue wait'
  | 'unrescuing'
  | 'servicing'
  | 'service wait'
  | 'service hold';

/**
 * The targets of `PUT /v1/nodes/{id}/states/provision`: `active` and
 * `deploy` are the same action, so are `deleted` and `undeploy`.
 */
export type ProvisionAction =
  | 'active'
  | 'deploy'
  | 'rebuild'
  | 'deleted'
  | 'undeploy'
  | 'manage'
  | 'provide'
  | 'inspect'
  | 'clean'
  | 'adopt'
  | 'rescue'
  | 'unrescue'
  | 'service'
  | 'abort'
  | 'unhold';

/** The targets of `PUT /v1/nodes/{id}/states/power`, as python-ironicclient sends them. */
export type PowerTarget = 'power on' | 'power off' | 'rebooting' | 'soft power off' | 'soft rebooting';

/**
 * How the database keeps timestamps: `microsecond` (SQLite, the default),
 * `second` (whole seconds, truncated: MariaDB) or `second-rounded`
 * (MySQL's default rounding: a stamp can be up to half a second later than
 * the change).
 */
export type TimestampResolution = 'microsecond' | 'second' | 'second-rounded';

/** Sim milliseconds a state lasts: a number, or `[min, max]` drawn (seeded) per transition. */
export type Duration = number | readonly [min: number, max: number];

/** How long each working state lasts, in sim milliseconds; a wait state of 0 is skipped. */
export interface Timing {
  /** enroll -> manageable (1000). */
  verifying?: Duration;
  /** Each of the two deploying phases (1500). */
  deploying?: Duration;
  /** Between the deploying phases (1000). */
  'wait call-back'?: Duration;
  /** The first phase of an undeploy (1000). */
  deleting?: Duration;
  /** Each cleaning phase of provide, clean and undeploy (2000). */
  cleaning?: Duration;
  /** Between cleaning phases (0: none). */
  'clean wait'?: Duration;
  /** (1500) */
  inspecting?: Duration;
  /** After inspecting (0: none). */
  'inspect wait'?: Duration;
  /** (500) */
  adopting?: Duration;
  /** (1000) */
  rescuing?: Duration;
  /** Between rescuing phases (0: none). */
  'rescue wait'?: Duration;
  /** (1000) */
  unrescuing?: Duration;
  /** (1000) */
  servicing?: Duration;
  /** Between servicing phases (0: none). */
  'service wait'?: Duration;
  /** An allocation's `allocating` before it is matched to a node (30). */
  allocating?: Duration;
  /** A power action, from the PUT until `power_state` is set and the lock released (1000). */
  power?: Duration;
}

// ------------------------------------------------------------------ nodes

/**
 * A fake-hardware node as Ironic stores it, in Ironic's field order.
 * `Stamp` is how timestamps are written: sim milliseconds (relative to the
 * epoch) in what the simulator returns; sim milliseconds, an ISO 8601 text
 * or null in what a scenario or `setNode` gives.
 */
export interface NodeRecord<Stamp = number | null> {
  /** The node's UUID (drawn from the seed when a scenario gives none). */
  uuid: string;
  /** When the node was made (a loaded node: 30 to 90 days before the epoch). */
  created_at: Stamp;
  /** Stamped by every change (null on a node made by POST and never changed). */
  updated_at: Stamp;
  /** Whether automated cleaning runs (null: the conductor's default). */
  automated_clean: boolean | null;
  /** Hardware interface ('fake'). */
  bios_interface: string;
  /** Hardware interface ('fake'). */
  boot_interface: string;
  /** 'uefi', 'bios' or null. */
  boot_mode: string | null;
  /** The clean step running ({}). */
  clean_step: Record<string, unknown>;
  /** The conductor group; the simulator plays one conductor per group ('' is `localhost`, others `conductor-<group>`). */
  conductor_group: string;
  /** Whether the serial console is on. */
  console_enabled: boolean;
  /** Hardware interface ('fake'). */
  console_interface: string;
  /** When true, power off is refused (409). */
  disable_power_off: boolean;
  /** Hardware interface ('fake'). */
  deploy_interface: string;
  /** The deploy step running ({}). */
  deploy_step: Record<string, unknown>;
  /** Free text (the `description_contains` filter searches it). */
  description: string | null;
  /** 'fake-hardware'. */
  driver: string;
  /** Driver settings ({}). */
  driver_info: Record<string, unknown>;
  /** The driver's own notes ({}). */
  driver_internal_info: Record<string, unknown>;
  /** User data ({}). */
  extra: Record<string, unknown>;
  /** Why Ironic put the node in maintenance: 'power failure', 'clean failure', 'rescue abort failure', 'service failure' or null. */
  fault: string | null;
  /** Hardware interface ('fake'). */
  firmware_interface: string;
  /** The node's health, when a driver reports it (null). */
  health: string | null;
  /** When the last inspection ended. */
  inspection_finished_at: Stamp;
  /** When the running inspection began (cleared when it ends). */
  inspection_started_at: Stamp;
  /** Hardware interface ('fake'). */
  inspect_interface: string;
  /** What the deployed instance was given ({}). */
  instance_info: Record<string, unknown>;
  /** The instance's name (the `instance_name` filter, 1.104). */
  instance_name: string | null;
  /** The instance deployed on the node (an active loaded node gets one drawn). */
  instance_uuid: string | null;
  /** The last failure's text, kept until an operation with working states starts. */
  last_error: string | null;
  /** The project the node is lent to. */
  lessee: string | null;
  /** Whether the node is in maintenance (provision actions are refused). */
  maintenance: boolean;
  /** Why it is in maintenance. */
  maintenance_reason: string | null;
  /** Hardware interface ('fake'). */
  management_interface: string;
  /** The node's unique name. */
  name: string | null;
  /** Network configuration ({}). */
  network_data: Record<string, unknown>;
  /** Network interface ('noop'). */
  network_interface: string;
  /** The owning project. */
  owner: string | null;
  /** The parent's UUID, for a child node (listed only with `include_children` or by its parent). */
  parent_node: string | null;
  /** Hardware interface ('fake'). */
  power_interface: string;
  /** 'power on', 'power off' or null (unknown: an enrolled node). */
  power_state: 'power on' | 'power off' | 'error' | null;
  /** Hardware properties ({}): cpus, memory_mb, ... */
  properties: Record<string, unknown>;
  /** Whether the node is protected from undeploy and rebuild. */
  protected: boolean;
  /** Why it is protected. */
  protected_reason: string | null;
  /** The provision state (a scenario node's default: 'enroll'). */
  provision_state: ProvisionState;
  /** Stamped at every provision state change: the change feed's sort key. */
  provision_updated_at: Stamp;
  /** RAID configuration ({}). */
  raid_config: Record<string, unknown>;
  /** Hardware interface ('fake'). */
  raid_interface: string;
  /** Hardware interface ('fake'). */
  rescue_interface: string;
  /** The conductor holding the node's lock (a working state, a power action), else null. */
  reservation: string | null;
  /** The resource class allocations match. */
  resource_class: string | null;
  /** Whether the node is retired. */
  retired: boolean;
  /** Why it is retired. */
  retired_reason: string | null;
  /** Whether secure boot is on (null: unknown). */
  secure_boot: boolean | null;
  /** The service step running ({}). */
  service_step: Record<string, unknown>;
  /** The shard (the `shard` filter, 1.82). */
  shard: string | null;
  /** Storage interface ('noop'). */
  storage_interface: string;
  /** The power state a running power action ends in, else null. */
  target_power_state: 'power on' | 'power off' | null;
  /** The state a running transition heads for; null at a stable state (derived from `provision_state` when a scenario gives none). */
  target_provision_state: ProvisionState | null;
  /** RAID configuration asked for ({}). */
  target_raid_config: Record<string, unknown>;
  /** Traits allocations can ask for. */
  traits: readonly string[];
  /** Hardware interface ('fake'). */
  vendor_interface: string;
  /** The allocation holding the node (set when an allocation picks it). */
  allocation_uuid: string | null;
}

/**
 * A node of a scenario: any Ironic node field (absent ones take Ironic's
 * defaults; `power_state` follows the state, an active node gets an
 * `instance_uuid`), plus its own `timing`, which overrides the scenario's
 * for this node.
 */
export type ScenarioNode = Partial<NodeRecord<number | string | null>> & {
  /** This node's durations, over the scenario's `timing`. */
  timing?: Timing;
};

/**
 * Fields `setNode` writes at once (any stored field but `uuid`). Setting
 * `provision_state` cancels the node's transition and moves
 * `target_provision_state` with it unless given; the lock is released
 * unless `reservation` is given.
 */
export type NodePatch = Partial<Omit<NodeRecord<number | string | null>, 'uuid'>>;

/** One phase of a transition's plan: a state and how long it lasts. */
export interface PlanPhase {
  /** The provision state of the phase. */
  state?: ProvisionState;
  /** The target_provision_state during the phase. */
  target?: ProvisionState | null;
  /** Clock milliseconds it lasts (`Infinity`: held or stalled until something else moves the node); absent at the end. */
  ms?: number;
  /** Whether the phase holds the node's lock (`reservation`). */
  lock?: boolean;
  /** The node is deleted here (a `delete` rule). */
  delete?: boolean;
  /** The `last_error` the phase sets (a failure or an abort). */
  last_error?: string;
  /** Other marks the model keeps for its node history. */
  [mark: string]: unknown;
}

/** A node's transition in progress. */
export interface NodePlan {
  /** The internal action the PUT started: 'deploy', 'delete', 'provide', 'manage', ... */
  action: string;
  /** The index in `phases` of the phase the node is in. */
  phase: number;
  /** Every phase, from the first working state to where it comes to rest. */
  phases: PlanPhase[];
}

/** `sim.node(ident)`: the stored node, with its transition and its state history. */
export interface SimNode extends NodeRecord<number | null> {
  /** The transition in progress, or null when the node rests. */
  plan: NodePlan | null;
  /** The simulator's own history of the node (see `StateHistory`). */
  history: StateHistoryEntry[];
}

/** One entry of the simulator's history of a node: its state after a change. */
export type StateHistoryEntry =
  | {
      /** Sim ms of the change (when it was due, not when somebody looked). */
      t: number;
      /** The provision state after the change. */
      provision_state: ProvisionState;
      /** The target after the change. */
      target_provision_state: ProvisionState | null;
      /** `last_error` after the change. */
      last_error: string | null;
      /** What caused it: `load`, `create`, the PUT target (`deploy`, `power on`, ...), `set` (setNode), `churn`. */
      action: string;
      /** A power action's entries: the power state then. */
      power_state?: NodeRecord['power_state'];
      /** A power action's entries: the power state it heads for. */
      target_power_state?: NodeRecord['target_power_state'];
      /** Sim ms when a change a late-commit fault held back became visible. */
      committed?: number;
      /** Absent: only the last entry of a deleted node has it. */
      deleted?: undefined;
    }
  | {
      /** Sim ms of the deletion. */
      t: number;
      /** The node is gone (a `delete` rule, `deleteNode`). */
      deleted: true;
      /** What deleted it: `delete`, ... */
      action: string;
    };

/** The simulator's record of every change of one node, for tests (not Ironic's node history: see `NodeHistoryRow`). */
export interface StateHistory {
  /** The node's UUID. */
  uuid: string;
  /** The node's name. */
  name: string | null;
  /** Oldest first: the node as loaded (`load`) or created (`create`), then each change. */
  entries: StateHistoryEntry[];
}

/** A row of Ironic's node history (`GET /v1/nodes/{id}/history`), as stored. */
export interface NodeHistoryRow {
  /** The row's database id. */
  id: number;
  /** The row's UUID (seeded). */
  uuid: string;
  /** The node's database id. */
  node_id: number;
  /** Sim ms of the event. */
  created_at: number;
  /** ERROR for a failure, INFO for a step flow's start and end (and a rescue abort). */
  severity: 'INFO' | 'ERROR';
  /** `deploying`, `cleaning`, `deployment_start`, `UNKNOWN` (power), ... */
  event_type: string;
  /** The text: a failure's `last_error`, or Ironic's step flow text. */
  event: string;
  /** The conductor that wrote it. */
  conductor: string;
  /** Always null: the simulator has no authentication. */
  user: null;
  /** Always null: the simulator has no authentication. */
  project: null;
  /** The node's provision state when the row was written (the working state, for a failure). */
  state: string | null;
  /** The node's target then. */
  target_provision_state: string | null;
  /** Whole seconds since `provision_updated_at`; null for a failure from before the simulator started. */
  duration_seconds: number | null;
}

// ------------------------------------------------------------------ rules

/** Which nodes a rule applies to: a name or UUID, a list of them, or `*` (absent: any node). */
export type NodeSelector = string | readonly string[];

/** What a provision rule says besides its outcome: which nodes and actions, where and when. */
interface ProvisionRuleBase {
  /** The nodes it applies to (absent or `*`: any). */
  node?: NodeSelector;
  /** The provision action it shapes (absent or `*`: any). */
  action?: ProvisionAction | '*';
  /** The working state where it happens (default: the transition's last locked working state). */
  at?: WorkingState;
  /** Sim ms spent in `at` before it happens (default: the drawn duration). */
  after?: number;
  /** Apply to at most this many actions (default: every one). */
  times?: number;
}

/**
 * A provision rule: the first rule (in order) that matches an accepted
 * action and fits its transition shapes it, with exactly one outcome.
 */
export type ProvisionRule = ProvisionRuleBase &
  (
    | {
        /** End in the failure state of `at` (deploying -> deploy failed, cleaning -> clean failed, ...) with this `last_error` (`true`: a generic text), and an ERROR row in the node history. */
        fail: string | true;
        /** Also set maintenance (and `fault` 'clean failure' / 'service failure'). */
        maintenance?: boolean;
        /** A rule has one outcome: `hold` is absent (or false) here. */
        hold?: false;
        /** A rule has one outcome: `delete` is absent (or false) here. */
        delete?: false;
        /** A rule has one outcome: `stall` is absent (or false) here. */
        stall?: false;
      }
    | {
        /** Go to `deploy hold` / `clean hold` / `service hold` after the first deploying / cleaning / servicing phase, until `unhold` or `abort`. */
        hold: true;
        /** A rule has one outcome: `fail` is absent (or false) here. */
        fail?: false;
        /** A rule has one outcome: `delete` is absent (or false) here. */
        delete?: false;
        /** A rule has one outcome: `stall` is absent (or false) here. */
        stall?: false;
      }
    | {
        /** The node disappears at the end of `at` (then GETs answer 404). */
        delete: true;
        /** A rule has one outcome: `fail` is absent (or false) here. */
        fail?: false;
        /** A rule has one outcome: `hold` is absent (or false) here. */
        hold?: false;
        /** A rule has one outcome: `stall` is absent (or false) here. */
        stall?: false;
      }
    | {
        /** Stay in `at` forever, holding the lock (a timeout test). */
        stall: true;
        /** A rule has one outcome: `fail` is absent (or false) here. */
        fail?: false;
        /** A rule has one outcome: `hold` is absent (or false) here. */
        hold?: false;
        /** A rule has one outcome: `delete` is absent (or false) here. */
        delete?: false;
      }
  );

/** A power rule: how power actions of the matched nodes fail or hang. */
export type PowerRule = {
  /** The nodes it applies to (absent or `*`: any). */
  node?: NodeSelector;
  /** One power target, or `power` for any of them. */
  action: PowerTarget | 'power';
  /** Sim ms before it happens (default: the action's drawn duration). */
  after?: number;
  /** Apply to at most this many actions (default: every one). */
  times?: number;
} & (
  | {
      /** End the action with `power_state` unchanged and `last_error` "Failed to change power state to ...: <this text>" (`true`: a generic text). */
      fail: string | true;
      /** Also set maintenance and `fault` 'power failure', as Ironic's power sync does after repeated failures. */
      maintenance?: boolean;
      /** A rule has one outcome: `stall` is absent (or false) here. */
      stall?: false;
    }
  | {
      /** Never end: the target stays set and the node locked, until `setNode` moves it. */
      stall: true;
      /** A rule has one outcome: `fail` is absent (or false) here. */
      fail?: false;
    }
);

/** A scripted outcome of transitions: a provision or a power rule. */
export type TransitionRule = ProvisionRule | PowerRule;

/** A transition rule as `transitions.list()` shows it. */
export type ListedTransitionRule = TransitionRule & {
  /** The internal event the action maps to ('deploy', 'delete', ..., '*', or the power target). */
  event: string;
  /** How many actions it has shaped. */
  used: number;
  /** Whether it is a power rule. */
  power?: boolean;
};

/** What every fault rule may say about the requests it matches and how often it fires. */
interface FaultMatch {
  /** `GET`, `PUT`, ... (any case; absent: any method). */
  method?: string;
  /** The path without query; `*` matches any characters, `/` included (`/v1/nodes*`: everything under it). */
  path?: string;
  /** The node a `/v1/nodes/{ident}...` path names, by name or UUID, or a list (absent: any request). */
  node?: NodeSelector;
  /** Fire at most this many times. */
  count?: number;
  /** Let the first N matching requests through. */
  skip?: number;
  /** Fire on this share (0 to 1] of the matching requests, drawn from a seeded stream. */
  fraction?: number;
  /** Whether the real handler runs first, so state changes happen (the default depends on the kind). */
  process?: boolean;
  /** A label of your own, shown by `faults.list()`. */
  id?: string;
}

/**
 * A fault rule: checked in order for every API request (never for the
 * control API). Every matching `latency` rule adds its delay; the first
 * other matching rule that fires decides the answer.
 */
export type FaultRule =
  | (FaultMatch & {
      /** Ironic's error body with this status. */
      kind: 'status';
      /** An HTTP error status, 400 to 599. */
      status: number;
      /** `Retry-After`: seconds, or a text sent as is (an HTTP date). */
      retryAfter?: number | string;
      /** The faultstring (default: Ironic's text for the status). */
      message?: string;
      /** false: without Ironic's version headers. */
      versionHeaders?: boolean;
    })
  | (FaultMatch & {
      /** The normal answer, `ms` later (stacks with another fault). */
      kind: 'latency';
      /** The delay (real ms, up to 2^31-1). */
      ms: number;
    })
  | (FaultMatch & {
      /** `hang`: no answer until the client gives up or close(); `reset`: a TCP reset; `malformed`: the real body cut in half. */
      kind: 'hang' | 'reset' | 'malformed';
    })
  | (FaultMatch & {
      /** `html`: a proxy's HTML error page (502); `empty`: the body `{}` (200). */
      kind: 'html' | 'empty';
      /** The status (502 for html, 200 for empty). */
      status?: number;
    })
  | (FaultMatch & {
      /** Exactly this body, with Ironic's version headers. */
      kind: 'body';
      /** A string as is, anything else as JSON. */
      body?: unknown;
      /** (200) */
      status?: number;
      /** ('application/json') */
      contentType?: string;
      /** false: without Ironic's version headers. */
      versionHeaders?: boolean;
    })
  | (FaultMatch & {
      /** The real document (each item of a list) with these fields replaced. */
      kind: 'set';
      /** Field -> the value to show. */
      set: Record<string, unknown>;
    })
  | (FaultMatch & {
      /** The real document (each item of a list) without these fields. */
      kind: 'omit';
      /** The fields to leave out. */
      omit: readonly string[];
    })
  | (FaultMatch & {
      /** `large`: the real document padded to about `bytes` (4 MiB); `gzip`: gzipped, inflating to `bytes` (64 MiB); `cut`: the first `bytes` (half) then a reset. */
      kind: 'large' | 'gzip' | 'cut';
      /** The size, as the kind reads it. */
      bytes?: number;
    })
  | (FaultMatch & {
      /** A 3xx to `location` (`{path}` in it: the request's path and query), as a proxy sends it. */
      kind: 'redirect';
      /** A URL or a path. */
      location: string;
      /** (307) */
      status?: number;
    })
  | (FaultMatch & {
      /** The real answer `chunk` bytes (16) every `ms` (50). */
      kind: 'drip';
      /** Bytes a write (16). */
      chunk?: number;
      /** Real ms between writes (50). */
      ms?: number;
    })
  | (FaultMatch & {
      /** A `Content-Length` that lies by `by` bytes (not 0); the connection closes after the body. */
      kind: 'length';
      /** Bytes more (positive) or fewer (negative) than the body. */
      by: number;
    })
  | (FaultMatch & {
      /** Node list pages as a broken server pages them. */
      kind: 'page';
      /** Serve at most this many nodes a page (Ironic's `max_limit`). */
      limit?: number;
      /** Serve every page as the first. */
      ignoreMarker?: boolean;
      /** Rewrite `next`: `same` (this page again), `none` (no link), `fake` (a made-up marker), or a node's name or UUID. */
      next?: 'same' | 'none' | 'fake' | (string & {});
      /** Serve this many made-up nodes (0 to 1000) a page, with a `next`, whatever the marker. */
      fake?: number;
    })
  | {
      /** Not about requests: a provision state change of a matched node stays invisible for `delay` ms, then shows with the stamps of when it was made. */
      kind: 'late-commit';
      /** Clock milliseconds (more than 0). */
      delay: number;
      /** Only changes into this state (or these). */
      state?: ProvisionState | readonly ProvisionState[];
      /** The nodes whose changes it delays (absent: any). */
      node?: NodeSelector;
      /** Fire at most this many times. */
      count?: number;
      /** Let the first N matching changes through. */
      skip?: number;
      /** Fire on this share (0 to 1] of the matching changes. */
      fraction?: number;
      /** A label of your own, shown by `faults.list()`. */
      id?: string;
      /** Not for a late commit: it matches node changes, not requests. */
      method?: never;
      /** Not for a late commit: it matches node changes, not requests. */
      path?: never;
      /** Not for a late commit: it matches node changes, not requests. */
      process?: never;
    };

/** A fault rule as `faults.list()` shows it, with its counters. */
export type ListedFaultRule = FaultRule & {
  /** Whether the real handler runs first (the kind's default unless the rule said). */
  process?: boolean;
  /** Matching requests (or changes) seen. */
  seen: number;
  /** Times it fired. */
  hits: number;
  /** Firings left under `count`, or null without a count. */
  remaining: number | null;
};

// ------------------------------------------------------------------ scenario and options

/** A scenario: the world the simulator plays. Every key is optional. */
export interface Scenario {
  /** Seeds UUIDs, request ids, drawn durations, fault fractions and the fleet (over the start option). */
  seed?: number;
  /** Transitions run this many times faster than their durations (over the start option). */
  timeScale?: number;
  /** The wall time of sim time 0: ms or a date text (over the start option). */
  epoch?: number | string;
  /** Time moves only by `advance(ms)` (over the start option). */
  manualClock?: boolean;
  /** How timestamps are stored (over the start option). */
  timestampResolution?: TimestampResolution;
  /**
   * Agent heartbeats (over the start option): Ironic's
   * `[api]ramdisk_heartbeat_timeout` in sim seconds (300, its default).
   * A node in `wait call-back`, `clean wait` or `service wait` heartbeats
   * every 0.3 to 0.6 of it, drawn per heartbeat from the seed as
   * ironic-python-agent draws its interval, and each heartbeat stamps
   * `provision_updated_at` (and `updated_at`) without changing the state,
   * as the conductor's `touch_provisioning()` does. 0 or false: no heartbeats.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * // A node mid-deploy whose agent heartbeats every 3 to 6 sim s.
   * const sim = await startSimulator({
   *   manualClock: true,
   *   scenario: { heartbeatTimeout: 10, nodes: [{ name: 'n1', provision_state: 'wait call-back' }] },
   * });
   * const before = sim.node('n1')?.provision_updated_at;
   * sim.advance(6000);
   * const n1 = sim.node('n1');
   * console.log(n1?.provision_state, n1?.provision_updated_at !== before); // 'wait call-back' true
   * await sim.close();
   * ```
   */
  heartbeatTimeout?: number | false;
  /** Play an older Ironic whose newest microversion is this one, `"1.1"` to `"1.115"` (the default). */
  maxVersion?: `1.${number}`;
  /** How long each working state lasts. */
  timing?: Timing;
  /** Ironic's node history: false writes none (`[conductor] node_history = False`); true or absent, all of it. */
  nodeHistory?: boolean | NodeHistoryOptions;
  /** Entries kept in all by each history (over the start option). */
  historyLimit?: number;
  /**
   * A busy data centre: every `every` sim ms (2000), that `fraction` of the
   * fleet (or `count` nodes) starts a provision action.
   */
  churn?: Churn | null | false;
  /**
   * The nodes: a count (the seeded demo fleet `node-000`...) or a list.
   * Without it, the `nodes` start option applies.
   */
  nodes?: number | readonly ScenarioNode[];
  /** Scripted outcomes of provision and power actions, checked in order. */
  transitions?: readonly TransitionRule[];
  /** Fault rules, checked in order. */
  faults?: readonly FaultRule[];
}

/** Ironic's node history, when written. */
export interface NodeHistoryOptions {
  /** false: only the ERROR rows, no step flows' start and end rows (true). */
  steps?: boolean;
  /** Rows kept a node, the oldest dropped first (300, Ironic's `node_history_max_entries`). */
  maxEntries?: number;
}

/** A scenario's churn: how often, and how much of the fleet starts a provision action each round. */
export type Churn =
  | {
      /** Sim ms between rounds (2000). */
      every?: number;
      /** The share (0 to 1] of the fleet that starts an action each round. */
      fraction: number;
      /** A round is a `fraction` or a `count`, not both. */
      count?: undefined;
    }
  | {
      /** Sim ms between rounds (2000). */
      every?: number;
      /** The nodes that start an action each round. */
      count: number;
      /** A round is a `fraction` or a `count`, not both. */
      fraction?: undefined;
    };

/** Options of `createSimulator`; a scenario's own keys win over them. */
export interface SimulatorOptions {
  /** Seeds UUIDs, request ids, drawn durations, fault fractions and the fleet (1). */
  seed?: number;
  /** Sim ms per real ms: transitions run this many times faster than their durations (1). */
  timeScale?: number;
  /** Size of the seeded demo fleet (`node-000`...) when the scenario lists no nodes (0). */
  nodes?: number;
  /** Loaded at start and by every `reset()` until another `load()`. */
  scenario?: Scenario;
  /** Time stands still until `advance(ms)` (false): every instant is exact. */
  manualClock?: boolean;
  /** The wall time of sim time 0, ms or a date text (now): fix it for byte-identical answers across runs. */
  epoch?: number | string;
  /** Request log entries kept (100000). */
  logLimit?: number;
  /** Entries kept in all by each of the two histories, oldest dropped first (300000). */
  historyLimit?: number;
  /** How timestamps are stored ('microsecond'). */
  timestampResolution?: TimestampResolution;
  /** Ironic's `[api]ramdisk_heartbeat_timeout` in sim seconds, which waiting nodes' agents heartbeat by (300); 0 or false: none. */
  heartbeatTimeout?: number | false;
}

/** Options of `startSimulator`: those of `createSimulator`, plus where to listen. */
export interface StartOptions extends SimulatorOptions {
  /** The port (0: any free one). */
  port?: number;
  /** The address to bind ('127.0.0.1'). */
  host?: string;
}

// ------------------------------------------------------------------ what the simulator reports

/** One request the Ironic API saw (control API requests are not logged). */
export interface RequestLogEntry {
  /** Its place in the log, from 1. */
  seq: number;
  /** The `X-OpenStack-Request-Id` it was answered with. */
  id: string;
  /** The request's method. */
  method: string;
  /** The path, without the query. */
  path: string;
  /** The query, without `?` ('' for none). */
  query: string;
  /** Sim ms it arrived. */
  t: number;
  /** Sim ms it was answered; null for a hang. */
  tEnd: number | null;
  /** The status sent; null when nothing was answered (hang, reset). */
  status: number | null;
  /** Body bytes sent. */
  bytes: number;
  /** The fault kind that acted (or `latency`), else null. */
  fault: string | null;
  /** The UUID of the node the path named (the identifier, if unknown), else null. */
  node: string | null;
}

/** Which log entries to read. */
export interface RequestFilter {
  /** Only entries after this `seq` (pass the last answer's `next`). */
  since?: number;
  /** Only this method. */
  method?: string;
  /** Only paths matching this glob (`*`: anything). */
  path?: string;
  /** Only requests naming this node (name or UUID). */
  node?: string;
}

/** `requests()`: the entries, and where to go on from. */
export interface RequestLogPage {
  /** The entries, oldest first. */
  entries: RequestLogEntry[];
  /** The last `seq` given so far: pass it as `since` to read only newer entries. */
  next: number;
  /** Entries dropped (beyond `logLimit`, or cleared). */
  dropped: number;
}

/** `summary()`: the simulator at a glance. */
export interface SimSummary {
  /** Sim ms since load. */
  now: number;
  /** The seed in use. */
  seed: number;
  /** Sim ms per real ms. */
  timeScale: number;
  /** Whether time moves only by `advance(ms)`. */
  manualClock: boolean;
  /** The epoch, as an ISO 8601 text. */
  epoch: string;
  /** How timestamps are stored. */
  timestampResolution: TimestampResolution;
  /** The clock skew timestamps are written with (ms). */
  skew: number;
  /** The agents' heartbeat timeout in sim seconds; 0 when they do not heartbeat. */
  heartbeatTimeout: number;
  /** Agent heartbeats the conductor took since load (one a power action's lock blocked is not taken). */
  heartbeats: number;
  /** Nodes now. */
  nodes: number;
  /** Nodes per provision state. */
  byState: Partial<Record<ProvisionState, number>>;
  /** Allocations made. */
  allocations: number;
  /** Changes due later (phases, allocations, commits, churn rounds, heartbeats). */
  pending: number;
  /** Fault rules. */
  faults: number;
  /** Transition rules. */
  transitions: number;
  /** API requests seen since load. */
  requests: number;
}

/** `churn({ count })`: the flips made. */
export interface ChurnFlips {
  /** Sim ms of the flips. */
  t: number;
  /** One entry a node flipped. */
  changed: Array<{
    /** The node's UUID. */
    uuid: string;
    /** The node's name. */
    name: string | null;
    /** Its state before. */
    from: ProvisionState;
    /** Its state now. */
    to: ProvisionState;
    /** Sim ms when the change shows (later than `t` under a late-commit fault). */
    visible: number;
  }>;
}

/** `churn({ moves: true, count })`: the actions started. */
export interface ChurnMoves {
  /** Sim ms the actions started. */
  t: number;
  /** One entry an action started. */
  started: Array<{
    /** The node's UUID. */
    uuid: string;
    /** The node's name. */
    name: string | null;
    /** Its state when the action started. */
    from: ProvisionState;
    /** The PUT target it started: 'active' (a deploy), 'deleted' (an undeploy), 'manage' or 'provide'. */
    action: 'active' | 'deleted' | 'manage' | 'provide';
    /** Whether it is one of the deploys that fail. */
    fails: boolean;
  }>;
}

/** Fault rules of a running simulator (replaced by `load()` and `reset()`: read them through the simulator). */
export interface FaultRules {
  /**
   * Add rules at the end (validated first: one bad rule adds none, and the call throws).
   * @example
   * ```js
   * import { IronicClient } from 'ironic-wait';
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
   * // The next two GETs of n1 answer 503: the client retries through them.
   * sim.faults.add({ node: 'n1', method: 'GET', kind: 'status', status: 503, retryAfter: 0, count: 2 });
   * const node = await new IronicClient({ endpoint: sim.url, retryInterval: 0 }).getNode('n1');
   * console.log(node.provision_state, sim.faults.list()[0]?.hits); // 'available' 2
   * await sim.close();
   * ```
   */
  add(rules: FaultRule | readonly FaultRule[]): void;
  /**
   * Remove every rule.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { faults: [{ path: '/v1/nodes*', kind: 'hang' }] } });
   * sim.faults.clear();
   * console.log(sim.faults.list().length); // 0
   * await sim.close();
   * ```
   */
  clear(): void;
  /**
   * The rules in order, with their counters.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { faults: [{ id: 'slow', kind: 'latency', ms: 50, count: 3 }] } });
   * const [slow] = sim.faults.list();
   * console.log(slow?.id, slow?.hits, slow?.remaining); // 'slow' 0 3
   * await sim.close();
   * ```
   */
  list(): ListedFaultRule[];
}

/** Transition rules of a running simulator (replaced by `load()` and `reset()`). */
export interface TransitionRules {
  /**
   * Add rules at the end (validated first: one bad rule adds none, and the call throws).
   * @example
   * ```js
   * import { IronicClient, StateTransitionFailed } from 'ironic-wait';
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ timeScale: 20, scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
   * sim.transitions.add({ node: 'n1', action: 'deploy', fail: 'No deploy steps returned by the driver' });
   * const client = new IronicClient({ endpoint: sim.url });
   * try {
   *   await client.provision('n1', 'deploy', { wait: true, timeout: 30, pollInterval: 0.1 });
   * } catch (e) {
   *   if (e instanceof StateTransitionFailed) console.log(e.state, e.lastError); // 'deploy failed' 'No deploy steps ...'
   * }
   * await sim.close();
   * ```
   */
  add(rules: TransitionRule | readonly TransitionRule[]): void;
  /**
   * Remove every rule.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { transitions: [{ action: 'provide', fail: true }] } });
   * sim.transitions.clear();
   * console.log(sim.transitions.list().length); // 0
   * await sim.close();
   * ```
   */
  clear(): void;
  /**
   * The rules in order, with how often each was used.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { transitions: [{ node: 'n1', action: 'deleted', hold: true }] } });
   * console.log(sim.transitions.list()[0]?.used); // 0
   * await sim.close();
   * ```
   */
  list(): ListedTransitionRule[];
}

/**
 * A `node:http` request, as far as the simulator reads it (an
 * `http.IncomingMessage` is one).
 */
export interface SimRequest {
  /** The request's method. */
  readonly method?: string;
  /** The path and query. */
  readonly url?: string;
  /** Lower-case header names. */
  readonly headers: { readonly [name: string]: string | string[] | undefined };
  /** The body arrives by `data` and `end` events. */
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * A `node:http` response, as far as the simulator writes it (an
 * `http.ServerResponse` is one).
 */
export interface SimResponse {
  /** Whether the status line went out. */
  readonly headersSent: boolean;
  /** Whether the response was destroyed (the client went away). */
  readonly destroyed: boolean;
  /** The connection: the `reset` and `cut` faults destroy it. */
  readonly socket: SimSocket | null;
  /** Sends the status and headers. */
  writeHead(status: number, headers?: Record<string, string | number | string[]>): unknown;
  /** Sends part of the body (the `drip` and `cut` faults). */
  write(chunk: string | Uint8Array, callback?: () => void): unknown;
  /** Sends the rest of the body. */
  end(chunk?: string | Uint8Array): unknown;
  /** `close`: a hung answer is forgotten. */
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  /** Ends the response at once. */
  destroy(): unknown;
}

/** A response's connection (a `net.Socket`), as far as the simulator ends it. */
export interface SimSocket {
  /** Whether it is closed. */
  readonly destroyed: boolean;
  /** Closes it at once. */
  destroy(): unknown;
}

/** Where a server listens (`net.AddressInfo`). */
export interface SimAddress {
  /** The bound address, e.g. '127.0.0.1'. */
  address: string;
  /** 'IPv4' or 'IPv6'. */
  family: string;
  /** The port. */
  port: number;
}

/**
 * The listening `node:http` server, as far as a test needs it (with
 * `@types/node`, it is an `http.Server`).
 */
export interface SimServer {
  /** Whether it listens (false once `close()` is done). */
  readonly listening: boolean;
  /** Where it listens: `{ address, family, port }`. */
  address(): SimAddress | string | null;
}

/** The simulator `createSimulator` makes: the world, its clock, its rules and what it saw. */
export interface Simulator {
  /**
   * The request handler to mount on a `node:http` server: it takes `/v1`,
   * `/v1/...` and `/__sim...` (the control API) and returns true, and
   * leaves every other request to the caller (returns false).
   * @example
   * ```js
   * import http from 'node:http';
   * import { createSimulator } from 'ironic-wait/sim';
   *
   * const sim = createSimulator({ nodes: 3 });
   * const server = http.createServer((req, res) => {
   *   if (!sim.handle(req, res)) res.writeHead(404).end(); // your own routes here
   * });
   * await new Promise((listening) => server.listen(0, '127.0.0.1', () => listening(undefined)));
   * const address = server.address();
   * if (address === null || typeof address === 'string') throw new Error('not on TCP');
   * const answer = await fetch(`http://127.0.0.1:${address.port}/v1/nodes`);
   * console.log((await answer.json()).nodes.length); // 3
   * await sim.close();
   * server.close();
   * ```
   */
  handle(req: SimRequest, res: SimResponse): boolean;
  /**
   * Ends delayed, dripping and hung requests (their sockets are destroyed)
   * and the churn timer, so that nothing keeps the process alive.
   * `startSimulator`'s also closes its server and open connections.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 1 });
   * await sim.close();
   * ```
   */
  close(): Promise<void>;
  /**
   * Replace everything (nodes, rules, clock back to 0, log emptied) by
   * `scenario`, which `reset()` then reloads. Throws on a bad scenario and
   * keeps the old world.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator();
   * sim.load({ nodes: [{ name: 'spare', provision_state: 'manageable' }] });
   * console.log(sim.summary().nodes); // 1
   * await sim.close();
   * ```
   */
  load(scenario?: Scenario): void;
  /**
   * Reload the last scenario: nodes, rules, clock (back to 0) and log (emptied). Between tests.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
   * sim.deleteNode('n1');
   * sim.reset();
   * console.log(sim.node('n1')?.provision_state); // 'available'
   * await sim.close();
   * ```
   */
  reset(): void;
  /**
   * The simulator at a glance (what `GET /__sim` answers).
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 20, seed: 3 });
   * const { nodes, byState } = sim.summary();
   * console.log(nodes, byState.available); // 20 and the seeded fleet's share
   * await sim.close();
   * ```
   */
  summary(): SimSummary;
  /**
   * The request log, oldest first (what `GET /__sim/log` answers).
   * @example
   * ```js
   * import { IronicClient } from 'ironic-wait';
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 2 });
   * await new IronicClient({ endpoint: sim.url }).getNode('node-001');
   * const { entries, next } = sim.requests({ method: 'GET', path: '/v1/nodes/*' });
   * console.log(entries.map((e) => `${e.status} ${e.path}`), next); // ['200 /v1/nodes/node-001'] and the last seq
   * await sim.close();
   * ```
   */
  requests(filter?: RequestFilter): RequestLogPage;
  /**
   * The entries of `requests(filter)`.
   * @example
   * ```js
   * import { request, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 1 });
   * await request(sim.url, 'GET', '/v1/nodes/node-000');
   * console.log(sim.log({ node: 'node-000' }).length); // 1
   * await sim.close();
   * ```
   */
  log(filter?: RequestFilter): RequestLogEntry[];
  /**
   * Every node that changed since load, with its state history.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 5 });
   * sim.setNode('node-002', { maintenance: true });
   * console.log(sim.history().map((h) => h.name)); // ['node-002']
   * await sim.close();
   * ```
   */
  history(): StateHistory[];
  /**
   * One node's state history by name or UUID (also after its deletion),
   * or undefined if it never existed.
   * @example
   * ```js
   * import { IronicClient } from 'ironic-wait';
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ manualClock: true, scenario: { nodes: [{ name: 'n1', provision_state: 'manageable' }] } });
   * await new IronicClient({ endpoint: sim.url }).provision('n1', 'provide');
   * sim.advance(10_000);
   * console.log(sim.history('n1')?.entries.map((e) => `${e.t} ${'deleted' in e ? 'deleted' : e.provision_state}`));
   * // ['0 manageable', '0 cleaning', '2000 available']
   * await sim.close();
   * ```
   */
  history(node: string): StateHistory | undefined;
  /**
   * The stored node (timestamps in sim ms) with its transition plan and
   * history, or undefined.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { nodes: [{ name: 'n1', provision_state: 'active' }] } });
   * const n1 = sim.node('n1');
   * console.log(n1?.provision_state, n1?.power_state, n1?.plan); // 'active' 'power on' null
   * await sim.close();
   * ```
   */
  node(ident: string): SimNode | undefined;
  /**
   * Change a node at once, cancelling its transition and power action (throws if there is no such node).
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { nodes: [{ name: 'n1', provision_state: 'active' }] } });
   * sim.setNode('n1', { provision_state: 'deploy failed', last_error: 'BMC unreachable' });
   * console.log(sim.node('n1')?.target_provision_state); // 'active'
   * await sim.close();
   * ```
   */
  setNode(ident: string, fields: NodePatch): void;
  /**
   * Delete a node now (throws if there is no such node): GETs answer 404 from then on.
   * @example
   * ```js
   * import { request, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 1 });
   * sim.deleteNode('node-000');
   * console.log((await request(sim.url, 'GET', '/v1/nodes/node-000')).status); // 404
   * await sim.close();
   * ```
   */
  deleteNode(ident: string): void;
  /** The fault rules. */
  readonly faults: FaultRules;
  /** The transition rules. */
  readonly transitions: TransitionRules;
  /**
   * Sim ms since the scenario loaded.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ manualClock: true });
   * sim.advance(1500);
   * console.log(sim.now()); // 1500
   * await sim.close();
   * ```
   */
  now(): number;
  /**
   * Move a manual clock `ms` forward and apply every change that fell due
   * (throws on a real clock).
   * @example
   * ```js
   * import { IronicClient } from 'ironic-wait';
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ manualClock: true, scenario: { nodes: [{ name: 'n1', provision_state: 'available' }] } });
   * await new IronicClient({ endpoint: sim.url }).provision('n1', 'deploy');
   * sim.advance(1500);
   * console.log(sim.node('n1')?.provision_state); // 'wait call-back'
   * sim.advance(2500);
   * console.log(sim.node('n1')?.provision_state); // 'active'
   * await sim.close();
   * ```
   */
  advance(ms: number): void;
  /**
   * Timestamps written from now on are `ms` off the clock (negative: the
   * server's clock jumped back); `skew(0)` ends it.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ manualClock: true, scenario: { nodes: [{ name: 'n1', provision_state: 'active' }] } });
   * sim.skew(-60_000);
   * sim.setNode('n1', { maintenance: true });
   * console.log(sim.node('n1')?.updated_at); // -60000
   * await sim.close();
   * ```
   */
  skew(ms: number): void;
  /**
   * `count` nodes in `states` (default available and manageable), picked
   * from the seed, flip available <-> manageable now.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 50 });
   * const { changed } = sim.churn({ count: 3, states: ['available'] });
   * console.log(changed.map((c) => `${c.name}: ${c.from} -> ${c.to}`)); // three available nodes, now manageable
   * await sim.close();
   * ```
   */
  churn(options: { count: number; states?: ReadonlyArray<'available' | 'manageable'> }): ChurnFlips;
  /**
   * `count` idle nodes start one of the demo churn's provision actions now
   * (deploys, undeploys, manage and provide, a few failing), as a
   * scenario's `churn` does every round.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 50 });
   * const { started } = sim.churn({ moves: true, count: 5 });
   * console.log(started.map((s) => `${s.name}: ${s.from} -> ${s.action}`)); // e.g. 'node-032: available -> active'
   * await sim.close();
   * ```
   */
  churn(options: { moves: true; count: number }): ChurnMoves;
  /**
   * The node's rows of Ironic's node history (`GET /v1/nodes/{id}/history`), oldest first, or undefined.
   * @example
   * ```js
   * import { IronicClient } from 'ironic-wait';
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({
   *   manualClock: true,
   *   scenario: { nodes: [{ name: 'n1', provision_state: 'available' }], transitions: [{ node: 'n1', action: 'deploy', fail: 'disk on fire' }] },
   * });
   * await new IronicClient({ endpoint: sim.url }).provision('n1', 'deploy');
   * sim.advance(10_000);
   * console.log(sim.events('n1')?.map((e) => `${e.severity} ${e.event_type}: ${e.event}`).at(-1)); // 'ERROR deploying: disk on fire'
   * await sim.close();
   * ```
   */
  events(ident: string): NodeHistoryRow[] | undefined;
  /** The model itself (`sim/ironic.mjs`), for the curious: not part of the typed API, and it may change in any release. */
  readonly world: unknown;
}

/** The simulator `startSimulator` makes: a `Simulator` listening on its own server. */
export interface RunningSimulator extends Simulator {
  /** `http://HOST:PORT`: the endpoint to give a client. */
  readonly url: string;
  /** The port it listens on (the one picked, for port 0). */
  readonly port: number;
  /** The address it listens on. */
  readonly host: string;
  /** The server. */
  readonly server: SimServer;
  /**
   * Closes the server and every open connection, after the simulator's own
   * `close()`: a test never hangs on a hung request.
   * @example
   * ```js
   * import { startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { faults: [{ kind: 'hang' }] } });
   * const hung = fetch(`${sim.url}/v1`).catch((e) => e.name);
   * await new Promise((r) => setTimeout(r, 50));
   * await sim.close();
   * console.log(await hung); // 'TypeError': the socket was destroyed
   * ```
   */
  close(): Promise<void>;
}

// ------------------------------------------------------------------ the entry points

/**
 * Start the simulator on its own server (port 0, 127.0.0.1 by default) and
 * resolve once it listens.
 * @example
 * ```js
 * import { IronicClient } from 'ironic-wait';
 * import { startSimulator } from 'ironic-wait/sim';
 *
 * const sim = await startSimulator({
 *   manualClock: true,
 *   scenario: {
 *     nodes: [{ name: 'web-1', provision_state: 'available' }, { name: 'web-2', provision_state: 'available' }],
 *     transitions: [{ node: 'web-2', action: 'deploy', fail: 'No deploy steps returned by the driver' }],
 *   },
 * });
 * const client = new IronicClient({ endpoint: sim.url });
 * await client.provision(['web-1', 'web-2'], 'deploy');
 * sim.advance(5000); // both deploys have ended
 * console.log(sim.node('web-1')?.provision_state, sim.node('web-2')?.provision_state); // 'active' 'deploy failed'
 * await sim.close();
 * ```
 */
export function startSimulator(options?: StartOptions): Promise<RunningSimulator>;

/**
 * Make a simulator without a socket, to mount its `handle` on a server of
 * your own (see `Simulator.handle`). Throws on a bad scenario.
 * @example
 * ```js
 * import { createSimulator } from 'ironic-wait/sim';
 *
 * const sim = createSimulator({ manualClock: true, scenario: { nodes: [{ name: 'n1', provision_state: 'manageable' }] } });
 * console.log(sim.node('n1')?.provision_state); // 'manageable'
 * await sim.close();
 * ```
 */
export function createSimulator(options?: SimulatorOptions): Simulator;

// ------------------------------------------------------------------ a raw HTTP client

/** Options of `request`. */
export interface RequestOptions {
  /** Sets `X-OpenStack-Ironic-API-Version` (no header: Ironic's 1.1). */
  version?: string;
  /** More headers. */
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON (with `Content-Type: application/json`). */
  body?: unknown;
  /** Destroy the request after this many ms without an answer (rejects with `code` 'TIMEOUT'). */
  timeout?: number;
}

/** The whole answer of `request`. */
export interface RawResponse {
  /** The HTTP status. */
  status: number;
  /** Lower-case header names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The body as text. */
  text: string;
  /** The body parsed, or undefined when it is not JSON (as `JSON.parse` gives it: any shape). */
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON of any shape, read freely in a test, as Response.json() gives it
  json: any;
}

/** `client(base)`: requests to one endpoint at one microversion. */
export interface RawClient {
  /**
   * `GET path` (with its query).
   * @example
   * ```js
   * import { client, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 3 });
   * const res = await client(sim.url).get('/v1/nodes?limit=2&fields=name');
   * for (const node of res.json.nodes) console.log(node.name); // node-000, node-001
   * await sim.close();
   * ```
   */
  get(path: string, options?: RequestOptions): Promise<RawResponse>;
  /**
   * `POST path`.
   * @example
   * ```js
   * import { client, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator();
   * const res = await client(sim.url).post('/v1/nodes', { body: { driver: 'fake-hardware', name: 'new-1' } });
   * console.log(res.status, res.json.provision_state); // 201 'enroll'
   * await sim.close();
   * ```
   */
  post(path: string, options?: RequestOptions): Promise<RawResponse>;
  /**
   * `PUT path`.
   * @example
   * ```js
   * import { client, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ scenario: { nodes: [{ name: 'n1', provision_state: 'active' }] } });
   * const res = await client(sim.url).put('/v1/nodes/n1/states/power', { body: { target: 'power off' } });
   * console.log(res.status, sim.node('n1')?.target_power_state); // 202 'power off'
   * await sim.close();
   * ```
   */
  put(path: string, options?: RequestOptions): Promise<RawResponse>;
  /**
   * `PATCH path` (the simulator's control API takes it: Ironic's node PATCH is not simulated).
   * @example
   * ```js
   * import { client, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 1 });
   * await client(sim.url).patch('/__sim/nodes/node-000', { body: { maintenance: true } });
   * console.log(sim.node('node-000')?.maintenance); // true
   * await sim.close();
   * ```
   */
  patch(path: string, options?: RequestOptions): Promise<RawResponse>;
  /**
   * `DELETE path` (the simulator's control API takes it).
   * @example
   * ```js
   * import { client, startSimulator } from 'ironic-wait/sim';
   *
   * const sim = await startSimulator({ nodes: 1 });
   * const res = await client(sim.url).delete('/__sim/nodes/node-000');
   * console.log(res.status, sim.node('node-000')); // 204 undefined
   * await sim.close();
   * ```
   */
  delete(path: string, options?: RequestOptions): Promise<RawResponse>;
}

/**
 * One HTTP request, answered whole: no retries, no redirects followed, no
 * parsing beyond JSON. For looking at the simulator (or any Ironic) from a
 * test without the library's rules in between.
 * @example
 * ```js
 * import { request, startSimulator } from 'ironic-wait/sim';
 *
 * const sim = await startSimulator({ nodes: 1 });
 * const res = await request(sim.url, 'GET', '/v1/nodes/node-000?fields=name', { version: 'latest' });
 * console.log(res.status, res.headers['x-openstack-ironic-api-version'], res.json.name); // 200 '1.115' 'node-000'
 * await sim.close();
 * ```
 */
export function request(base: string, method: string, path: string, options?: RequestOptions): Promise<RawResponse>;

/**
 * Requests to `base` at microversion `version` ('1.115').
 * @example
 * ```js
 * import { client, startSimulator } from 'ironic-wait/sim';
 *
 * const sim = await startSimulator({ nodes: 1 });
 * const api = client(sim.url);
 * const res = await api.patch('/__sim/nodes/node-000', { body: { provision_state: 'clean failed', last_error: 'x' } });
 * console.log(res.json.provision_state); // 'clean failed'
 * await sim.close();
 * ```
 */
export function client(base: string, version?: string): RawClient;

/**
 * `PUT /v1/nodes/{node}/states/provision` with `{ target, ...extra }`.
 * @example
 * ```js
 * import { client, provision, startSimulator } from 'ironic-wait/sim';
 *
 * const sim = await startSimulator({ scenario: { nodes: [{ name: 'n1', provision_state: 'manageable' }] } });
 * const res = await provision(client(sim.url), 'n1', 'clean', { clean_steps: [{ interface: 'deploy', step: 'erase_devices' }] });
 * console.log(res.status, sim.node('n1')?.provision_state); // 202 'cleaning'
 * await sim.close();
 * ```
 */
export function provision(api: RawClient, node: string, target: ProvisionAction, extra?: Record<string, unknown>): Promise<RawResponse>;

/**
 * The `faultstring` of an Ironic error answer (`{"error_message": "<JSON text>"}`).
 * @example
 * ```js
 * import { faultstring, request, startSimulator } from 'ironic-wait/sim';
 *
 * const sim = await startSimulator();
 * const res = await request(sim.url, 'GET', '/v1/nodes/ghost');
 * console.log(res.status, faultstring(res)); // 404 'Node ghost could not be found.'
 * await sim.close();
 * ```
 */
export function faultstring(res: RawResponse): string;
