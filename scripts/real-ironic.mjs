// A real OpenStack Ironic from PyPI, for tests and for trying the console:
// the all-in-one `ironic` process (API and conductor), fake-hardware, no
// auth, SQLite, 127.0.0.1 only. Everything lives in .cache/real-ironic/
// (git-ignored):
//   venv/            ironic + python-ironicclient + python-openstackclient, reused while complete
//                    (venv/.complete is written after a successful install)
//   schema.db        an empty database with Ironic's schema, copied per run
//                    (schema.json says what it was made for)
//   install.log      pip's output
//   run/<name>/      one running Ironic: ironic.conf, ironic.db, ironic.log,
//                    console.log, ironic.pid; kept after stop for debugging
//
//   node scripts/real-ironic.mjs install          make the venv (if needed)
//   node scripts/real-ironic.mjs start [--port P] run one until Ctrl-C
//
// From JavaScript: `await startIronic({ name })` resolves to
// `{ url, port, dir, log, stop() }`. The process runs in a process group of
// its own and is stopped by that group's id (SIGTERM, then SIGKILL), also when
// the calling process exits; a run left over from a killed caller is stopped
// by the PID in its folder before its folder is reused.
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { alive, main, ROOT } from './lib.mjs';

export const DIR = join(ROOT, '.cache', 'real-ironic');
export const VENV = join(DIR, 'venv');
export const PYTHON = join(VENV, 'bin', 'python');
const SCHEMA = join(DIR, 'schema.db');

/**
 * What the venv holds. Changing this list makes the next run rebuild it.
 * python-openstackclient: the CLI differential test runs `baremetal` as a
 * user of the OpenStack client has it (`baremetal` itself needs only osc-lib).
 */
export const REQUIREMENTS = ['ironic==39.*', 'python-ironicclient==6.3.*', 'python-openstackclient==10.*'];

/**
 * `[fake]` delays (seconds, or "min,max") that slow fake-hardware enough for
 * a client to see the working states: verifying ~2 s, cleaning ~4 s,
 * deploying ~3 s, rescuing ~2 s.
 */
export const FAKE_DELAYS = {
  power_delay: '0',
  management_delay: '1',
  boot_delay: '1',
  deploy_delay: '1,2',
  inspect_delay: '1,2',
  bios_delay: '1,2',
  raid_delay: '1',
  storage_delay: '0',
  rescue_delay: '1,2',
  vendor_delay: '0',
  firmware_delay: '1',
};

// ---------------------------------------------------------------- the venv

/** Makes the venv and the schema unless they are there (see ensureServiceVenv). */
export function ensureVenv({ quiet = false } = {}) {
  return ensureServiceVenv({
    name: 'real-ironic',
    dir: DIR,
    requirements: REQUIREMENTS,
    migrate: (conf, log) => exec(join(VENV, 'bin', 'ironic-dbsync'), ['--config-file', conf, 'create_schema'], { log }),
    quiet,
  });
}

/**
 * Makes `dir`/venv unless a complete one is there (python3 -m venv, then pip
 * installs `requirements` from PyPI), and `dir`/schema.db: an empty SQLite
 * database given its schema by `migrate(confFile, log)` (seconds, so made once
 * and copied for each run), in WAL journal mode (kept in the file), so that
 * reads do not make writes fail with "database is locked" as often. `schema`
 * names what `migrate` puts in it beyond the schema (a change rebuilds it).
 * Safe to call from several processes at once (one installs, the others wait).
 */
