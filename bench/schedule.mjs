// The schedule every client is measured on: N nodes in `available`, all sent
// `active` at the same instant, just before the client is told to go; the
// simulator walks each one deploying -> wait call-back -> deploying -> active
// with durations it draws from the seed, per node (so the same seed gives
// every client the same instants, whatever it asks and when).

export const SEED = 10;
// Fixed, so that every run's bodies (timestamps included) are the same bytes.
export const EPOCH = '2026-01-01T00:00:00Z';
export const EXPECTED = 'active';
/** Seconds between a client's rounds (python-ironicclient's default); smoke's 1 s halves its waits. */
export const POLL_INTERVAL = { full: 2, quick: 2, smoke: 1 };

/**
 * Phase durations in ms. Full: each node reaches `active` 5-25 s after the
 * start; quick: 1-5 s; smoke: 0.25-0.7 s, before the second round (1 s
 * after the first), so that every wait takes two rounds (the first sees the
 * nodes under way, the second sees them arrived): the report end to end,
 * not figures to read.
 */
export const TIMING = {
  full: { deploying: [1500, 8000], 'wait call-back': [2000, 9000] },
  quick: { deploying: [300, 1500], 'wait call-back': [400, 2000] },
  smoke: { deploying: [100, 250], 'wait call-back': [50, 200] },
};

/** Earliest and latest arrival in `active`, in seconds after the start. */
export function window(timing) {
  const [dLo, dHi] = timing.deploying;
  const [wLo, wHi] = timing['wait call-back'];
  return [(2 * dLo + wLo) / 1000, (2 * dHi + wHi) / 1000];
}

/** The simulator's scenario for `nodes` nodes. */
export function scenario(nodes, timing) {
  const width = String(nodes - 1).length;
  return {
    seed: SEED,
    epoch: EPOCH,
    timing,
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `node-${String(i).padStart(width, '0')}`,
      provision_state: 'available',
    })),
  };
}

// ------------------------------------------------------------------ the fleet
// A fleet of F nodes, all `available`; N of them (a seeded sample, spread
// over the whole fleet, so that a list poller cannot stop paging early) are
// waited for. At the start the N are sent `active` and each walks deploying
// -> wait call-back -> deploying -> active with durations drawn from the
// seed. Nothing else changes until the first of them leaves `deploying`
// (the quiet phase); from then on 1% of the fleet per 2 s round, among the
// nodes not waited for, flips available <-> manageable (the simulator's
// churn), in small batches every CHURN_TICK_MS, until the wait is over.

/** F, N pairs measured by `--fleet` (N <= F), and the one `--quick` (and `--smoke`) measures. */
export const FLEET_SIZES = {
  full: [
    [10000, 1000],
    [10000, 10000],
    [100000, 1000],
    [100000, 10000],
  ],
  quick: [[10000, 1000]],
};
/** Share of the fleet that changes per round during the churn phase, and the round it is counted per. */
export const CHURN = { fraction: 0.01, perMs: 2000 };
export const CHURN_TICK_MS = 250;
/** K concurrent waits: on one client, and on K clients. */
export const FLEET_K = 10;

/**
 * The waited nodes' phase durations in ms (`timing`), and the instant (ms
 * after the start) of the quiet phase's one lone change (`loneAt`): one
 * node, not waited for, flips available -> manageable. Full: the quiet
 * phase is the first 14 s (the first `deploying` lasts at least that), the
 * lone change at 7.5 s, arrivals in `active` 29-40 s after the start; quick:
 * quiet 5.5 s, the lone change at 1.2 s, arrivals 11.5-14 s; smoke: quiet
 * 0.3 s, the lone change at 0.15 s, arrivals 0.65-0.95 s, before the second
 * round (1 s after the first), so no quiet or churn round of the fixed
 * interval: smoke checks the report, not the change feed.
 *
 * Why a lone change: the waited nodes are all sent `active` at one instant,
 * so until another change comes, the newest `provision_updated_at` of the
 * fleet is theirs, N nodes stamped alike. Quiet rounds before the lone
 * change show what a quiet round costs after such a burst; those after it,
 * what it costs when the newest change is a single node's.
 */
