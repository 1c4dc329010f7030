// edge/waits.mjs, the host of the edge runners, in Node against the
// simulator: what its own logic decides (which waits a round steps, when a
// POST's PUTs are sent), with a storage whose writes take time, as Deno
// KV's do. The runners themselves are tested in their runtimes
// (tests/runtimes/cloudflare.test.mjs, deno-kv.test.mjs).

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { Waits } from '../../edge/waits.mjs';
import { nodes, sleep, startIronic } from './harness.mjs';

let ironic;
afterEach(() => ironic?.close());

/** Storage in memory, as KvStorage keeps it: a put changes what is read at once, and its write ends when `gate` says. */
function slowStorage() {
  const memory = new Map();
  const storage = {
    gate: Promise.resolve(),
    get: async (key) => structuredClone(memory.get(key)),
    put: async (key, value) => {
      memory.set(key, structuredClone(value));
      await storage.gate;
    },
    delete: async (key) => {
      memory.delete(key);
    },
    list: async (prefix) => [...memory].filter(([k]) => k.startsWith(prefix)).map(([, v]) => structuredClone(v)),
  };
  return storage;
}

const post = (waits, method, args) =>
  waits.handle(new Request('http://host/waits', { method: 'POST', body: JSON.stringify({ method, args }) }));

test('a round while a POST stores its wait leaves the PUTs to the POST: each node one PUT', async () => {
  ironic = await startIronic({ nodes: nodes({ n1: 'available', n2: 'available' }) });
  const storage = slowStorage();
  const waits = new Waits({ client: new IronicClient({ endpoint: ironic.url }), storage });
  let release;
  storage.gate = new Promise((resolve) => {
    release = resolve;
  });
  const posting = post(waits, 'provision', [['n1', 'n2'], 'deploy', { wait: true, timeout: 10, pollInterval: 0.1 }]);
  // Once the record is readable (its checkpoint's write under way, not over), a round must not step it.
  // Waited for, not slept for: the bound is for a POST that never stores, far past what a loaded machine takes.
  for (const giveUp = Date.now() + 30_000; (await storage.list('cp:')).length === 0; ) {
    assert.ok(Date.now() < giveUp, 'the POST never stored its wait');
    await sleep(5);
  }
  assert.equal((await waits.summaries()).length, 1);
  const rounding = waits.round();
  await sleep(50);
  release();
  storage.gate = Promise.resolve();
  await rounding;
  const created = await posting;
  assert.equal(created.status, 201);
  const { id } = await created.json();
  for (let i = 0; i < 200 && !(await waits.get(id)).done; i++) {
    await sleep(Math.max(0, (await waits.nextWake()) - Date.now()));
    await waits.round();
  }
  const record = await waits.get(id);
  assert.equal(record.done, true);
  assert.equal(record.error, null, JSON.stringify(record.error));
  const puts = ironic.requests('PUT', '/v1/nodes/*/states/provision').map((r) => r.url.split('/')[3]);
  assert.deepEqual(puts.sort(), ['n1', 'n2']);
});

test('the host reads its storage once while in memory, writes a checkpoint only when it changes, and takes up a record of the earlier layout', async () => {
  ironic = await startIronic({
    nodes: nodes({ n1: 'available', n2: 'available' }),
    timing: { deploying: 1500, 'wait call-back': 100 },
  });
  const storage = slowStorage();
  let reads = 0;
  const list = storage.list;
  storage.list = (prefix) => {
    reads += 1;
    return list(prefix);
  };
  const client = new IronicClient({ endpoint: ironic.url });
  const waits = new Waits({ client, storage });
  const created = await post(waits, 'provision', [['n1', 'n2'], 'deploy', { wait: true, timeout: 30, pollInterval: 0.1 }]);
  assert.equal(created.status, 201);
  const { id } = await created.json();
  // An earlier version's record: its checkpoint inside, no cp: key. The same wait, on another id.
  const old = { ...(await waits.get(id)), id: 'old-layout' };
  await storage.put('wait:old-layout', old);
  assert.equal((await storage.list('cp:')).length, 1);
  // A new host on that storage (an eviction): it reads the storage once, whatever the rounds.
  const host = new Waits({ client: new IronicClient({ endpoint: ironic.url }), storage });
  reads = 0;
  for (let i = 0; i < 400 && (await host.summaries()).some((w) => !w.done); i++) {
    await sleep(Math.max(0, (await host.nextWake()) - Date.now()));
    await host.round();
  }
  const ended = await host.summaries();
  assert.deepEqual(
    ended.map((w) => w.done),
    [true, true],
  );
  assert.equal(host.stats.loads, 1);
  assert.equal(reads, 2, 'one list of wait: and one of cp:');
  // Rounds of deploying nodes moved nothing but the counts: fewer checkpoints than steps.
  assert.ok(host.stats.checkpointWrites < 2 * host.stats.rounds, JSON.stringify(host.stats));
  for (const w of [id, 'old-layout']) {
    const record = await host.get(w);
    assert.equal(record.error, null, JSON.stringify(record.error));
    assert.deepEqual(
      record.report.nodes.map((n) => [n.node, n.outcome]),
      [
        ['n1', 'reached'],
        ['n2', 'reached'],
      ],
    );
  }
  // Stored in two parts, the checkpoint gone with the end; the old layout's record split at its first write.
  const stored = await list('wait:');
  assert.equal(stored.length, 2);
  assert.ok(
    stored.every((r) => r.done && !('checkpoint' in r)),
    JSON.stringify(stored),
  );
  assert.deepEqual(await list('cp:'), []);
});
