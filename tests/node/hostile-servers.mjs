// What the hostile-server tests need besides the harness (harness.mjs): a
// second origin that records whatever reaches it, a front whose port can go
// away and come back (a restarting server), the simulator in a child process
// (so that memory measured here is the client's alone), and memory probes.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import v8 from 'node:v8';
import vm from 'node:vm';
import { initSync } from '../../pkg/ironic_wait.js';
import { listen } from '../../sim/http.mjs';

/**
 * Another origin on loopback that answers 200 `{}` to anything and records
 * each request: { method, url, headers, body, at } (`at`: performance.now()).
 */
export async function startRecorder() {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString(), at: performance.now() });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  const listening = await listen(server, 0, '127.0.0.1');
  return { url: `http://127.0.0.1:${listening.port}`, seen, close: () => listening.close() };
}

/**
 * A TCP front on its own port that passes connections through to `target`
 * (a URL). stop() closes the port and drops every connection, as a server
 * going down does (new connections are refused); start() listens again on
 * the same port.
 */
export async function startFront(target) {
  const { hostname, port: targetPort } = new URL(target);
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(targetPort), hostname);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ]) {
      sockets.add(a);
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.on('error', () => b.destroy());
      a.pipe(b);
    }
  });
  const open = (port) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve(server.address().port);
      });
    });
  const port = await open(0);
  const stop = () => {
    const closed = new Promise((resolve) => server.close(resolve));
    for (const s of sockets) s.destroy();
    return closed;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    stop,
    start: () => open(port),
    close: () => (server.listening ? stop() : undefined),
  };
}

/**
 * The simulator (sim/server.mjs) in a child process with `scenario`, driven
 * over its control API: { url, addFaults(rules), clearFaults(), log(), now(), advance(ms), histories(), close() }.
 */
export async function startSimProcess(scenario) {
  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-sim-'));
  const file = join(dir, 'scenario.json');
  writeFileSync(file, JSON.stringify(scenario));
  const child = spawn(process.execPath, [new URL('../../sim/server.mjs', import.meta.url).pathname, '--port', '0', '--scenario', file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const first = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the simulator exited (${code}) before listening`)));
  });
  const url = /on (http:\/\/\S+)/.exec(first)[1];
  const control = async (method, path, body) => {
    const res = await fetch(`${url}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    return res.status === 204 ? undefined : res.json();
  };
  return {
    url,
    addFaults: (rules) => control('POST', '/__sim/faults', rules),
    clearFaults: () => control('DELETE', '/__sim/faults'),
    log: async () => (await control('GET', '/__sim/log')).entries,
    /** The simulator's clock (ms since the scenario loaded), and the state histories of the nodes that changed. */
    now: async () => (await control('GET', '/__sim/clock')).now,
    /** Moves a manual clock (the scenario's `manualClock`) on by `ms`; resolves to the clock after it. */
    advance: async (ms) => (await control('POST', '/__sim/clock', { advance: ms })).now,
    histories: async () => (await control('GET', '/__sim/history')).nodes,
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Records when each fetch() starts, as the client sees it: the package calls
 * the global fetch at each request, so a pass-through wrapper gives the exact
 * instant a request started, where the server only sees when it arrived.
 * Returns the list of { at (performance.now()), method, url, answeredAt (when
 * its promise resolved: the answer's headers came) }, appended to.
 */
export function recordFetches() {
  if (!globalThis.fetch.starts) {
    const original = globalThis.fetch;
    const starts = [];
    globalThis.fetch = Object.assign(
      function fetch(input, init) {
        const entry = { at: performance.now(), method: init?.method ?? input?.method ?? 'GET', url: String(input?.url ?? input) };
        starts.push(entry);
        const promise = original(input, init);
        // When the answer's headers came (before the caller reads the body and decides what is next).
        promise.then(
          () => {
            entry.answeredAt = performance.now();
          },
          () => {},
        );
        return promise;
      },
      { starts },
    );
  }
  return globalThis.fetch.starts;
}

/** The package's WebAssembly.Memory size in bytes (the instance the package itself loaded). */
// (Found by type: the wasm's exports have short names, see scripts/build.mjs.)
export const wasmMemoryBytes = () => Object.values(initSync()).find((v) => v instanceof WebAssembly.Memory).buffer.byteLength;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

/** A full garbage collection, then the process's memory figures (bytes) and the wasm memory. */
export async function memorySample() {
  // Twice, with a turn of the event loop between: finalizers and weak callbacks run in between.
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const { rss, heapUsed, arrayBuffers, external } = process.memoryUsage();
  return { rss, heapUsed, arrayBuffers, external, wasm: wasmMemoryBytes() };
}

export const MiB = 1024 * 1024;
