// One fleet measurement (the fleet table of `npm run bench`): a fresh
// simulator with F nodes (bench/fleet-sim-child.mjs), one client process
// waiting for N of them while 1% of the fleet changes per round, and the
// figures per round that come out of the two. See bench/README.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXPECTED, waitedPositions } from './schedule.mjs';
import { listUuids, startClient, startSimulator } from './wait.mjs';

/** A request arriving this long after the end of the last answer of a round begins a new round. */
export const ROUND_GAP_MS = 500;
/** The page size the change feed's target counts changes in. */
export const PAGE = 1000;

const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const percentile = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((sorted.length * p) / 100) - 1)];
};

/**
 * The client's rounds, from the simulator's request log (arrival order). A
 * request begins a new round when it arrives more than ROUND_GAP_MS after
 * every answer of the round so far, or when it repeats a request of the
 * round (the same method, path and query, and no `marker`: a node GET, or a
 * list's first page): back-to-back rounds of GETs have no gap.
 */
export function splitRounds(requests) {
  const rounds = [];
  let round = null;
  requests.forEach((r, i) => {
    const key = /(^|&)marker=/.test(r.query) ? null : `${r.method} ${r.path}?${r.query}`;
    if (!round || r.at - round.end > ROUND_GAP_MS || (key && round.keys.has(key))) {
      round = { first: i, start: r.at, end: r.at, requests: 0, in: 0, out: 0, keys: new Set() };
      rounds.push(round);
    }
    if (key) round.keys.add(key);
    round.requests++;
    round.in += r.in;
    round.out += r.out;
    round.end = Math.max(round.end, r.end ?? r.at);
  });
  for (const r of rounds) delete r.keys;
  return rounds;
}

/** What a request is, for the breakdown: the version document, a node GET, a full list page, a changes page. */
function kindOf(r) {
  const path = r.path.replace(/\/+$/, '');
  if (path === '' || path === '/v1') return 'version';
  if (path === '/v1/nodes' || path === '/v1/nodes/detail') return /sort_key=provision_updated_at/.test(r.query) ? 'changes' : 'list';
  if (/^\/v1\/nodes\/[^/]+$/.test(path)) return r.method === 'GET' ? 'node' : 'other';
  return 'other';
}

