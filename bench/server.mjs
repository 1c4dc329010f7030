// The Server cost section of `npm run bench` (`--server`): what each way of
// polling costs a real Ironic, measured at the Ironic process and at its
// database. A real Ironic from PyPI (scripts/real-ironic.mjs: the
// all-in-one process, fake-hardware, no auth) on SQLite, and on MariaDB
// where `mariadbd` is installed; a fleet of N nodes written into its
// `nodes` table; then, side by side, the requests of one round of:
//   - python-ironicclient's wait: GET /v1/nodes/{uuid} for each waited node,
//     one at a time (from Node's fetch, with what python-ironicclient asks:
//     the whole node);
//   - a full listing: what ironic-wait's list mode and the change feed's
//     full listings send, page by page;
//   - the change feed's quiet round, a busy one, and the round after a busy
//     one, paged as the package pages them (src/poll/feed.rs, listing.rs).
// See bench/README.md, "The Server cost section". Not a test: nothing here
// passes or fails on a figure.
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../scripts/lib.mjs';
import { exec, PYTHON, startIronic, supervise, VENV } from '../scripts/real-ironic.mjs';

export const SERVER_BEGIN = '<!-- server: made by `npm run bench -- --server`; a run without it keeps it -->';
export const SERVER_END = '<!-- /server -->';

// Read from the built package; without pkg/ run.mjs stops first and says so.
const { defaults } = await import('../pkg/node.js').then(
  (m) => m.tables(),
  () => ({ defaults: {} }),
);
/** What the rounds send as the package sends it: its defaults from `tables()`, and figures of the feed that are not in it (src/poll/feed.rs, src/ironic/mod.rs). */
export const PACKAGE = {
  // FEED_FIELDS: what a changes round and the feed's full listing ask for.
  feedFields: 'uuid,name,provision_state,target_provision_state,last_error,provision_updated_at',
  pageSize: defaults.pageSize,
  // MIN_FIRST_PAGE: a changes round's first page after a quiet round.
  minFirstPage: 20,
  // A wait on fewer nodes than this GETs each node.
  listThreshold: defaults.listThreshold,
  // RECONCILE_MS: a full listing every (its pages) x this.
  reconcileMs: 60_000,
  pollInterval: defaults.pollInterval,
};

/** The shares of the fleet that move before a busy round. */
export const BUSY_SHARES = [0.01, 0.1];
/** Nodes made through POST /v1/nodes: the templates the fleet copies, and the figure for how long POSTs would take. */
const TEMPLATES = 20;
/** The length of a wait the per-wait figures are for: 150 rounds of 2 s. */
export const WAIT_ROUNDS = 150;

const HERE = fileURLToPath(new URL('.', import.meta.url));
const WORK = join(ROOT, '.cache', 'server-bench');
const PYLIB = join(WORK, 'pylib');

// ------------------------------------------------------------ CPU of a process group

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/**
 * CPU time (user + system, ms) of every process in process group `pgid`:
 * the sum of each thread's scheduler run time (/proc/PID/task/TID/schedstat,
 * in ns: a quiet round costs a few ms, under the 10 ms tick of
 * /proc/PID/stat), and the ticks of /proc/PID/stat as well, which also count
 * threads that have ended; `tids`, the threads, so that `cpuBetween` can
 * tell when one ended in between.
 */
