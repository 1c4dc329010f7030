#!/usr/bin/env node

// Figures for the console's large demo fleet (not a test): the simulator
// with demoFleet({ size }) runs in a child process, as `npm start -- --fleet N`
// runs it, and this process reads it as a console would, with Node's HTTP
// client and JSON.parse (so the figures include a client's own costs).
//
//   node sim/bench-fleet.mjs [--size 100000] [--churn 0.01] [--rounds 3]
//
// Prints: load time and memory, a full listing by `next` (pages of 1000 with
// the console's fields), the same by two filters, a quiet change-feed page,
// and the cost of churn rounds.

import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '100000' },
    churn: { type: 'string', default: '0.01' },
    rounds: { type: 'string', default: '3' },
  },
});
const SIZE = Number(values.size);
const CHURN = Number(values.churn);

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIELDS =
  'uuid,name,provision_state,target_provision_state,power_state,target_power_state,last_error,maintenance,fault,conductor_group,resource_class,owner,provision_updated_at';
const FEED = `sort_key=provision_updated_at&sort_dir=desc&fields=${FIELDS}`;

// The child: the simulator with the demo fleet, its URL on stdout, and (on
// "stats\n" from stdin) its memory and the cost of its churn rounds.
const CHILD = `
import { startSimulator } from ${JSON.stringify(`${ROOT}sim/server.mjs`)};
import { demoFleet } from ${JSON.stringify(`${ROOT}www/demo-fleet.mjs`)};
const t0 = performance.now();
const scenario = demoFleet({ size: ${SIZE}, churn: ${CHURN} });
const built = performance.now() - t0;
const sim = await startSimulator({ port: 0, scenario });
const loaded = performance.now() - t0;
const world = sim.world;
const rounds = [];
const round = world.churnRound.bind(world);
world.churnRound = (ref, t) => { const a = performance.now(); round(ref, t); rounds.push(performance.now() - a); };
let busy = 0;
const advance = world.advance.bind(world);
world.advance = (now) => { const a = performance.now(); advance(now); busy += performance.now() - a; };
console.log(JSON.stringify({ url: sim.url, built, loaded, heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss }));
process.stdin.on('data', () => {
  console.log(JSON.stringify({ rounds, busy, now: world.now(), heap: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss,
    events: world.nodeHistory.budget.count, entries: world.historyBudget.count, byState: world.summary().byState }));
});
`;

function startChild() {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  let waiting = null;
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      const line = JSON.parse(out.slice(0, i));
      out = out.slice(i + 1);
      if (waiting) {
        waiting(line);
        waiting = null;
      } else lines.push(line);
    }
  });
  const next = () =>
    lines.length
      ? Promise.resolve(lines.shift())
      : new Promise((resolve) => {
          waiting = resolve;
        });
  return {
    child,
    next,
    stats: () => {
      child.stdin.write('stats\n');
      return next();
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function get(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent, headers: { 'X-OpenStack-Ironic-API-Version': '1.115' } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      })
      .on('error', reject);
  });
}

/** Every node by `next` (adding back the filter, which Ironic drops from it); ms in all, pages, nodes, slowest page. */
async function fullListing(base, filter = '') {
  const t0 = performance.now();
  let url = `${base}/v1/nodes?fields=${FIELDS}&limit=1000${filter}`;
  let pages = 0,
    nodes = 0,
    slowest = 0;
  while (url) {
    const a = performance.now();
    const page = await get(url);
    slowest = Math.max(slowest, performance.now() - a);
    pages++;
    nodes += page.nodes.length;
    url = page.next ? page.next + filter : null;
  }
  return { ms: performance.now() - t0, pages, nodes, slowest };
}

async function timed(url, times) {
  await get(url);
  const all = [];
  for (let i = 0; i < times; i++) {
    const a = performance.now();
    await get(url);
    all.push(performance.now() - a);
  }
  all.sort((a, b) => a - b);
  return { p50: all[Math.floor(times / 2)], max: all.at(-1) };
}

const f = (ms) => ms.toFixed(1);
const mb = (b) => `${(b / 1e6).toFixed(0)} MB`;
const { child, next, stats } = startChild();
const start = await next();
const base = start.url;
console.log(
  `demoFleet({ size: ${SIZE} }): built in ${f(start.built)} ms, simulator ready after ${f(start.loaded)} ms; heap ${mb(start.heap)}, RSS ${mb(start.rss)}`,
);

const cold = await fullListing(base);
const warm = await fullListing(base);
console.log(
  `full listing, ${cold.pages} pages of 1000 (${cold.nodes} nodes): ${f(cold.ms)} ms cold (${f(cold.ms / cold.pages)} a page, slowest ${f(cold.slowest)}), ${f(warm.ms)} ms warm (${f(warm.ms / warm.pages)} a page)`,
);
for (const filter of [
  '&conductor_group=dc2',
  '&fault=clean%20failure',
  '&provision_state=manageable&resource_class=gpu',
  '&shard=shard-03,shard-07&owner=project-05',
]) {
  const r = await fullListing(base, filter);
  console.log(`  filtered ${filter.slice(1)}: ${r.nodes} nodes, ${r.pages} pages, ${f(r.ms)} ms`);
}
for (const limit of [50, 1000]) {
  const r = await timed(`${base}/v1/nodes?${FEED}&limit=${limit}`, 50);
  console.log(`change feed page, limit=${limit}: p50 ${f(r.p50)} ms, max ${f(r.max)} ms`);
}
const s = await stats();
const rounds = s.rounds.slice(0, Number(values.rounds));
console.log(
  `churn so far: ${s.rounds.length} rounds in ${f(s.now / 1000)} s, a round (picking and starting ~${Math.round(CHURN * SIZE)} actions) ${rounds.map(f).join(' / ')} ms; ` +
    `all transition work ${f(s.busy)} ms (${((100 * s.busy) / s.now).toFixed(1)} % of the time); heap ${mb(s.heap)}, RSS ${mb(s.rss)}; ` +
    `${s.events} history rows, ${s.entries} sim history entries`,
);
console.log(JSON.stringify(s.byState));
agent.destroy();
child.kill();
