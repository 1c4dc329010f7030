// docs/benchmarks.md and docs/benchmarks.svg from one run's figures (made by
// bench/run.mjs). The tables are plain Markdown with one number per cell, so
// that tests/node/bench.test.mjs can read them back.

/** The columns of a result table: header, how a run's figures give the cell, and how a ratio cell is made. */
export const COLUMNS = [
  { head: 'requests', cell: (r) => r.requests, fmt: (v) => String(v) },
  { head: 'KB on the wire', cell: (r) => r.bytes / 1024, fmt: (v) => v.toFixed(1) },
  { head: 'CPU s', cell: (r) => r.cpuSeconds, fmt: (v) => v.toFixed(3) },
  { head: 'detection lag mean ms', cell: (r) => r.detectMeanMs, fmt: (v) => v.toFixed(0) },
  { head: 'detection lag max ms', cell: (r) => r.detectMaxMs, fmt: (v) => v.toFixed(0) },
  { head: 'done after last answer ms', cell: (r) => r.afterLastAnswerMs, fmt: (v) => v.toFixed(1), diff: true },
  { head: 'done after last arrival ms', cell: (r) => r.afterLastArrivalMs, fmt: (v) => v.toFixed(0), diff: true },
  { head: 'wait s', cell: (r) => r.waitSeconds, fmt: (v) => v.toFixed(2) },
  { head: 'peak RSS MB', cell: (r) => r.peakRssBytes / 1e6, fmt: (v) => v.toFixed(1) },
];

const KIND_NAMES = { version: 'version', list: 'list', node: 'node GET', other: 'other' };
const breakdown = (byKind) =>
  Object.entries(byKind)
    .map(([k, n]) => `${n} ${KIND_NAMES[k] ?? k}`)
    .join(', ');

const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}x` : '—');
const kb = (n) => (n / 1024).toFixed(1);
const ms = (n) => (n === null ? '' : n.toFixed(1));

function table(head, rows) {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** One table per N: a row per client, and ironic-wait against the floor. */
function resultTables(run) {
  const out = [];
  for (const n of run.nodeCounts) {
    const byClient = run.results[n];
    const notes = [];
    const rows = run.clients.map((client) => {
      const r = byClient[client];
      if (!r || r.skipped || r.error) {
        notes.push(`${client}: ${r?.skipped ?? (r ? `error: ${r.error.split('\n')[0]}` : 'not run')}`);
        return [client, ...COLUMNS.map(() => '—'), ''];
      }
      return [client, ...COLUMNS.map((c) => c.fmt(c.cell(r))), breakdown(r.byKind)];
    });
    const mine = byClient['ironic-wait'];
    const floor = byClient.floor;
    if (mine?.requests !== undefined && floor?.requests !== undefined) {
      rows.push([
        'ironic-wait / floor',
        ...COLUMNS.map((c) => {
          const a = c.cell(mine);
          const b = c.cell(floor);
          return c.diff ? `${a - b >= 0 ? '+' : ''}${c.fmt(a - b)}` : ratio(a, b);
        }),
        '',
      ]);
    }
    out.push(`### N = ${n}`, '', table(['client', ...COLUMNS.map((c) => c.head), 'requests by kind'], rows));
    if (notes.length) out.push('', ...notes.map((n) => `- ${n}`));
    out.push('');
  }
  return out.join('\n');
}