export function groupCpu(pgid) {
  let sched = 0;
  let ticks = 0;
  const tids = new Set();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone
    }
    // The fields after the command (which may hold spaces) in parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) !== pgid) continue;
    ticks += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${name}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        sched += Number(readFileSync(`/proc/${name}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
        tids.add(tid);
      } catch {
        // ended
      }
    }
  }
  return { sched, ticks, tids };
}

/**
 * CPU ms between two `groupCpu` readings: the threads' run time, unless a
 * thread ended in between (MariaDB ends connection threads), whose time
 * the sum then loses: the ticks instead, which keep it.
 */
export function cpuBetween(a, b) {
  for (const tid of a.tids) if (!b.tids.has(tid)) return b.ticks - a.ticks;
  return b.sched - a.sched;
}

// ------------------------------------------------------------ the databases

/** The helper (bench/server-db.py) for one database: `send(command)` resolves to its answer. */
function dbHelper(args, env) {
  const child = spawn(PYTHON, [join(HERE, 'server-db.py'), ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => waiting.shift()?.resolve(JSON.parse(line)));
  const exited = new Promise((resolve) =>
    child.once('exit', (code) => {
      for (const w of waiting.splice(0)) w.reject(new Error(`bench/server-db.py exited (${code})`));
      resolve(code);
    }),
  );
  return {
    async send(command) {
      const answer = await new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(`${JSON.stringify(command)}\n`);
      });
      if (answer.error) throw new Error(`bench/server-db.py ${command.op}: ${answer.error}`);
      return answer;
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}

/** What a database needs: { name, version, ironic(options) for startIronic, helperArgs, env, fresh(), stop(), cpu() }. */
async function sqliteDatabase() {
  const version = execFileSync(PYTHON, ['-c', 'import sqlite3; print(sqlite3.sqlite_version)'], { encoding: 'utf8' }).trim();
  return {
    name: 'SQLite',
    version: `SQLite ${version} (in the Ironic process)`,
    async fresh() {},
    ironic: (file) => (file ? { database: file } : {}),
    helperArgs: (dir) => ['--sqlite', join(dir, 'ironic.db')],
    env: {},
    cpu: () => null,
    async stop() {},
  };
}

/** Whether MariaDB can be run here: its server binary, or null. */
export function mariadbBinary() {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    for (const name of ['mariadbd', 'mysqld']) if (existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

/**
 * A MariaDB server of our own in .cache/server-bench/<name>/mariadb (a datadir made
 * by mariadb-install-db, a Unix socket, no TCP), and PyMySQL for Ironic in
 * .cache/server-bench/pylib (pip --target: the real-ironic venv is left as
 * it is), put on Ironic's PYTHONPATH.
 */
async function mariadbDatabase(binary, name, say) {
  const dir = join(WORK, name, 'mariadb');
  const data = join(dir, 'data');
  const socket = join(dir, 'mysqld.sock');
  if (!existsSync(join(PYLIB, 'pymysql'))) {
    say('installing PyMySQL into .cache/server-bench/pylib (pip --target)');
    mkdirSync(WORK, { recursive: true });
    await exec(join(VENV, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', '--target', PYLIB, 'PyMySQL==1.*'], {
      log: join(WORK, 'pip.log'),
    });
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // (Unix sockets' paths are short: a long work tree path makes the socket fail.)
  if (socket.length > 100) throw new Error(`MariaDB's socket path is too long: ${socket}`);
  await exec(
    'mariadb-install-db',
    ['--no-defaults', `--datadir=${data}`, '--user=root', '--auth-root-authentication-method=socket', '--skip-test-db'],
    {
      log: join(dir, 'install.log'),
    },
  );
  const child = spawn(
    binary,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      '--skip-networking',
      '--user=root',
      `--pid-file=${join(dir, 'mariadbd.pid')}`,
      `--log-error=${join(dir, 'error.log')}`,
      // Room for the whole fleet, so that a round reads memory, not the disk (as on a server sized for it).
      '--innodb-buffer-pool-size=512M',
      // Ironic's own advice for MySQL.
      '--max-connections=500',
    ],
    { detached: true, stdio: 'ignore' },
  );
  const { stop } = supervise(child, join(dir, 'supervised.pid'), 30_000);
  const sql = (text) =>
    execFileSync('mariadb', ['--no-defaults', '-uroot', `--socket=${socket}`, '-N', '-e', text], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  for (let i = 0; ; i++) {
    try {
      sql('SELECT 1');
      break;
    } catch (e) {
      if (i > 300) {
        await stop();
        throw new Error(`MariaDB did not start: ${e.message}`);
      }
      await sleep(100);
    }
  }
  const version = sql('SELECT VERSION()').trim();
  const env = { PYTHONPATH: PYLIB };
  const connection = `mysql+pymysql://root@localhost/ironic?unix_socket=${socket}&charset=utf8mb4`;
  return {
    name: 'MariaDB',
    version: `MariaDB ${version} (its own process, on a Unix socket)`,
    async fresh() {
      sql('DROP DATABASE IF EXISTS ironic; CREATE DATABASE ironic CHARACTER SET utf8mb4');
      const conf = join(dir, 'dbsync.conf');
      writeFileSync(
        conf,
        `[DEFAULT]\nlog_dir = ${dir}\nlog_file = dbsync.log\nuse_stderr = false\n[database]\nconnection = ${connection}\n`,
      );
      await exec(join(VENV, 'bin', 'ironic-dbsync'), ['--config-file', conf, 'create_schema'], {
        log: join(dir, 'dbsync.out'),
        env: { ...process.env, ...env },
      });
    },
    ironic: () => ({ connection, env }),
    helperArgs: () => ['--mysql-socket', socket, '--mysql-db', 'ironic'],
    env,
    cpu: () => groupCpu(child.pid),
    stop,
  };
}

// ------------------------------------------------------------ the requests

/** One measured step: its requests, entries read, body bytes, wall ms, and the CPU of Ironic and of the database. */
async function measured(ironic, db, fn) {
  const api0 = groupCpu(ironic.pid);
  const db0 = db.cpu();
  const t0 = performance.now();
  const counts = { requests: 0, entries: 0, bytes: 0 };
  await fn(counts);
  const wallMs = performance.now() - t0;
  const api1 = groupCpu(ironic.pid);
  const db1 = db.cpu();
  return {
    ...counts,
    wallMs,
    apiMs: cpuBetween(api0, api1),
    apiTicksMs: api1.ticks - api0.ticks,
    dbMs: db0 && cpuBetween(db0, db1),
    dbTicksMs: db0 && db1.ticks - db0.ticks,
  };
}

function client(url, version) {
  const headers = { Accept: 'application/json', 'X-OpenStack-Ironic-API-Version': version };
  return async (path, counts) => {
    const r = await fetch(url + path, { headers, signal: AbortSignal.timeout(120_000) });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${text.slice(0, 300)}`);
    counts.requests++;
    counts.bytes += Buffer.byteLength(text);
    return JSON.parse(text);
  };
}

const stampOf = (node) =>
  node.provision_updated_at ? Date.parse(node.provision_updated_at) * 1000 + micros(node.provision_updated_at) : null;
// Date.parse drops what is below the millisecond: the stamp's microseconds, kept for the order of stamps.
const micros = (iso) => Number(/\.\d{3}(\d{3})/.exec(iso)?.[1] ?? 0);

/**
 * A full listing, page after page by marker: what the change feed's full
 * listings send (list mode asks the same without provision_updated_at).
 */
async function fullList(get, counts) {
  let marker = null;
  let newest = null;
  for (;;) {
    const page = await get(`/v1/nodes?fields=${PACKAGE.feedFields}&limit=${PACKAGE.pageSize}${marker ? `&marker=${marker}` : ''}`, counts);
    counts.entries += page.nodes.length;
    for (const n of page.nodes) newest = Math.max(newest ?? -Infinity, stampOf(n) ?? -Infinity);
    if (page.nodes.length < PACKAGE.pageSize) return newest;
    marker = page.nodes.at(-1).uuid;
  }
}

/**
 * A round of the change feed: newest first, a first page of `first`
 * entries, then full pages, until an entry is not newer than `watermark`.
 * The package's round stops below the watermark less a second's overlap
 * unless that second was read before and is final (feed.rs stop_below):
 * here every round comes seconds after the last, so it is, and a round
 * reads what is newer than the last one's newest stamp.
 */
async function changesRound(get, counts, watermark, first) {
  let marker = null;
  let newest = watermark;
  let read = 0;
  for (;;) {
    const limit = marker ? PACKAGE.pageSize : first;
    const page = await get(
      `/v1/nodes?fields=${PACKAGE.feedFields}&limit=${limit}&sort_key=provision_updated_at&sort_dir=desc${marker ? `&marker=${marker}` : ''}`,
      counts,
    );
    counts.entries += page.nodes.length;
    let older = false;
    for (const n of page.nodes) {
      const stamp = stampOf(n);
      if (stamp === null || stamp <= watermark) {
        older = true;
        break;
      }
      read++;
      newest = Math.max(newest, stamp);
    }
    if (older || page.nodes.length < limit) return { newest, read };
    marker = page.nodes.at(-1).uuid;
  }
}

/** The package's first page after a round that read `read` new entries (feed.rs first_page). */
const firstPage = (read) => Math.min(Math.floor((read * 3) / 2) + PACKAGE.minFirstPage, PACKAGE.pageSize);

async function nodeGets(get, counts, uuids) {
  for (const uuid of uuids) {
    await get(`/v1/nodes/${uuid}`, counts);
    counts.entries++;
  }
}

/** `count` of `list`, spread over it by a seeded shuffle. */
function sample(list, count, seed) {
  const a = [...list];
  let s = seed >>> 0 || 1;
  for (let i = a.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a.slice(0, count);
}

// ------------------------------------------------------------ one size

/** The rows of a size's table, in order: key, what is measured. */
function rowsFor(n, getsMax) {
  const waits = [...new Set([PACKAGE.listThreshold - 1, Math.round(n / 10), n])].filter((w) => w > 0 && w <= n).sort((a, b) => a - b);
  return [
    ...waits.map((w) => ({
      key: `gets-${w}`,
      kind: 'gets',
      w,
      skip: w > getsMax ? `not run: ${w.toLocaleString('en-US')} GETs a round is over --server-gets-max ${getsMax}` : null,
    })),
    { key: 'full', kind: 'full' },
    { key: 'quiet', kind: 'quiet' },
    ...BUSY_SHARES.flatMap((share) => [
      { key: `busy-${share}`, kind: 'busy', share, m: Math.max(1, Math.round(n * share)) },
      { key: `churn-${share}`, kind: 'churn', share, m: Math.max(1, Math.round(n * share)) },
    ]),
  ];
}

/**
 * One size on one database: make the fleet, start Ironic on it, warm it,
 * measure its idle CPU, then `repeats` rounds of every row, the rows
 * interleaved so that the machine's other work falls on all of them alike.
 */
async function measureSize({ db, name, n, repeats, getsMax, seed, say }) {
  const started = performance.now();
  await db.fresh();
  // The templates, through the API: each column as Ironic writes it, and what a POST costs.
  let ironic = await startIronic({ name, ...db.ironic() });
  let postMs;
  let file;
  try {
    const version = (await (await fetch(`${ironic.url}/v1`)).json()).version.version;
    const t0 = performance.now();
    for (let i = 0; i < TEMPLATES; i++) {
      const r = await fetch(`${ironic.url}/v1/nodes`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-OpenStack-Ironic-API-Version': version },
        body: JSON.stringify({ driver: 'fake-hardware', name: `template-${i}` }),
      });
      if (r.status !== 201) throw new Error(`POST /v1/nodes: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    }
    postMs = (performance.now() - t0) / TEMPLATES;
  } finally {
    await ironic.stop();
  }
  // The fleet, in the database, with Ironic stopped.
  const maker = dbHelper(db.helperArgs(ironic.dir), db.env);
  await maker.send({ op: 'fleet', nodes: n, seed });
  await maker.close();
  if (db.name === 'SQLite') {
    mkdirSync(join(WORK, name), { recursive: true });
    file = join(WORK, name, 'fleet.db');
    rmSync(file, { force: true });
    // Everything in the WAL into the file (Ironic is stopped, the helper closed), so that a copy of it is the fleet.
    execFileSync(PYTHON, [
      '-c',
      'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")',
      join(ironic.dir, 'ironic.db'),
    ]);
    copyFileSync(join(ironic.dir, 'ironic.db'), file);
  }
  const madeS = (performance.now() - started) / 1000;
  say(`${db.name}, N = ${n}: fleet made in ${madeS.toFixed(1)} s (a POST took ${postMs.toFixed(1)} ms)`);

  ironic = await startIronic({ name, ...db.ironic(file) });
  const mover = dbHelper(db.helperArgs(ironic.dir), db.env);
  try {
    const version = (await (await fetch(`${ironic.url}/v1`)).json()).version.version;
    const get = client(ironic.url, version);
    const warm = { requests: 0, entries: 0, bytes: 0 };
    // Warm: every page once (the database's cache, Ironic's code paths), a few GETs, the feed's first page.
    let watermark = await fullList(get, warm);
    const uuids = [];
    {
      let marker = null;
      for (;;) {
        const page = await get(`/v1/nodes?fields=uuid&limit=${PACKAGE.pageSize}${marker ? `&marker=${marker}` : ''}`, warm);
        uuids.push(...page.nodes.map((x) => x.uuid));
        if (page.nodes.length < PACKAGE.pageSize) break;
        marker = page.nodes.at(-1).uuid;
      }
    }
    if (uuids.length !== n) throw new Error(`Ironic lists ${uuids.length} nodes, not ${n}`);
    await nodeGets(get, warm, uuids.slice(0, 20));
    ({ newest: watermark } = await changesRound(get, warm, watermark, PACKAGE.minFirstPage));

    // What Ironic spends doing nothing (its conductor's periodic tasks run in the same process), per second:
    // the median of five 1 s windows, as a periodic task that runs once a minute may fall in one of them.
    await sleep(1000);
    const windows = [];
    for (let i = 0; i < 5; i++) windows.push(await measured(ironic, db, () => sleep(1000)));
    const idleApi = median(windows.map((w) => w.apiMs / w.wallMs));
    const idleDb = db.cpu() === null ? null : median(windows.map((w) => w.dbMs / w.wallMs));

    const rows = rowsFor(n, getsMax);
    const samples = Object.fromEntries(rows.map((r) => [r.key, []]));
    let lastRead = 0;
    let lastMove = 0;
    const quietRound = async (counts) => {
      const r = await changesRound(get, counts, watermark, firstPage(lastRead));
      watermark = r.newest;
      lastRead = r.read;
      return r;
    };
    for (let rep = 0; rep < repeats; rep++) {
      for (const row of rows) {
        if (row.skip) continue;
        let figures;
        if (row.kind === 'gets') {
          const waited = sample(uuids, row.w, seed + rep + row.w);
          figures = await measured(ironic, db, (c) => nodeGets(get, c, waited));
        } else if (row.kind === 'full') {
          figures = await measured(ironic, db, (c) => fullList(get, c));
        } else if (row.kind === 'quiet') {
          // After a quiet round: the package's smallest first page.
          await quietRound({ requests: 0, entries: 0, bytes: 0 });
          figures = await measured(ironic, db, quietRound);
        } else {
          // busy: M nodes move after a quiet round (a first page of 20). churn: M more move right after the
          // busy round, whose first page is sized by the M it read: a round of a fleet where M move every round.
          // Over a second since the last move, so that no stamp (whole seconds on MariaDB) is the last round's newest.
          await sleep(Math.max(0, lastMove + 1200 - performance.now()));
          if (row.kind === 'busy') await quietRound({ requests: 0, entries: 0, bytes: 0 });
          await mover.send({ op: 'bump', count: row.m, seed: seed * 1000 + rep * 10 + (row.kind === 'busy' ? 0 : 1) });
          lastMove = performance.now();
          // (The helper has committed; let the database settle before measuring.)
          await sleep(300);
          const first = firstPage(lastRead);
          let read = 0;
          figures = await measured(ironic, db, async (c) => {
            ({ read } = await quietRound(c));
          });
          figures.changes = read;
          figures.firstPage = first;
        }
        figures.apiNetMs = figures.apiMs - idleApi * figures.wallMs;
        figures.dbNetMs = figures.dbMs === null ? null : figures.dbMs - idleDb * figures.wallMs;
        samples[row.key].push(figures);
      }
      say(`${db.name}, N = ${n}: repeat ${rep + 1} of ${repeats} done`);
    }
    return {
      n,
      postMs,
      madeS,
      idleApiPerS: idleApi * 1000,
      idleDbPerS: idleDb === null ? null : idleDb * 1000,
      rows: rows.map((r) => ({ ...r, samples: samples[r.key] })),
      minutes: (performance.now() - started) / 60000,
    };
  } finally {
    await mover.close();
    await ironic.stop();
  }
}

