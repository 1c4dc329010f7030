#!/usr/bin/env node

// The Ironic simulator: `node sim/server.mjs --port P --nodes N --seed S`
// (`npx ironic-wait sim ...` once installed), or
// `import { startSimulator } from 'ironic-wait/sim'` (sim/index.mjs). See sim/README.md.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { notFoundRoute } from './api.mjs';
import { Faults } from './faults.mjs';
import { createHandler, listen, RequestLog } from './http.mjs';
import { World } from './ironic.mjs';

/**
 * A simulator without a listening socket: mount `sim.handle` on any node:http server.
 * @param {object} options
 * @param {number} [options.seed=1] seeds UUIDs, durations, fault fractions and the fleet
 * @param {number} [options.timeScale=1] sim time runs this many times faster than real time
 * @param {number} [options.nodes=0] size of the demo fleet when the scenario lists no nodes
 * @param {object} [options.scenario] the scenario to load (see README)
 * @param {boolean} [options.manualClock=false] time moves only by advance(ms)
 * @param {number|string} [options.epoch] the wall time of sim time 0 (default: now)
 * @param {string} [options.timestampResolution='microsecond'] how timestamps are stored: 'microsecond' (SQLite),
 *   'second' (whole seconds, truncated: MariaDB) or 'second-rounded' (MySQL's default rounding)
 * @param {number|false} [options.heartbeatTimeout=300] Ironic's [api]ramdisk_heartbeat_timeout in sim seconds: nodes in
 *   wait call-back, clean wait and service wait heartbeat every 0.3 to 0.6 of it, touching provision_updated_at; 0 or false: none
 * @param {number} [options.logLimit=100000] request log entries kept
 * @param {number} [options.historyLimit=300000] entries kept in all by each history (the simulator's, Ironic's node history)
 */