/** The figures the issue's targets name, ironic-wait against the floor, at the sizes measured. */
function headline(run) {
  const rows = [];
  const pair = (n) => [run.results[n]?.['ironic-wait'], run.results[n]?.floor];
  const both = (n) => pair(n).every((r) => r?.requests !== undefined);
  const sizes = run.nodeCounts.filter(both);
  for (const n of sizes) {
    const [a, b] = pair(n);
    rows.push([
      `CPU during the wait, N = ${n}`,
      `${a.cpuSeconds.toFixed(3)} s`,
      `${b.cpuSeconds.toFixed(3)} s`,
      ratio(a.cpuSeconds, b.cpuSeconds),
    ]);
  }
  for (const n of sizes) {
    const [a, b] = pair(n);
    const diff = a.afterLastAnswerMs - b.afterLastAnswerMs;
    rows.push([
      `done after the last answer, N = ${n}`,
      `${a.afterLastAnswerMs.toFixed(1)} ms`,
      `${b.afterLastAnswerMs.toFixed(1)} ms`,
      `${diff >= 0 ? '+' : ''}${diff.toFixed(1)} ms`,
    ]);
  }
  for (const n of sizes) {
    const [a, b] = pair(n);
    rows.push([
      `detection lag mean / max, N = ${n}`,
      `${a.detectMeanMs.toFixed(0)} / ${a.detectMaxMs.toFixed(0)} ms`,
      `${b.detectMeanMs.toFixed(0)} / ${b.detectMaxMs.toFixed(0)} ms`,
      `${ratio(a.detectMeanMs, b.detectMeanMs)} / ${ratio(a.detectMaxMs, b.detectMaxMs)}`,
    ]);
  }
  for (const n of sizes) {
    const [a, b] = pair(n);
    rows.push([
      `requests / KB on the wire, N = ${n}`,
      `${a.requests} / ${kb(a.bytes)}`,
      `${b.requests} / ${kb(b.bytes)}`,
      `${ratio(a.requests, b.requests)} / ${ratio(a.bytes, b.bytes)}`,
    ]);
  }
  for (const n of sizes) {
    const [a, b] = pair(n);
    const h = run.results[n]?.['floor-http'];
    if (h?.cpuSeconds === undefined) continue;
    rows.push([
      `CPU of the floor on node:http instead of fetch, N = ${n}`,
      '',
      `${h.cpuSeconds.toFixed(3)} s`,
      `fetch costs the floor ${ratio(b.cpuSeconds, h.cpuSeconds)}; ironic-wait is ${ratio(a.cpuSeconds, h.cpuSeconds)} of it`,
    ]);
  }
  for (const n of sizes) {
    const [a] = pair(n);
    const c = run.results[n]?.['ironic-wait+checkpoint'];
    if (c?.cpuSeconds === undefined) continue;
    const kept = c.checkpoints ? `; ${c.checkpoints.count} checkpoints, the largest ${kb(c.checkpoints.maxChars)} KB` : '';
    rows.push([
      `CPU with onCheckpoint, N = ${n}${kept}`,
      `${c.cpuSeconds.toFixed(3)} s`,
      '',
      `${ratio(c.cpuSeconds, a.cpuSeconds)} of the wait without`,
    ]);
  }
  const total = run.download.find((s) => s.what.endsWith('wasm + JS'));
  const floorSource = run.download.find((s) => s.what.startsWith('floor'));
  rows.push(['download, gzip -9', `${kb(total.gzip)} KB`, `${kb(floorSource.gzip)} KB`, '']);
  const start = run.nodeStart.find((s) => s.what.startsWith('ironic-wait'));
  const floorStart = run.nodeStart.find((s) => s.what.startsWith('floor'));
  rows.push(['Node: import + first client, timed inside', `${start.insideMs.toFixed(1)} ms`, `${floorStart.insideMs.toFixed(1)} ms`, '']);
  rows.push([
    'Node: process start to exit, over an empty ES module',
    `${start.overBaselineMs.toFixed(1)} ms`,
    `${floorStart.overBaselineMs.toFixed(1)} ms`,
    '',
  ]);
  return table(['', 'ironic-wait', 'floor', 'ironic-wait / floor'], rows);
}

function sizeTable(sizes) {
  return table(
    ['file', 'raw KB', 'gzip -9 KB', 'brotli -q 11 KB'],
    sizes.map((s) => [s.what, kb(s.raw), kb(s.gzip), kb(s.brotli)]),
  );
}

function startTable(rows) {
  return table(
    ['process', 'runs', 'start to exit ms', 'over baseline ms', 'import ms', 'constructor ms', 'import + constructor ms', 'CPU ms'],
    rows.map((r) => [r.what, r.runs, ms(r.ms), ms(r.overBaselineMs), ms(r.importMs), ms(r.constructMs), ms(r.insideMs), ms(r.cpuMs)]),
  );
}

