#!/usr/bin/env node
// The CPU of one round of the edge host (edge/waits.mjs, as the Cloudflare
// Durable Object runs it from its alarm) with N waited nodes in a fleet of
// 10,000: the package in Node (V8, as workerd), the simulator in a child
// process so that its work is not counted, storage in memory with a
// structured clone on each put and get (as a Durable Object's storage
// serializes values). Prints, per N: subrequests and CPU of the first round
// (the full listing), and of the quiet rounds after it (the change feed).
//   node bench/edge-round.mjs [--waited 1000,10000] [--rounds 5]
// Not a test: nothing here passes or fails on a figure.
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Waits } from '../edge/waits.mjs';
import { IronicClient } from '../pkg/node.js';

const FLEET = 10_000;
if (process.argv[2] === '--sim') {
  // The child: a fleet whose first `waited` nodes deploy for ever.
  const { startSimulator } = await import('../sim/server.mjs');
  const waited = Number(process.argv[3]);
  const nodes = Array.from({ length: FLEET }, (_, i) => ({
    name: `node-${String(i).padStart(5, '0')}`,
    provision_state: i < waited ? 'deploying' : 'available',
  }));
  const sim = await startSimulator({ port: 0, host: '127.0.0.1', seed: 1, scenario: { nodes, timing: { deploying: 1e9 } } });
  process.send(sim.url);
} else {
  const { values } = parseArgs({
    options: { waited: { type: 'string', default: '1000,10000' }, rounds: { type: 'string', default: '5' } },
  });
  console.log(`fleet ${FLEET}; CPU of this process (the host and the package), ms; subrequests per round`);
  for (const waited of values.waited.split(',').map(Number)) {
    const child = fork(new URL(import.meta.url).pathname, ['--sim', String(waited)], { stdio: 'inherit' });
    const url = await new Promise((resolve) => child.once('message', resolve));
    try {
      console.log(`N = ${waited}: ${describe(await measure(url, waited, Number(values.rounds)))}`);
    } finally {
      child.kill();
    }
  }
}

async function measure(url, waited, quietRounds) {
  let requests = 0;
  const fetch = globalThis.fetch;
  globalThis.fetch = (...args) => {
    requests += 1;
    return fetch(...args);
  };
  const memory = new Map();
  const storage = {
    get: async (key) => structuredClone(memory.get(key)),
    put: async (key, value) => {
      memory.set(key, structuredClone(value));
    },
    delete: async (key) => {
      memory.delete(key);
    },
    list: async (prefix) => [...memory].filter(([k]) => k.startsWith(prefix)).map(([, v]) => structuredClone(v)),
  };
  const waits = new Waits({ client: new IronicClient({ endpoint: url }), storage });
  const names = Array.from({ length: waited }, (_, i) => `node-${String(i).padStart(5, '0')}`);
  const body = JSON.stringify({ method: 'waitForProvisionState', args: [names, 'active', { timeout: 3600, pollInterval: 2 }] });
  // POST /waits: the checkpoint, and the first round (a full listing).
  const cpu = process.cpuUsage();
  const created = await waits.handle(new Request('http://host/waits', { method: 'POST', body }));
  const used = process.cpuUsage(cpu);
  if (created.status !== 201) throw new Error(`POST /waits: ${created.status} ${await created.text()}`);
  const rounds = [{ cpu: (used.user + used.system) / 1000, requests }];
  let next = await waits.nextWake();
  for (let i = 0; i < quietRounds; i++) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    const before = requests;
    const cpu = process.cpuUsage();
    next = await waits.round();
    const used = process.cpuUsage(cpu);
    rounds.push({ cpu: (used.user + used.system) / 1000, requests: requests - before });
  }
  globalThis.fetch = fetch;
  return { first: rounds[0], quiet: rounds.slice(1), checkpoint: (await storage.list('wait:'))[0].checkpoint.length };
}

function describe({ first, quiet, checkpoint }) {
  const cpus = quiet.map((r) => r.cpu).sort((a, b) => a - b);
  const median = cpus[Math.floor(cpus.length / 2)];
  return (
    `first round ${first.requests} subrequests, ${first.cpu.toFixed(1)} ms; quiet rounds ${quiet.map((r) => r.requests).join('/')} subrequests, ` +
    `median ${median.toFixed(1)} ms (${cpus.map((c) => c.toFixed(1)).join(', ')}); checkpoint ${(checkpoint / 1024).toFixed(0)} KB`
  );
}
