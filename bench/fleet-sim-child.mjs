// The simulator for one fleet measurement, in a process of its own:
//   node bench/fleet-sim-child.mjs '[FLEET, SCHEDULE, OPTIONS]'   (forked by bench/fleet.mjs, over IPC)
// OPTIONS: { waited, heartbeating } (schedule.mjs fleetScenario): a share of
// the fleet mid-deploy, its agents heartbeating; each heartbeat that touches
// a node's provision_updated_at is logged with the changes.
// `start` sends the waited nodes `active`, makes the quiet phase's lone
// change at SCHEDULE.loneAt and, once the quiet phase is over, churns 1% of
// the fleet per 2 s round (in batches every CHURN_TICK_MS) until `report`. From `start` on it logs every request: its arrival and the end
// of its answer on the wall clock every bench process shares, its path and
// query, and the bytes it read and wrote on its socket (headers included).
// `report` stops the churn and adds every provision state change since the
// start (the waited nodes' and the churn's) on the same clock.
import { startSimulator } from '../sim/server.mjs';
import { CHURN, CHURN_TICK_MS, EXPECTED, fleetScenario, quietUntil } from './schedule.mjs';

const MAX_MINOR = 115; // the newest microversion the simulator plays

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
const wall = () => performance.timeOrigin + performance.now();

const [fleet, { timing, loneAt }, { waited = 0, heartbeating = null } = {}] = JSON.parse(process.argv[2]);
const sim = await startSimulator({
  port: 0,
  host: '127.0.0.1',
  scenario: fleetScenario(fleet, waited, timing, heartbeating),
  logLimit: 1000,
});

let marked = false;
let startedAt = null; // sim ms of `start`
const log = [];

// Heartbeats that touched a node from `start` on: [sim ms, uuid, state]. A
// touch is a row the change feed has to read again, as a state change is;
// the simulator's history (what `report` reads) has only state changes.
const touches = [];
const world = sim.world;
const heartbeat = world.heartbeat.bind(world);
world.heartbeat = (ref, t) => {
  const rec = ref.node.rec;
  const before = rec.provision_updated_at;
  heartbeat(ref, t);
  if (marked && rec.provision_updated_at !== before) touches.push([t, rec.uuid, rec.provision_state]);
};
const sockets = new Set();
const markSocket = (socket) => {
  socket.mark = { read: socket.bytesRead, written: socket.bytesWritten };
};
sim.server.on('connection', (socket) => {
  markSocket(socket);
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});
// Before the simulator's own listener, which answers a GET in the same turn:
// after it, `at` would be the instant the answer was written, a few ms after
// the simulator read the fleet, and a change in between would seem to come
// before a round that could not see it.
sim.server.prependListener('request', (req, res) => {
  if (!marked) return;
  const { socket } = req;
  const [path, query = ''] = req.url.split('?');
  // No pipelining: what the socket read since the last request is this one's.
  const entry = { at: wall(), end: null, method: req.method, path, query, in: socket.bytesRead - socket.mark.read, out: 0 };
  socket.mark.read = socket.bytesRead;
  log.push(entry);
  res.on('finish', () => {
    // bytesWritten counts what is queued on the socket too: all of this answer.
    entry.end = wall();
    entry.out = socket.bytesWritten - socket.mark.written;
    socket.mark.written = socket.bytesWritten;
  });
});

let churnTimer = null;
let loneChange = null; // the wall instant of the lone change
let churned = 0;
function startChurn() {
  const from = sim.now();
  const perMs = (fleet * CHURN.fraction) / CHURN.perMs;
  const tick = () => {
    // As many as are due by now, so that late ticks do not lower the rate.
    const due = Math.floor((sim.now() - from) * perMs) - churned;
    if (due > 0) churned += sim.churn({ count: due }).changed.length;
  };
  churnTimer = setInterval(tick, CHURN_TICK_MS);
}

const handlers = {
  /** Sends the waited nodes (their UUIDs) `active`, all at this instant, and logs from now on. */
  start(uuids) {
    const now = sim.now();
    startedAt = now;
    for (const uuid of uuids) sim.world.provision(sim.world.findNode(uuid), { target: EXPECTED }, MAX_MINOR, now);
    for (const socket of sockets) markSocket(socket);
    marked = true;
    const quiet = setTimeout(startChurn, quietUntil(timing));
    const lone = setTimeout(() => {
      const { changed } = sim.churn({ count: 1 });
      loneChange = changed.length ? wall() : null;
    }, loneAt);
    handlers.stopChurn = () => {
      clearTimeout(quiet);
      clearTimeout(lone);
      clearInterval(churnTimer);
    };
    return { at: wall() };
  },
  /**
   * The request log and every provision state change since `start` (sim
   * time `t` is wall `offset + t`), heartbeat touches among them.
   */
  report() {
    handlers.stopChurn?.();
    const offset = wall() - sim.now();
    const changes = [];
    let arrivals = 0;
    for (const h of sim.history()) {
      for (const e of h.entries) {
        if (e.t < startedAt || e.action === 'load' || e.deleted) continue;
        changes.push([offset + e.t, h.uuid, e.provision_state]);
        if (e.provision_state === EXPECTED) arrivals++;
      }
    }
    for (const [t, uuid, state] of touches) changes.push([offset + t, uuid, state]);
    changes.sort((a, b) => a[0] - b[0]);
    return { requests: log, changes, churned, arrivals, loneChange, touches: touches.length };
  },
};

process.on('message', ({ id, cmd, arg }) => {
  try {
    process.send({ id, ok: true, value: handlers[cmd](arg) });
  } catch (err) {
    process.send({ id, ok: false, error: err.message });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true, url: sim.url });