/** The whole of docs/benchmarks.md. */
export function markdown(run) {
  const m = run.machine;
  const [lo, hi] = run.window;
  const peers = run.clients.filter((c) => !c.startsWith('ironic-wait') && !c.startsWith('floor'));
  return `# Benchmarks

Measured on ${run.date.slice(0, 10)} by \`${run.command}\`: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}${m.python ? `, ${m.python}` : ''}.
ironic-wait ${run.build.version} as built in pkg/ (${run.build.pkgBuilt}).
The machine was shared (1-minute load average ${m.load} when the run began, on ${m.cores} cores): compare figures within this run; CPU moves by a few percent between runs, the smallest figures and the start-up times by more.

## The wait

The simulator (sim/) holds N nodes in \`available\`. Just before the client is told to go, all are sent \`active\` at one instant (in the simulator's process, through what \`PUT .../states/provision\` runs) and each walks deploying -> wait call-back -> deploying -> active, each phase lasting a duration the simulator draws from the seed (${SEEDLINE(run)}): each node arrives in \`active\` ${lo}-${hi} s after the start, at the same instants for every client.
Each client waits for all N nodes, by UUID, polling every ${run.pollInterval} s, in a Node (or Python) process of its own, against a fresh simulator in another process, one client after the other:

- **ironic-wait**: the built package, imported by name: \`client.waitForProvisionState(uuids, 'active', { pollInterval: ${run.pollInterval}, settle: 'all', onProgress })\`.
- **ironic-wait+checkpoint**: the same call with \`onCheckpoint\`, keeping the latest checkpoint (its text; storing it is the storage's cost).
- **floor**: [bench/floor.mjs](../bench/floor.mjs), a hand-written list poller in plain JS: one fields-limited list (\`GET /v1/nodes?fields=uuid,provision_state,target_provision_state,last_error&limit=1000\`, page after page) per round, python-ironicclient's decision rule, no retries, no wasm.
- **floor-http**: the floor on node:http (a keep-alive agent, the body concatenated and \`JSON.parse\`d) instead of the global \`fetch\`: what Node's fetch costs any client.
${peers.includes('python-ironicclient') ? `- **python-ironicclient** ${m.peers.ironicclient}: \`NodeManager.wait_for_provision_state(uuids, 'active', poll_interval=${run.pollInterval})\`: one full \`GET /v1/nodes/{uuid}\` per node per round.\n` : ''}${peers.includes('openstacksdk') ? `- **openstacksdk** ${m.peers.openstacksdk}: \`baremetal.wait_for_nodes_provision_state(uuids, 'active')\` (its interval is 2 s): one full node GET per node per round.\n` : ''}
What the columns are:

- **requests**, **KB on the wire**: counted at the simulator from the start: requests, and bytes read and written on the client's sockets, headers included.
- **CPU s**: the client process's user + system time from just before the call until its promise settles (Python: resource usage around the call). Each JS client has made one request before (Node loads its fetch implementation on first use) and is idle when told to go.
- **detection lag**: for each node, the instant the client first saw it settled (ironic-wait: its \`onProgress\` event; floor: its own callback; Python peers: when the library's node fetch returns it) minus the instant the simulator moved it to \`active\`; mean and max over the nodes. Instants of different processes are compared on the wall clock (to about 1 ms).
- **done after last answer**: the promise (or function) settled, minus the instant the simulator finished sending its last answer: the time the client takes to read the last page, decide and report.
- **done after last arrival**: the promise settled, minus the last node's arrival in \`active\`.
- **wait s**: the whole call. **peak RSS**: the client process's maximum resident set, start-up included.

## Headline: ironic-wait against the floor

${headline(run)}

## Results

${resultTables(run)}
![CPU during the wait per client and N, log scale](benchmarks.svg)

${run.fleetSection ?? 'No fleet table yet: `npm run bench -- --fleet` adds one.'}
${run.serverSection ? `\n${run.serverSection}\n` : ''}
## Size

What a user downloads: the wasm and the JS in pkg/ (every file, as the size test counts them), each file compressed on its own.

${sizeTable(run.download)}

## Start-up

Fresh processes, the kinds interleaved; the median of each. *Start to exit* is timed from outside, and *over baseline* subtracts the first row: for Node the same ES module file doing nothing ([bench/cold-start.mjs](../bench/cold-start.mjs) \`bare\`), so that the ES module loader is not counted against the package. Import and constructor are timed inside the process (so they do not carry the noise of process start and exit), and CPU is the whole process's, start-up included.

${startTable(run.nodeStart)}
${run.pythonStart ? `\nPython peers (import and their first client, no request):\n\n${startTable(run.pythonStart)}\n` : ''}
## How to reproduce

\`\`\`sh
npm run build                # pkg/, what is measured
npm run bench                # N = 1, 100, 1000, 10000; writes docs/benchmarks.md and .svg
npm run bench -- --quick     # N = 1, 100 and the fleet at F = 10,000, N = 1,000, on shorter schedules: a few minutes
npm run bench -- --peers     # also python-ironicclient 6.3 and openstacksdk 4.22 (a venv in .cache/bench-peers/)
BENCH_PY=/path/to/python npm run bench   # the same with a Python that has them
npm run bench -- --out /tmp/bench        # write somewhere else
npm run bench -- --fleet                 # the fleet table only (F = 10,000 and 100,000): replaces the Fleet section
npm run bench -- --server                # what each way of polling costs a real Ironic 39: replaces the Server cost section
\`\`\`

This run took ${run.minutes.toFixed(1)} minutes. See [bench/README.md](../bench/README.md).
`;
}