export function createSimulator(options = {}) {
  const opts = { seed: 1, timeScale: 1, nodes: 0, logLimit: 100_000, ...options };
  let current = opts.scenario ?? {};

  // Views apply what fell due first, so they show the present like a GET would.
  const findHistory = (ident) => {
    sim.world.advance();
    const node = sim.world.findNode(ident);
    if (node) return sim.world.historyOf(node);
    for (const h of sim.world.histories.values()) if (h.uuid === ident || h.name === ident) return h;
    return undefined;
  };
  const mustFind = (ident) => {
    sim.world.advance();
    const node = sim.world.findNode(ident);
    if (!node) throw new Error(`no node ${ident}`);
    return node;
  };

  const sim = {
    world: null,
    faults: null,
    requestLog: null,
    hung: new Set(),
    timers: new Set(),
    ticker: null,

    /** Replace the world by `scenario`; on a bad scenario, throw and keep the old one. */
    load(scenario = {}) {
      const world = new World({ ...opts, scenario });
      const faults = new Faults(world.seed);
      faults.add(scenario.faults ?? []);
      world.lateCommit = (node, state) => faults.commitDelay(node.rec, state);
      Object.assign(sim, { world, faults, requestLog: new RequestLog(opts.logLimit) });
      current = scenario;
      sim.tick();
    },
    /**
     * A churning fleet on a real clock is kept up to date by a timer, one
     * round at a time: lazily, an hour without requests would come due all
     * at once on the next one.
     */
    tick() {
      clearInterval(sim.ticker);
      sim.ticker = null;
      const { churnSpec, clock, timeScale } = sim.world;
      if (!churnSpec || clock.manual) return;
      sim.ticker = setInterval(() => sim.world.advance(), Math.max(10, churnSpec.every / timeScale));
      sim.ticker.unref(); // never what keeps a process alive
    },
    /** Back to the last scenario loaded (the clock restarts at 0, the log empties). */
    reset() {
      sim.load(current);
    },
    summary() {
      sim.world.advance();
      return {
        ...sim.world.summary(),
        faults: sim.faults.rules.length,
        transitions: sim.world.transitions.length,
        requests: sim.requestLog.nextSeq - 1,
      };
    },
    /** The request log: { entries, next, dropped } after `since`, by method, path glob or node. */
    requests(filter = {}) {
      return sim.requestLog.query({ ...filter, resolve: (ident) => findHistory(ident)?.uuid ?? ident });
    },
    log(filter) {
      return sim.requests(filter).entries;
    },
    /** One node's state history { uuid, name, entries }, or every node that changed since load. */
    history(ident) {
      if (ident !== undefined) return findHistory(ident);
      sim.world.advance();
      return [...sim.world.histories.values()].filter((h) => h.entries.length > 1 || h.entries[0]?.action !== 'load');
    },
    /** The stored node with its transition plan (timestamps in sim-clock ms). */
    node(ident) {
      sim.world.advance();
      const node = sim.world.findNode(ident);
      if (!node) return undefined;
      const plan = node.plan && {
        action: node.plan.action,
        phase: node.plan.i,
        phases: node.plan.phases.map(({ apply, ...p }) => p),
      };
      return { ...node.rec, plan, history: sim.world.historyOf(node).entries };
    },
    setNode(ident, fields) {
      sim.world.patchNode(mustFind(ident), fields, sim.now());
    },
    deleteNode(ident) {
      sim.world.removeNode(mustFind(ident), sim.now(), 'delete');
    },
    transitions: {
      add: (rules) => sim.world.addTransitions(rules),
      clear: () => {
        sim.world.transitions = [];
      },
      list: () => sim.world.transitions,
    },
    now() {
      return sim.world.now();
    },
    /** Move a manual clock forward and apply what fell due. */
    advance(ms) {
      sim.world.clock.advance(ms);
      sim.world.advance();
    },
    /** Timestamps written from now on are `ms` off the clock (negative: the server's clock jumped back); 0 ends it. */
    skew(ms) {
      sim.world.setSkew(ms);
    },
    /**
     * `count` nodes in `states` (default available and manageable), picked from the seed,
     * flip available <-> manageable now: { t, changed: [{ uuid, name, from, to, visible }] }.
     * With `moves: true`, `count` idle nodes start the demo churn's provision actions instead
     * (a scenario's `churn` does this every round): { t, started: [{ uuid, name, from, action, fails }] }.
     */
    churn(options = {}) {
      if (options.moves) {
        const { moves, count, ...rest } = options;
        if (Object.keys(rest).length) throw new Error(`churn with moves takes only count, not ${Object.keys(rest).join(', ')}`);
        sim.world.advance();
        return sim.world.churnMoves(count);
      }
      return sim.world.churn(options);
    },
    /** The node history rows (GET /v1/nodes/{id}/history) of a node, oldest first, timestamps in sim ms. */
    events(ident) {
      sim.world.advance();
      const node = sim.world.findNode(ident);
      return node ? [...(node.events ?? [])] : undefined;
    },
    later(fn, ms) {
      const timer = setTimeout(() => {
        sim.timers.delete(timer);
        fn();
      }, ms);
      sim.timers.add(timer);
    },
    /** Ends delayed and hung requests (their sockets are destroyed). */
    async close() {
      clearInterval(sim.ticker);
      sim.ticker = null;
      for (const timer of sim.timers) clearTimeout(timer);
      sim.timers.clear();
      for (const res of sim.hung) res.socket?.destroy();
      sim.hung.clear();
    },
  };
  sim.load(current);
  sim.handle = createHandler(sim);
  return sim;
}

/**
 * Start the simulator on its own server.
 * @param {object} options those of createSimulator, plus port (default 0: any) and host (default 127.0.0.1)
 * @returns the simulator, with url, port, server and an async close() that also drops open connections
 */
