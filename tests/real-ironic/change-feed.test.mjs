// The change feed (`listMode: 'changes'`, the default) side by side with
// list mode (`listMode: 'list'`) against a real Ironic 39 whose [api]
// max_limit is 40, so that the fleet of 120 nodes takes 4 list requests: the
// same outcomes, and the requests counted. And a scope (`owner`) on the real
// API. Each client names itself by its User-Agent, so the proxy tells their
// requests apart.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { realIronic, until } from './support.mjs';

const MAX_LIMIT = 40;
const named = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
const FEED = named('cf-a', 30);
const LIST = named('cf-b', 30);
const OTHERS = named('cf-x', 60);

let ironic;
before(async () => {
  ironic = await realIronic('change-feed', { maxLimit: MAX_LIMIT });
  // At most 8 at a time: Ironic's web server has a small backlog.
  const all = [...FEED, ...LIST, ...OTHERS];
  for (let i = 0; i < all.length; i += 8) {
    await Promise.all(all.slice(i, i + 8).map((name) => ironic.createNode({ name })));
  }
  // Owners set in the database: without auth, Ironic's API lets no one
  // give a node an owner other than the caller's (empty) project.
  assert.equal(await ironic.sql("UPDATE nodes SET owner = 'team-a' WHERE name LIKE 'cf-a-%'"), FEED.length);
  assert.equal(await ironic.sql("UPDATE nodes SET owner = 'team-b' WHERE name LIKE 'cf-b-%'"), LIST.length);
});
after(() => ironic?.close());

const lists = (requests, agent) => requests.filter((r) => r.userAgent === agent && r.method === 'GET' && r.path === '/v1/nodes');
const sorted = (r) => r.query.get('sort_key') === 'provision_updated_at' && r.query.get('sort_dir') === 'desc';

/**
 * A node that failed, with what Ironic says of it now: on SQLite, Ironic
 * can fail an action under concurrent writes ("database is locked") and
 * put the node back where it was, with the reason only in its last_error.
 */
async function withLastError(e) {
  if (!e?.node) throw e;
  const node = await ironic.node(e.node);
  throw new Error(`${e.message} (Ironic now: ${node.provision_state}, last_error: ${node.last_error})`, { cause: e });
}

test('manage, then provide: the change feed and list mode side by side, the same outcomes', async (t) => {
  const feed = new IronicClient({ endpoint: ironic.url, userAgent: 'feed' });
  const list = new IronicClient({ endpoint: ironic.url, userAgent: 'list' });
  const options = { pollInterval: 0.5, listThreshold: 10 };
  for (const [action, expected] of [
    ['manage', 'manageable'],
    ['provide', 'available'],
  ]) {
    const start = ironic.seen.length;
    const [byFeed, byList] = await Promise.all([
      feed.provision(FEED, action, { ...options, wait: true, timeout: 600 }).catch(withLastError),
      list.provision(LIST, action, { ...options, wait: true, timeout: 600, listMode: 'list' }).catch(withLastError),
    ]);
    for (const report of [byFeed, byList]) {
      assert.equal(report.ok, true);
      assert.deepEqual(new Set(report.nodes.map((n) => `${n.outcome} ${n.state}`)), new Set([`reached ${expected}`]));
    }
    const requests = ironic.seen.slice(start);
    const feedLists = lists(requests, 'feed');
    const listLists = lists(requests, 'list');
    t.diagnostic(
      `${action}: the feed's client sent ${feedLists.length} list requests (${feedLists.filter(sorted).length} of them changes pages) and ` +
        `${byFeed.requests} requests in all; list mode ${listLists.length} and ${byList.requests}`,
    );
    assert.ok(
      listLists.every((r) => !sorted(r) && !r.query.get('fields').includes('provision_updated_at')),
      'list mode never sorts',
    );
    // The feed: after the first round (stopping early) and one full listing
    // with the stamps, each round asks for changes, newest first, and
    // stops where the entries grow older than what it has seen.
    const changes = feedLists.filter(sorted);
    assert.ok(changes.length >= 1, 'rounds by the feed');
    assert.ok(changes.every((r) => r.status === 200 && r.query.get('fields').includes('provision_updated_at')));
    for (const r of changes) {
      const entries = JSON.parse(r.body).nodes;
      // Newest first; a node never moved (null) last.
      const stamps = entries.map((n) => (n.provision_updated_at === null ? -Infinity : Date.parse(n.provision_updated_at)));
      assert.ok(
        stamps.every((s, i) => i === 0 || s <= stamps[i - 1]),
        `newest first: ${stamps}`,
      );
    }
    // What a round of the feed costs against a round of list mode: the
    // list reads the pages up to the last waited node every round.
    const roundsOfChanges = changes.filter((r) => !r.query.has('marker')).length;
    assert.ok(changes.length <= 2 * roundsOfChanges, `${changes.length} changes pages in ${roundsOfChanges} rounds`);
  }
});