const SEEDLINE = (run) => {
  const t = run.timing;
  return `seed ${run.seed}; deploying ${t.deploying[0]}-${t.deploying[1]} ms, wait call-back ${t['wait call-back'][0]}-${t['wait call-back'][1]} ms`;
};

// ------------------------------------------------------------------ the chart

const COLORS = { 'ironic-wait': '#d9480f', floor: '#495057', 'python-ironicclient': '#1971c2', openstacksdk: '#2f9e44' };
const escapeXml = (s) => String(s).replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]);
const secondsLabel = (s) => (s >= 1 ? `${+s.toPrecision(3)} s` : `${+(s * 1000).toPrecision(3)} ms`);

/** docs/benchmarks.svg: CPU during the wait, grouped by N, a bar per client, on a log scale. */
export function svg(run) {
  const width = 760;
  const height = 380;
  const left = 70;
  const right = 20;
  const top = 60;
  const bottom = 50;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const values = run.nodeCounts.flatMap((n) => run.clients.map((c) => run.results[n][c]?.cpuSeconds).filter((v) => v > 0));
  const lo = Math.floor(Math.log10(Math.min(...values, 1)));
  const hi = Math.ceil(Math.log10(Math.max(...values, 0.01)));
  const y = (v) => top + plotH - ((Math.log10(v) - lo) / (hi - lo)) * plotH;
  const parts = [];
  const text = (x, yy, s, attrs = '') => parts.push(`<text x="${x.toFixed(1)}" y="${yy.toFixed(1)}"${attrs}>${escapeXml(s)}</text>`);

  text(left, 24, 'CPU during the wait (user + system), log scale: lower is better', ' font-size="15" font-weight="bold"');
  for (let d = lo; d <= hi; d++) {
    const yy = y(10 ** d);
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${yy.toFixed(1)}" y2="${yy.toFixed(1)}" stroke="#dee2e6"/>`);
    text(left - 8, yy + 4, secondsLabel(10 ** d), ' text-anchor="end" font-size="11" fill="#495057"');
  }
  const groupW = plotW / run.nodeCounts.length;
  const barW = Math.min(36, (groupW * 0.8) / run.clients.length);
  run.nodeCounts.forEach((n, g) => {
    const x0 = left + g * groupW + (groupW - barW * run.clients.length) / 2;
    run.clients.forEach((client, i) => {
      const v = run.results[n][client]?.cpuSeconds;
      const x = x0 + i * barW;
      if (!(v > 0)) {
        text(x + barW / 2, top + plotH - 4, 'n/a', ' text-anchor="middle" font-size="10" fill="#868e96"');
        return;
      }
      const yy = Math.min(y(v), top + plotH - 1);
      parts.push(
        `<rect x="${(x + 1).toFixed(1)}" y="${yy.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${(top + plotH - yy).toFixed(1)}" fill="${COLORS[client] ?? '#868e96'}"><title>${escapeXml(`${client}, N = ${n}: ${v.toFixed(3)} s`)}</title></rect>`,
      );
      text(x + barW / 2, yy - 4, secondsLabel(v), ' text-anchor="middle" font-size="9" fill="#212529"');
    });
    text(left + g * groupW + groupW / 2, top + plotH + 20, `N = ${n}`, ' text-anchor="middle" font-size="12"');
  });
  parts.push(`<line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="#495057"/>`);
  let lx = left;
  for (const client of run.clients) {
    parts.push(`<rect x="${lx}" y="36" width="12" height="12" fill="${COLORS[client] ?? '#868e96'}"/>`);
    text(lx + 16, 46, client, ' font-size="12"');
    lx += 16 + client.length * 7 + 18;
  }
  text(
    width - right,
    height - 10,
    `${run.date.slice(0, 10)}, ${run.machine.cores} cores, Node ${run.machine.node}`,
    ' text-anchor="end" font-size="10" fill="#868e96"',
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">
<rect width="100%" height="100%" fill="#fff"/>
${parts.join('\n')}
</svg>
`;
}
