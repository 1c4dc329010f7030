// Checkpoints across processes, the runner for Deno (`deno run
// --allow-net=HOST:PORT resume-runner.mjs MODE URL ARG`, from a consumer
// project where ironic-wait is installed): each run is one process with
// clients of its own, and prints one JSON line. The simulator at URL runs on
// its manual clock; only `run` and `start` move it (POST /__sim/clock), the
// test does the rest.
//   run URL SPEC         the call uninterrupted; the clock moves SPEC.advance ms after its first round
//   start URL SPEC       the same call; the clock moves SPEC.advance ms after its first round, and
//                        once a node has settled, the next checkpoint is kept and the call aborted
//   resume URL CP        a new client resumes CP to its end
//   checkpoint URL SPEC  the checkpoint of the call, nothing sent
//   step URL CP          a new client makes one step of CP
// SPEC: { nodes, action, options, advance }. Every client is made with
// TOKEN, which no checkpoint may hold.
import { IronicClient } from 'ironic-wait';

const TOKEN = 'deno-resume-token-5a0c9e1f'; // the test knows it too

const [mode, url, arg] = globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2);
const client = () => new IronicClient({ endpoint: url, token: TOKEN });

const outcomes = (report) => report?.nodes.map((n) => [n.node, n.outcome, n.state, n.lastError ?? null]) ?? null;
/** A report or an error, in words that compare across processes (no times, no counters). */
const describe = (value) =>
  value instanceof Error
    ? { error: value.name, message: value.message, nodes: outcomes(value.report) }
    : { ok: value.ok, nodes: outcomes(value) };

async function advance(ms) {
  const res = await fetch(`${url}/__sim/clock`, {
    method: 'POST',
    body: JSON.stringify({ advance: ms }),
    headers: { 'Content-Type': 'application/json' },
  });
  if (!res.ok) throw new Error(`advancing the clock: ${res.status} ${await res.text()}`);
  await res.body?.cancel();
}

/**
 * Moves the clock `ms` once every node has been seen: the first round of
 * checks is answered and the client sleeps a poll interval, so that the
 * next round sees the moved clock whole.
 */
function afterFirstRound(nodes, ms) {
  const seen = new Set();
  const self = {
    moved: undefined,
    onProgress: (e) => {
      seen.add(e.node);
      if (seen.size === nodes.length && !self.moved) self.moved = advance(ms);
    },
  };
  return self;
}

const modes = {
  async run() {
    const { nodes, action, options, advance: ms } = JSON.parse(arg);
    const checkpoints = [];
    const move = afterFirstRound(nodes, ms);
    const result = await client()
      .provision(nodes, action, {
        ...options,
        onProgress: move.onProgress,
        onCheckpoint: (cp) => checkpoints.push(cp),
      })
      .catch((e) => e);
    await move.moved;
    return { result: describe(result), checkpoints: checkpoints.length, tokenInCheckpoints: checkpoints.some((cp) => cp.includes(TOKEN)) };
  },

  async start() {
    const { nodes, action, options, advance: ms } = JSON.parse(arg);
    const controller = new AbortController();
    const move = afterFirstRound(nodes, ms);
    const settled = [];
    let checkpoints = 0;
    let kept = null;
    const result = await client()
      .provision(nodes, action, {
        ...options,
        signal: controller.signal,
        onProgress: (e) => {
          move.onProgress(e);
          if (e.done && !controller.signal.aborted) settled.push([e.node, e.outcome]);
        },
        onCheckpoint: (cp) => {
          checkpoints += 1;
          if (settled.length && !kept) {
            kept = cp;
            controller.abort();
          }
        },
      })
      .catch((e) => e);
    await move.moved;
    return {
      checkpoint: kept,
      rejection: result?.name,
      isSignalReason: result === controller.signal.reason,
      settledBeforeCheckpoint: settled,
      checkpoints,
    };
  },

  async resume() {
    const progress = [];
    const checkpoints = [];
    const result = await client()
      .resume(arg, {
        onProgress: (e) => progress.push([e.node, e.state, e.done, e.outcome]),
        onCheckpoint: (cp) => checkpoints.push(cp),
      })
      .catch((e) => e);
    return {
      result: describe(result),
      progress,
      checkpoints: checkpoints.length,
      tokenInCheckpoints: checkpoints.some((cp) => cp.includes(TOKEN)),
    };
  },

  async checkpoint() {
    const { nodes, action, options } = JSON.parse(arg);
    return { checkpoint: client().checkpoint('provision', nodes, action, options) };
  },

  async step() {
    const { checkpoint, wakeAtMs, report, error } = await client().step(arg);
    return {
      checkpoint,
      wakeAtMs,
      report: report && { ok: report.ok, nodes: outcomes(report) },
      error: error && { name: error.name, message: error.message, isError: error instanceof Error },
    };
  },
};

console.log(JSON.stringify(await modes[mode]()));
