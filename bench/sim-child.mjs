// The simulator for one measured wait, in a process of its own:
//   node bench/sim-child.mjs '[NODES, TIMING]'   (forked by bench/run.mjs, over IPC)
// `start` sends every node `active`; from then on it counts what the client
// costs the server: requests,
// bytes on the wire both ways (headers included, read from the sockets), and
// the instant the last answer was handed to the kernel. `report` adds each
// node's history, its instants on the wall clock every bench process shares.
import { startSimulator } from '../sim/server.mjs';
import { EXPECTED, scenario } from './schedule.mjs';

const MAX_MINOR = 115; // the newest microversion the simulator plays

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
const wall = () => performance.timeOrigin + performance.now();

const sockets = new Set();
let marked = false;
let requests = 0;
let lastAnswer = null;
const byKind = {};

/** What a request is, for the breakdown: the version document, one node, a list page, or other. */
function kindOf(req) {
  const path = req.url.split('?')[0].replace(/\/+$/, '');
  if (path === '' || path === '/v1') return 'version';
  if (path === '/v1/nodes' || path === '/v1/nodes/detail') return 'list';
  if (/^\/v1\/nodes\/[^/]+$/.test(path)) return req.method === 'GET' ? 'node' : 'other';
  return 'other';
}

const sim = await startSimulator({ port: 0, host: '127.0.0.1', scenario: scenario(...JSON.parse(process.argv[2])), logLimit: 1000 });
sim.server.on('connection', (socket) => {
  socket.base = { read: 0, written: 0 };
  sockets.add(socket);
});
sim.server.on('request', (req, res) => {
  if (!marked) return;
  requests++;
  const kind = kindOf(req);
  byKind[kind] = (byKind[kind] ?? 0) + 1;
  res.on('finish', () => {
    lastAnswer = wall();
  });
});

const handlers = {
  /**
   * Sends every node `active`, all at this instant, and counts from now on.
   * The model's own provision (what `PUT .../states/provision` runs), called
   * here rather than over HTTP: 10,000 PUTs take seconds on a busy machine,
   * and would smear the schedule that every client must share.
   */
  start() {
    const now = sim.now();
    for (const node of sim.world.order) sim.world.provision(node, { target: EXPECTED }, MAX_MINOR, now);
    for (const socket of sockets) socket.base = { read: socket.bytesRead, written: socket.bytesWritten };
    marked = true;
    return { at: wall() };
  },
  /** The counts since the mark, and every changed node's history on the shared clock. */
  report() {
    let bytesIn = 0;
    let bytesOut = 0;
    for (const socket of sockets) {
      bytesIn += socket.bytesRead - socket.base.read;
      bytesOut += socket.bytesWritten - socket.base.written;
    }
    // Real time (timeScale 1): sim time t happened at wall instant offset + t.
    const offset = wall() - sim.now();
    const histories = sim.history().map((h) => ({
      uuid: h.uuid,
      entries: h.entries.map((e) => ({ at: offset + e.t, state: e.provision_state })),
    }));
    return { requests, byKind, bytesIn, bytesOut, lastAnswer, histories };
  },
};

process.on('message', ({ id, cmd }) => {
  try {
    process.send({ id, ok: true, value: handlers[cmd]() });
  } catch (err) {
    process.send({ id, ok: false, error: err.message });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true, url: sim.url });
