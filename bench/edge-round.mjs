#!/usr/bin/env node
// The CPU and subrequests of the edge host's rounds (edge/waits.mjs, as the
// Cloudflare Durable Object runs them from its alarm), for N waited nodes in
// fleets of F: the package in Node (V8, as workerd), the simulator in a child
// process so that its work is not counted, storage in memory with a
// structured clone on each put and get (as a Durable Object's storage
// serializes values). Prints, per fleet and N, each round's subrequests and
// CPU: the first (the wait's first listing), those after it as the change
// feed fills and goes quiet (the state kept in memory, the checkpoint
// written only when it changes); then a round rehydrated from storage (a
// new host on the same client: the records read again and the checkpoint
// parsed, the feed still warm), and the first round after an eviction (a
// new host and a new client: the feed lost, a full listing again).
// The client's rounds send at most --cap requests (the Cloudflare host's
// 45 by default; 0 for no limit), so the listing that fills the feed takes
// as many rounds as it needs.
//   node bench/edge-round.mjs [--fleet 10000,100000] [--waited 1000,10000] [--rounds 8] [--cap 45]
// Not a test: nothing here passes or fails on a figure.
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Waits, WORKER_ROUND_REQUESTS } from '../edge/waits.mjs';
import { IronicClient } from '../pkg/node.js';

if (process.argv[2] === '--sim') {
  // The child: a fleet whose first `waited` nodes deploy for ever.
  const { startSimulator } = await import('../sim/server.mjs');
  const [fleet, waited] = process.argv.slice(3).map(Number);
  const nodes = Array.from({ length: fleet }, (_, i) => ({
    name: `node-${String(i).padStart(6, '0')}`,
    provision_state: i < waited ? 'deploying' : 'available',
  }));
  const sim = await startSimulator({ port: 0, host: '127.0.0.1', seed: 1, scenario: { nodes, timing: { deploying: 1e9 } } });
  process.send(sim.url);
} else {
  const { values } = parseArgs({
    options: {
      fleet: { type: 'string', default: '10000,100000' },
      waited: { type: 'string', default: '1000,10000' },
      rounds: { type: 'string', default: '8' },
      cap: { type: 'string', default: String(WORKER_ROUND_REQUESTS) },
    },
  });
  const cap = Number(values.cap) ? `at most ${values.cap}` : 'no limit';
  console.log(`CPU of this process (the host and the package), ms; subrequests per round (${cap}); checkpoint writes per round`);
  for (const fleet of values.fleet.split(',').map(Number)) {
    for (const waited of values.waited.split(',').map(Number)) {
      const child = fork(new URL(import.meta.url).pathname, ['--sim', String(fleet), String(waited)], { stdio: 'inherit' });
      const url = await new Promise((resolve) => child.once('message', resolve));
      try {
        const measured = await measure(url, waited, Number(values.rounds), Number(values.cap) || undefined);
        console.log(`fleet ${fleet}, N = ${waited}:\n${describe(measured)}`);
      } finally {
        child.kill();
      }
    }
  }
}

async function measure(url, waited, rounds, maxRoundRequests) {
  let requests = 0;
  let writes = 0;
  const fetch = globalThis.fetch;
  globalThis.fetch = (...args) => {
    requests += 1;
    return fetch(...args);
  };
  const memory = new Map();
  const storage = {
    get: async (key) => structuredClone(memory.get(key)),
    put: async (key, value) => {
      if (key.startsWith('cp:')) writes += 1;
      memory.set(key, structuredClone(value));
    },
    delete: async (key) => {
      memory.delete(key);
    },
    list: async (prefix) => [...memory].filter(([k]) => k.startsWith(prefix)).map(([, v]) => structuredClone(v)),
  };
  const client = new IronicClient({ endpoint: url, maxRoundRequests });
  let waits = new Waits({ client, storage });
  const names = Array.from({ length: waited }, (_, i) => `node-${String(i).padStart(6, '0')}`);
  const body = JSON.stringify({ method: 'waitForProvisionState', args: [names, 'active', { timeout: 3600, pollInterval: 2 }] });
  /** One round (`run`), once it is due: its CPU, subrequests and checkpoint writes. */
  const measured = async (run) => {
    const next = await waits.nextWake();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    const [before, written] = [requests, writes];
    const cpu = process.cpuUsage();
    await run();
    const used = process.cpuUsage(cpu);
    return { cpu: (used.user + used.system) / 1000, requests: requests - before, writes: writes - written };
  };
  // POST /waits: the checkpoint, and the first round (a full listing).
  let id;
  const first = await measured(async () => {
    const created = await waits.handle(new Request('http://host/waits', { method: 'POST', body }));
    if (created.status !== 201) throw new Error(`POST /waits: ${created.status} ${await created.text()}`);
    ({ id } = await created.json());
  });
  const after = [];
  for (let i = 0; i < rounds; i++) after.push(await measured(() => waits.round()));
  // Rehydrated: a new host on the same storage and client, whose kept state is dropped.
  client.forget(id);
  waits = new Waits({ client, storage });
  const rehydrated = await measured(() => waits.round());
  // Evicted: a new host and a new client (in memory, nothing is left).
  waits = new Waits({ client: new IronicClient({ endpoint: url, maxRoundRequests }), storage });
  const evicted = await measured(() => waits.round());
  globalThis.fetch = fetch;
  return { first, after, rehydrated, evicted, checkpoint: memory.get(`cp:${id}`).text.length };
}

function describe({ first, after, rehydrated, evicted, checkpoint }) {
  const round = (r) => `${r.requests} subrequests, ${r.cpu.toFixed(1)} ms, ${r.writes} checkpoint writes`;
  const quiet = after.filter((r) => r.requests === 1);
  const cpus = quiet.map((r) => r.cpu).sort((a, b) => a - b);
  const median = cpus.length ? cpus[Math.floor(cpus.length / 2)].toFixed(1) : '-';
  return [
    `  first round: ${round(first)}`,
    ...after.map((r, i) => `  round ${i + 2}: ${round(r)}`),
    `  quiet rounds: median ${median} ms (${cpus.map((c) => c.toFixed(1)).join(', ')})`,
    `  rehydrated from storage: ${round(rehydrated)}`,
    `  first round after an eviction: ${round(evicted)}`,
    `  checkpoint ${(checkpoint / 1024).toFixed(0)} KB`,
  ].join('\n');
}
