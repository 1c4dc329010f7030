// The soak: one client deploys 2,000 nodes and waits for all of them
// (settle 'all') for several minutes against a simulator that misbehaves at
// random (seeded): 409s and 503s, latency, resets, list pages cut
// mid-stream, malformed node bodies. Nodes settle throughout the run:
// transitions last from a tenth to nine tenths of it; some fail, some are
// deleted, some never finish.
//
// List pages break by being cut (a transport failure, retried), not by
// malformed JSON: a malformed page is final for every node the round had
// not found yet (settle 'all' gives them 'error'), so at any random
// fraction it would end most of the soak at once. Malformed bodies go to
// the per-node GETs, where they end just that node; the fault matrix covers
// malformed pages.
//
// Asserted: the JS heap and the wasm memory, sampled every few seconds after
// a full GC, stay flat after warm-up; every node is reported exactly once
// (in the wait's report and by one final progress event, or as a PUT
// refused after its retries) with the outcome the simulator's own record
// explains; the requests the server saw are within rounds x pages plus
// fallbacks and retries.
//
// Length: IRONIC_WAIT_SOAK=full (`npm run soak`) soaks for 180 s; without it
// (`npm test`) a short soak of 60 s makes the same checks, memory sampled
// more often. SOAK_SECONDS sets the length either way. Nothing is judged on
// the wall clock: outcomes against the simulator's record and the order of
// the requests it saw, request counts against the rounds the client's clock
// allows. The simulator runs in a child process, so that the memory sampled
// here is the client's.
//
// The PUTs (2,000 of them, unscaled) come first, with the simulator's clock
// standing still (it is manual: driveClock moves it with the wall clock once
// the wait begins), then the wait of the soak's length. A loaded machine took
// from 24 to 47 s over the PUTs: inside one provision call whose deadline
// counts them, the nodes PUT last could not finish in time and the memory's
// steady state shrank to a few samples, as the machine's speed decided. So
// every deploy begins at the same instant, when the wait begins, and the wait
// has the whole length to itself, however long the PUTs took.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { rng } from '../../sim/rng.mjs';
import { MiB, memorySample, startSimProcess } from './hostile-servers.mjs';

const FULL = process.env.IRONIC_WAIT_SOAK === 'full';
const SECONDS = Number(process.env.SOAK_SECONDS ?? (FULL ? 180 : 60));
const COUNT = 2000;
const POLL = 0.25; // s
// At least 60 samples in a run (every 3 s in the full soak).
const SAMPLE_EVERY = Math.min(3000, (SECONDS * 1000) / 60); // ms
// Warm-up: the first rounds of the wait, where the wasm memory reaches its
// high-water mark (pages parsed while others are in flight): a quarter of
// the run, and at least 10 s after the first node settled (counted from the
// wait's start: the PUTs come before it).
const WARM_UP = 0.25; // of the run
const WARM_UP_AFTER_FIRST = Math.min(10, SECONDS / 6); // s: 10 s in the full soak
// Margins over the first third's peak, for the last third's peak.
// wasm: memory grows by whole 64 KiB pages and never shrinks; after warm-up
// the high-water mark is set by the largest page read (~150 kB of JSON, a
// few copies while parsing). 1 MiB (16 pages) is slack for allocator
// fragmentation; a leak of a few bytes per node per round (2,000 nodes x
// hundreds of rounds) would exceed it several times over.
const WASM_MARGIN = 1 * MiB;
// JS heap after a full GC: the client keeps one promise and its callbacks;
// undici's pool and Node's own caches move by a MiB or two. 4 MiB more
// than that would be a leak of ~1 kB per request over the last two thirds.
const HEAP_MARGIN = 4 * MiB;

const names = Array.from({ length: COUNT }, (_, i) => `soak-${String(i).padStart(4, '0')}`);

/** How often the simulator's clock is moved. */
const TICK_MS = 100;

/**
 * Moves the simulator's manual clock with the wall clock from `from` (performance.now()) on: simStart +
 * the time since then. Returns { stop(), before(wallMs) }: `before(wallMs)` is the simulator's time as
 * the last move answered by then left it, a lower bound of the time at which a request sent from then
 * on arrives.
 */
