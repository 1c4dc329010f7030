// The "Fleet" section of docs/benchmarks.md from one fleet run's figures
// (made by bench/run.mjs with bench/fleet.mjs). Plain Markdown with one
// number per cell, so that tests/node/bench.test.mjs can read it back. The
// section sits between FLEET_BEGIN and FLEET_END: a run without the fleet
// keeps the one already in the file, and `--fleet` replaces only it.

import { PAGE, ROUND_GAP_MS } from './fleet.mjs';
import { CHURN, CHURN_TICK_MS, FLEET_K, HEARTBEATING, quietUntil, window } from './schedule.mjs';

export const FLEET_BEGIN = '<!-- fleet: made by `npm run bench -- --fleet` (or --quick); a run without the fleet keeps it -->';
export const FLEET_END = '<!-- /fleet -->';

/** The heartbeat case's row: the changes client, with a share of the fleet mid-deploy and heartbeating (schedule.mjs HEARTBEATING). */
export const HEARTBEAT_CLIENT = `ironic-wait changes, ${HEARTBEATING.share * 100}% heartbeating`;

/** The clients of the fleet table, in its row order; `heartbeating`: the simulator's fleet for that row. */
export const FLEET_CLIENTS = [
  { name: 'ironic-wait changes', kind: 'ironic-wait', config: () => ({ options: { listMode: 'changes' } }) },
  {
    name: HEARTBEAT_CLIENT,
    kind: 'ironic-wait',
    config: () => ({ options: { listMode: 'changes' } }),
    heartbeating: HEARTBEATING,
  },
  { name: 'ironic-wait list', kind: 'ironic-wait', config: () => ({ options: { listMode: 'list' } }) },
  // A wait on fewer nodes than listThreshold GETs each node.
  { name: 'ironic-wait per-node', kind: 'ironic-wait', config: (n) => ({ options: { listThreshold: n + 1 } }) },
  // pollInterval 'auto': the default budget (a list poller's at 2 s), and python-ironicclient's (a GET a node every 2 s).
  { name: 'ironic-wait auto', kind: 'ironic-wait', config: () => ({ options: { pollInterval: 'auto' } }) },
  {
    name: "ironic-wait auto, python's budget",
    kind: 'ironic-wait',
    config: (n) => ({ options: { pollInterval: 'auto', budget: 30 * n } }),
  },
  { name: 'floor', kind: 'floor', config: () => ({}) },
  { name: 'python-ironicclient', kind: 'python-ironicclient', peer: true, config: () => ({}) },
];

/** The K-waits runs: K waits on one client, and on K clients (K IronicClient instances in one process). */
export const K_CLIENTS = [
  { name: `${FLEET_K} waits, one client`, kind: 'ironic-wait', config: (groups) => ({ groups }) },
  { name: `${FLEET_K} waits, ${FLEET_K} clients`, kind: 'ironic-wait', config: (groups) => ({ groups, separate: true }) },
];

/** What the section says of a run on a schedule other than the full one (schedule.mjs). */
const VARIANT_NOTES = {
  quick: ' **A --quick run**: one small fleet, a short schedule.',
  smoke:
    ' **A --smoke run**: one small fleet, a 1 s interval, every waited node in `active` before the second round, so no quiet or churn round: a check of the report, not figures to read.',
};

/** The limits the issue set, judged on the figures as measured. */
export const TARGETS = { quietRequests: 1, lagRatio: 1.05, kRatio: 1.1, quietCpuMs: 5, quietCpuFleet: 100000 };

