#!/usr/bin/env node

// Load benchmark of the simulator (not a test): starts `node sim/server.mjs`
// with 10,000 nodes in a child process and drives it over keep-alive HTTP
// from this process, so server and load generator each get a core.
//
//   node sim/bench.mjs [--nodes 10000] [--seconds 5] [--concurrency 32] [--url URL] [--only LABEL]

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    url: { type: 'string' }, // a simulator already running (with --nodes matching)
    only: { type: 'string' }, // run only the loads whose label contains this
  },
});
const NODES = Number(values.nodes);
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const VERSION = { 'X-OpenStack-Ironic-API-Version': '1.115' };

function startServer() {
  const t0 = performance.now();
  const server = spawn(
    process.execPath,
    [fileURLToPath(new URL('./server.mjs', import.meta.url)), '--port', '0', '--nodes', String(NODES), '--seed', '1'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ server, url: m[1], ready: performance.now() - t0 });
    });
    server.on('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
}

/**
 * A minimal keep-alive HTTP/1.1 client on raw sockets: Node's own client costs
 * more CPU per request than the simulator does, and would measure itself.
 * Calls `done(status, bodyBytes)` per response; `send(path)` issues the next request.
 */
function rawConnection(url, done) {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.setNoDelay(true);
  let head = null; // header bytes until the blank line is seen
  let remaining = 0;
  let status = 0;
  let bodyBytes = 0;
  socket.on('data', (chunk) => {
    if (remaining === 0) {
      head = head ? Buffer.concat([head, chunk]) : chunk;
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = head.toString('latin1', 0, end);
      status = Number(text.slice(9, 12));
      bodyBytes = Number(/content-length: *(\d+)/i.exec(text)[1]);
      remaining = bodyBytes - (head.length - end - 4);
      head = null;
    } else {
      remaining -= chunk.length;
    }
    if (remaining === 0) done(status, bodyBytes);
  });
  return {
    send(path) {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nX-OpenStack-Ironic-API-Version: 1.115\r\n\r\n`);
    },
    close() {
      socket.destroy();
    },
  };
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

/** Run `pathOf(i)` requests from `concurrency` keep-alive connections for `seconds`. */
function load(url, label, pathOf, { seconds = SECONDS, concurrency = CONCURRENCY } = {}) {
  if (values.only && !label.includes(values.only)) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const latencies = [];
    let bytes = 0;
    let i = 0;
    let open = concurrency;
    const cpu0 = serverCpu();
    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    const finish = () => {
      const elapsed = (performance.now() - t0) / 1000;
      const cpu = serverCpu() - cpu0;
      latencies.sort((a, b) => a - b);
      const row = {
        label,
        concurrency,
        requests: latencies.length,
        'req/s': Math.round(latencies.length / elapsed),
        'p50 ms': pct(latencies, 50).toFixed(2),
        'p99 ms': pct(latencies, 99).toFixed(2),
        'max ms': latencies.at(-1).toFixed(1),
        'MB/s': (bytes / elapsed / 1e6).toFixed(1),
        'server CPU us/req': cpu === null ? 'n/a' : Math.round((cpu * 1e6) / latencies.length),
      };
      console.log(JSON.stringify(row));
      resolve(row);
    };
    for (let c = 0; c < concurrency; c++) {
      let started = 0;
      const conn = rawConnection(url, (status, n) => {
        if (status !== 200) {
          conn.close();
          reject(new Error(`${label}: HTTP ${status}`));
          return;
        }
        latencies.push(performance.now() - started);
        bytes += n;
        if (performance.now() < end) next();
        else {
          conn.close();
          if (--open === 0) finish();
        }
      });
      const next = () => {
        started = performance.now();
        conn.send(pathOf(i++));
      };
      next();
    }
  });
}

/** One list page of 1000 at growing markers, one request at a time: flat times mean no work proportional to the offset. */
async function pages(url) {
  const markers = [];
  let next = '/v1/nodes?limit=1000&fields=uuid';
  while (next) {
    const body = await new Promise((resolve, reject) => {
      http
        .get(new URL(next, url), { headers: VERSION }, (res) => {
          let text = '';
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => resolve(JSON.parse(text)));
        })
        .on('error', reject);
    });
    markers.push(body.nodes.at(-1)?.uuid);
    next = body.next?.slice(url.length);
  }
  for (const k of [0, 4, 8, 50, 99].filter((k) => k === 0 || markers[k - 1])) {
    const marker = k ? `&marker=${markers[k - 1]}` : '';
    await load(url, `list page of 1000 after ${k * 1000} nodes`, () => `/v1/nodes?limit=1000${marker}`, { seconds: 1, concurrency: 1 });
  }
}

/** GET `path` (Node's client: for the few requests that are not measured one by one). */
function getJson(url, path) {
  return new Promise((resolve, reject) => {
    http
      .get(new URL(path, url), { headers: VERSION }, (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve(JSON.parse(text)));
      })
      .on('error', reject);
  });
}

function post(url, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, url), { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const FEED_FIELDS = 'uuid,name,provision_state,target_provision_state,last_error,provision_updated_at';
const feed = (limit) => `/v1/nodes?sort_key=provision_updated_at&sort_dir=desc&fields=${FEED_FIELDS}&limit=${limit}`;

/** A whole listing by `next` (the change feed's first, full read), twice: cold, then with the node texts cached. */
async function listing(url) {
  if (values.only && !'full listing'.includes(values.only)) return;
  for (const pass of ['cold', 'warm']) {
    const t0 = performance.now();
    let pages = 0;
    for (let next = `/v1/nodes?fields=${FEED_FIELDS}&limit=1000`; next; pages++) {
      const body = await getJson(url, next);
      next = body.next?.slice(url.length);
    }
    const ms = performance.now() - t0;
    console.log(
      JSON.stringify({ label: `full listing by 1000 (${pass})`, pages, 'total ms': Math.round(ms), 'ms/page': (ms / pages).toFixed(1) }),
    );
  }
}

/** Changes pages while nodes change: each round churns `count` nodes, then reads the page of 50 newest. */
async function churned(url, count) {
  const label = `changes page of 50 after a churn of ${count}`;
  if (values.only && !label.includes(values.only)) return;
  const latencies = [];
  let started = 0;
  let got;
  const conn = rawConnection(url, (status) => got(status));
  for (let round = 0; round < 200; round++) {
    await post(url, '/__sim/churn', { count });
    started = performance.now();
    const status = await new Promise((resolve) => {
      got = resolve;
      conn.send(feed(50));
    });
    if (status !== 200) throw new Error(`${label}: HTTP ${status}`);
    latencies.push(performance.now() - started);
  }
  conn.close();
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({ label, rounds: latencies.length, 'p50 ms': pct(latencies, 50).toFixed(2), 'p99 ms': pct(latencies, 99).toFixed(2) }),
  );
}

let serverPid;
/** The simulator's CPU time so far in seconds (Linux /proc), or null elsewhere. */
function serverCpu() {
  try {
    const fields = readFileSync(`/proc/${serverPid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in USER_HZ (100)
  } catch {
    return null;
  }
}

const { server, url, ready } = values.url ? { server: null, url: values.url } : await startServer();
serverPid = server?.pid;
try {
  console.log(`simulator: ${url}, ${NODES} nodes${ready ? `, ready in ${Math.round(ready)} ms` : ''}; load ${SECONDS}s per run`);
  const names = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(Math.max(3, String(NODES - 1).length), '0')}`);
  const pick = (i) => names[(i * 7919) % names.length];
  await load(url, 'warm-up', (i) => `/v1/nodes/${pick(i)}`, { seconds: 1 });
  await load(url, 'GET node (full)', (i) => `/v1/nodes/${pick(i)}`);
  await load(url, 'GET node (full)', (i) => `/v1/nodes/${pick(i)}`, { concurrency: 4 });
  await load(url, 'GET node ?fields=4', (i) => `/v1/nodes/${pick(i)}?fields=uuid,provision_state,target_provision_state,last_error`);
  await load(url, 'GET list limit=1000', () => '/v1/nodes?limit=1000', { concurrency: 4 });
  await load(url, 'GET list detail limit=1000', () => '/v1/nodes?limit=1000&detail=true', { concurrency: 4 });
  await pages(url);
  // The change feed: the newest changes first, on a quiet fleet and while it churns.
  await load(url, 'changes page limit=50 (quiet)', () => feed(50), { concurrency: 1 });
  await load(url, 'changes page limit=1000 (quiet)', () => feed(1000), { concurrency: 1 });
  await listing(url);
  await churned(url, 10);
  await churned(url, 1000);
} finally {
  server?.kill();
}
