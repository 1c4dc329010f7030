// Shared set-up for the tests against a real Ironic (scripts/real-ironic.mjs):
// one Ironic per test file, behind a recording loopback proxy, with helpers to
// make nodes in a given state through Ironic's REST API, to reach into its
// SQLite database, and to run python-ironicclient (oracle.py) side by side.
// The waits' time-outs in these tests (300 s, 600 s) are bounds, not budgets:
// an action takes 5 to 10 s, three times that beside other suites at a load
// average of 25; only a test that expects a time-out has a short one.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIR, ensureVenv, PYTHON, request, startIronic } from '../../scripts/real-ironic.mjs';

const ORACLE = fileURLToPath(new URL('oracle.py', import.meta.url));
const API_VERSION = '1.115'; // what the helpers speak; the clients under test negotiate their own
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once `condition()` holds (checked every 50 ms); fails after `ms`, a bound far above
 * the time it normally takes (a loaded machine runs other suites beside this one).
 */
export async function until(condition, what, ms = 180_000) {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${typeof what === 'function' ? what() : what}: not so after ${ms} ms`);
    await sleep(50);
  }
}

/**
 * Starts a real Ironic named `name` (its folder is .cache/real-ironic/run/<name>)
 * and a recording proxy in front of it.
 * @returns the Ironic: `url` (the proxy: what ironic-wait uses), `directUrl`,
 *   `seen` (every request through the proxy), `api()`, `node helpers`, `sql()`, `oracle()`, `close()`.
 */
export async function realIronic(name, options = {}) {
  const ironic = await startIronic({ name, ...options });
  let proxy;
  try {
    proxy = await recordingProxy(ironic.port);
  } catch (e) {
    await ironic.stop();
    throw e;
  }
  const directUrl = ironic.url;
  const api = (method, path, body, headers = {}) =>
    request(directUrl, method, path, { body, headers: { 'X-OpenStack-Ironic-API-Version': API_VERSION, ...headers } });

  const self = {
    url: proxy.url,
    directUrl,
    dir: ironic.dir,
    seen: proxy.seen,
    api,

    /** Creates a fake-hardware node (in enroll) and returns its body. */
    async createNode(fields) {
      const r = await api('POST', '/v1/nodes', { driver: 'fake-hardware', ...fields });
      if (r.status !== 201) throw new Error(`creating ${JSON.stringify(fields)}: ${r.status} ${r.text}`);
      return r.body;
    },

    /** Sends a provision action through the REST API; 202 is required. */
    async setState(node, target, extra = {}) {
      const r = await api('PUT', `/v1/nodes/${node}/states/provision`, { target, ...extra });
      if (r.status !== 202) throw new Error(`${target} on ${node}: ${r.status} ${r.text}`);
    },

    /** The node (full body) through the REST API. */
    async node(node) {
      const r = await api('GET', `/v1/nodes/${node}`);
      if (r.status !== 200) throw new Error(`GET ${node}: ${r.status} ${r.text}`);
      return r.body;
    },

    /** Polls (every 200 ms, REST) until the node rests in `state` or `until(node)` holds; fails on a failure state. */
    async reach(node, state, { ms = 180_000, until } = {}) {
      const deadline = performance.now() + ms;
      for (;;) {
        const n = await self.node(node);
        if (until ? until(n) : n.provision_state === state && !n.target_provision_state) return n;
        if (!until && (n.provision_state.endsWith(' failed') || n.provision_state === 'error')) {
          throw new Error(`${node} is in ${n.provision_state} (${n.last_error}) while reaching ${state}`);
        }
        if (performance.now() > deadline) throw new Error(`${node} not in ${state} after ${ms} ms: ${n.provision_state}`);
        await sleep(200);
      }
    },

    /** A new node brought to `state` (enroll, manageable, available or active) through the REST API. */
    async nodeIn(state, fields) {
      const created = await self.createNode(fields);
      const name = fields.name ?? created.uuid;
      const path = { enroll: [], manageable: ['manage'], available: ['manage', 'provide'], active: ['manage', 'provide', 'active'] }[state];
      const expected = { manage: 'manageable', provide: 'available', active: 'active' };
      for (const target of path) {
        await self.setState(name, target);
        await self.reach(name, expected[target]);
      }
      return self.node(name);
    },

    /** Runs SQL on Ironic's database (through the venv's python and sqlite3); returns the rows changed. */
    async sql(statement, params = []) {
      const script =
        'import json, sqlite3, sys\n' +
        'a = json.load(sys.stdin)\n' +
        'c = sqlite3.connect(a["db"], timeout=30)\n' +
        'n = c.execute(a["sql"], a["params"]).rowcount\n' +
        'c.commit()\n' +
        'print(n)\n';
      const out = await runPython(['-c', script], { db: join(ironic.dir, 'ironic.db'), sql: statement, params });
      return Number(out);
    },

    /**
     * python-ironicclient 6.3 runs `steps` (see oracle.py) against `endpoint` and resolves to one
     * result per step. By default straight to Ironic: the proxy records only ironic-wait's requests.
     */
    async oracle(steps, { version = 'latest', maxRetries = 0, retryInterval = 0, endpoint = directUrl } = {}) {
      return oracle(endpoint, steps, { version, maxRetries, retryInterval });
    },

    /** Requests through the proxy whose method matches and whose path (no query) matches the glob. */
    requests(method, glob) {
      const re = new RegExp(
        `^${glob
          .split('*')
          .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^?]*')}$`,
      );
      return self.seen.filter((r) => r.method === method && re.test(r.path));
    },

    async close() {
      await proxy.close();
      await ironic.stop();
    },
  };
  return self;
}