const n0 = (v) => (v === null || v === undefined ? '—' : v.toFixed(0));
const n1 = (v) => (v === null || v === undefined ? '—' : v.toFixed(1));
const n2 = (v) => (v === null || v === undefined ? '—' : v.toFixed(2));
const thousands = (n) => n.toLocaleString('en-US');
const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(3)}x` : '—');
const verdict = (ok) => (ok === null ? 'not measured' : ok ? 'met' : 'missed');

function table(head, rows) {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

const KIND_NAMES = { version: 'version', list: 'list page', changes: 'changes page', node: 'node GET', other: 'other' };
const breakdown = (byKind) =>
  Object.entries(byKind)
    .map(([k, n]) => `${n} ${KIND_NAMES[k] ?? k}`)
    .join(', ');

/** The columns of a fleet table: header and the cell of one run's figures. */
export const FLEET_COLUMNS = [
  { head: 'rounds', cell: (r) => String(r.rounds) },
  { head: 'requests / round', cell: (r) => n2(r.requestsPerRound) },
  { head: 'quiet round: requests', cell: (r) => n2(r.quietRequests) },
  { head: 'quiet round: CPU ms', cell: (r) => n2(r.quietCpuMs) },
  { head: 'quiet after the burst: requests', cell: (r) => n2(r.burstRequests) },
  { head: 'rounds 1-2: requests', cell: (r) => String(r.firstTwoRequests) },
  { head: 'churn rounds: changes', cell: (r) => n0(r.busyChanges) },
  { head: 'churn rounds: requests', cell: (r) => n2(r.busyRequests) },
  { head: 'KB received / round', cell: (r) => n1(r.kbPerRound) },
  { head: 'CPU ms / round', cell: (r) => n1(r.cpuMsPerRound) },
  { head: 'lag mean ms', cell: (r) => n0(r.detectMeanMs) },
  { head: 'lag p95 ms', cell: (r) => n0(r.detectP95Ms) },
  { head: 'total requests', cell: (r) => String(r.requests) },
  { head: 'CPU s', cell: (r) => r.cpuSeconds.toFixed(3) },
];

// Per-round figures mean nothing for K clients, whose rounds interleave: totals only.
const K_COLUMNS = [
  { head: 'total requests', cell: (r) => String(r.requests) },
  { head: 'KB received', cell: (r) => n1(r.bytesOut / 1024) },
  { head: 'CPU s', cell: (r) => r.cpuSeconds.toFixed(3) },
  { head: 'lag mean ms', cell: (r) => n0(r.detectMeanMs) },
  { head: 'lag p95 ms', cell: (r) => n0(r.detectP95Ms) },
];

const ok = (r) => r && r.requests !== undefined;

/** The targets table: each target, at each size, beside what was measured. */
function targetsTable(fleet) {
  const rows = [];
  for (const [f, n] of fleet.sizes) {
    const by = fleet.results[`${f}/${n}`] ?? {};
    const mine = by['ironic-wait changes'];
    const floor = by.floor;
    const size = [thousands(f), thousands(n)];
    if (!ok(mine)) {
      rows.push([
        'every target',
        ...size,
        `ironic-wait changes ${mine?.error ? `failed: ${mine.error.split('\n')[0]}` : 'did not run'}`,
        'not measured',
      ]);
      continue;
    }
    rows.push([
      'a quiet round (after a lone change) costs 1 request',
      ...size,
      mine.quietRounds ? `mean ${n2(mine.quietRequests)}, max ${mine.quietRequestsMax} over ${mine.quietRounds} rounds` : 'no such round',
      verdict(mine.quietRounds ? mine.quietRequestsMax <= TARGETS.quietRequests : null),
    ]);
    rows.push([
      `the same, right after the start's burst (${thousands(n)} nodes stamped at one instant)`,
      ...size,
      mine.burstRounds ? `mean ${n2(mine.burstRequests)} over ${mine.burstRounds} rounds` : 'no such round',
      verdict(mine.burstRounds ? mine.burstRequests <= TARGETS.quietRequests : null),
    ]);
    const worst = mine.busyWorst;
    rows.push([
      `churn rounds: at most ceil(changes / ${PAGE}) + 1 requests`,
      ...size,
      `${mine.busyWithin} of ${mine.busyRounds} rounds${worst ? `; worst: round ${worst.index}, ${worst.requests} requests for ${worst.changes} changes` : ''}`,
      verdict(mine.busyRounds ? mine.busyWithin === mine.busyRounds : null),
    ]);
    const beating = by[HEARTBEAT_CLIENT];
    if (ok(beating)) {
      const worstBeating = beating.busyWorst;
      rows.push([
        `${HEARTBEATING.share * 100}% of the fleet mid-deploy, its agents heartbeating: every round with changes (heartbeat touches counted) at most ceil(changes / ${PAGE}) + 1 requests, and no arrival missed`,
        ...size,
        `${beating.busyWithin} of ${beating.busyRounds} rounds${worstBeating ? ` (worst: round ${worstBeating.index}, ${worstBeating.requests} requests for ${worstBeating.changes} changes)` : ''}; ` +
          `${beating.touches} touches (${n1(beating.touchesPerRound)} a round), ${n1(beating.busyChanges)} changes a round; ${beating.missed} of ${thousands(n)} arrivals missed`,
        verdict(beating.busyRounds ? beating.busyWithin === beating.busyRounds && beating.missed === 0 : null),
      ]);
    }
    if (ok(floor)) {
      const mean = mine.detectMeanMs / floor.detectMeanMs;
      const p95 = mine.detectP95Ms / floor.detectP95Ms;
      rows.push([
        "detection lag, mean, within 5% of the floor list poller's",
        ...size,
        `${n0(mine.detectMeanMs)} ms against ${n0(floor.detectMeanMs)} ms: ${ratio(mine.detectMeanMs, floor.detectMeanMs)}`,
        verdict(mean <= TARGETS.lagRatio),
      ]);
      rows.push([
        "detection lag, p95, within 5% of the floor's",
        ...size,
        `${n0(mine.detectP95Ms)} ms against ${n0(floor.detectP95Ms)} ms: ${ratio(mine.detectP95Ms, floor.detectP95Ms)}`,
        verdict(p95 <= TARGETS.lagRatio),
      ]);
    }
    const auto = by['ironic-wait auto'];
    const autoPy = by["ironic-wait auto, python's budget"];
    if (n === 1000 && ok(auto)) {
      rows.push([
        `pollInterval 'auto', default budget: mean detection lag at most half the fixed ${fleet.pollInterval} s interval's`,
        ...size,
        `${n0(auto.detectMeanMs)} ms against ${n0(mine.detectMeanMs)} ms (${ratio(auto.detectMeanMs, mine.detectMeanMs)}); ${auto.requests} requests against ${mine.requests}`,
        verdict(auto.detectMeanMs <= mine.detectMeanMs / 2),
      ]);
    }
    if (n === 1000 && ok(autoPy)) {
      rows.push([
        "pollInterval 'auto' with python-ironicclient's request budget: mean detection lag under 0.2 s",
        ...size,
        `${n0(autoPy.detectMeanMs)} ms (p95 ${n0(autoPy.detectP95Ms)} ms); ${autoPy.requests} requests`,
        verdict(autoPy.detectMeanMs < 200),
      ]);
    }
    const k = fleet.k?.[`${f}/${n}`];
    const one = k?.[K_CLIENTS[0].name];
    const many = k?.[K_CLIENTS[1].name];
    if (ok(one)) {
      rows.push([
        `${FLEET_K} waits on one client cost one loop: requests within 10% of one wait on their union`,
        ...size,
        `${one.requests} requests in ${one.rounds} rounds against ${mine.requests} in ${mine.rounds} (at most ${n1(mine.requests * TARGETS.kRatio)}): ${ratio(one.requests, mine.requests)}` +
          `${ok(many) ? `; ${FLEET_K} clients: ${many.requests} (${ratio(many.requests, mine.requests)})` : ''}`,
        verdict(one.requests <= mine.requests * TARGETS.kRatio),
      ]);
    }
    if (f >= TARGETS.quietCpuFleet) {
      rows.push([
        `client CPU per quiet round under ${TARGETS.quietCpuMs} ms`,
        ...size,
        mine.quietCpuMs === null
          ? 'no quiet round'
          : `mean ${n2(mine.quietCpuMs)} ms, max ${n2(mine.quietCpuMsMax)} ms over ${mine.quietRounds} rounds` +
            (mine.burstCpuMs === null ? '' : `; right after the burst ${n2(mine.burstCpuMs)} ms`),
        verdict(mine.quietCpuMs === null ? null : mine.quietCpuMsMax < TARGETS.quietCpuMs),
      ]);
    }
  }
  return table(['target', 'F', 'N', 'measured (ironic-wait changes)', 'met?'], rows);
}

