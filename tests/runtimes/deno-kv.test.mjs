// `ironic-wait/deno` under the real deno CLI (npm `deno`): the example
// server of examples/deno/ in a consumer project (the package from its
// tarball), its waits and queued rounds in a Deno KV file, against the
// simulator. The test is the server's caller: HTTP with the bearer secret,
// and Server-Sent Events listeners. Outcomes are compared with the same
// calls in Node, uninterrupted, on a second simulator.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertSameOutcomes, edgeApi, outcomes, uninterrupted, until } from './edge-api.mjs';
import { BIN, CACHE, consumerProject, lastJsonLine, ROOT, runToEnd, startSim } from './harness.mjs';

const DENO = join(BIN, 'deno');
const SECRET = 'waits-secret-3d9a61c4';
const TOKEN = 'ironic-token-deno-kv-7b20f5e8';
// Deno's caches stay in the git-ignored folder; no update check.
const DENO_ENV = { DENO_DIR: join(CACHE, 'deno', 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };

let sim;
let reference; // a second simulator, for the uninterrupted runs in Node
let dir;
let kvFile;
let server;

before(async () => {
  [sim, reference] = await Promise.all([startSim(), startSim()]);
  dir = consumerProject('deno-kv', 'server', {
    'server.mjs': { text: readFileSync(join(ROOT, 'examples', 'deno', 'server.mjs'), 'utf8') },
    'storage-check.mjs': { text: STORAGE_CHECK },
  });
  kvFile = join(dir, 'waits.kv');
  rmSync(kvFile, { force: true });
  server = await startServer();
});

after(async () => {
  await server?.kill();
  await Promise.all([sim?.close(), reference?.close()]);
});

/**
 * The example server under deno with the permissions its README lists (the
 * simulator and the server on loopback; env: its own variables and the
 * client's; the KV file alone read and written), on a free port.
 */
function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(
      DENO,
      [
        'run',
        '--unstable-kv',
        '--allow-net=127.0.0.1',
        '--allow-env=WAITS_SECRET,WAITS_KV,WAITS_LISTEN,IRONIC_URL,IRONIC_TOKEN',
        `--allow-read=${kvFile}`,
        `--allow-write=${kvFile}`,
        'server.mjs',
      ],
      {
        cwd: dir,
        env: {
          ...process.env,
          ...DENO_ENV,
          WAITS_SECRET: SECRET,
          WAITS_KV: kvFile,
          WAITS_LISTEN: '127.0.0.1:0',
          IRONIC_URL: sim.url,
          IRONIC_TOKEN: TOKEN,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    const exited = new Promise((done) => child.on('exit', done));
    const handle = {
      output: () => output,
      /** SIGKILL: no chance to write anything more; resolves once it is gone. */
      kill: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        return exited;
      },
    };
    const collect = (d) => {
      output += d;
      const url = /serving waits on (http:\/\/\S+?)\/?$/m.exec(output)?.[1];
      if (url && !handle.url) resolve(Object.assign(handle, { url }));
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('exit', (code, signal) => reject(new Error(`deno exited (${code ?? signal}) before listening:\n${output}`)));
  });
}

const { call, post, finished } = edgeApi({ base: () => server.url, secret: SECRET, output: () => server.output() });

/**
 * An SSE listener of wait `id`, connected (the server has it) once this
 * resolves: its messages (each `data:` line parsed), the raw text, and a
 * promise of the end of the stream.
 */
function listen(id, options) {
  return stream(`/waits/${id}/events`, options);
}

/** An event stream of `path`, as `listen` gives it; `signal` ends it from this side. */
async function stream(path, { secret = SECRET, signal } = {}) {
  const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${secret}` }, signal });
  const listener = { status: res.status, type: res.headers.get('content-type'), messages: [], raw: '' };
  if (res.status !== 200) {
    listener.raw = await res.text();
    return listener;
  }
  listener.ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body) {
      const text = decoder.decode(chunk, { stream: true });
      listener.raw += text;
      buffer += text;
      for (let at; (at = buffer.indexOf('\n\n')) >= 0; buffer = buffer.slice(at + 2)) {
        for (const line of buffer.slice(0, at).split('\n')) {
          if (line.startsWith('data: ')) listener.messages.push(JSON.parse(line.slice(6)));
          else assert.ok(line.startsWith(':'), `not an SSE line: ${line}`);
        }
      }
    }
    assert.equal(buffer, '', 'the stream ends after a whole message');
  })();
  return listener;
}

/**
 * A watch of the nodes in `state` (its lists name the state: `provision_state=`), on the server's
 * one client at `pollInterval`: its rounds are the clock by which a silence is measured. `rounds(since)`
 * counts its lists, `others(since)` the node requests that are not its; `stop()` ends it.
 */
async function witnessWatch(state, pollInterval) {
  const ended = new AbortController();
  const scope = encodeURIComponent(JSON.stringify({ provisionState: state }));
  const watcher = await stream(`/watch?pollInterval=${pollInterval}&scope=${scope}`, { signal: ended.signal });
  assert.equal(watcher.status, 200, watcher.raw);
  watcher.ended.catch(() => {}); // ended from this side
  const ours = (e) => e.query.includes(`provision_state=${encodeURIComponent(state)}`);
  const nodeRequests = (since) => sim.log({ since }).filter((e) => e.path.startsWith('/v1/nodes'));
  return {
    rounds: (since) => nodeRequests(since).filter(ours).length,
    others: (since) => nodeRequests(since).filter((e) => !ours(e)),
    stop: () => ended.abort(),
  };
}

/** Each node's PUTs since `since`: { node: count }. */
function putsByNode(since) {
  const counts = {};
  for (const e of sim.log({ since, method: 'PUT' })) counts[e.path.split('/')[3]] = (counts[e.path.split('/')[3]] ?? 0) + 1;
  return counts;
}

const NO_IMAGE = 'Deploy step deploy.write_image failed: no image';

test('the server refuses a missing or wrong secret, and passes nothing on for it', async () => {
  const since = sim.requests().next;
  for (const secret of [null, 'wrong', `${SECRET}x`, '']) {
    for (const [method, path, body] of [
      ['GET', '/waits'],
      ['POST', '/waits', { method: 'provision', args: ['x', 'deploy'] }],
      ['GET', '/waits/x/events'],
    ]) {
      const res = await call(method, path, { body, secret });
      assert.equal(res.status, 401, `${method} ${path} with ${JSON.stringify(secret)}: ${res.status}`);
    }
  }
  assert.deepEqual(sim.log({ since }), [], 'nothing reached Ironic');
  assert.equal((await call('GET', '/nowhere')).status, 404);
  assert.equal((await call('GET', '/waits/no-such-wait')).status, 404);
  assert.equal((await listen('no-such-wait')).status, 404);
  assert.equal((await call('POST', '/waits', { body: { method: 'eval', args: [] } })).status, 400);
  const ok = await call('GET', '/waits');
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body, []);
  assert.deepEqual(sim.log({ since }), [], 'nothing reached Ironic');
});

test('records in KV: a 2 MB value in parts, rewritten and deleted with no part left behind, writes in order, orphans swept', async () => {
  const out = lastJsonLine(
    await runToEnd(
      DENO,
      ['run', '--unstable-kv', `--allow-read=${dir}`, `--allow-write=${dir}`, 'storage-check.mjs', join(dir, 'storage-check.kv')],
      { cwd: dir, env: DENO_ENV },
    ),
  );
  assert.deepEqual(out, {
    big: { same: true, parts: 33 }, // 2,000,000 bytes in 60 KiB parts: more than one commit's worth
    multibyte: { same: true, parts: 4 },
    small: { same: true, parts: 1 },
    listed: ['multibyte', 'small'],
    afterDelete: { record: null, parts: 1 },
    swept: { kept: true, parts: 1 },
    ordered: { now: 3, stored: 3 },
    late: { record: null, here: null, parts: 0 },
  });
});

const SCENARIO = {
  seed: 7,
  timing: { deploying: 2000, 'wait call-back': 1000 },
  nodes: [
    { name: 'a1', provision_state: 'available' },
    { name: 'a2', provision_state: 'available' },
    { name: 'b1', provision_state: 'available' },
    { name: 'c1', provision_state: 'deploying' },
    { name: 'e1', provision_state: 'available' },
  ],
  transitions: [
    { node: 'b1', action: 'deploy', fail: NO_IMAGE },
    { node: 'c1', action: 'deploy', stall: true },
  ],
};

test('waits that succeed, fail and time out end as in Node; SSE listeners get progress, then the end', async () => {
  const calls = [
    ['provision', ['a1', 'a2'], 'deploy', { wait: true, timeout: 60, pollInterval: 1 }],
    ['provision', ['b1'], 'deploy', { wait: true, timeout: 60, pollInterval: 1 }],
    ['waitForProvisionState', ['c1'], 'active', { timeout: 4, pollInterval: 1 }],
    ['waitForProvisionState', ['a1', 'a2', 'b1'], 'active', { timeout: 60, pollInterval: 1, settle: 'all' }],
    // A config drive of 300 KB: the record, with the body until it is sent, is stored in parts.
    ['provision', 'e1', 'deploy', { wait: true, timeout: 60, pollInterval: 1, configDrive: 'x'.repeat(300_000) }],
  ];
  const expected = await uninterrupted(reference, TOKEN, SCENARIO, calls);

  sim.load(SCENARIO);
  const since = sim.requests().next;
  const ids = [];
  for (const [method, ...args] of calls) ids.push(await post(method, ...args));
  const listeners = await Promise.all(ids.flatMap((id) => [listen(id), listen(id)]));
  for (const l of listeners) {
    assert.equal(l.status, 200);
    assert.equal(l.type, 'text/event-stream');
  }
  const listed = await call('GET', '/waits');
  assert.deepEqual(listed.body.map((w) => w.id).sort(), [...ids].sort());

  const done = [];
  for (const id of ids) done.push(await finished(id));
  await Promise.all(listeners.map((l) => l.ended));
  assertSameOutcomes(done, expected);
  assert.equal(done[0].report.ok, true);
  assert.equal(done[1].error.name, 'StateTransitionFailed');
  assert.equal(done[2].error.name, 'StateTransitionTimeout');
  assert.equal(done[4].report.ok, true);
  assert.deepEqual(putsByNode(since), { a1: 1, a2: 1, b1: 1, e1: 1 });

  // Every listener: progress of its own wait's nodes, then the end as GET tells it, last.
  for (const [i, l] of listeners.entries()) {
    const wait = done[Math.floor(i / 2)];
    assert.deepEqual(l.messages.at(-1), { type: 'done', report: wait.report, error: wait.error }, `listener ${i}`);
    assert.equal(l.messages.filter((m) => m.type === 'done').length, 1);
    for (const m of l.messages.slice(0, -1)) assert.equal(m.type, 'progress');
  }
  const settled = (l) =>
    l.messages
      .filter((m) => m.type === 'progress' && m.event.done)
      .map((m) => `${m.event.node} ${m.event.outcome}`)
      .sort();
  assert.deepEqual(settled(listeners[0]), ['a1 reached', 'a2 reached']);
  assert.deepEqual(settled(listeners[1]), ['a1 reached', 'a2 reached']);
  assert.deepEqual(settled(listeners[2]), ['b1 failed']);
  assert.deepEqual(settled(listeners[8]), ['e1 reached']);

  // A listener of a wait that ended gets its end at once.
  const late = await listen(ids[1]);
  await late.ended;
  assert.deepEqual(late.messages, [{ type: 'done', report: done[1].report, error: done[1].error }]);

  // Done: no round more reaches Ironic, while a watch on the same client, at the waits'
  // interval, goes round three times.
  const quiet = sim.requests().next;
  const witness = await witnessWatch('active', 1);
  await until(() => witness.rounds(quiet) >= 3, 'three rounds of the watch');
  witness.stop();
  assert.deepEqual(witness.others(quiet), [], 'nothing is sent once every wait is done');
  assertNoToken([done, listed], listeners);
});

test('GET /watch: an event stream of client.watch(): the nodes, then each change; a bad option is a clear error', async () => {
  sim.load(SCENARIO);
  const ended = new AbortController();
  const watcher = await stream('/watch?pollInterval=0.5', { signal: ended.signal });
  assert.equal(watcher.status, 200, watcher.raw);
  watcher.ended.catch(() => {}); // ended from this side
  const changes = () => watcher.messages.filter((m) => m.type === 'change').map((m) => m.change);
  const seen = (what) => () => `${what}: ${watcher.raw}`;
  await until(() => changes().length >= 5, seen('the nodes at the start'));
  assert.deepEqual(
    changes()
      .map((c) => [c.type, c.node.name])
      .sort(),
    ['a1', 'a2', 'b1', 'c1', 'e1'].map((n) => ['added', n]),
  );
  await post('provision', ['a1'], 'deploy', { wait: false });
  await until(() => changes().some((c) => c.type === 'modified' && c.node.name === 'a1'), seen('a1 deploying'));
  // Another watch, of another scope, at the same interval: its rounds are the clock below.
  const witness = await witnessWatch('deploying', 0.5);
  ended.abort();
  // The listener gone, the watch ends (the server has heard of it, and a listing under way is
  // over, within two rounds of the other watch): nothing more is sent for it.
  const left = sim.requests().next;
  await until(() => witness.rounds(left) >= 2, 'two rounds of the other watch');
  const at = sim.requests().next;
  await until(() => witness.rounds(at) >= 3, 'three more rounds of the other watch');
  witness.stop();
  assert.deepEqual(
    witness.others(at).filter((e) => e.path === '/v1/nodes'),
    [],
    'nothing sent after the listener left',
  );

  const bad = await stream(`/watch?scope=${encodeURIComponent(JSON.stringify({ color: 'red' }))}`);
  await bad.ended;
  assert.equal(bad.messages.at(-1).type, 'error');
  assert.match(bad.messages.at(-1).error.message, /color/);
  assert.equal((await call('GET', '/watch?scope=%7B')).status, 400);
  assert.equal((await call('GET', '/watch?nonsense=1')).status, 400);
});

test('DELETE stops a wait: nothing more is sent for it, its listeners are told', async () => {
  sim.load(SCENARIO);
  // A watch of another scope, at the wait's interval: none of the wait's nodes is in it.
  const witness = await witnessWatch('active', 0.3);
  const since = sim.requests().next;
  const id = await post('waitForProvisionState', ['c1'], 'active', { timeout: 60, pollInterval: 0.3 });
  const listener = await listen(id);
  // It polls a few times, so the check below means something.
  await until(() => witness.others(since).length >= 3, 'three checks of the wait');
  assert.equal((await call('DELETE', `/waits/${id}`)).status, 204);
  const at = sim.requests().next;
  await listener.ended;
  assert.deepEqual(listener.messages.at(-1), { type: 'deleted' });
  // Three rounds of the watch: nothing but its lists.
  await until(() => witness.rounds(at) >= 3, 'three rounds of the watch');
  witness.stop();
  assert.deepEqual(witness.others(at), [], 'nothing sent after DELETE');
  assert.equal((await call('GET', `/waits/${id}`)).status, 404);
});

test('deno killed (SIGKILL) mid-wait and started again on the same KV file: the waits end as uninterrupted ones, no PUT sent twice, no busy loop', async () => {
  const scenario = {
    seed: 7,
    timing: { deploying: 2500, 'wait call-back': 500 },
    nodes: ['k1', 'k2', 'k3'].map((name) => ({ name, provision_state: 'available' })),
    transitions: [{ node: 'k3', action: 'deploy', fail: NO_IMAGE, at: 'deploying', after: 1500 }],
  };
  const calls = [
    ['provision', ['k1', 'k2', 'k3'], 'deploy', { wait: true, timeout: 60, pollInterval: 0.4, settle: 'all' }],
    ['waitForProvisionState', ['k1'], 'active', { timeout: 60, pollInterval: 0.4 }],
  ];
  const expected = await uninterrupted(reference, TOKEN, scenario, calls);

  sim.load(scenario);
  const since = sim.requests().next;
  const ids = [];
  for (const [method, ...args] of calls) ids.push(await post(method, ...args));
  // A few rounds in, the process dies with nothing flushed.
  const nodeGets = () => sim.log({ since }).filter((e) => e.method === 'GET' && e.path.startsWith('/v1/nodes')).length;
  await until(
    () => nodeGets() >= 4,
    () => `no rounds:\n${server.output()}`,
  );
  await server.kill();
  assert.notEqual(sim.node('k1').provision_state, 'active', 'killed mid-wait');
  server = await startServer();
  // A listener of the new process hears the end.
  const listener = await listen(ids[0]);

  // Nothing but the queue moves the waits on: GET reads, it schedules nothing.
  const done = [];
  for (const id of ids) done.push(await finished(id));
  await listener.ended;
  assertSameOutcomes(done, expected);
  assert.equal(done[0].error, null);
  assert.deepEqual(
    outcomes(done[0].report).map(([node, outcome]) => `${node} ${outcome}`),
    ['k1 reached', 'k2 reached', 'k3 failed'],
  );
  assert.deepEqual(listener.messages.at(-1), { type: 'done', report: done[0].report, error: done[0].error });
  assert.deepEqual(putsByNode(since), { k1: 1, k2: 1, k3: 1 }, 'each node one PUT');
  // The new process read the records once, and stepped them from memory; the rounds of
  // deploying nodes that moved nothing wrote no checkpoint.
  const stats = (await call('GET', '/stats')).body;
  assert.equal(stats.loads, 1, JSON.stringify(stats));
  assert.ok(stats.rounds >= 3, JSON.stringify(stats));
  assert.ok(stats.checkpointWrites < 2 * stats.rounds, JSON.stringify(stats));

  // Rounds came at the waits' pace (0.4 s), never in a loop: a loose bound by count, whatever
  // the time taken. The deploys end 5.5 s into the simulator's clock (which is the wall clock
  // here), so there are at most that many poll intervals of rounds, each of at most the three
  // nodes, and a few rounds more (the restart, the last checks); a busy loop makes thousands.
  const bound = 3 * (Math.ceil((2500 + 500 + 2500) / 400) + 10);
  assert.ok(nodeGets() <= bound, `${nodeGets()} GETs of nodes (at most ${bound})`);
  assertNoToken([done], [listener]);
});

/** The token is in no answer, no event and no byte of the KV file (and its journal). */
function assertNoToken(answers, listeners) {
  assert.ok(!JSON.stringify(answers).includes(TOKEN), 'no token in an answer');
  for (const l of listeners) assert.ok(!l.raw.includes(TOKEN), 'no token in an event');
  const files = readdirSync(dir).filter((f) => f.startsWith('waits.kv'));
  assert.ok(files.includes('waits.kv'), 'the KV file is on disk');
  let bytes = 0;
  for (const f of files) {
    const data = readFileSync(join(dir, f));
    bytes += data.length;
    assert.ok(!data.includes(TOKEN), `the token is in ${f}`);
  }
  assert.ok(bytes > 0);
  // The check would find it: the KV file does hold the waits (the simulator's URL is in their checkpoints).
  assert.ok(
    files.some((f) => readFileSync(join(dir, f)).includes(sim.url)),
    'the records are in the KV file',
  );
}

/**
 * A Deno script: KvStorage on a KV file of its own; what another KvStorage
 * loads from that file after each write (what a restarted server would
 * find), as one JSON line.
 */
const STORAGE_CHECK = `
import { KvStorage } from 'ironic-wait/deno';
const kv = await Deno.openKv(Deno.args[0]);
for await (const { key } of kv.list({ prefix: [] })) await kv.delete(key);
const storage = new KvStorage(kv);
await storage.load();
const reloaded = async () => {
  const again = new KvStorage(kv);
  await again.load();
  return again;
};
const parts = async () => {
  let n = 0;
  for await (const _ of kv.list({ prefix: ['ironic-wait', 'part'] })) n++;
  return n;
};
const roundTrip = async (key, value) => {
  await storage.put(key, value);
  const again = await (await reloaded()).get(key);
  return { same: JSON.stringify(again) === JSON.stringify(value) && JSON.stringify(await storage.get(key)) === JSON.stringify(value), parts: await parts() };
};
const out = {};
// 2,000,000 bytes of JSON.
out.big = await roundTrip('wait:big', { id: 'big', text: 'x'.repeat(2_000_000 - JSON.stringify({ id: 'big', text: '' }).length) });
// Rewritten smaller, with characters of two and three bytes: the old parts go.
out.multibyte = await roundTrip('wait:big', { id: 'multibyte', text: 'é€'.repeat(40_000) });
out.small = { ...(await roundTrip('wait:small', { id: 'small', done: false })), parts: (await parts()) - out.multibyte.parts };
out.listed = (await (await reloaded()).list('wait:')).map((r) => r.id).sort();
await storage.delete('wait:big');
out.afterDelete = { record: (await (await reloaded()).get('wait:big')) ?? null, parts: await parts() };
// Parts of a process that died mid-write: swept at load, the live record kept.
await kv.set(['ironic-wait', 'part', 'wait', 'small', 'dead-gen', 0], new Uint8Array(10));
await kv.set(['ironic-wait', 'part', 'wait', 'gone', 'dead-gen', 0], new Uint8Array(10));
out.swept = { kept: (await (await reloaded()).get('wait:small'))?.id === 'small', parts: await parts() };
// Writes of a key land in the order they were made, each read back at once.
const writes = [1, 2, 3].map((n) => storage.put('wait:small', { id: 'small', n, text: 'y'.repeat(100_000 * (4 - n)) }));
out.ordered = { now: (await storage.get('wait:small')).n };
await Promise.all(writes);
out.ordered.stored = (await (await reloaded()).get('wait:small')).n;
// A put after a delete (a step that ended as its wait was deleted) brings nothing back.
await Promise.all([storage.delete('wait:small'), storage.put('wait:small', { id: 'small', late: true })]);
out.late = { record: (await (await reloaded()).get('wait:small')) ?? null, here: (await storage.get('wait:small')) ?? null, parts: await parts() };
console.log(JSON.stringify(out));
kv.close();
`;