export const FLEET_SCHEDULE = {
  full: { timing: { deploying: [14000, 18000], 'wait call-back': [1000, 4000] }, loneAt: 7500 },
  quick: { timing: { deploying: [5500, 6500], 'wait call-back': [500, 1000] }, loneAt: 1200 },
  smoke: { timing: { deploying: [300, 400], 'wait call-back': [50, 150] }, loneAt: 150 },
};

/**
 * The fleet table's heartbeat case: this share of the fleet, never a waited
 * node, is mid-deploy from the start, in `wait call-back` with its agent
 * heartbeating at Ironic's default (`heartbeatTimeout` 300 s, the
 * simulator's: one heartbeat every 90 to 180 s a node, each touching
 * provision_updated_at with no change of state). At F = 10,000 that is
 * 2,000 nodes and some 30 touches a 2 s round; at F = 100,000, 300.
 */
export const HEARTBEATING = { share: 0.2, heartbeatTimeout: 300 };

/**
 * The fleet's scenario: `scenario(fleet, timing)`, and with `heartbeating`
 * ({ share, heartbeatTimeout }) that share of the nodes not waited for
 * (a seeded sample) loaded in `wait call-back`, powered on, last touched
 * within the 180 s before the start as a heartbeating node would be.
 */
export function fleetScenario(fleet, waited, timing, heartbeating = null) {
  const s = scenario(fleet, timing);
  if (!heartbeating) return s;
  const taken = new Set(waitedPositions(fleet, waited));
  const free = Array.from({ length: fleet }, (_, i) => i).filter((p) => !taken.has(p));
  const count = Math.min(free.length, Math.round(fleet * heartbeating.share));
  const rand = prng(SEED * 104729 + fleet + waited);
  for (let k = 0; k < count; k++) {
    // the first `count` of a seeded permutation of the free positions
    const j = k + Math.floor(rand() * (free.length - k));
    [free[k], free[j]] = [free[j], free[k]];
    Object.assign(s.nodes[free[k]], {
      provision_state: 'wait call-back',
      power_state: 'power on',
      provision_updated_at: -Math.floor(rand() * 180_000),
    });
  }
  s.heartbeatTimeout = heartbeating.heartbeatTimeout;
  return s;
}

/** When the quiet phase ends (ms after the start): the first waited node's first change after `deploying`. */
export const quietUntil = (timing) => timing.deploying[0];

/** A seeded PRNG (mulberry32): the same draws for a seed on every run. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The positions (in the fleet's list order) of the `waited` nodes of a fleet of `fleet`, ascending: a seeded sample. */
export function waitedPositions(fleet, waited) {
  const rand = prng(SEED * 7919 + fleet + waited);
  const all = Array.from({ length: fleet }, (_, i) => i);
  for (let k = 0; k < waited; k++) {
    // the first `waited` of a seeded permutation
    const j = k + Math.floor(rand() * (fleet - k));
    [all[k], all[j]] = [all[j], all[k]];
  }
  return all.slice(0, waited).sort((a, b) => a - b);
}

/**
 * The K waits' node sets, as positions in the list of N waited nodes: a
 * shared slice (the first N/20) that every wait has, and the rest split in
 * K parts, one to each wait. Their union is the N.
 */
export function kGroups(waited, k = FLEET_K) {
  const shared = Math.floor(waited / 20);
  const rest = waited - shared;
  const groups = [];
  for (let i = 0; i < k; i++) {
    const from = shared + Math.floor((rest * i) / k);
    const to = shared + Math.floor((rest * (i + 1)) / k);
    groups.push([...Array.from({ length: shared }, (_, j) => j), ...Array.from({ length: to - from }, (_, j) => from + j)]);
  }
  return groups;
}