/** One table per F, N: a row per client. */
function resultTables(fleet) {
  const out = [];
  for (const [f, n] of fleet.sizes) {
    const by = fleet.results[`${f}/${n}`] ?? {};
    const notes = [];
    const rows = fleet.clients.map((client) => {
      const r = by[client];
      if (!ok(r)) {
        notes.push(`${client}: ${r?.skipped ?? (r?.error ? `error: ${r.error.split('\n')[0]}` : 'not run')}`);
        return [client, ...FLEET_COLUMNS.map(() => '—'), ''];
      }
      return [client, ...FLEET_COLUMNS.map((c) => c.cell(r)), breakdown(r.byKind)];
    });
    out.push(`### Fleet: F = ${f}, N = ${n}`, '', table(['client', ...FLEET_COLUMNS.map((c) => c.head), 'requests by kind'], rows));
    if (notes.length) out.push('', ...notes.map((x) => `- ${x}`));
    out.push('');
  }
  return out.join('\n');
}

/** The K-waits table: one wait on N, K waits on one client, K waits on K clients. */
function kTable(fleet) {
  const rows = [];
  for (const [f, n] of fleet.sizes) {
    const k = fleet.k?.[`${f}/${n}`];
    if (!k) continue;
    const single = fleet.results[`${f}/${n}`]?.['ironic-wait changes'];
    const line = (name, r) => [
      thousands(f),
      thousands(n),
      name,
      ...(ok(r)
        ? [...K_COLUMNS.map((c) => c.cell(r)), ok(single) ? ratio(r.requests, single.requests) : '—', breakdown(r.byKind)]
        : [...K_COLUMNS.map(() => '—'), '—', r?.error ? `error: ${r.error.split('\n')[0]}` : 'not run']),
    ];
    rows.push(line('1 wait on all N (the changes row above)', single));
    for (const c of K_CLIENTS) rows.push(line(c.name, k[c.name]));
  }
  if (!rows.length) return 'Not run.';
  return table(['F', 'N', 'waits', ...K_COLUMNS.map((c) => c.head), "requests / 1 wait's", 'requests by kind'], rows);
}

