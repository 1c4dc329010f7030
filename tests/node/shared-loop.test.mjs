// One poll loop per client, from JS against the simulator: K concurrent
// waits on one client cost what one wait on their union costs (counted at
// the simulator), the change feed and the list mode, the scope, and the
// options' errors.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { InvalidArgumentError, IronicClient, UnsupportedVersionError } from 'ironic-wait';
import { provision, client as simClient } from '../../sim/testkit.mjs';
import { startIronic } from './harness.mjs';
import { recordFetches } from './hostile-servers.mjs';

let ironic;
afterEach(() => ironic?.close());

const FLEET = 300;
const WAITED = 120;
const name = (i) => `n${String(i).padStart(4, '0')}`;

/** Whether a request begins a round's listing: a first page (no marker). */
const beginsListing = (entry) => entry.method === 'GET' && entry.url.startsWith('/v1/nodes?') && !entry.url.includes('marker=');
/** Simulator ms the clock moves as each round begins (see deployingFleet). */
const ROUND_MS = 300;
/** Rounds' first pages that arrived while another list request was in flight (see deployingFleet). */
let overlapping = [];

/**
 * A fleet of available nodes (owners alternate), the first WAITED of them deploying (by default 900 ms
 * deploying, 600 ms in wait call-back, 900 ms deploying again). `lockstep` (the default): the
 * simulator's clock is manual and moves ROUND_MS as each round's listing begins, so the deploys
 * advance by the client's rounds, not by the wall clock, and every run makes the same rounds however
 * loaded the machine: the eighth finds them all active (on the wall clock a loaded machine's rounds
 * came late: one run cost 6 requests, another 10). Without it, the simulator's real clock.
 */
async function deployingFleet(size = FLEET, timing = { deploying: 900, 'wait call-back': 600 }, { lockstep = true } = {}) {
  const fleet = Array.from({ length: size }, (_, i) => ({
    name: name(i),
    provision_state: 'available',
    owner: i % 2 ? 'odd' : 'even',
  }));
  let sim;
  overlapping = [];
  const onRequest = (entry) => {
    if (!beginsListing(entry)) return;
    if (ironic.seen.some((e) => e !== entry && e.open && e.url.startsWith('/v1/nodes?'))) overlapping.push(entry.url);
    sim.advance(ROUND_MS);
  };
  ironic = await startIronic({ nodes: fleet, timing }, lockstep ? { manualClock: true, onRequest } : {});
  sim = ironic.sim;
  const api = simClient(ironic.url);
  await Promise.all(Array.from({ length: WAITED }, (_, i) => provision(api, name(i), 'active')));
  ironic.seen.length = 0;
  return new IronicClient({ endpoint: ironic.url });
}

const lists = () => ironic.seen.filter((r) => r.method === 'GET' && r.url.startsWith('/v1/nodes?'));
const gets = () => ironic.seen.filter((r) => r.method === 'GET' && r.url.startsWith('/v1/nodes/'));
const waitOptions = { timeout: 60, pollInterval: 0.3, settle: 'all', listThreshold: 20 };

test('K waits on one client cost what one wait on their union costs (K = 1, 10, 100)', async () => {
  const union = Array.from({ length: WAITED }, (_, i) => name(i));
  // Rounds a second apart: what a changes round reads again (the overlap below the newest stamp, until
  // a round begins a second after that stamp was read, on the client's clock) is then the same in every
  // run, and so are the pages (rounds 0.3 s apart read it again or not as a loaded machine delays them).
  const options = { ...waitOptions, pollInterval: 1 };
  let client = await deployingFleet();
  const one = await client.waitForProvisionState(union, 'active', options);
  assert.equal(one.ok, true);
  // Requests (the version's, then each round's pages) and rounds: the deploys end in the eighth.
  const cost = () => ({ requests: ironic.seen.length, rounds: ironic.seen.filter(beginsListing).length });
  const alone = cost();
  assert.equal(alone.rounds, (900 + 600 + 900) / ROUND_MS, JSON.stringify(alone));
  await ironic.close();
  for (const k of [1, 10, 100]) {
    client = await deployingFleet();
    // Each wait on 40 of the 120 nodes, overlapping; together all of them.
    const subsets = Array.from({ length: k }, (_, w) => Array.from({ length: 40 }, (_, j) => name((w * 13 + j * 3) % WAITED)));
    subsets.push(union);
    const reports = await Promise.all(subsets.map((s) => client.waitForProvisionState(s, 'active', options)));
    assert.ok(reports.every((r) => r.ok && r.nodes.every((n) => n.outcome === 'reached')));
    // Exactly the same rounds and requests (the rounds move the clock: they see the same deploys); K
    // waits polling apart would cost K times as much.
    assert.deepEqual(cost(), alone, `K = ${k}; one wait on the union: ${JSON.stringify(alone)}`);
    // And never two lists at once: one loop.
    assert.deepEqual(overlapping, [], `K = ${k}: a round's listing began while another list was in flight`);
    await ironic.close();
  }
});