function driveClock(sim, simStart, from) {
  let stopped = false;
  let timer;
  let simNow = simStart;
  let ticking = Promise.resolve();
  let failed = null;
  let failures = 0;
  const moves = [{ answeredAt: from, sim: simStart }];
  const tick = async () => {
    try {
      // After a move that failed (it may have been made, its answer lost), the clock is read again.
      if (failures) simNow = await sim.now();
      const behind = simStart + (performance.now() - from) - simNow;
      if (behind > 0) {
        simNow = await sim.advance(Math.ceil(behind));
        moves.push({ answeredAt: performance.now(), sim: simNow });
      }
      failures = 0;
    } catch (e) {
      // A control request can fail on a loaded machine (a loaded run saw 'fetch failed'): tried again
      // at the next tick, given up after ten in a row.
      failures += 1;
      if (failures >= 10) failed ??= e;
    }
    if (!stopped && !failed) timer = setTimeout(() => (ticking = tick()), TICK_MS);
  };
  ticking = tick();
  return {
    /** Stops moving it, once the move under way is made; throws if a move failed. */
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await ticking;
      if (failed) throw new Error(`moving the simulator's clock failed: ${failed.message} ${failed.cause?.code ?? failed.cause ?? ''}`);
    },
    before: (wall) => moves.filter((m) => m.answeredAt <= wall).at(-1).sim,
  };
}

/** The scenario: durations in sim ms (time scale 1) spread over the run. */
function scenario() {
  const ms = (fraction) => Math.round(fraction * SECONDS * 1000);
  const pick = rng(11, 'soak nodes');
  const fate = new Map();
  for (const name of names) {
    const r = pick();
    fate.set(name, r < 0.02 ? 'fail' : r < 0.03 ? 'delete' : r < 0.04 ? 'stall' : 'deploy');
  }
  const having = (f) => names.filter((n) => fate.get(n) === f);
  return {
    fate,
    scenario: {
      seed: 7,
      manualClock: true,
      timing: { deploying: [ms(0.04), ms(0.25)], 'wait call-back': [0, ms(0.2)] },
      nodes: [...names.map((name) => ({ name, provision_state: 'available' })), { name: 'ok1', provision_state: 'active' }],
      transitions: [
        { node: having('fail'), action: 'active', fail: 'soak: deploy step failed' },
        { node: having('delete'), action: 'active', delete: true },
        { node: having('stall'), action: 'active', stall: true },
      ],
      faults: [
        { kind: 'latency', ms: 150, fraction: 0.05 },
        { method: 'PUT', kind: 'status', status: 409, fraction: 0.02 },
        { method: 'GET', kind: 'status', status: 503, fraction: 0.02 },
        { kind: 'reset', fraction: 0.005 },
        { method: 'GET', path: '/v1/nodes', kind: 'cut', fraction: 0.01 },
        { method: 'GET', path: '/v1/nodes/*', kind: 'malformed', fraction: 0.01 },
      ],
    },
  };
}

