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
  // Once the record is readable (its write not yet over), a round must not step it. Waited for, not slept
  // for: the bound is for a POST that never stores, far past what a loaded machine takes.
  for (const giveUp = Date.now() + 30_000; (await storage.list('wait:')).length === 0; ) {
    assert.ok(Date.now() < giveUp, 'the POST never stored its wait');
    await sleep(5);
  }
  assert.equal((await storage.list('wait:')).length, 1);
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