test('a scope narrows every list on the real API', async () => {
  const client = new IronicClient({ endpoint: ironic.url, userAgent: 'scoped' });
  const start = ironic.seen.length;
  // team-a's nodes, and one of team-b's: outside the scope, it is got by itself.
  const report = await client.waitForProvisionState([...FEED, LIST[0]], 'available', {
    timeout: 300,
    listThreshold: 10,
    scope: { owner: 'team-a' },
  });
  assert.equal(report.ok, true);
  const requests = ironic.seen.slice(start).filter((r) => r.userAgent === 'scoped');
  const listed = lists(requests, 'scoped');
  assert.ok(listed.length >= 1 && listed.every((r) => r.query.get('owner') === 'team-a'));
  for (const r of listed) {
    assert.ok(
      JSON.parse(r.body).nodes.every((n) => n.name.startsWith('cf-a-')),
      'only team-a in the list',
    );
  }
  const gets = requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/nodes/'));
  assert.deepEqual(
    gets.map((r) => r.path),
    [`/v1/nodes/${LIST[0]}`],
  );
});

test('watch on the real API: every node of the scope once, then the moves of a manage, then one request a quiet round', async (t) => {
  const client = new IronicClient({ endpoint: ironic.url, userAgent: 'watch' });
  const start = ironic.seen.length;
  const added = new Set();
  const moved = new Map();
  let managing;
  // A bound, not a budget: the manage takes seconds.
  for await (const change of client.watch({ scope: { owner: 'team-b' }, pollInterval: 0.5, signal: AbortSignal.timeout(300_000) })) {
    if (change.type === 'added') added.add(change.node.name);
    else moved.set(change.node.name, [...(moved.get(change.node.name) ?? []), change.node.provision_state]);
    if (added.size === LIST.length && !managing) {
      managing = client.provision(LIST.slice(0, 3), 'manage', { wait: true, timeout: 600 });
    }
    if (LIST.slice(0, 3).every((n) => moved.get(n)?.at(-1) === 'manageable')) break;
  }
  assert.deepEqual([...added].sort(), LIST, 'every node of the scope once, none of another');
  assert.deepEqual([...moved.keys()].sort(), LIST.slice(0, 3), 'only the nodes that moved');
  assert.equal((await managing).ok, true);
  const listed = lists(ironic.seen.slice(start), 'watch');
  assert.ok(listed.every((r) => r.query.get('owner') === 'team-b'));
  const changes = listed.filter(sorted);
  t.diagnostic(`the watch sent ${listed.length} lists, ${changes.length} of them changes pages`);
  // The start is a full listing (30 nodes, one page of 40); after it, each
  // round is one changes page: the moves of 3 nodes fit in it (a fast
  // Ironic may have them manageable by the first).
  assert.equal(listed.length - changes.length, 1, 'one full listing');
  assert.ok(changes.length >= 1 && changes.every((r) => !r.query.has('marker')), 'one page a round');
  // Quiet now: another few rounds (counted at the proxy, however long they take), one request
  // each, and no change; then the watch is stopped by its signal.
  const before = ironic.seen.length;
  const stop = new AbortController();
  const enough = new Error('three rounds seen');
  const quiet = client.watch({ scope: { owner: 'team-b' }, pollInterval: 0.3, initial: false, signal: stop.signal });
  const watching = (async () => {
    for await (const change of quiet) assert.fail(`no change expected: ${JSON.stringify(change)}`);
  })();
  const quietLists = () => lists(ironic.seen.slice(before), 'watch');
  try {
    await Promise.race([
      until(() => quietLists().length >= 3 && quietLists().every((r) => r.status !== null), 'three quiet rounds'),
      watching, // a change (or an error) ends the watch early: fail at once
    ]);
  } finally {
    stop.abort(enough);
  }
  await assert.rejects(watching, (e) => e === enough);
  const rounds = quietLists();
  assert.ok(rounds.length >= 3 && rounds.slice(1).every(sorted), rounds.map((r) => r.query.toString()).join('\n'));
});
