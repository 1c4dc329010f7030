// One measured wait: a fresh simulator (bench/sim-child.mjs) with the
// schedule, one client in its own process (bench/client.mjs or
// bench/peer.py), and the figures that come out of the two.
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXPECTED } from './schedule.mjs';

const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const VERSION = { 'X-OpenStack-Ironic-API-Version': '1.115' };

/** The command that runs client `name` (ironic-wait, floor or a Python peer) on a config file. */
export function clientCommand(name, python) {
  // BENCH_CPU_PROF=DIR: each JS client writes a V8 CPU profile there (for Chrome DevTools).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  if (['ironic-wait', 'ironic-wait+checkpoint', 'floor', 'floor-http'].includes(name))
    return [process.execPath, ...profile, here('./client.mjs'), name];
  return [python, here('./peer.py'), name];
}

/** Forks the simulator (`script`, with `args` as JSON); resolves to { url, call(cmd, arg), close() }. */
export function startSimulator(args, script = './sim-child.mjs') {
  const child = fork(here(script), [JSON.stringify(args)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const pending = new Map();
  let nextId = 1;
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`the simulator exited (${code})`)));
    child.on('message', (msg) => {
      if (msg.ready) {
        resolve({
          url: msg.url,
          call: (cmd, arg) =>
            new Promise((res, rej) => {
              const id = nextId++;
              pending.set(id, { res, rej });
              child.send({ id, cmd, arg });
            }),
          close: () => child.kill(),
        });
        return;
      }
      const { res, rej } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.ok) res(msg.value);
      else rej(new Error(msg.error));
    });
  });
}

async function getJson(url) {
  const res = await fetch(url, { headers: VERSION });
  if (!res.ok) throw new Error(`HTTP ${res.status} from ${url}`);
  return res.json();
}

/** Every node's UUID, in list order (before the start: not counted). */
export async function listUuids(base) {
  const uuids = [];
  for (let url = `${base}/v1/nodes?fields=uuid&limit=1000`; url; ) {
    const page = await getJson(url);
    uuids.push(...page.nodes.map((n) => n.uuid));
    url = page.next;
  }
  return uuids;
}

/**
 * Starts a client process; resolves once it printed `ready`, to
 * { go(timeoutMs) -> its JSON result, kill() }.
 */
export function startClient(command, configPath) {
  const [cmd, ...args] = command;
  const child = spawn(cmd, [...args, configPath], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let onLine = () => {};
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? signal)));
  const failure = (what) =>
    new Error(`${command.slice(1).join(' ')}: ${what}${stderr.trim() ? `\n${stderr.trim().split('\n').slice(-15).join('\n')}` : ''}`);
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    let end;
    while ((end = stdout.indexOf('\n')) >= 0) {
      const line = stdout.slice(0, end);
      stdout = stdout.slice(end + 1);
      onLine(line);
    }
  });
  const nextLine = () =>
    new Promise((resolve, reject) => {
      onLine = resolve;
      exited.then((code) => reject(failure(`exited (${code})`)));
    });
  return nextLine().then((line) => {
    if (line !== 'ready') {
      child.kill('SIGKILL');
      throw failure(`said ${JSON.stringify(line)} instead of ready`);
    }
    return {
      async go(timeoutMs) {
        const result = nextLine();
        child.stdin.write('go\n');
        let timer;
        const timeout = new Promise((_, reject) => {
          timer = setTimeout(() => reject(failure(`no answer in ${timeoutMs / 1000} s`)), timeoutMs);
        });
        try {
          return JSON.parse(await Promise.race([result, timeout]));
        } finally {
          clearTimeout(timer);
        }
      },
      exited,
      kill: () => child.kill('SIGKILL'),
    };
  });
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The figures of one wait, from what the client and the simulator saw. */
function figures(uuids, client, server) {
  const arrived = new Map();
  for (const h of server.histories) {
    const last = h.entries.at(-1);
    if (last.state !== EXPECTED) throw new Error(`node ${h.uuid} ended in ${last.state}, not ${EXPECTED}`);
    arrived.set(h.uuid, last.at);
  }
  const lags = uuids.map((uuid, i) => {
    if (client.settledAt[i] === null) throw new Error(`the client never reported node ${uuid} settled`);
    return client.settledAt[i] - arrived.get(uuid);
  });
  if (client.outcomes.reached !== uuids.length) {
    throw new Error(`not every node reached ${EXPECTED}: ${JSON.stringify(client.outcomes)}`);
  }
  return {
    requests: server.requests,
    byKind: server.byKind,
    bytes: server.bytesIn + server.bytesOut,
    bytesIn: server.bytesIn,
    bytesOut: server.bytesOut,
    cpuSeconds: client.cpuSeconds,
    detectMeanMs: mean(lags),
    detectMaxMs: Math.max(...lags),
    afterLastAnswerMs: client.settled - server.lastAnswer,
    afterLastArrivalMs: client.settled - Math.max(...arrived.values()),
    waitSeconds: (client.settled - client.started) / 1000,
    peakRssBytes: client.peakRssBytes,
    ...(client.checkpoints && { checkpoints: client.checkpoints }),
  };
}

/**
 * Measures one client waiting for `nodes` nodes on the schedule `timing`,
 * polling every `pollInterval` s:
 * the client is started and ready first, then every node is sent `active`
 * and the counting starts, then the client is told to go.
 */
export async function measureWait({ command, nodes, timing, pollInterval, timeoutMs }) {
  const sim = await startSimulator([nodes, timing]);
  const dir = mkdtempSync(join(tmpdir(), 'ironic-wait-bench-'));
  let client;
  try {
    const uuids = await listUuids(sim.url);
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify({ url: sim.url, uuids, expected: EXPECTED, pollInterval }));
    client = await startClient(command, configPath);
    await sim.call('start');
    const result = await client.go(timeoutMs);
    // A client exits once it has answered; a profiled one writes its profile then.
    if (process.env.BENCH_CPU_PROF) await client.exited;
    return figures(uuids, result, await sim.call('report'));
  } finally {
    client?.kill();
    sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
