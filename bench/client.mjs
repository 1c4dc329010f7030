// One JS client's wait, in a process of its own (started by bench/run.mjs):
//   node bench/client.mjs ironic-wait|ironic-wait+checkpoint|floor|floor-http CONFIG.json
// Loads the client, prints `ready`, waits for `go` on stdin, then waits for
// every node and prints one JSON line: CPU during the wait (from just before
// the call until its promise settles), peak RSS, and the wall-clock instant
// at which each node was first seen settled (onProgress for ironic-wait, the
// floor's own callback), on the clock every bench process shares.
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
const { url, uuids, expected, pollInterval } = JSON.parse(readFileSync(configPath, 'utf8'));
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
  wait = async () => {
    const report = await client.waitForProvisionState(uuids, expected, {
      pollInterval,
      settle: 'all',
      onProgress: (event) => event.done && seen(event.node),
      ...(keep && { onCheckpoint }),
    });
    return new Map(report.nodes.map((n) => [n.node, n.outcome]));
  };
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
const outcomes = await wait();
const settled = wall();
const cpu = process.cpuUsage(cpu0);

const counts = {};
for (const outcome of outcomes.values()) counts[outcome] = (counts[outcome] ?? 0) + 1;
process.stdout.write(`${JSON.stringify({
  started,
  settled,
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
  peakRssBytes: process.resourceUsage().maxRSS * 1024,
  outcomes: counts,
  ...(checkpoints && { checkpoints }),
  settledAt: uuids.map((u) => settledAt.get(u) ?? null),
})}\n`, () => process.exit(0));
