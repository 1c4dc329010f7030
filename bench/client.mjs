// One JS client's wait, in a process of its own (started by bench/run.mjs):
//   node bench/client.mjs ironic-wait|ironic-wait+checkpoint|floor|floor-http CONFIG.json
// Loads the client, prints `ready`, waits for `go` on stdin, then waits for
// every node and prints one JSON line: CPU during the wait (from just before
// the call until its promise settles), peak RSS, and the wall-clock instant
// at which each node was first seen settled (onProgress for ironic-wait, the
// floor's own callback), on the clock every bench process shares.
//
// The fleet table (bench/fleet.mjs) adds to the config: `options`, more wait
// options for ironic-wait (listMode, listThreshold); `groups`, K waits at
// once, each on these positions of `uuids`, on one client or, with
// `separate`, each on a client of its own (K IronicClient instances in this
// process); `trace`, a record of every request the process sends during the
// wait: the wall-clock instant and the process's CPU so far as it called
// `fetch`, so that the CPU can be cut into the rounds the simulator saw.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
const wall = () => performance.timeOrigin + performance.now();

/**
 * Resolves once the process is idle: after start-up V8 keeps compiling and
 * collecting on its own threads for a few hundred ms, which would otherwise
 * be counted in the wait. Idle = under 1 ms of CPU in 100 ms (at most 5 s).
 */
async function quiet() {
  const used = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  const deadline = performance.now() + 5000;
  let before = used();
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = used();
    if (now - before < 1) return;
    before = now;
  }
}

const [kind, configPath] = process.argv.slice(2);
const {
  url,
  uuids,
  expected,
  pollInterval,
  options = {},
  groups = null,
  separate = false,
  trace: tracing = false,
} = JSON.parse(readFileSync(configPath, 'utf8'));

// Installed before any client is loaded (the package calls the global
// `fetch` by name on every request, as the floor does); records only once
// the wait has begun: [wall ms, CPU µs since the wait began] a request.
let trace = null;
let traceCpu0 = null;
if (tracing) {
  const original = globalThis.fetch;
  globalThis.fetch = function fetch(input, init) {
    if (trace) {
      const { user, system } = process.cpuUsage(traceCpu0);
      trace.push(wall(), user + system);
    }
    return original.call(this, input, init);
  };
}
// The first few nodes an ironic-wait wait did not see reach the state, as its report has them (for the error).
const unreached = [];
const note = (report) => {
  for (const { node, outcome, state, targetState, lastError, polls, elapsed, error } of report.nodes) {
    if (outcome !== 'reached' && unreached.length < 10) {
      unreached.push({
        node,
        outcome,
        state,
        targetState,
        lastError,
        polls,
        elapsed,
        ...(error && { error: `${error.name}: ${error.message}` }),
      });
    }
  }
  return report;
};
const settledAt = new Map();
const seen = (uuid) => {
  if (!settledAt.has(uuid)) settledAt.set(uuid, wall());
};

/** Starts the wait; resolves with a Map uuid -> outcome. */
let wait;
// ironic-wait+checkpoint: the same wait keeping its latest checkpoint (in
// memory: what storing it costs is the storage's, not the package's).
let checkpoints = null;
if (kind === 'ironic-wait' || kind === 'ironic-wait+checkpoint') {
  const { IronicClient } = await import('ironic-wait');
  const client = new IronicClient({ endpoint: url });
  const keep = kind === 'ironic-wait+checkpoint';
  if (keep) checkpoints = { count: 0, lastChars: 0, maxChars: 0 };
  const onCheckpoint = (text) => {
    checkpoints.count += 1;
    checkpoints.lastChars = text.length;
    checkpoints.maxChars = Math.max(checkpoints.maxChars, text.length);
  };
  const waitOn = (on, nodes) =>
    on
      .waitForProvisionState(nodes, expected, {
        pollInterval,
        settle: 'all',
        onProgress: (event) => event.done && seen(event.node),
        ...(keep && { onCheckpoint }),
        ...options,
      })
      .then(note);
  if (groups) {
    // K waits started in one turn (they share their first round on one client).
    const clients = groups.map((_, i) => (separate && i > 0 ? new IronicClient({ endpoint: url }) : client));
    wait = async () => {
      const reports = await Promise.all(
        groups.map((positions, i) =>
          waitOn(
            clients[i],
            positions.map((p) => uuids[p]),
          ),
        ),
      );
      const outcomes = new Map();
      // A node is `reached` when every wait on it reached it; otherwise the first other outcome.
      for (const report of reports) {
        for (const n of report.nodes) {
          if ((outcomes.get(n.node) ?? 'reached') === 'reached') outcomes.set(n.node, n.outcome);
        }
      }
      return outcomes;
    };
  } else {
    wait = async () => {
      const report = await waitOn(client, uuids);
      return new Map(report.nodes.map((n) => [n.node, n.outcome]));
    };
  }
} else if (kind === 'floor' || kind === 'floor-http') {
  const { waitForNodes } = await import('./floor.mjs');
  const transport = kind === 'floor-http' ? 'http' : 'fetch';
  wait = () => waitForNodes(url, uuids, expected, { pollInterval, onSettled: seen, transport });
} else {
  throw new Error(`unknown client ${kind}`);
}

// Node loads its fetch implementation on first use (a tenth of a second or
// more of CPU, once per process, whatever the client): done here, so that the
// wait measures the client. The start-up table covers first-use costs.
await (await fetch(`${url}/v1`)).arrayBuffer();
await quiet();

const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of lines) if (line.trim() === 'go') break;

const cpu0 = process.cpuUsage();
const started = wall();
if (tracing) {
  traceCpu0 = cpu0;
  trace = [];
}
const outcomes = await wait();
const settled = wall();
const cpu = process.cpuUsage(cpu0);

const counts = {};
for (const outcome of outcomes.values()) counts[outcome] = (counts[outcome] ?? 0) + 1;
process.stdout.write(
  `${JSON.stringify({
    started,
    settled,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    outcomes: counts,
    ...(checkpoints && { checkpoints }),
    ...(trace && { trace }),
    ...(unreached.length && { unreached }),
    settledAt: uuids.map((u) => settledAt.get(u) ?? null),
  })}\n`,
  () => process.exit(0),
);