test('the change feed asks only for what changed; listMode list lists in full every round', async () => {
  const union = Array.from({ length: WAITED }, (_, i) => name(i));
  let client = await deployingFleet();
  const feed = await client.waitForProvisionState(union, 'active', waitOptions);
  assert.equal(feed.ok, true);
  const sorted = lists().filter((r) => r.url.includes('sort_key=provision_updated_at&sort_dir=desc'));
  assert.ok(
    sorted.length >= 2,
    `rounds by the feed: ${lists()
      .map((r) => r.url)
      .join('\n')}`,
  );
  assert.ok(sorted.every((r) => r.url.includes('provision_updated_at')));
  await ironic.close();
  client = await deployingFleet();
  const full = await client.waitForProvisionState(union, 'active', { ...waitOptions, listMode: 'list' });
  assert.equal(full.ok, true);
  assert.ok(lists().length >= 3);
  assert.ok(lists().every((r) => !r.url.includes('sort_key') && !r.url.includes('provision_updated_at')));
  // The same outcomes either way.
  assert.deepEqual(
    full.nodes.map((n) => [n.node, n.outcome]),
    feed.nodes.map((n) => [n.node, n.outcome]),
  );
});

// An edge host steps its waits on one client it keeps (edge/waits.mjs): a
// step ends when the round's listing does, so the listing that fills the
// change feed is read to its end and later steps ask only for what changed.
test('steps of a wait on one client keep its change feed: once it is filled, a quiet step is one request', async () => {
  const fleet = Array.from({ length: 2000 }, (_, i) => ({ name: name(i), provision_state: 'deploying' }));
  ironic = await startIronic({ nodes: fleet, timing: { deploying: 1e9 } });
  const client = new IronicClient({ endpoint: ironic.url });
  // The wait's next round is due an interval after its own round ended (the second step's ends with the
  // listing's second page, every node found), while the step reads the listing to its end: an interval
  // of a minute, so that the last page's answer, however late a loaded machine reads it, comes before
  // the next round is due (at 0.2 s a late one let that step begin the next round too: 4 requests). A
  // step's round is due at once, so the steps follow each other without sleeping until wakeAtMs.
  let checkpoint = client.checkpoint(
    'waitForProvisionState',
    fleet.map((n) => n.name),
    'active',
    { timeout: 600, pollInterval: 60 },
  );
  const perStep = [];
  for (let step = 0; step < 5; step++) {
    const before = lists().length;
    const answer = await client.step(checkpoint);
    assert.ok(answer.checkpoint, `step ${step} ended the wait: ${answer.error}`);
    perStep.push(
      lists()
        .slice(before)
        .map((r) => r.url),
    );
    checkpoint = answer.checkpoint;
  }
  // The first step's listing stops once every node is found; the second
  // reads to the end (an empty third page) and fills the feed.
  assert.equal(perStep[0].length, 2, perStep[0].join('\n'));
  assert.equal(perStep[1].length, 3, perStep[1].join('\n'));
  for (const urls of perStep.slice(2)) {
    assert.equal(urls.length, 1, urls.join('\n'));
    assert.match(urls[0], /sort_key=provision_updated_at&sort_dir=desc/);
  }
});