export async function ensureServiceVenv({ name, dir, requirements, migrate, schema, quiet = false }) {
  const venv = join(dir, 'venv');
  const stamp = join(venv, '.complete');
  const schemaStamp = join(dir, 'schema.json');
  const log = join(dir, 'install.log');
  const wantedVenv = JSON.stringify({ requirements });
  const wantedSchema = JSON.stringify({ requirements, journal: 'wal', ...(schema ? { schema } : {}) });
  const venvComplete = () => existsSync(stamp) && readFileSync(stamp, 'utf8') === wantedVenv;
  const schemaComplete = () => existsSync(schemaStamp) && readFileSync(schemaStamp, 'utf8') === wantedSchema;
  if (venvComplete() && schemaComplete()) return;
  mkdirSync(dir, { recursive: true });
  await withLock(join(dir, 'install.lock'), async () => {
    const say = (s) => quiet || console.error(`${name}: ${s}`);
    if (!venvComplete()) {
      // (or made by another process while we waited)
      const started = performance.now();
      await ensurePythonVenv(say, log);
      rmSync(venv, { recursive: true, force: true });
      say(`creating ${venv} and installing ${requirements.join(' ')} from PyPI (a minute or two; output in ${log})`);
      writeFileSync(log, '');
      await exec('python3', ['-m', 'venv', venv], { log });
      await exec(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', ...requirements], { log });
      writeFileSync(stamp, wantedVenv);
      say(`installed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    if (!schemaComplete()) {
      const work = join(dir, 'schema');
      const db = join(work, 'schema.db');
      rmSync(work, { recursive: true, force: true });
      mkdirSync(work, { recursive: true });
      const conf = join(work, 'migrate.conf');
      writeFileSync(
        conf,
        `[DEFAULT]\nlog_dir = ${work}\nlog_file = migrate.log\nuse_stderr = false\n[database]\nconnection = sqlite:///${db}\n`,
      );
      await migrate(conf, log);
      const wal = 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL").fetchall()';
      await exec(join(venv, 'bin', 'python'), ['-c', wal, db], { log });
      copyFileSync(db, join(dir, 'schema.db'));
      rmSync(work, { recursive: true, force: true });
      writeFileSync(schemaStamp, wantedSchema);
    }
  });
}

// Debian's python3 has the venv module but not ensurepip: that comes with
// the python3-venv package. Installed the way setup.mjs installs Chromium.
async function ensurePythonVenv(say, log) {
  if ((await exec('python3', ['-c', 'import venv, ensurepip'], { check: false })) === 0) return;
  if ((await exec('apt-get', ['--version'], { check: false })) !== 0) {
    throw new Error('python3 cannot make a venv (no venv/ensurepip module) and there is no apt-get: install python3 with venv support');
  }
  say('installing python3-venv (Debian package)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await exec('apt-get', ['update'], { log, env });
  await exec('apt-get', ['install', '-y', '--no-install-recommends', 'python3-venv'], { log, env });
}

// A lock file holding its owner's PID; a lock whose owner is gone is taken over.
export async function withLock(file, fn) {
  for (;;) {
    try {
      closeSync(openSync(file, 'wx'));
      writeFileSync(file, String(process.pid));
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const owner = Number(readFileSync(file, 'utf8'));
      if (owner && !alive(owner)) {
        rmSync(file, { force: true });
        continue;
      }
      await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(file, { force: true });
  }
}

// ------------------------------------------------------------- one Ironic

/**
 * Starts one Ironic in .cache/real-ironic/run/<name>/ on a free loopback
 * port and resolves once `GET /v1` answers.
 *   maxLimit   [api] max_limit (Ironic's default is 1000)
 *   fake       [fake] delays (default FAKE_DELAYS)
 *   cors       [cors] allowed_origin (its own lines after the first: more
 *              [cors] settings, `key = value`), or no [cors] at all
 *   port       a fixed port instead of a free one
 *   keystone   `auth_strategy = keystone` against a running Keystone instead
 *              of noauth: { authUrl, username, password, projectName,
 *              userDomainName, projectDomainName } of the service user that
 *              keystonemiddleware validates tokens with (it needs the admin
 *              or service role); see real-keystone.mjs
 *   database   an SQLite file to start from (copied) instead of the empty
 *              schema: a fleet made beforehand (bench/server.mjs)
 *   connection a [database] connection URL instead of the run's SQLite file
 *              (MariaDB, say); its schema is the caller's to make
 *   env        more environment for the process (PYTHONPATH for a database
 *              driver that is not in the venv)
 */
export async function startIronic({ name = 'ironic', maxLimit, fake = FAKE_DELAYS, cors, port, keystone, database, connection, env } = {}) {
  await ensureVenv();
  const dir = join(DIR, 'run', name);
  stopLeftover(dir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'locks'), { recursive: true });
  copyFileSync(database ?? SCHEMA, join(dir, 'ironic.db'));

  // A port picked free can be taken before Ironic binds it: then try another.
  for (let attempt = 1; ; attempt++) {
    const chosen = port ?? (await freePort());
    writeFileSync(join(dir, 'ironic.conf'), config({ dir, port: chosen, maxLimit, fake, cors, keystone, connection }));
    try {
      return await launch(dir, chosen, env);
    } catch (e) {
      if (!(e.addressInUse && port === undefined && attempt < 3)) throw e;
    }
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

async function launch(dir, port, env) {
  const consoleLog = join(dir, 'console.log');
  const out = openSync(consoleLog, 'a');
  // detached: its own process group, so that stopping reaches every process
  // the launcher forks, and a Ctrl-C meant for the caller does not.
  const child = spawn(join(VENV, 'bin', 'ironic'), ['--config-file', join(dir, 'ironic.conf')], {
    cwd: dir,
    env: env ? { ...process.env, ...env } : undefined,
    detached: true,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const { stop, exited } = supervise(child, join(dir, 'ironic.pid'), 15_000);

  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 90_000;
  for (;;) {
    const ended = exited();
    if (ended) {
      await stop();
      const log = tail(join(dir, 'ironic.log')) + tail(consoleLog);
      const e = new Error(`Ironic exited (${ended.code ?? ended.signal}) before answering; logs in ${dir}:\n${log}`);
      e.addressInUse = /Address already in use|EADDRINUSE|Errno 98/.test(log);
      throw e;
    }
    if (await answers(`${url}/v1`)) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`Ironic did not answer GET /v1 within 90 s; logs in ${dir}:\n${tail(join(dir, 'ironic.log'))}`);
    }
    await sleep(100);
  }
  return { url, port, dir, pid: child.pid, log: join(dir, 'ironic.log'), stop };
}

function config({ dir, port, maxLimit, fake, cors, keystone, connection }) {
  const lines = [
    '[DEFAULT]',
    `auth_strategy = ${keystone ? 'keystone' : 'noauth'}`,
    // Only the all-in-one `ironic` process can do without a message bus.
    'rpc_transport = none',
    'host = localhost',
    'my_ip = 127.0.0.1',
    `state_path = ${dir}`,
    `tempdir = ${dir}`,
    `log_dir = ${dir}`,
    'log_file = ironic.log',
    'use_stderr = false',
    'minimum_memory_warning_only = true',
    'enabled_hardware_types = fake-hardware',
    'enabled_bios_interfaces = fake,no-bios',
    'enabled_boot_interfaces = fake',
    'enabled_console_interfaces = fake,no-console',
    'enabled_deploy_interfaces = fake',
    'default_deploy_interface = fake',
    'enabled_firmware_interfaces = fake,no-firmware',
    'enabled_inspect_interfaces = fake,agent,no-inspect',
    'default_inspect_interface = fake',
    'enabled_management_interfaces = fake',
    'enabled_network_interfaces = noop',
    'default_network_interface = noop',
    'enabled_power_interfaces = fake',
    'enabled_raid_interfaces = fake,no-raid',
    'enabled_rescue_interfaces = fake,no-rescue',
    'default_rescue_interface = fake',
    'enabled_storage_interfaces = fake,noop',
    'default_storage_interface = noop',
    'enabled_vendor_interfaces = fake,no-vendor',
    '[api]',
    'host_ip = 127.0.0.1',
    `port = ${port}`,
    'api_workers = 1',
    ...(maxLimit ? [`max_limit = ${maxLimit}`] : []),
    '[database]',
    `connection = ${connection ?? `sqlite:///${join(dir, 'ironic.db')}`}`,
    '[dhcp]',
    'dhcp_provider = none',
    '[conductor]',
    'automated_clean = true',
    'deploy_callback_timeout = 60',
    'clean_callback_timeout = 60',
    'inspect_wait_timeout = 30',
    'check_provision_state_interval = 5',
    'check_allocations_interval = 5',
    // The periodic power sync clears last_error on failed nodes (every 60 s):
    // off, so a failure reads the same whenever it is looked at.
    'sync_power_state_interval = -1',
    '[inspector]',
    'require_managed_boot = false',
    'power_off = false',
    '[json_rpc]',
    'auth_strategy = noauth',
    '[oslo_concurrency]',
    `lock_path = ${join(dir, 'locks')}`,
    ...(cors ? ['[cors]', `allowed_origin = ${cors}`] : []),
    ...(keystone ? keystoneAuthtoken(keystone) : []),
    '[fake]',
    ...Object.entries(fake).map(([k, v]) => `${k} = ${v}`),
  ];
  return `${lines.join('\n')}\n`;
}

// keystonemiddleware's section. `GET /` and `GET /v1` stay unauthenticated
// (startIronic's readiness check relies on it); everything else needs a token.
function keystoneAuthtoken({ authUrl, username, password, projectName, userDomainName = 'Default', projectDomainName = 'Default' }) {
  return [
    '[keystone_authtoken]',
    'auth_type = password',
    `auth_url = ${authUrl}`,
    // What a 401 names in `WWW-Authenticate: Keystone uri="..."`.
    `www_authenticate_uri = ${authUrl}`,
    `username = ${username}`,
    `password = ${password}`,
    `user_domain_name = ${userDomainName}`,
    `project_name = ${projectName}`,
    `project_domain_name = ${projectDomainName}`,
    // Validations are cached for 300 s by default, so a revoked token would
    // keep working that long: no cache, every request is checked with Keystone.
    'token_cache_time = -1',
  ];
}

// A run whose caller was killed before it could stop it: its PID is in the
// folder; stop it if that PID is still an `ironic` started with this folder's
// config (a reused PID belongs to someone else and is left alone).
function stopLeftover(dir) {
  const pidFile = join(dir, 'ironic.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    // gone
  }
  if (pid > 1 && cmdline.includes(join(dir, 'ironic.conf'))) killGroup(pid, 'SIGKILL');
  unlinkSync(pidFile);
}

// ----------------------------------------------------------------- helpers
// (also used by real-keystone.mjs)

/**
 * Keeps a server started in its own process group (`detached`) tied to this
 * process: its PID is written to `pidFile` (so a later run can stop a
 * leftover), and whatever ends the caller ends the server too: its exit, or a
 * signal (which then goes on to do what it would have done). `stop()` sends
 * SIGTERM and, past `graceMs`, SIGKILL; `exited()` tells whether it ended.
 */
export function supervise(child, pidFile, graceMs) {
  writeFileSync(pidFile, String(child.pid));
  let exited = null;
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve((exited = { code, signal }))));
  const killNow = () => killGroup(child.pid, 'SIGKILL');
  process.once('exit', killNow);
  const onSignal = (signal) => {
    // Someone else handles it (a CLI stops gracefully): leave them time to.
    if (process.listenerCount(signal) > 0) return killGroup(child.pid, 'SIGTERM');
    killNow();
    process.kill(process.pid, signal);
  };
  for (const signal of SIGNALS) process.once(signal, onSignal);

  let stopping = null;
  const stop = () =>
    (stopping ??= (async () => {
      killGroup(child.pid, 'SIGTERM');
      const deadline = performance.now() + graceMs;
      while ((!exited || groupAlive(child.pid)) && performance.now() < deadline) await sleep(100);
      if (!exited || groupAlive(child.pid)) {
        killGroup(child.pid, 'SIGKILL');
        await exit;
        while (groupAlive(child.pid)) await sleep(50);
      }
      process.removeListener('exit', killNow);
      for (const signal of SIGNALS) process.removeListener(signal, onSignal);
      rmSync(pidFile, { force: true });
    })());
  return { stop, exited: () => exited };
}

export function killGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // nothing left in the group
  }
}

