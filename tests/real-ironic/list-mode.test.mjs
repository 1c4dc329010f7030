// List mode (`listMode: 'list'`: every round a list in full, no change feed;
// tests/real-ironic/change-feed.test.mjs has the feed) against a real Ironic
// whose [api] max_limit is 40, so that a node
// list has several pages: 64 nodes waited for, then 40 more nodes after them
// in Ironic's order that nobody waits for. Each round must be one paginated
// list that follows Ironic's `next` links and stops at the page where the last
// unsettled node was found (never reaching the last page, which holds only
// the other nodes); per-node GETs only once fewer than listThreshold remain
// and no more than the last list's pages.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { realIronic } from './support.mjs';

const MAX_LIMIT = 40;
const WAITED = Array.from({ length: 64 }, (_, i) => `lm-${String(i).padStart(2, '0')}`);
const OTHERS = Array.from({ length: 40 }, (_, i) => `lx-${String(i).padStart(2, '0')}`);

let ironic;
before(async () => {
  ironic = await realIronic('list-mode', { maxLimit: MAX_LIMIT });
  // Created in two batches so that every waited node comes before every other one (Ironic lists by id).
  // At most 8 at a time: Ironic's web server has a small backlog.
  for (const batch of [WAITED, OTHERS]) {
    for (let i = 0; i < batch.length; i += 8) {
      await Promise.all(batch.slice(i, i + 8).map((name) => ironic.createNode({ name })));
    }
  }
});
after(() => ironic?.close());

/**
 * The list rounds among `requests` (a round starts with a list request without a marker), each
 * with its pages: the request and the nodes of the answer.
 */
function listRounds(requests) {
  const rounds = [];
  for (const r of requests.filter((x) => x.method === 'GET' && x.path === '/v1/nodes')) {
    const page = { request: r, body: JSON.parse(r.body) };
    if (!r.query.has('marker')) rounds.push([page]);
    else rounds.at(-1).push(page);
  }
  return rounds;
}

/** Checks every list round of one wait for `waited` nodes that settle in `expected`; returns the rounds. */
function checkRounds(start, expected, listThreshold, waited = WAITED) {
  const requests = ironic.seen.slice(start);
  const rounds = listRounds(requests);
  assert.ok(rounds.length >= 1, 'at least one list round');
  const unsettled = new Set(waited);
  // A round lists from listThreshold unsettled nodes on, or while the last
  // list took fewer pages (requests) than one GET per unsettled node.
  let lastPages = Infinity;
  for (const [i, pages] of rounds.entries()) {
    assert.ok(
      unsettled.size >= listThreshold || unsettled.size > lastPages,
      `round ${i + 1}: a list with ${unsettled.size} unsettled nodes (the last list took ${lastPages} pages)`,
    );
    lastPages = pages.length;
    const wanted = new Set(unsettled);
    for (const [j, { request, body }] of pages.entries()) {
      assert.equal(request.status, 200);
      assert.equal(body.nodes.length, j < pages.length - 1 ? MAX_LIMIT : body.nodes.length, 'full pages before the last');
      if (j > 0) {
        // The marker is the one Ironic's previous page named in its `next` link.
        const next = new URL(pages[j - 1].body.next);
        assert.equal(request.query.get('marker'), next.searchParams.get('marker'), `round ${i + 1} page ${j + 1}`);
        assert.equal(request.query.get('marker'), pages[j - 1].body.nodes.at(-1).uuid);
      }
      for (const n of body.nodes) wanted.delete(n.name);
      // The round ends at the page where the last unsettled node was found, not before, not after.
      assert.equal(
        wanted.size === 0,
        j === pages.length - 1,
        `round ${i + 1}: ${pages.length} page(s); after page ${j + 1}, ${wanted.size} unsettled node(s) not yet seen`,
      );
    }
    for (const { body } of pages) {
      for (const n of body.nodes) {
        if (unsettled.has(n.name) && n.provision_state === expected && !n.target_provision_state) unsettled.delete(n.name);
      }
    }
  }
  // After the list rounds: per-node GETs for the nodes still unsettled, and no list.
  const lastList = requests.lastIndexOf(rounds.at(-1).at(-1).request);
  const gets = requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/'));
  assert.ok(
    gets.every((r) => requests.indexOf(r) > lastList),
    'no per-node GET during the list rounds',
  );
  assert.ok(
    gets.every((r) => unsettled.has(r.path.slice('/v1/nodes/'.length))),
    'per-node GETs only for unsettled nodes',
  );
  if (gets.length) {
    assert.ok(
      unsettled.size < listThreshold && unsettled.size <= lastPages,
      `per-node GETs with ${unsettled.size} unsettled (the last list took ${lastPages} pages)`,
    );
  }
  return rounds;
}