test('a scope narrows every list; a waited node outside it is checked by its own GET', async () => {
  const client = await deployingFleet();
  const idents = Array.from({ length: 40 }, (_, i) => name(i));
  const report = await client.waitForProvisionState(idents, 'active', { ...waitOptions, scope: { owner: 'even' } });
  assert.equal(report.ok, true);
  assert.ok(
    lists().length > 0 && lists().every((r) => r.url.includes('&owner=even')),
    lists()
      .map((r) => r.url)
      .join('\n'),
  );
  // The odd nodes (outside the scope), one GET each a round; no even one.
  const got = new Set(gets().map((r) => r.url.split('?')[0].slice('/v1/nodes/'.length)));
  assert.deepEqual([...got].sort(), idents.filter((_, i) => i % 2).sort());
});

test('listMode and scope are checked like every option, and a scope the server cannot filter by is refused', async () => {
  ironic = await startIronic({ nodes: [{ name: 'n1', provision_state: 'active' }] });
  const client = new IronicClient({ endpoint: ironic.url });
  for (const [options, message] of [
    [{ listMode: 'fast' }, /listMode must be 'changes' or 'list'/],
    [{ listMode: 3 }, /listMode must be a string/],
    [{ scope: 'owner' }, /scope must be an object/],
    [{ scope: { owners: 'x' } }, /scope\.owners is not known/],
    [{ scope: { owner: 5 } }, /scope\.owner must be a string/],
    [{ scope: { owner: '' } }, /scope\.owner must not be empty/],
    [{ scope: { shard: [1] } }, /scope\.shard must be a string or a list of strings/],
  ]) {
    await assert.rejects(client.waitForProvisionState(['n1'], 'active', options), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${JSON.stringify(options)}: ${e}`);
      assert.match(e.message, message);
      return true;
    });
  }
  assert.equal(ironic.seen.length, 0, 'nothing sent');
  const old = new IronicClient({ endpoint: ironic.url, microversion: '1.81' });
  await assert.rejects(old.waitForProvisionState(['n1'], 'active', { scope: { shard: ['s1', 's2'] } }), (e) => {
    assert.ok(e instanceof UnsupportedVersionError, String(e));
    assert.match(e.message, /scope\.shard needs API version 1\.82; the server speaks 1\.81/);
    return true;
  });
  assert.ok(!ironic.seen.some((r) => r.url.startsWith('/v1/nodes')), 'no node was asked for');
  const report = await old.waitForProvisionState(['n1'], 'active', { scope: { owner: 'o1' } });
  assert.equal(report.ok, true, 'owner (1.50) is fine at 1.81');
});

test("pollInterval 'auto': rounds of one request every 250 ms or more, within a fixed poller's budget, slower after a 503", async () => {
  const union = Array.from({ length: WAITED }, (_, i) => name(i));
  // 3 pages a full listing: a fixed poller spends 90 requests a minute. In lockstep (see
  // deployingFleet): eight rounds whatever the machine, the deploys ending in the last.
  const client = await deployingFleet(2500);
  const fetches = recordFetches();
  const fetchedFrom = fetches.length;
  const from = performance.now();
  const report = await client.waitForProvisionState(union, 'active', {
    timeout: 60,
    settle: 'all',
    listThreshold: 20,
    pollInterval: 'auto',
  });
  // The wait's length on the client's clock, which its budget is counted against (a loaded machine
  // only lengthens it).
  const span = performance.now() - from;
  assert.equal(report.ok, true);
  const log = ironic.sim.log({ method: 'GET' }).filter((e) => e.path === '/v1/nodes');
  const rounds = log.filter((e) => !e.query.includes('marker='));
  assert.equal(rounds.length, (900 + 600 + 900) / ROUND_MS);
  // The spacing the client chose, where it starts each round's first fetch (the server's arrival
  // instants can come closer together when a loaded machine reads one late): a lower bound, which a
  // loaded machine only lengthens.
  const mine = fetches.slice(fetchedFrom).filter((f) => f.url.startsWith(`${ironic.url}/`));
  const starts = mine.filter((f) => f.url.startsWith(`${ironic.url}/v1/nodes?`) && !f.url.includes('marker=')).map((f) => f.at);
  const gaps = starts.slice(1).map((t, i) => t - starts[i]);
  assert.equal(starts.length, rounds.length);
  assert.ok(
    gaps.every((g) => g >= 240),
    `never more often than every 250 ms: ${gaps.map(Math.round)}`,
  );
  // Rounds of one request come quicker than a fixed poller's every 2 s. The budget pays for what a round
  // cost before the next one (a leaky bucket: the full listing of 3 pages is paid for by the rounds
  // after it), so after two rounds of one request in a row the next is due in about 0.7 s. The interval
  // the client chose runs from the end of a round (once its answer came) to the start of the next: at
  // most the time from that answer to the next round's first fetch, which a slow or loaded machine only
  // lengthens (reading the answer, a late timer). A fixed 2 s poller's are never under 2 s, however fast
  // the machine; most of these must be (a round would have to come more than a second late, in most of
  // them, to hide it). (Not rounds counted in the wait's time, which also counts how long each round
  // took, which a loaded machine stretches.) Four such rounds: 4 to 7, rounds 3 to 6 before them.
  const byRound = starts.map((start, i) => mine.filter((f) => f.at >= start && !(f.at >= starts[i + 1])));
  const steady = byRound
    .slice(0, -1)
    .flatMap((round, i) => (i > 0 && round.length === 1 && byRound[i - 1].length === 1 ? [starts[i + 1] - round[0].answeredAt] : []));
  assert.ok(steady.length >= 4, `rounds of ${byRound.map((r) => r.length)} requests`);
  assert.ok(
    steady.filter((ms) => ms < 2000).length > steady.length / 2,
    `after rounds of one request, the next comes quickly: ${steady.map(Math.round)} ms after the answer`,
  );
  // The budget: a full listing every 2 s, 90 a minute; a listing's worth of slack.
  assert.ok(log.length <= (90 * span) / 60_000 + 3, `${log.length} requests in ${Math.round(span)} ms`);
  await ironic.close();

  // A 503 with Retry-After: 2 on the third list: the next rounds wait at least that long.
  const again = await deployingFleet(FLEET, { deploying: 3500, 'wait call-back': 2500 }, { lockstep: false });
  ironic.sim.faults.add([{ kind: 'status', status: 503, retryAfter: 2, method: 'GET', path: '/v1/nodes', skip: 2, count: 1 }]);
  const fetchedBefore = fetches.length;
  const slowed = await again.waitForProvisionState(union, 'active', {
    timeout: 60,
    settle: 'all',
    listThreshold: 20,
    pollInterval: 'auto',
    budget: 600,
  });
  assert.equal(slowed.ok, true);
  // Rounds' first pages (a retry of one is one too), as the server answered them and where the client
  // started them: the gaps the client chose, which a loaded machine only lengthens (not the server's
  // arrival instants, which come closer when one is read late; nor every page: the retried round may
  // read a second one right after its first, as a loaded run's did, 42 ms after it).
  const firstPage = (url) => url.startsWith('/v1/nodes?') && !url.includes('marker=');
  const answered = ironic.sim.log({ method: 'GET' }).filter((e) => firstPage(`${e.path}?${e.query}`));
  const begun = fetches
    .slice(fetchedBefore)
    .filter((f) => f.url.startsWith(ironic.url) && firstPage(f.url.slice(ironic.url.length)))
    .map((f) => f.at);
  assert.equal(begun.length, answered.length);
  const refused = answered.findIndex((e) => e.status === 503);
  assert.equal(refused, 2, 'the third round answered 503');
  const [at503, retry, next] = begun.slice(refused, refused + 3);
  const arrivals = `arrivals ${answered.map((e) => `${Math.round(e.t)}${e.status === 503 ? ' (503)' : ''}`)} on the simulator's clock`;
  assert.ok(retry - at503 >= 1900, `the retry waits for Retry-After: ${Math.round(retry - at503)} ms; ${arrivals}`);
  assert.ok(next - retry >= 1900, `so does the next round: ${Math.round(next - retry)} ms; ${arrivals}`);
});

test("pollInterval and budget are checked: 'auto' or seconds; a budget only with 'auto', a whole number", async () => {
  ironic = await startIronic({ nodes: [{ name: 'n1', provision_state: 'active' }] });
  const client = new IronicClient({ endpoint: ironic.url });
  for (const [options, message] of [
    [{ pollInterval: 'fast' }, /pollInterval must be a number of seconds or 'auto'/],
    [{ budget: 10 }, /Budget must be a whole number of requests a minute, with pollInterval 'auto'/],
    [{ pollInterval: 'auto', budget: 1.5 }, /Budget must be a whole number/],
    [{ pollInterval: 'auto', budget: -1 }, /Budget must be a whole number/],
    [{ pollInterval: 'auto', budget: '10' }, /budget must be a number/],
  ]) {
    await assert.rejects(
      client.waitForProvisionState(['n1'], 'active', options),
      (e) => e instanceof InvalidArgumentError && message.test(e.message),
    );
  }
  assert.equal(ironic.seen.length, 0, 'nothing sent');
  const report = await client.waitForProvisionState(['n1'], 'active', { pollInterval: 'auto', budget: 120 });
  assert.equal(report.ok, true);
});

test('lists made together, and with a watcher of their scope, share one listing; each gets only its fields', async () => {
  ironic = await startIronic({ nodes: Array.from({ length: 2500 }, (_, i) => ({ name: name(i), provision_state: 'available' })) });
  const client = new IronicClient({ endpoint: ironic.url });
  const version = await client.microversion();
  ironic.seen.length = 0;
  const controller = new AbortController();
  const watcher = client.watch({ signal: controller.signal });
  const first = watcher.next();
  const [a, b, all] = await Promise.all([
    client.listNodes({ fields: ['uuid', 'provision_state'] }),
    client.listNodes({ fields: ['name'] }),
    client.listNodes(),
  ]);
  await first;
  controller.abort();
  // The watcher and the two lists of fields: one listing of 3 pages; every
  // field (detail) is a listing of its own.
  const fieldLists = ironic.seen.filter((r) => r.url.startsWith('/v1/nodes?'));
  const detail = ironic.seen.filter((r) => r.url.startsWith('/v1/nodes/detail?'));
  assert.equal(fieldLists.length, 3, fieldLists.map((r) => r.url).join('\n'));
  assert.equal(detail.length, 3);
  assert.equal(a.length, 2500);
  assert.deepEqual(Object.keys(a[0]).sort(), ['links', 'provision_state', 'uuid']);
  assert.deepEqual(Object.keys(b[7]).sort(), ['links', 'name']);
  assert.deepEqual(
    b.map((n) => n.name),
    all.map((n) => n.name),
    'in the same order',
  );
  assert.deepEqual(
    a.map((n) => n.uuid),
    all.map((n) => n.uuid),
  );
  assert.ok('driver' in all[0] && 'power_state' in all[0], 'every field');
  // The same as the server lists those fields alone.
  const direct = await (
    await fetch(`${ironic.url}/v1/nodes?fields=uuid,provision_state&limit=1`, { headers: { 'X-OpenStack-Ironic-API-Version': version } })
  ).json();
  assert.deepEqual(a[0], direct.nodes[0]);
});

test('listNodes: fields need API 1.8, and an abort rejects with the reason and leaves nothing in flight', async () => {
  ironic = await startIronic({ nodes: Array.from({ length: 50 }, (_, i) => ({ name: name(i), provision_state: 'available' })) });
  const old = new IronicClient({ endpoint: ironic.url, microversion: '1.6' });
  await assert.rejects(old.listNodes({ fields: ['uuid'] }), UnsupportedVersionError);
  assert.equal((await old.listNodes()).length, 50, 'without fields, /detail');
  const client = new IronicClient({ endpoint: ironic.url });
  const controller = new AbortController();
  const reason = new Error('enough');
  const list = client.listNodes({ signal: controller.signal });
  controller.abort(reason);
  await assert.rejects(list, (e) => e === reason);
  await assert.rejects(client.listNodes({ fields: ['bogus'] }), /bogus/);
});