/**
 * Every size on every database asked for. `databases`: 'sqlite' and
 * 'mariadb' (not run, and said so, where no mariadbd is installed). `name`:
 * Ironic's run folder (.cache/real-ironic/run/<name>) and ours
 * (.cache/server-bench/<name>), so that a smoke run and a full one do not
 * share them. `onSize(result so far)` after each size: a long run killed
 * half-way keeps what it measured.
 */
export async function measureServer({
  sizes,
  repeats,
  databases,
  getsMax,
  name = 'server-bench',
  seed = 10,
  say = (s) => console.error(`bench: ${s}`),
  onSize = () => {},
}) {
  const started = performance.now();
  const ironicVersion = execFileSync(PYTHON, ['-c', 'import importlib.metadata as m; print(m.version("ironic"))'], {
    encoding: 'utf8',
  }).trim();
  const out = { ironicVersion, sizes, repeats, getsMax, databases: [] };
  for (const which of databases) {
    if (which === 'mariadb' && !mariadbBinary()) {
      out.databases.push({
        name: 'MariaDB',
        skipped: 'not run: neither mariadbd nor mysqld is installed (Debian: `apt-get install mariadb-server`)',
      });
      continue;
    }
    const db = which === 'sqlite' ? await sqliteDatabase() : await mariadbDatabase(mariadbBinary(), name, say);
    const entry = { name: db.name, version: db.version, sizes: [] };
    out.databases.push(entry);
    try {
      for (const n of sizes) {
        try {
          entry.sizes.push(await measureSize({ db, name, n, repeats, getsMax, seed, say }));
        } catch (e) {
          say(`${db.name}, N = ${n}: ${e.message}`);
          entry.sizes.push({ n, error: e.message });
        }
        out.minutes = (performance.now() - started) / 60000;
        onSize(out);
      }
    } finally {
      await db.stop();
    }
  }
  out.minutes = (performance.now() - started) / 60000;
  return out;
}