test(`soak: ${COUNT} nodes for ${SECONDS} s with random faults; memory flat, every node reported once`, {
  // The PUTs, then the wait; a bound far past both (it only tells a hang).
  timeout: (SECONDS + 300) * 1000,
}, async () => {
  const { fate, scenario: world } = scenario();
  const sim = await startSimProcess(world);
  const samples = [];
  let sampling;
  let clock;
  try {
    const client = new IronicClient({ endpoint: sim.url, token: 'soak-token', requestTimeout: 10, retryInterval: 0.2 });
    await client.getNode('ok1'); // negotiated and warm before the first sample
    const done = new Map(); // node -> final progress events
    let events = 0;
    let firstSettled;
    const simStart = await sim.now();
    const t0 = performance.now();
    const sample = async () => samples.push({ t: (performance.now() - t0) / 1000, ...(await memorySample()) });
    await sample();
    sampling = setInterval(sample, SAMPLE_EVERY);
    let report;
    let started;
    let sent;
    try {
      // The PUTs, the simulator's clock standing still.
      sent = await client.provision(names, 'deploy', { settle: 'all' });
      // Then the wait, the clock moving with the wall clock.
      started = performance.now();
      clock = driveClock(sim, simStart, started);
      report = await client.waitForProvisionState(
        sent.nodes.filter((n) => n.outcome === 'accepted').map((n) => n.node),
        'active',
        {
          timeout: SECONDS,
          pollInterval: POLL,
          settle: 'all',
          onProgress: (e) => {
            events++;
            if (!e.done) return;
            firstSettled ??= (performance.now() - started) / 1000;
            done.set(e.node, [...(done.get(e.node) ?? []), e.outcome]);
          },
        },
      );
    } finally {
      clearInterval(sampling);
      await clock?.stop();
    }
    const putSeconds = (started - t0) / 1000;
    const elapsed = (performance.now() - started) / 1000;
    // The steady state is judged on these (building the final report is not part of it), on the wait's time.
    const during = samples.map((s) => ({ ...s, t: s.t - putSeconds }));
    await sample();
    console.log(
      `soak timeline (s): the PUTs took ${putSeconds.toFixed(1)}, then the first node settled after ${firstSettled?.toFixed(1)} and the wait was over after ${elapsed.toFixed(1)}; ${during.filter((s) => s.t >= 0).length} memory samples during the wait`,
    );

    // Every node exactly once: a PUT refused after its retries (an error of its own), or waited for, in the
    // caller's order, with a final event of the same outcome.
    const refused = sent.nodes.filter((n) => n.outcome !== 'accepted');
    assert.deepEqual(
      refused.filter((n) => n.outcome !== 'error' || !(n.error instanceof Error)).map((n) => `${n.node}: ${n.outcome}`),
      [],
      'a PUT is accepted, or refused with an error',
    );
    assert.deepEqual([...report.nodes, ...refused].map((n) => n.node).sort(), names, 'every node once: waited for, or its PUT refused');
    assert.deepEqual(
      report.nodes.map((n) => n.node),
      names.filter((n) => !refused.some((r) => r.node === n)),
      'the report lists every node waited for once, in order',
    );
    const twice = [...done].filter(([, outcomes]) => outcomes.length !== 1);
    assert.deepEqual(twice, [], 'one final progress event per node');
    assert.equal(done.size, report.nodes.length, `${report.nodes.length - done.size} nodes had no final progress event`);
    const disagree = report.nodes.filter((n) => done.get(n.node)[0] !== n.outcome);
    assert.deepEqual(
      disagree.map((n) => n.node),
      [],
      'the final event and the report agree',
    );

    // Each outcome is one the simulator's record explains: the node's end
    // (active, deploy failed, deleted) came before the last request the
    // simulator saw, or, for timed-out, not before the final check began.
    const ends = new Map();
    for (const h of await sim.histories()) {
      const end = h.entries.find((e) => e.deleted || e.provision_state === 'active' || e.provision_state === 'deploy failed');
      if (end) ends.set(h.name, end.t);
    }
    const expected = { deploy: 'reached', fail: 'failed', delete: 'not-found', stall: 'timed-out' };
    // A loaded machine may start the final check late: outcomes are judged
    // against when it came, not against the deadline.
    // The change feed sees a deletion only in a full listing: the reconciling
    // one (every minute a page: 3 minutes for this fleet, so none before the
    // deadline here) or the final check's. A fault in the final check (a cut
    // page, a 503, a reset: no retry starts after the deadline) leaves a
    // node deleted since the first listing timed-out, as it must.
    const log = (await sim.log()).filter((e) => e.t >= simStart);
    // The final check: what the simulator saw from the earliest instant the deadline can be on its
    // clock on (a full listing, or a GET per node when few are left; perhaps the tail of a round): the
    // clock as the last move made before the deadline (the client's deadline is SECONDS after the call,
    // which came after `started`) left it.
    const finalFrom = clock.before(started + SECONDS * 1000);
    const final = log.filter((e) => e.t >= finalFrom);
    const finalAt = final[0]?.t ?? finalFrom;
    const lastSeen = Math.max(...log.map((e) => e.t));
    // Nothing but checks after the deadline (the PUTs all came before the wait).
    assert.deepEqual(
      final.filter((e) => e.method !== 'GET').map((e) => `${e.method} ${e.path}`),
      [],
      'requests after the deadline that are not checks',
    );
    // What the final check was, for the messages below.
    const finalSeen = `${final.length} requests after the deadline: ${final
      .slice(0, 3)
      .map((e) => `${e.method} ${e.path}${e.query ? `?${e.query.replace(/fields=[^&]*&?/, '')}` : ''} ${e.status ?? e.fault}`)
      .join(', ')}${final.length > 3 ? ', ...' : ''}`;
    const faulted = (e) => e.status === 503 || e.status === null || e.fault === 'cut' || e.fault === 'malformed';
    const finalFaults = final.filter((e) => e.method === 'GET' && faulted(e)).length;
    const byOutcome = refused.length ? { error: refused.length } : {};
    const unexplained = [];
    for (const n of report.nodes) {
      byOutcome[n.outcome] = (byOutcome[n.outcome] ?? 0) + 1;
      const f = fate.get(n.node);
      const end = ends.get(n.node) ?? Infinity;
      // A malformed body, or retries exhausted: that node's check failed.
      if (n.outcome === 'error') {
        if (!(n.error instanceof Error)) unexplained.push(`${n.node}: error without an Error`);
      } else if (n.outcome === 'timed-out') {
        // Ended before the final check began: it showed the end, unless a fault in it (a cut page, a
        // 503, a reset: not retried after the deadline) hid the node.
        if (end < finalAt && finalFaults === 0) {
          unexplained.push(`${n.node} (${f}): timed-out, but it ended ${((finalAt - end) / 1000).toFixed(1)} s before the final check`);
        }
      } else if (n.outcome !== expected[f]) {
        unexplained.push(`${n.node} (${f}): ${n.outcome}`);
      } else if (end > lastSeen) {
        unexplained.push(`${n.node} (${f}): ${n.outcome}, but it ended after the last request the simulator saw`);
      }
      if (n.outcome === 'reached' && n.state !== 'active') unexplained.push(`${n.node}: reached in ${n.state}`);
      if (n.outcome === 'failed' && n.lastError !== 'soak: deploy step failed') unexplained.push(`${n.node}: failed with ${n.lastError}`);
    }
    assert.deepEqual(unexplained.slice(0, 10), [], `${unexplained.length} unexplained outcomes; ${finalSeen}`);
    assert.ok(byOutcome.reached > COUNT * 0.8, `most nodes reached: ${JSON.stringify(byOutcome)}`);
    assert.ok((byOutcome.error ?? 0) < COUNT * 0.1, `few errors: ${JSON.stringify(byOutcome)}`);

    // Requests: per round at most three list pages (2,000 nodes in pages
    // of 1,000, and the empty last one) or one GET per unsettled node (fewer
    // than the list threshold, 50), plus one fallback GET per node missing
    // from the list, plus retries, plus the PUTs.
    const count = (f) => log.filter(f).length;
    const puts = count((e) => e.method === 'PUT');
    const firstPages = count((e) => e.path === '/v1/nodes' && !/marker=/.test(e.query));
    const pages = count((e) => e.path === '/v1/nodes');
    const singles = count((e) => e.method === 'GET' && e.path.startsWith('/v1/nodes/'));
    const retried = count((e) => e.status === 503 || e.status === 409 || e.status === null || e.fault === 'malformed' || e.fault === 'cut');
    // The rounds the client's clock allows: at most one every POLL of the wait (which `elapsed`, taken
    // around the call, includes).
    const rounds = Math.ceil(elapsed / POLL) + 2;
    const figures = {
      seconds: +elapsed.toFixed(1),
      putSeconds: +putSeconds.toFixed(1),
      requests: log.length,
      puts,
      listPages: pages,
      listRounds: firstPages,
      singleGets: singles,
      faulted: retried,
      finalFaults,
      reportRequests: sent.requests + report.requests,
      reportRetries: sent.retries + report.retries,
      events,
      outcomes: byOutcome,
    };
    assert.ok(puts <= COUNT * 6, `PUTs: ${JSON.stringify(figures)}`);
    assert.ok(firstPages <= rounds, `list rounds ${firstPages} > ${rounds}: ${JSON.stringify(figures)}`);
    assert.ok(pages <= 3 * firstPages + retried, `list pages: ${JSON.stringify(figures)}`);
    assert.ok(singles <= rounds * 50 + COUNT + retried, `single GETs: ${JSON.stringify(figures)}`);
    // (That the wait ends at all is the test's own timeout's to judge: the stalled nodes never finish.)

    // Memory: flat after warm-up.
    const warmUp = Math.max(WARM_UP * SECONDS, firstSettled + WARM_UP_AFTER_FIRST);
    const steady = during.filter((s) => s.t >= warmUp);
    assert.ok(steady.length >= 6, `${steady.length} samples after warm-up`);
    const third = Math.floor(steady.length / 3);
    const peak = (list, k) => Math.max(...list.map((s) => s[k]));
    const first = steady.slice(0, third);
    const last = steady.slice(-third);
    const mib = (b) => `${(b / MiB).toFixed(1)} MiB`;
    const memory = {
      samples: samples.length,
      warmUp: +warmUp.toFixed(1),
      heap: { first: mib(peak(first, 'heapUsed')), last: mib(peak(last, 'heapUsed')), peak: mib(peak(samples, 'heapUsed')) },
      wasm: { first: mib(peak(first, 'wasm')), last: mib(peak(last, 'wasm')), peak: mib(peak(samples, 'wasm')) },
      rss: { first: mib(peak(first, 'rss')), last: mib(peak(last, 'rss')), peak: mib(peak(samples, 'rss')) },
      arrayBuffers: { peak: mib(peak(samples, 'arrayBuffers')) },
    };
    console.log(`soak figures: ${JSON.stringify({ ...figures, memory })}`);
    console.log(
      `soak samples (s, heap MiB, wasm MiB, rss MiB): ${samples.map((s) => [s.t, s.heapUsed / MiB, s.wasm / MiB, s.rss / MiB].map((x) => x.toFixed(1)).join(' ')).join(' | ')}`,
    );
    assert.ok(peak(last, 'wasm') <= peak(first, 'wasm') + WASM_MARGIN, `wasm memory grew: ${JSON.stringify(memory.wasm)}`);
    assert.ok(peak(last, 'heapUsed') <= peak(first, 'heapUsed') + HEAP_MARGIN, `JS heap grew: ${JSON.stringify(memory.heap)}`);

    // And the client still works.
    const healthy = await client.waitForProvisionState('ok1', 'active', { timeout: 5 });
    assert.equal(healthy.ok, true);
  } finally {
    clearInterval(sampling);
    await clock?.stop().catch(() => {});
    await sim.close();
  }
});