/** python-ironicclient side by side (oracle.py), against any endpoint: the simulator too. */
export async function oracle(endpoint, steps, { version = 'latest', maxRetries = 0, retryInterval = 0 } = {}) {
  await ensureVenv();
  const out = await runPython([ORACLE], { endpoint, version, max_retries: maxRetries, retry_interval: retryInterval, steps });
  return JSON.parse(out).results;
}

function runPython(args, input) {
  return new Promise((resolve, reject) => {
    // Its version cache goes to our git-ignored folder, not the user's.
    const env = { ...process.env, XDG_CACHE_HOME: join(DIR, 'xdg-cache'), PYTHONDONTWRITEBYTECODE: '1' };
    const child = spawn(PYTHON, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`python failed (${code}): ${err}`))));
    child.stdin.end(JSON.stringify(input));
  });
}

// Forwards everything to Ironic unchanged (the Host header too, so Ironic's
// links point back at the proxy) and records each exchange: method, path,
// query, the microversion asked for, status, request id; and the body of
// node list answers.
async function recordingProxy(ironicPort) {
  const seen = [];
  // Ironic's server has a small listen backlog: at most 10 connections to it.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://proxy');
    const entry = {
      seq: seen.length,
      method: req.method,
      url: req.url,
      path: url.pathname,
      query: url.searchParams,
      version: req.headers['x-openstack-ironic-api-version'] ?? null,
      userAgent: req.headers['user-agent'],
      status: null,
      requestId: null,
      body: null,
    };
    seen.push(entry);
    const upstream = http.request(
      { host: '127.0.0.1', port: ironicPort, method: req.method, path: req.url, headers: req.headers, agent },
      (answer) => {
        entry.status = answer.statusCode;
        entry.requestId = answer.headers['x-openstack-request-id'] ?? null;
        res.writeHead(answer.statusCode, answer.rawHeaders);
        const keep = req.method === 'GET' && url.pathname === '/v1/nodes';
        const chunks = [];
        answer.on('data', (d) => {
          if (keep) chunks.push(d);
          res.write(d);
        });
        answer.on('end', () => {
          if (keep) entry.body = Buffer.concat(chunks).toString('utf8');
          res.end();
        });
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

/** Replaces a Request-ID in python-ironicclient's message with ours, so that the rest compares exactly. */
export function withRequestId(message, requestId) {
  return message.replace(/\(Request-ID: [^)]*\)/, `(Request-ID: ${requestId})`);
}