// ------------------------------------------------------------ the section

const median = (xs) => {
  const a = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(a.length / 2);
  return a.length % 2 ? a[mid] : (a[mid - 1] + a[mid]) / 2;
};
const thousands = (x) => x.toLocaleString('en-US');
const fixed = (x, digits) => (Math.abs(x) >= 100 ? thousands(Math.round(x)) : x.toFixed(digits));

/** The median of `pick` over a row's samples and its range: "12.3 (11.0-14.2)"; one figure when there is one sample or all are equal. */
function cell(samples, pick, digits = 1) {
  const xs = samples.map(pick).filter((x) => x !== null && x !== undefined);
  if (!xs.length) return '—';
  const [lo, hi] = [fixed(Math.min(...xs), digits), fixed(Math.max(...xs), digits)];
  const m = fixed(median(xs), digits);
  return lo === hi ? m : `${m} (${lo}-${hi})`;
}

/** What a row measures, in words. */
function label(row, n) {
  const t = thousands;
  switch (row.kind) {
    case 'gets': {
      const which =
        row.w === n
          ? ' (every node)'
          : row.w === Math.round(n / 10)
            ? ' (a tenth of the fleet)'
            : row.w === PACKAGE.listThreshold - 1
              ? ' (the largest wait the default polls by GETs)'
              : '';
      return `GET /v1/nodes/{uuid} x ${t(row.w)}${which}`;
    }
    case 'full': {
      // A full last page is followed by an empty one: Ironic cannot say there is no more.
      const pages = Math.ceil((n + 1) / PACKAGE.pageSize);
      return `full listing, ${t(pages)} page${pages === 1 ? '' : 's'}`;
    }
    case 'quiet':
      return 'change feed: quiet round';
    case 'busy':
      return `change feed: busy round, ${t(row.m)} moved (${row.share * 100}%)`;
    case 'churn':
      return `change feed: churn round, ${t(row.m)} moved again`;
  }
}