/** The whole Fleet section, markers included. */
export function fleetMarkdown(fleet) {
  const m = fleet.machine;
  const b = fleet.build;
  const { timing, loneAt } = fleet.schedule;
  const [lo, hi] = window(timing);
  const perRound = CHURN.fraction * 100;
  const kSizes = Object.keys(fleet.k ?? {}).map((key) => key.split('/').map(Number));
  const peers = fleet.clients.includes('python-ironicclient');
  return `${FLEET_BEGIN}
## Fleet

Measured on ${fleet.date.slice(0, 10)} by \`${fleet.command}\` (${fleet.minutes.toFixed(1)} minutes): ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}${m.python ? `, ${m.python}` : ''}; 1-minute load average ${m.load} when the run began.
ironic-wait ${b.version} as built in pkg/ (${b.pkgBuilt}).${VARIANT_NOTES[fleet.variant] ?? ''}

A fleet of F nodes in the simulator, all \`available\`. N of them, a seeded sample spread over the whole list (so that a list poller pages nearly the whole fleet every round), are sent \`active\` at one instant as the client is told to go; each walks deploying -> wait call-back -> deploying -> active (deploying ${timing.deploying[0]}-${timing.deploying[1]} ms, wait call-back ${timing['wait call-back'][0]}-${timing['wait call-back'][1]} ms, drawn per node from the seed): arrivals in \`active\` ${lo}-${hi} s after the start. The client waits for the N by UUID, polling every ${fleet.pollInterval} s.

- **Quiet phase**, the first ${quietUntil(timing) / 1000} s: nothing changes but one *lone change* at ${loneAt / 1000} s (one node not waited for flips available -> manageable). Before it, the newest change of the fleet is the start's burst (N nodes stamped at one instant); after it, a single node's.
- **Churn phase**, from ${quietUntil(timing) / 1000} s until the wait is over: ${perRound}% of the fleet per 2 s round (F/100 nodes; the simulator's \`churn\`, in batches every ${CHURN_TICK_MS} ms) flips available <-> manageable, among the nodes not waited for (churn picks only \`available\` and \`manageable\` nodes with no transition under way); the waited nodes' own moves come on top.

Each client runs in a process of its own against a fresh simulator in another, one after the other (bench/fleet.mjs):

- **ironic-wait changes**: \`waitForProvisionState(uuids, 'active', { pollInterval: ${fleet.pollInterval}, settle: 'all', onProgress, listMode: 'changes' })\` (the default): one full listing, then the change feed.
- **${HEARTBEAT_CLIENT}**: the same on another fleet, where ${HEARTBEATING.share * 100}% of the nodes (never a waited one) are mid-deploy from the start, in \`wait call-back\`, their agents heartbeating as Ironic's do by default (every 90 to 180 s, the simulator's \`heartbeatTimeout\` ${HEARTBEATING.heartbeatTimeout}): each heartbeat touches the node's \`provision_updated_at\` with no change of state, a row the change feed reads again. Its churn rounds' changes count the touched nodes.
- **ironic-wait list**: the same with \`listMode: 'list'\`: the fleet listed in full every round (as long as that is fewer requests than a GET per unsettled node).
- **ironic-wait per-node**: the same with \`listThreshold: N + 1\`: one GET per unsettled node per round.
- **ironic-wait auto**: the change feed with \`pollInterval: 'auto'\`: rounds as often as the default budget (what a list poller of the fleet spends every 2 s) allows, never more often than every 250 ms.
- **ironic-wait auto, python's budget**: the same with \`budget: 30 * N\`, the requests a minute python-ironicclient spends (a GET per node every 2 s).
- **floor**: [bench/floor.mjs](../bench/floor.mjs), the hand-written list poller: \`GET /v1/nodes?fields=uuid,provision_state,target_provision_state,last_error&limit=1000\` page after page every ${fleet.pollInterval} s, until every waiting node was seen.
${peers ? `- **python-ironicclient** ${m.peers?.ironicclient ?? ''}: \`wait_for_provision_state(uuids, 'active', poll_interval=${fleet.pollInterval})\`: one full node GET per node per round; run only up to N = ${fleet.peersMax}.\n` : ''}
How a run is cut into rounds: from the simulator's request log, a request begins a new round when it arrives more than ${ROUND_GAP_MS} ms after the round's last answer, or repeats one of the round's requests (same path and query, no marker: a node GET, or a list's first page). Every figure per round is a mean over the wait's rounds.

