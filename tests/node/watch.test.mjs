// client.watch() from JS against the simulator: every node of the scope
// once, then each change; a quiet round is one request; a slow consumer gets
// the latest state of each node; break, an abort and a failing listing each
// end it with nothing sent after; fields beyond the provision state; the
// options' errors.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { InvalidArgumentError, IronicClient, IronicHttpError, UnsupportedVersionError } from 'ironic-wait';
import { provision, client as simClient } from '../../sim/testkit.mjs';
import { startIronic } from './harness.mjs';

let ironic;
afterEach(() => ironic?.close());

const name = (i) => `n${String(i).padStart(3, '0')}`;

async function fleet(size, extra = {}) {
  const nodes = Array.from({ length: size }, (_, i) => ({ name: name(i), provision_state: 'available', owner: i % 2 ? 'odd' : 'even' }));
  ironic = await startIronic({ nodes, timing: { deploying: 300, 'wait call-back': 200 }, ...extra });
  return new IronicClient({ endpoint: ironic.url });
}

const lists = (since = 0) => ironic.seen.slice(since).filter((r) => r.method === 'GET' && r.url.startsWith('/v1/nodes?'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('every node of the scope once, then each change; a quiet round is one request', async () => {
  const client = await fleet(1500);
  const api = simClient(ironic.url);
  const seen = new Map();
  let added = 0;
  let since;
  for await (const change of client.watch({ scope: { owner: 'even' }, pollInterval: 0.2 })) {
    if (change.type === 'added') added += 1;
    assert.notEqual(change.node.owner, 'odd');
    seen.set(change.node.name, change.node.provision_state);
    if (added === 750 && since === undefined) {
      // The start is over: deploy two nodes of the scope, one outside it.
      since = ironic.seen.length;
      await Promise.all([provision(api, name(4), 'active'), provision(api, name(10), 'active'), provision(api, name(5), 'active')]);
    }
    if (seen.get(name(4)) === 'active' && seen.get(name(10)) === 'active') break;
  }
  assert.equal(added, 750, 'each node of the scope once');
  assert.equal(seen.has(name(5)), false, 'nothing outside the scope');
  // Every list of a round after the first: the changes, newest first, scoped.
  const after = lists(since);
  assert.ok(after.length >= 3, after.map((r) => r.url).join('\n'));
  for (const r of after) {
    assert.match(r.url, /owner=even/);
    assert.match(r.url, /sort_key=provision_updated_at&sort_dir=desc/);
    assert.doesNotMatch(r.url, /marker=/, 'a round of a few changes is one page');
  }
  // After the break nothing more is sent.
  const count = ironic.seen.length;
  await sleep(700);
  assert.equal(ironic.seen.length, count, 'nothing sent once the loop broke');
});

test('a slow consumer gets the latest state of each node, once', async () => {
  const client = await fleet(40);
  const api = simClient(ironic.url);
  const iterator = client.watch({ pollInterval: 0.1, initial: false });
  const first = iterator.next();
  await sleep(300);
  await provision(api, name(7), 'active');
  const one = await first;
  assert.equal(one.value.node.name, name(7));
  // Not taking anything while the node goes deploying -> wait call-back -> deploying -> active.
  await sleep(1500);
  assert.equal(ironic.sim.node(name(7)).provision_state, 'active');
  const next = await iterator.next();
  assert.deepEqual([next.value.type, next.value.node.name, next.value.node.provision_state], ['modified', name(7), 'active']);
  await iterator.return();
});

test('return() ends a quiet watch at once, even while next() waits; next() calls not awaited each get an item', async () => {
  const client = await fleet(6);
  const iterator = client.watch({ pollInterval: 0.1 });
  const six = await Promise.all(Array.from({ length: 6 }, () => iterator.next()));
  assert.deepEqual(six.map((r) => r.value.node.name).sort(), [0, 1, 2, 3, 4, 5].map(name));
  const waiting = iterator.next();
  await sleep(300);
  assert.deepEqual(await iterator.return(), { done: true, value: undefined });
  assert.deepEqual(await waiting, { done: true, value: undefined });
  const count = ironic.seen.length;
  await sleep(300);
  assert.equal(ironic.seen.length, count, 'nothing sent after return()');
  assert.deepEqual(await iterator.next(), { done: true, value: undefined });
});

test('an abort ends the watch with its reason and nothing is sent after it', async () => {
  const client = await fleet(30);
  const controller = new AbortController();
  const reason = new Error('operator left');
  const taken = [];
  setTimeout(() => controller.abort(reason), 500);
  await assert.rejects(
    (async () => {
      for await (const change of client.watch({ signal: controller.signal, pollInterval: 0.1 })) taken.push(change);
    })(),
    (e) => e === reason,
  );
  assert.equal(taken.length, 30);
  const count = ironic.seen.length;
  await sleep(400);
  assert.equal(ironic.seen.length, count);
  // Aborted before it starts: its reason at once, nothing sent.
  const before = ironic.seen.length;
  await assert.rejects(client.watch({ signal: AbortSignal.abort(reason) }).next(), (e) => e === reason);
  assert.equal(ironic.seen.length, before);
});

test('a listing that keeps failing ends the watch with its error', async () => {
  await fleet(10);
  const client = new IronicClient({ endpoint: ironic.url, maxRetries: 1, retryInterval: 0.05 });
  ironic.sim.faults.add([{ kind: 'status', status: 503, method: 'GET', path: '/v1/nodes' }]);
  await assert.rejects(client.watch().next(), (e) => e instanceof IronicHttpError && e.status === 503);
  const count = ironic.seen.length;
  await sleep(300);
  assert.equal(ironic.seen.length, count, 'nothing sent after the end');
});

test('fields beyond the provision state are listed in full and compared', async () => {
  const client = await fleet(20);
  const iterator = client.watch({ fields: ['power_state', 'maintenance'], pollInterval: 0.1, initial: false });
  const next = iterator.next();
  await sleep(300);
  ironic.sim.setNode(name(3), { maintenance: true });
  const { value } = await next;
  assert.deepEqual([value.type, value.node.name, value.node.maintenance], ['modified', name(3), true]);
  await iterator.return();
  for (const r of lists()) {
    assert.match(r.url, /fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at,power_state,maintenance/);
    assert.doesNotMatch(r.url, /sort_key/);
  }
});

test('with fieldsInterval the provision state follows the feed and the other fields a slower full listing, merged', async () => {
  const client = await fleet(20);
  const api = simClient(ironic.url);
  const nodes = new Map();
  let since;
  for await (const change of client.watch({ fields: ['maintenance'], fieldsInterval: 0.6, pollInterval: 0.1 })) {
    nodes.set(change.uuid, change.node);
    const all = [...nodes.values()];
    if (since === undefined && all.length === 20 && all.every((n) => n.maintenance === false)) {
      // Both listings have told every node: one moves its provision state, another its maintenance.
      since = ironic.seen.length;
      ironic.sim.setNode(name(3), { maintenance: true });
      await provision(api, name(5), 'active');
    }
    const [three, five] = [3, 5].map((i) => all.find((n) => n.name === name(i)));
    if (since !== undefined && three.maintenance === true && five.provision_state === 'active') {
      assert.equal(five.maintenance, false, "the feed's change keeps the full listing's fields");
      assert.equal(three.provision_state, 'available', "the full listing's change keeps the provision state");
      break;
    }
  }
  const after = lists(since);
  const feed = after.filter((r) => r.url.includes('sort_key=provision_updated_at'));
  const full = after.filter((r) => r.url.includes(',maintenance'));
  assert.equal(feed.length + full.length, after.length, after.map((r) => r.url).join('\n'));
  for (const r of feed) assert.match(r.url, /fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at&/);
  for (const r of full) assert.doesNotMatch(r.url, /sort_key/);
  assert.ok(feed.length > full.length, `the feed every round, the full listing less often: ${feed.length} and ${full.length}`);
});

test('with retryOutages a watch outlives an outage: it says so, takes the round again later, and says when it ends', async () => {
  await fleet(4);
  const client = new IronicClient({ endpoint: ironic.url, maxRetries: 1, retryInterval: 0.05 });
  ironic.sim.faults.add([{ kind: 'status', status: 503, method: 'GET', path: '/v1/nodes', count: 2 }]);
  const told = [];
  for await (const change of client.watch({ retryOutages: true, pollInterval: 0.1 })) {
    told.push(change);
    if (change.type === 'restored') break;
  }
  const [outage, ...rest] = told;
  assert.equal(outage.type, 'outage');
  assert.ok(outage.error instanceof IronicHttpError && outage.error.status === 503, String(outage.error));
  assert.deepEqual(
    rest.map((c) => c.type),
    ['added', 'added', 'added', 'added', 'restored'],
  );
  // The round lost (a request and its retry), then one listing after the outage's delay.
  assert.equal(lists().length, 3);
  const count = ironic.seen.length;
  await sleep(300);
  assert.equal(ironic.seen.length, count, 'nothing sent after the break');
});

test('a deleted node is removed at the next full listing (list mode: the next round)', async () => {
  const client = await fleet(12);
  const iterator = client.watch({ listMode: 'list', pollInterval: 0.1 });
  for (let i = 0; i < 12; i++) assert.equal((await iterator.next()).value.type, 'added');
  ironic.sim.deleteNode(name(2));
  const { value } = await iterator.next();
  assert.deepEqual([value.type, value.uuid, value.node], ['removed', ironic.sim.history(name(2)).uuid, null]);
  await iterator.return();
});

test('bad options are refused before anything is sent', async () => {
  const client = await fleet(3);
  await assert.rejects(client.watch({ listMode: 'feed' }).next(), InvalidArgumentError);
  await assert.rejects(client.watch({ pollInterval: 0 }).next(), InvalidArgumentError);
  await assert.rejects(client.watch({ fields: ['no such;field'] }).next(), InvalidArgumentError);
  await assert.rejects(client.watch({ scope: { owner: '' } }).next(), InvalidArgumentError);
  await assert.rejects(client.watch({ nodes: ['x'] }).next(), InvalidArgumentError);
  await assert.rejects(client.watch({ fieldsInterval: 30 }).next(), /^InvalidArgumentError: Option fieldsInterval needs fields$/);
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 'soon', true]) {
    await assert.rejects(
      client.watch({ fields: ['owner'], fieldsInterval: bad }).next(),
      /Option fieldsInterval must be a positive number of seconds or 'auto'/,
      String(bad),
    );
  }
  await assert.rejects(client.watch({ retryOutages: 'yes' }).next(), InvalidArgumentError);
  assert.throws(
    () =>
      client.watch({
        get scope() {
          throw new Error('hostile');
        },
      }),
    InvalidArgumentError,
  );
  assert.equal(ironic.seen.length, 0);
  // A filter the server's version lacks: refused once the version is known.
  const old = new IronicClient({ endpoint: ironic.url, microversion: '1.40' });
  await assert.rejects(old.watch({ scope: { owner: 'even' } }).next(), UnsupportedVersionError);
  assert.ok(ironic.seen.every((r) => !r.url.startsWith('/v1/nodes')));
});

test("an agent's heartbeat, which touches only provision_updated_at, is no change to a watcher", async () => {
  // Agents heartbeat every 0.15 to 0.3 s here (0.3 to 0.6 of the timeout).
  const nodes = ['a', 'b', 'c'].map((n) => ({ name: n, provision_state: 'wait call-back' }));
  ironic = await startIronic({ nodes, heartbeatTimeout: 0.5 });
  const client = new IronicClient({ endpoint: ironic.url });
  const stamps = () => nodes.map((n) => ironic.sim.node(n.name).provision_updated_at).join();
  const first = stamps();
  const stop = new AbortController();
  const changes = [];
  // Ten rounds after the first listing read the touches as they come.
  const watching = (async () => {
    while (lists().length < 11) await sleep(50);
    stop.abort();
  })();
  await assert.rejects(async () => {
    for await (const change of client.watch({ pollInterval: 0.2, signal: stop.signal })) changes.push(change.type);
  });
  await watching;
  assert.notEqual(stamps(), first, 'the agents heartbeat meanwhile');
  assert.deepEqual(changes, ['added', 'added', 'added']);
});