function table(head, rows) {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

const med = (row, pick) => (row?.samples.length ? median(row.samples.map(pick)) : null);

/**
 * What one wait costs Ironic over WAIT_ROUNDS rounds, from the medians: the
 * ways of polling as the package and python-ironicclient run them.
 */
function perWait(size, hasDb) {
  const byKey = Object.fromEntries(size.rows.map((r) => [r.key, r]));
  const n = size.n;
  const rounds = WAIT_ROUNDS;
  const pages = Math.ceil((n + 1) / PACKAGE.pageSize);
  // The feed reconciles with a full listing every (its pages) x 60 s.
  const reconciles = Math.floor(((rounds - 2) * PACKAGE.pollInterval * 1000) / (pages * PACKAGE.reconcileMs));
  const full = byKey.full;
  const ways = [];
  const add = (name, parts) => {
    if (parts.some(([row]) => !row?.samples.length)) return;
    const sum = (pick) => parts.reduce((a, [row, times]) => a + times * med(row, pick), 0);
    ways.push([
      name,
      thousands(Math.round(sum((f) => f.requests))),
      fixed(sum((f) => f.apiNetMs) / 1000, 1),
      ...(hasDb ? [fixed(sum((f) => f.dbNetMs) / 1000, 2)] : []),
    ]);
  };
  for (const row of size.rows.filter((r) => r.kind === 'gets')) {
    const who = row.w < PACKAGE.listThreshold ? 'python-ironicclient, or ironic-wait under listThreshold' : 'python-ironicclient';
    add(`${who}: ${thousands(row.w)} nodes, a GET each every round`, [[row, rounds]]);
  }
  add("ironic-wait, listMode 'list': a full listing every round", [[full, rounds]]);
  const feed = 'ironic-wait, change feed (the default)';
  const base = [[full, 2 + reconciles]];
  add(`${feed}: quiet fleet`, [...base, [byKey.quiet, rounds - 2]]);
  for (const share of BUSY_SHARES)
    add(`${feed}: ${share * 100}% of the fleet moving every round`, [...base, [byKey[`churn-${share}`], rounds - 2]]);
  return { ways, reconciles };
}

/** How long one POST /v1/nodes took, over the sizes and databases: "23" or "19-28". */
function postRange(result) {
  const ms = result.databases.flatMap((d) => d.sizes ?? []).flatMap((s) => (s.postMs ? [s.postMs] : []));
  if (!ms.length) return '—';
  const [lo, hi] = [Math.min(...ms).toFixed(0), Math.max(...ms).toFixed(0)];
  return lo === hi ? lo : `${lo}-${hi}`;
}

/** The Server cost section (markers included) of a `measureServer` result and the run's details. */
export function serverMarkdown(result, run) {
  const out = [SERVER_BEGIN, '## Server cost', ''];
  out.push(
    `Measured on ${run.date.slice(0, 10)} by ${[run.command]
      .flat()
      .map((c) => `\`${c}\``)
      .join(
        ' and ',
      )} (${result.minutes.toFixed(1)} minutes${Array.isArray(run.command) ? ' in all' : ''}): ${run.machine}; 1-minute load average ${run.load} when ${Array.isArray(run.command) ? 'each' : 'the'} run began. ` +
      `Ironic ${result.ironicVersion} from PyPI, the all-in-one \`ironic\` process (API and conductor in one, one API worker), fake-hardware, no authentication ([scripts/real-ironic.mjs](../scripts/real-ironic.mjs)).`,
    '',
    `What each way of polling costs Ironic for one round, measured at Ironic itself. A fleet of N nodes is written straight into Ironic's \`nodes\` table (a copy of a node made through \`POST /v1/nodes\`, with its own UUID, name, state and \`provision_updated_at\`; 60% \`active\`, 30% \`available\`, the rest \`manageable\`, \`enroll\` and failed states; stamps spread over 30 days): a POST took ${postRange(result)} ms, so 10,000 of them would take minutes, 100,000 most of an hour. Then Ironic starts on it, every page is read once to warm it, and each round is sent from Node's \`fetch\`, one request at a time, ${result.repeats === 1 ? 'once' : `${result.repeats} times, the rows taking turns`}.`,
    '',
    `- **GET /v1/nodes/{uuid} x W**: what python-ironicclient's \`wait_for_provision_state\` sends each round, the whole node (it asks for no \`fields\`), for W nodes spread over the fleet; ironic-wait does the same, with only the fields it needs, for a wait on fewer than \`listThreshold\` (${PACKAGE.listThreshold}) nodes.`,
    `- **full listing**: \`GET /v1/nodes?fields=${PACKAGE.feedFields}&limit=${PACKAGE.pageSize}\`, page after page by \`marker\`: the change feed's first and reconciling listings (\`listMode: 'list'\` asks the same without \`provision_updated_at\`, every round).`,
    `- **change feed**: the same newest first (\`&sort_key=provision_updated_at&sort_dir=desc\`), paged until an entry is not newer than the last round's newest, as the package pages it: a first page of 1.5 x (what the last round read) + ${PACKAGE.minFirstPage} entries, then ${PACKAGE.pageSize}. A **quiet round** follows a quiet round and finds nothing. A **busy round** follows a quiet round and finds M nodes moved (1% or 10% of the fleet, \`available\` <-> \`manageable\`, by an SQL UPDATE of their state and \`provision_updated_at\` from another process: what \`manage\` or \`provide\` would leave, without the conductor's own work). A **churn round** follows the busy round and finds M more: a round of a fleet where M nodes move every round.`,
    '',
    "Columns: requests and entries read (node bodies for the GETs), KB of response bodies, the wall time of the round, and CPU (user + system, every thread) of the Ironic processes and of the database server, from `/proc` before and after, less what each spends idle over the same time (Ironic's conductor runs periodic tasks in the same process). Median and, in parentheses, the range over the repeats. SQLite runs inside the Ironic process, so its time is in Ironic's CPU and cannot be told apart; MariaDB's is its own process's.",
    '',
  );
  for (const d of result.databases) {
    if (d.skipped) {
      out.push(`**${d.name}**: ${d.skipped}.`, '');
      continue;
    }
    const hasDb = d.name !== 'SQLite';
    for (const size of d.sizes) {
      out.push(`### ${d.name}, N = ${thousands(size.n)}`, '');
      if (size.error) {
        out.push(`Failed: ${size.error.split('\n')[0]}`, '');
        continue;
      }
      out.push(
        `${d.version}. Idle: Ironic ${size.idleApiPerS.toFixed(1)} ms of CPU a second${size.idleDbPerS === null ? '' : `, the database ${size.idleDbPerS.toFixed(1)}`}.`,
        '',
      );
      const head = ['round', 'requests', 'entries', 'KB', 'wall ms', 'Ironic CPU ms', ...(hasDb ? ['database CPU ms'] : [])];
      const rows = size.rows.map((row) =>
        row.skip
          ? [label(row, size.n), row.skip, '', '', '', '', ...(hasDb ? [''] : [])]
          : [
              label(row, size.n),
              cell(row.samples, (f) => f.requests, 0),
              cell(row.samples, (f) => f.entries, 0),
              cell(row.samples, (f) => f.bytes / 1024, 0),
              cell(row.samples, (f) => f.wallMs),
              cell(row.samples, (f) => f.apiNetMs),
              ...(hasDb ? [cell(row.samples, (f) => f.dbNetMs, 2)] : []),
            ],
      );
      out.push(table(head, rows), '');
      const { ways, reconciles } = perWait(size, hasDb);
      out.push(
        `Per wait of ${WAIT_ROUNDS} rounds (5 minutes at ${PACKAGE.pollInterval} s), from the medians above. A GET poller's figure holds if no node settles before the end (python-ironicclient stops asking for a settled node). The change feed's: its first two rounds list in full (the first stops once every waited node is seen, so it can be shorter), then changes rounds, and a full listing every ${thousands(Math.ceil((size.n + 1) / PACKAGE.pageSize))} x 60 s (${reconciles} in this wait).`,
        '',
        table(['way', 'requests', 'Ironic CPU s', ...(hasDb ? ['database CPU s'] : [])], ways),
        '',
      );
    }
  }
  out.push(`Raw figures, every repeat of every row: ${run.rawFiles.map((f) => `\`${f}\``).join(' and ')} (not committed).`);
  out.push(SERVER_END);
  return out.join('\n');
}

/** `text` with its Server cost section replaced by `section` (or the section added before "## Size", or at the end). */
export function withServerSection(text, section) {
  const begin = text.indexOf(SERVER_BEGIN);
  const end = text.indexOf(SERVER_END);
  if (begin >= 0 && end > begin) return text.slice(0, begin) + section + text.slice(end + SERVER_END.length);
  const size = text.indexOf('\n## Size\n');
  if (size >= 0) return `${text.slice(0, size + 1)}${section}\n\n${text.slice(size + 1)}`;
  return `${text.replace(/\n*$/, '\n\n')}${section}\n`;
}

/** The Server cost section of `text`, markers included, or null. */
export function serverSectionOf(text) {
  const begin = text.indexOf(SERVER_BEGIN);
  const end = text.indexOf(SERVER_END);
  return begin >= 0 && end > begin ? text.slice(begin, end + SERVER_END.length) : null;
}