export async function startSimulator(options = {}) {
  const { port = 0, host = '127.0.0.1' } = options;
  const sim = createSimulator(options);
  const handle = createHandler(sim, { root: true });
  const server = http.createServer((req, res) => {
    if (handle(req, res)) return;
    const answer = notFoundRoute();
    res.writeHead(answer.status, { ...answer.headers, 'X-OpenStack-Request-Id': sim.world.requestId() });
    res.end(answer.body);
  });
  const listening = await listen(server, port, host);
  const bound = listening.port;
  const closeHandlers = sim.close;
  return Object.assign(sim, {
    server,
    host,
    port: bound,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    async close() {
      await closeHandlers();
      await listening.close();
    },
  });
}

const usage = (prog) => `usage: ${prog} [options]
  --port P          port to listen on (default 6385, Ironic's; 0 picks one)
  --host H          address to bind (default 127.0.0.1)
  --nodes N         demo fleet of N nodes named node-000.. (default 0)
  --seed S          seed for UUIDs, durations, faults and the fleet (default 1)
  --time-scale X    run transitions X times faster than their sim durations (default 1)
  --scenario FILE   load a scenario JSON file (see sim/README.md)
  --manual-clock    time moves only through POST /__sim/clock {"advance": ms}
  --log-limit N     request log entries kept (default 100000)
  --timestamp-resolution R
                    microsecond (default, SQLite), second (MariaDB: truncated)
                    or second-rounded (MySQL: rounded)
  --heartbeat-timeout S
                    Ironic's [api]ramdisk_heartbeat_timeout in sim seconds: nodes
                    in wait call-back, clean wait and service wait heartbeat every
                    0.3 to 0.6 of it, touching provision_updated_at (default 300;
                    0: no heartbeats)`;

/**
 * The simulator's command line, shared by `node sim/server.mjs` and
 * `ironic-wait sim` (bin/ironic-wait.mjs): starts the server the flags in
 * `argv` describe, prints `ironic simulator on URL (...)` as its first line
 * and serves until SIGINT or SIGTERM, which close it and exit 0. `--help`
 * prints the usage; a bad flag or scenario prints the error and the usage on
 * stderr and exits 2.
 * @param {string[]} argv the arguments after the program's name
 * @param {{ prog?: string }} [options] prog: how the usage names the program
 * @returns {Promise<void>} once the server listens (or the usage is printed)
 */
export async function main(argv, { prog = 'node sim/server.mjs' } = {}) {
  try {
    await serveFromFlags(argv, prog);
  } catch (e) {
    console.error(`sim: ${e.message}\n${usage(prog)}`);
    process.exit(2);
  }
}

async function serveFromFlags(argv, prog) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '6385' },
      host: { type: 'string', default: '127.0.0.1' },
      nodes: { type: 'string' },
      seed: { type: 'string' },
      'time-scale': { type: 'string' },
      scenario: { type: 'string' },
      'manual-clock': { type: 'boolean', default: false },
      'log-limit': { type: 'string' },
      'timestamp-resolution': { type: 'string' },
      'heartbeat-timeout': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(usage(prog));
    return;
  }
  const num = (name, fallback) => {
    if (values[name] === undefined) return fallback;
    const n = Number(values[name]);
    if (!Number.isFinite(n)) throw new Error(`--${name} needs a number, not "${values[name]}"`);
    return n;
  };
  const sim = await startSimulator({
    port: num('port'),
    host: values.host,
    nodes: num('nodes', 0),
    seed: num('seed', 1),
    timeScale: num('time-scale', 1),
    manualClock: values['manual-clock'],
    logLimit: num('log-limit', 100_000),
    timestampResolution: values['timestamp-resolution'],
    heartbeatTimeout: num('heartbeat-timeout'),
    scenario: values.scenario ? JSON.parse(readFileSync(values.scenario, 'utf8')) : undefined,
  });
  // Before the line that says it is ready: a signal sent on reading it closes it and exits 0.
  const stop = () => sim.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const s = sim.summary();
  console.log(`ironic simulator on ${sim.url} (${s.nodes} nodes, seed ${s.seed}, time scale ${s.timeScale})`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
