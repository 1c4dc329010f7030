// Checkpoints against a real Ironic 39 (fake-hardware, slowed so that a
// deploy takes seconds): a deploy with wait on three nodes whose call is
// aborted at its first checkpoint (the PUTs sent) and taken up by a new
// client from that checkpoint, beside the same deploy uninterrupted on three
// twin nodes; and a step loop, a new client per step, to the end. Every
// provision PUT is counted in the recording proxy's log: one per node.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { realIronic, sleep } from './support.mjs';

const TOKEN = 'real-ironic-resume-token-6c1f'; // Ironic runs without auth and ignores it; no checkpoint may hold it
const NO_CLEANING = { automated_clean: false };
const WAIT = { wait: true, timeout: 600, pollInterval: 0.5 };

let ironic;
before(async () => {
  ironic = await realIronic('resume');
});
after(() => ironic?.close());

const client = () => new IronicClient({ endpoint: ironic.url, token: TOKEN });
const outcomes = (report) => report.nodes.map((n) => [n.node, n.outcome, n.state, n.lastError ?? null]);
/**
 * Provision PUTs through the proxy (the helpers' own requests go to Ironic directly), by the node named in
 * the path; of `only` those nodes when given.
 */
function putsByNode(only) {
  const counts = {};
  for (const r of ironic.requests('PUT', '/v1/nodes/*/states/provision')) {
    const node = r.path.split('/')[3];
    if (!only || only.includes(node)) counts[node] = (counts[node] ?? 0) + 1;
  }
  return counts;
}
const once = (names) => Object.fromEntries(names.map((n) => [n, 1]));
/** Brings the nodes to available through the REST API, at most 8 at a time (Ironic's small backlog). */
async function available(names) {
  for (let i = 0; i < names.length; i += 8) {
    await Promise.all(names.slice(i, i + 8).map((name) => ironic.nodeIn('available', { name, ...NO_CLEANING })));
  }
}

test('deploy with wait on three nodes, aborted at its checkpoint after the PUTs, resumed by a new client: the uninterrupted outcomes, one PUT a node', async () => {
  const whole = ['base-1', 'base-2', 'base-3'];
  const cut = ['cut-1', 'cut-2', 'cut-3'];
  await available([...whole, ...cut]);

  const uninterrupted = client().provision(whole, 'deploy', WAIT);

  const controller = new AbortController();
  const checkpoints = [];
  const first = await client()
    .provision(cut, 'deploy', {
      ...WAIT,
      signal: controller.signal,
      onCheckpoint: (cp) => {
        checkpoints.push(cp);
        controller.abort();
      },
    })
    .then(
      () => 'resolved',
      (e) => e,
    );
  assert.equal(first, controller.signal.reason, 'the first call rejects with the signal reason');
  assert.equal(checkpoints.length, 1);
  assert.ok(!checkpoints[0].includes(TOKEN), 'the checkpoint holds no token');
  // Cut mid-wait: Ironic is deploying every node, and each got its PUT.
  for (const name of cut) assert.equal((await ironic.node(name)).target_provision_state, 'active', `${name} is on its way`);
  assert.deepEqual(putsByNode(cut), once(cut));

  const since = ironic.seen.length;
  const progress = [];
  const later = [];
  const resumed = await client().resume(checkpoints[0], {
    onProgress: (e) => progress.push([e.node, e.state, e.done, e.outcome]),
    onCheckpoint: (cp) => later.push(cp),
  });
  const reference = await uninterrupted;

  assert.equal(reference.ok, true, JSON.stringify(reference));
  assert.deepEqual(
    outcomes(reference),
    whole.map((n) => [n, 'reached', 'active', null]),
  );
  assert.equal(resumed.ok, true, JSON.stringify(resumed));
  assert.deepEqual(
    outcomes(resumed).map(([, ...rest]) => rest),
    outcomes(reference).map(([, ...rest]) => rest),
    'the same outcomes as the uninterrupted call',
  );
  assert.deepEqual(
    outcomes(resumed).map(([n]) => n),
    cut,
  );
  for (const name of cut) {
    assert.ok(
      progress.some(([node, state, done, outcome]) => node === name && state === 'active' && done && outcome === 'reached'),
      name,
    );
    const node = await ironic.node(name);
    assert.deepEqual([node.provision_state, node.target_provision_state], ['active', null], name);
  }
  assert.deepEqual(putsByNode(), { ...once(whole), ...once(cut) }, 'each node one PUT');
  const resumedRequests = ironic.seen.slice(since);
  assert.ok(
    resumedRequests.length > 0 && resumedRequests.every((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/')),
    `the resumed call only checks nodes: ${resumedRequests.map((r) => `${r.method} ${r.path}`).join(', ')}`,
  );
  assert.ok(later.length > 0 && later.every((cp) => !cp.includes(TOKEN)), 'the resumed call hands out checkpoints, none with the token');
});

test('deploy with wait on three nodes as a step loop, a new client per step: PUTs in the first step only, every node active', async (t) => {
  const nodes = ['step-1', 'step-2', 'step-3'];
  await available(nodes);

  let checkpoint = client().checkpoint('provision', nodes, 'deploy', WAIT);
  const sinceStart = ironic.seen.length;
  const steps = [];
  let last;
  for (;;) {
    assert.ok(steps.length < 200, `no end after ${steps.length} steps`);
    const since = ironic.seen.length;
    last = await client().step(checkpoint);
    const sent = ironic.seen.slice(since);
    steps.push({
      puts: sent.filter((r) => r.method === 'PUT').length,
      gets: sent.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/')).length,
    });
    if (!last.checkpoint) break;
    assert.ok(!last.checkpoint.includes(TOKEN), 'no token in a checkpoint');
    assert.equal(last.report, null);
    assert.equal(last.error, null);
    assert.ok(last.wakeAtMs <= Date.now() + 1000, `wakeAtMs within a poll interval (${last.wakeAtMs - Date.now()} ms)`);
    await sleep(Math.max(0, last.wakeAtMs - Date.now()));
    checkpoint = last.checkpoint;
  }

  t.diagnostic(`${steps.length} steps: ${JSON.stringify(steps)}`);
  assert.equal(last.wakeAtMs, null);
  assert.equal(last.error, null);
  assert.equal(last.report.ok, true, JSON.stringify(last.report));
  assert.deepEqual(
    outcomes(last.report),
    nodes.map((n) => [n, 'reached', 'active', null]),
  );
  assert.ok(steps.length >= 3, `the PUTs, then rounds until every node is active (${steps.length} steps)`);
  assert.equal(steps[0].puts, 3, 'the first step sends the PUTs');
  assert.ok(
    steps.slice(1).every((s) => s.puts === 0 && s.gets >= 1 && s.gets <= nodes.length),
    JSON.stringify(steps),
  );
  assert.equal(ironic.seen.slice(sinceStart).filter((r) => r.method === 'PUT').length, 3);
  assert.deepEqual(putsByNode(nodes), once(nodes), 'each node one PUT');
  for (const name of nodes) {
    const node = await ironic.node(name);
    assert.deepEqual([node.provision_state, node.target_provision_state], ['active', null], name);
  }
});