test('manage 64 nodes: one paginated list per round, stopping once every node is found', async (t) => {
  const client = new IronicClient({ endpoint: ironic.url });
  const start = ironic.seen.length;
  const report = await client.provision(WAITED, 'manage', { wait: true, timeout: 600, pollInterval: 0.5, listMode: 'list' });
  assert.equal(report.ok, true);
  assert.deepEqual(new Set(report.nodes.map((n) => `${n.outcome} ${n.state}`)), new Set(['reached manageable']));
  const rounds = checkRounds(start, 'manageable', 50);
  t.diagnostic(`list rounds, pages in each: ${rounds.map((r) => r.length).join(' ')}`);
  // The first round wants all 64: two pages (40 + 24 of ours), never the third (only the others).
  assert.equal(rounds[0].length, 2);
  assert.ok(rounds.every((pages) => pages.length <= 2));
});

test('provide 64 nodes, every round a list (listThreshold 1): each round stops at the page of the last unsettled node', async (t) => {
  const client = new IronicClient({ endpoint: ironic.url });
  const start = ironic.seen.length;
  const report = await client.provision(WAITED, 'provide', {
    wait: true,
    timeout: 600,
    pollInterval: 1,
    listThreshold: 1,
    listMode: 'list',
  });
  assert.equal(report.ok, true);
  assert.deepEqual(new Set(report.nodes.map((n) => `${n.outcome} ${n.state}`)), new Set(['reached available']));
  const rounds = checkRounds(start, 'available', 1);
  t.diagnostic(`list rounds, pages in each: ${rounds.map((r) => r.length).join(' ')}`);
  assert.equal(ironic.seen.slice(start).filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/')).length, 0);
  assert.ok(rounds.length >= 2, `${rounds.length} rounds`);
  assert.equal(report.requests, 64 + rounds.flat().length, 'the PUTs and the list pages, nothing else');
});

test('nodes that are all on the first page: one page per round', async (t) => {
  // The first page of Ironic's own order (by id), whatever order the nodes were created in.
  const first = (await ironic.api('GET', '/v1/nodes?fields=name')).body.nodes.map((n) => n.name);
  assert.equal(first.length, MAX_LIMIT);
  const client = new IronicClient({ endpoint: ironic.url });
  const start = ironic.seen.length;
  const report = await client.waitForProvisionState(first, 'available', { timeout: 300, listThreshold: 1, listMode: 'list' });
  assert.equal(report.ok, true);
  const rounds = checkRounds(start, 'available', 1, first);
  t.diagnostic(`list rounds, pages in each: ${rounds.map((r) => r.length).join(' ')}`);
  assert.deepEqual(
    rounds.map((r) => r.length),
    [1],
    'one round of one page: they are all available already',
  );
});

test('a timeout: the final check at the deadline reads every page, so every node is checked there', async (t) => {
  // The 64 nodes rest in `available`; waiting for `active` (unexpected
  // stable states allowed) can only time out. Each round, the last one at the
  // deadline included, must read both pages of the 64.
  const client = new IronicClient({ endpoint: ironic.url });
  const start = ironic.seen.length;
  const report = await client.waitForProvisionState(WAITED, 'active', {
    timeout: 3,
    pollInterval: 1,
    settle: 'all',
    failOnUnexpectedState: false,
    listMode: 'list',
  });
  assert.deepEqual(new Set(report.nodes.map((n) => n.outcome)), new Set(['timed-out']));
  const rounds = listRounds(ironic.seen.slice(start));
  t.diagnostic(`list rounds, pages in each: ${rounds.map((r) => r.length).join(' ')}`);
  assert.ok(rounds.length >= 2, `${rounds.length} rounds`);
  assert.deepEqual(
    rounds.map((r) => r.length),
    rounds.map(() => 2),
    'two pages in every round',
  );
  assert.deepEqual(new Set(report.nodes.map((n) => n.polls)), new Set([rounds.length]), 'every node checked in every round');
});
