// Shared set-up for the client tests: the real simulator on its own
// loopback server, with every request's headers recorded, and whether the
// client hung up before the answer (the simulator's log keeps method, path
// and timing, not these).
import http from 'node:http';
import { listen } from '../../sim/http.mjs';
import { createSimulator } from '../../sim/server.mjs';

/** Fast transitions: every phase takes 40 ms of simulator time. */
export const FAST = Object.fromEntries(
  [
    'verifying',
    'deploying',
    'wait call-back',
    'deleting',
    'cleaning',
    'inspecting',
    'adopting',
    'rescuing',
    'unrescuing',
    'servicing',
    'allocating',
  ].map((k) => [k, 40]),
);

/**
 * Starts a simulator with `scenario` (fast timing unless it says otherwise).
 * `options.onRequest(entry, res)`, if given, is called as each request arrives, before the simulator
 * answers it (e.g. to move a manual clock by the client's rounds rather than by the wall clock); an
 * entry is `open` until its response closes.
 * @returns {{ url, sim, seen: {method, url, headers, cancelled, open}[], close() }}
 */
export async function startIronic(scenario = {}, { onRequest, ...options } = {}) {
  const sim = createSimulator({ seed: 7, ...options, scenario: { ...scenario, timing: { ...FAST, ...scenario.timing } } });
  const seen = [];
  const server = http.createServer((req, res) => {
    const entry = { method: req.method, url: req.url, headers: req.headers, cancelled: false, open: true };
    seen.push(entry);
    res.on('close', () => {
      entry.open = false;
      entry.cancelled = !res.writableFinished;
    });
    onRequest?.(entry, res);
    if (!sim.handle(req, res)) {
      res.writeHead(404).end();
    }
  });
  const listening = await listen(server, 0, '127.0.0.1');
  const url = `http://127.0.0.1:${listening.port}`;
  return {
    url,
    sim,
    seen,
    /** Requests seen whose method and path (without query) match. */
    requests(method, pathPattern) {
      const re = new RegExp(
        `^${pathPattern
          .split('*')
          .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^?]*')}(\\?.*)?$`,
      );
      return seen.filter((r) => r.method === method && re.test(r.url));
    },
    async close() {
      await sim.close();
      await listening.close();
    },
  };
}

/** Nodes named as given, in the given provision states. */
export const nodes = (spec) => Object.entries(spec).map(([name, provision_state]) => ({ name, provision_state }));

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once `condition()` holds, checking every 10 ms; fails after `ms`: a bound for a condition that
 * never comes, far past what a loaded machine takes for one that does (they take milliseconds).
 */
export async function until(condition, ms = 30_000) {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met in ${ms} ms: ${condition}`);
    await sleep(10);
  }
}
