// The schedule every client is measured on: N nodes in `available`, all sent
// `active` at the same instant, just before the client is told to go; the
// simulator walks each one deploying -> wait call-back -> deploying -> active
// with durations it draws from the seed, per node (so the same seed gives
// every client the same instants, whatever it asks and when).

export const SEED = 10;
// Fixed, so that every run's bodies (timestamps included) are the same bytes.
export const EPOCH = '2026-01-01T00:00:00Z';
export const EXPECTED = 'active';
export const POLL_INTERVAL = 2;

/** Phase durations in ms. Full: each node reaches `active` 5-25 s after the start; quick: 1-5 s. */
export const TIMING = {
  full: { deploying: [1500, 8000], 'wait call-back': [2000, 9000] },
  quick: { deploying: [300, 1500], 'wait call-back': [400, 2000] },
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