- **quiet round**: from the third round on (the first checks every node; the change feed's second is its full listing), a round with no change in the fleet from the previous round's start to its own last answer, after the lone change. **quiet after the burst**: the same before the lone change.
- **rounds 1-2: requests**: what the first two rounds cost (ironic-wait: the version document, the first check, and in changes mode the feed's full listing).
- **churn rounds**: the rounds from the third on that are not quiet; **changes**: the distinct nodes that changed at the simulator between the previous round's start and this round's start (waited nodes and churn).
- **KB received / round**: bytes the simulator wrote on the client's sockets (headers included), per round. **CPU ms / round**: the client process's user + system CPU over the wait, divided by its rounds. **quiet round: CPU ms**: the process's CPU from the instant it called \`fetch\` for a quiet round's first request to the same instant of the next round (JS: \`process.cpuUsage()\` in a wrapper of the global \`fetch\`; Python: \`getrusage\` in a wrapper of requests' \`Session.send\`).
- **lag**: per node, the instant the client first saw it \`active\` minus the instant the simulator moved it there; mean and 95th percentile over the N.

### Targets

${targetsTable(fleet)}

${resultTables(fleet)}
### Fleet: ${FLEET_K} concurrent waits

${FLEET_K} waits started together, at ${kSizes.map(([f, n]) => `F = ${thousands(f)}, N = ${thousands(n)}`).join(' and ') || 'no size'}: wait i is on a shared slice (the first N/20 of the waited nodes) plus the i-th tenth of the rest, so their union is the N. On one \`IronicClient\` (one poll loop), and on ${FLEET_K} \`IronicClient\` instances in one process (one loop each), on the same schedule; default list mode (changes). CPU is the whole process's.

${kTable(fleet)}

Raw figures of this run, every round of every client: \`${fleet.rawFile}\` (not committed).
${FLEET_END}`;
}

/** `text` (a whole benchmarks.md) with its fleet section replaced by `section`, or the section added before "## Size" or at the end. */
export function withFleetSection(text, section) {
  const begin = text.indexOf(FLEET_BEGIN);
  const end = text.indexOf(FLEET_END);
  if (begin >= 0 && end > begin) return text.slice(0, begin) + section + text.slice(end + FLEET_END.length);
  const size = text.indexOf('\n## Size\n');
  if (size >= 0) return `${text.slice(0, size + 1)}${section}\n\n${text.slice(size + 1)}`;
  return `${text.replace(/\n*$/, '\n\n')}${section}\n`;
}

/** The fleet section of `text`, markers included, or null. */
export function fleetSectionOf(text) {
  const begin = text.indexOf(FLEET_BEGIN);
  const end = text.indexOf(FLEET_END);
  return begin >= 0 && end > begin ? text.slice(begin, end + FLEET_END.length) : null;
}