export function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function answers(url) {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.ok;
  } catch {
    return false;
  }
}

/**
 * A free loopback port below the kernel's range of ephemeral ports. A port
 * of that range, checked free and let go, can be handed to any program that
 * binds port 0 (a test's simulator, say) before Ironic or Keystone binds it:
 * the service's listener then fails and is restarted while the other
 * program answers `GET /v1` in its place. Below the range only a program
 * that asks for that very port can take it.
 */
export async function freePort() {
  // (A range that starts below 11000 leaves no such room: then any port of 10000-10999.)
  const span = Math.max(ephemeralLow() - 10_000, 1000);
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * span);
    if (await canBind(port)) return port;
  }
}

/** The first ephemeral port (Linux's /proc says; 32768 elsewhere, IANA's is higher). */
function ephemeralLow() {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

function canBind(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.on('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export function tail(file, lines = 30) {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Runs a command; resolves to its exit code (rejects on failure when `check`). Output goes to `log` or nowhere. */
export function exec(cmd, args, { log, check = true, env } = {}) {
  return new Promise((resolve, reject) => {
    const out = log ? openSync(log, 'a') : 'ignore';
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', out, out], env });
    if (log) closeSync(out);
    child.on('error', (e) => (check ? reject(new Error(`cannot run ${cmd}: ${e.message}`)) : resolve(-1)));
    child.on('exit', (code, signal) => {
      if (code === 0 || !check) return resolve(code ?? -1);
      reject(new Error(`\`${cmd} ${args.join(' ')}\` failed (${code ?? signal})${log ? `:\n${tail(log, 20)}` : ''}`));
    });
  });
}

// ------------------------------------------------------------------- CLI

/**
 * One JSON request to a real server's REST API (Ironic's, Keystone's v3),
 * with `token` as X-Auth-Token. Never throws for a status.
 * @returns {{ status, headers, text, body }} (`body` null unless JSON)
 */
export async function request(url, method, path, { body, token, headers = {} } = {}) {
  const r = await fetch(url + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(token ? { 'X-Auth-Token': token } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await r.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: `text` says what it was
  }
  return { status: r.status, headers: r.headers, text, body: parsed };
}

/**
 * The command line of a script that runs a real server from PyPI:
 * `install` (make its venv) or `start [--port P]` (run one until Ctrl-C).
 * `start({ port })` resolves to a server with `url`, `dir` and `stop()`;
 * `more(server)` gives lines to print after it started.
 */
export function serviceCli({ name, venv, ensure, start, more = () => [] }) {
  main(name, async () => {
    const [command, ...rest] = process.argv.slice(2);
    if (command === 'install') {
      await ensure();
      console.log(`${name}: ${venv} is complete`);
    } else if (command === 'start') {
      const port = rest.includes('--port') ? Number(rest[rest.indexOf('--port') + 1]) : undefined;
      const server = await start({ port });
      console.log(`${name} on ${server.url} (logs in ${server.dir}); Ctrl-C to stop`);
      for (const line of more(server)) console.log(`  ${line}`);
      for (const signal of ['SIGINT', 'SIGTERM']) {
        process.once(signal, async () => {
          await server.stop();
          process.exit(0);
        });
      }
    } else {
      throw new Error(`usage: node scripts/${name}.mjs install | start [--port P]`);
    }
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  serviceCli({ name: 'real-ironic', venv: VENV, ensure: ensureVenv, start: ({ port }) => startIronic({ name: 'manual', port }) });
}