/** The figures of one fleet run, from what the client and the simulator saw. */
export function fleetFigures(uuids, client, server) {
  const { requests, changes } = server;
  if (client.outcomes.reached !== uuids.length) {
    const first = client.unreached?.[0];
    const how = first
      ? `; the first: ${first.node} ${first.outcome} in ${first.state} after ${first.polls} polls, ${first.elapsed} s${first.error ? ` (${first.error})` : ''}`
      : '';
    throw new Error(`not every node reached ${EXPECTED}: ${JSON.stringify(client.outcomes)}${how}`);
  }
  const arrived = new Map();
  for (const [at, uuid, state] of changes) if (state === EXPECTED) arrived.set(uuid, at);
  const lags = uuids.map((uuid, i) => {
    if (!arrived.has(uuid))
      throw new Error(
        `node ${uuid} never reached ${EXPECTED} at the simulator (${arrived.size} did, of ${uuids.length}; ${changes.length} changes)`,
      );
    if (client.settledAt[i] === null) throw new Error(`the client never reported node ${uuid} settled`);
    return client.settledAt[i] - arrived.get(uuid);
  });

  const rounds = splitRounds(requests);
  // Changes per round: the distinct nodes that changed since the previous round began.
  let c = 0;
  rounds.forEach((round, i) => {
    const nodes = new Set();
    while (c < changes.length && changes[c][0] <= round.start) nodes.add(changes[c++][1]);
    round.changes = nodes.size;
    round.index = i + 1;
  });
  // Quiet: from the third round on (the first checks every node; the
  // change feed's second is its full listing), no node changed from the
  // previous round's start to this round's last answer.
  let k = 0;
  for (const [i, round] of rounds.entries()) {
    if (i < 2) {
      round.quiet = false;
      continue;
    }
    const from = rounds[i - 1].start;
    while (k < changes.length && changes[k][0] <= from) k++;
    round.quiet = !(k < changes.length && changes[k][0] <= round.end);
  }

  // CPU per round: the process's CPU when it called fetch for the round's
  // first request, to the same for the next round (the last: to the end).
  const trace = client.trace ?? [];
  const traced = trace.length / 2 === requests.length;
  const cpuAt = (i) => trace[2 * i + 1];
  const totalUs = client.cpuSeconds * 1e6;
  if (traced) {
    rounds.forEach((round, i) => {
      const from = i === 0 ? 0 : cpuAt(round.first);
      const to = i + 1 < rounds.length ? cpuAt(rounds[i + 1].first) : totalUs;
      round.cpuMs = (to - from) / 1000;
    });
  }

  // Missed: a waited node the client did not see in `active` by the end of
  // the first round that began after it arrived (it was seen a round or
  // more later, by a full listing or by chance). A change feed that reads
  // every changed row misses none.
  const missed = [];
  uuids.forEach((uuid, i) => {
    const r = rounds.findIndex((round) => round.start > arrived.get(uuid));
    const next = r >= 0 ? rounds[r + 1] : undefined;
    if (next && client.settledAt[i] > next.start) missed.push(uuid);
  });

  const byKind = {};
  for (const r of requests) byKind[kindOf(r)] = (byKind[kindOf(r)] ?? 0) + 1;
  // Quiet rounds before the lone change (the newest change is the start's
  // burst of N) and after it (the newest change is one node's).
  for (const r of rounds) if (r.quiet) r.quiet = server.loneChange !== null && r.start > server.loneChange ? 'lone' : 'burst';
  const quiet = rounds.filter((r) => r.quiet === 'lone');
  const burst = rounds.filter((r) => r.quiet === 'burst');
  // Rounds with changes, from the third on: what the change feed's target is about.
  const busy = rounds.filter((r, i) => i >= 2 && !r.quiet);
  const within = busy.filter((r) => r.requests <= Math.ceil(r.changes / PAGE) + 1);
  const over = busy.filter((r) => r.requests > Math.ceil(r.changes / PAGE) + 1);
  const bytesOut = requests.reduce((a, r) => a + r.out, 0);
  const bytesIn = requests.reduce((a, r) => a + r.in, 0);
  return {
    requests: requests.length,
    byKind,
    rounds: rounds.length,
    requestsPerRound: requests.length / rounds.length,
    firstTwoRequests: rounds.slice(0, 2).reduce((a, r) => a + r.requests, 0),
    quietRounds: quiet.length,
    quietRequests: mean(quiet.map((r) => r.requests)),
    quietRequestsMax: quiet.length ? Math.max(...quiet.map((r) => r.requests)) : null,
    quietKB: mean(quiet.map((r) => r.out / 1024)),
    burstRounds: burst.length,
    burstRequests: mean(burst.map((r) => r.requests)),
    burstCpuMs: traced ? mean(burst.map((r) => r.cpuMs)) : null,
    busyRounds: busy.length,
    busyWithin: within.length,
    busyChanges: mean(busy.map((r) => r.changes)),
    busyRequests: mean(busy.map((r) => r.requests)),
    busyWorst: over.length
      ? over.reduce((w, r) => (r.requests - Math.ceil(r.changes / PAGE) > w.requests - Math.ceil(w.changes / PAGE) ? r : w))
      : null,
    kbPerRound: bytesOut / 1024 / rounds.length,
    bytesOut,
    bytesIn,
    cpuSeconds: client.cpuSeconds,
    cpuMsPerRound: (client.cpuSeconds * 1000) / rounds.length,
    quietCpuMs: traced ? mean(quiet.map((r) => r.cpuMs)) : null,
    quietCpuMsMax: traced && quiet.length ? Math.max(...quiet.map((r) => r.cpuMs)) : null,
    traced,
    detectMeanMs: mean(lags),
    detectP95Ms: percentile(lags, 95),
    detectMaxMs: Math.max(...lags),
    waitSeconds: (client.settled - client.started) / 1000,
    churned: server.churned,
    // Heartbeats that touched a node during the wait (the heartbeat case), and their share of a round.
    touches: server.touches ?? 0,
    touchesPerRound: (server.touches ?? 0) / rounds.length,
    missed: missed.length,
    peakRssBytes: client.peakRssBytes,
    // Every round, for the record (bench writes them to a JSON file beside the report).
    roundLog: rounds.map((r) => ({
      round: r.index,
      at: +((r.start - client.started) / 1000).toFixed(3),
      ms: +(r.end - r.start).toFixed(1),
      requests: r.requests,
      kinds: countBy(requests.slice(r.first, r.first + r.requests), kindOf),
      firstQuery: requests[r.first].query.replace(/marker=[^&]*/, 'marker=…'),
      changes: r.changes,
      quiet: r.quiet,
      kb: +(r.out / 1024).toFixed(1),
      cpuMs: r.cpuMs === undefined ? null : +r.cpuMs.toFixed(2),
    })),
  };
}

/**
 * Measures one client (its `command`, with `config` added to its config
 * file) waiting for `waited` nodes of a fleet of `fleet` on `schedule`,
 * polling every `pollInterval` s (unless `config` says otherwise): the
 * client is started and ready first, then the waited nodes are sent
 * `active` and the counting starts, then the client is told to go.
 * `heartbeating` (schedule.mjs HEARTBEATING): a share of the fleet is
 * mid-deploy and heartbeating all along.
 */
export async function measureFleet({ command, fleet, waited, schedule, pollInterval, timeoutMs, config = {}, heartbeating = null }) {
  const sim = await startSimulator([fleet, schedule, { waited, heartbeating }], './fleet-sim-child.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-fleet-'));
  let client;
  try {
    const all = await listUuids(sim.url);
    if (all.length !== fleet) throw new Error(`the simulator listed ${all.length} nodes, not ${fleet}`);
    const uuids = waitedPositions(fleet, waited).map((p) => all[p]);
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify({ url: sim.url, uuids, expected: EXPECTED, pollInterval, trace: true, ...config }));
    client = await startClient(command, configPath);
    await sim.call('start', uuids);
    const result = await client.go(timeoutMs);
    const server = await sim.call('report');
    // A client exits once it has answered; a profiled one (BENCH_CPU_PROF) writes its profile then.
    if (process.env.BENCH_CPU_PROF) await client.exited;
    return fleetFigures(uuids, result, server);
  } finally {
    client?.kill();
    sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** How many of `items` there are of each `keyOf(item)`. */
function countBy(items, keyOf) {
  const counts = {};
  for (const item of items) counts[keyOf(item)] = (counts[keyOf(item)] ?? 0) + 1;
  return counts;
}
