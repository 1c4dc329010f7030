// The runtime matrix's one scenario: the same calls, run unchanged in Node,
// Deno, workerd, Chromium pages and a Chromium module worker, against the
// simulator at `url`. It returns a JSON report of outcomes only (no times,
// no UUIDs, no request ids: those differ from run to run), so that every
// runtime's report can be compared with Node's and with EXPECTED.
//
// It uses nothing but what all of them have (fetch, AbortController,
// setTimeout, URL), drives the simulator through its HTTP control API
// (/__sim), and receives the package from its runner, which imports it by
// name where the runtime can (a module worker has no import map).
// A step that throws unexpectedly records `{ unexpected: <the error> }` and
// the scenario goes on, so one report shows every difference at once.

/** Phases of 40 ms: quick, but every intermediate state is still walked. */
const FAST = Object.fromEntries(
  [
    'verifying',
    'deploying',
    'wait call-back',
    'deleting',
    'cleaning',
    'inspecting',
    'adopting',
    'rescuing',
    'unrescuing',
    'servicing',
    'allocating',
  ].map((state) => [state, 40]),
);

const ERROR_CLASSES = [
  'IronicWaitError',
  'InvalidArgumentError',
  'InvalidResponseError',
  'IronicHttpError',
  'ConnectionError',
  'AuthError',
  'UnsupportedVersionError',
  'StateTransitionFailed',
  'StateTransitionTimeout',
];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** UUIDs (request ids included) vary by run; the rest of a message must not. */
const anonymise = (text) =>
  typeof text === 'string' ? text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>') : text;

/**
 * @param {object} api the package's exports (`import * as api from 'ironic-wait'`)
 * @param {{ url: string }} options the simulator's origin
 * @returns {Promise<object>} the report: one entry per step
 */
export async function runScenario(api, { url }) {
  const sim = simulator(url);
  const client = () => new api.IronicClient({ endpoint: url });

  /** What a thrown value is, in words that are the same in every runtime. */
  const describe = (e) => {
    if (typeof e !== 'object' || e === null) return { thrown: String(e) };
    const classes = ERROR_CLASSES.filter((name) => e instanceof api[name]);
    return {
      name: e.name,
      message: anonymise(e.message),
      string: anonymise(String(e)),
      classes,
      isError: e instanceof Error,
    };
  };
  /** Runs `promise`, which must reject, and describes the rejection. */
  const rejection = async (promise, fields = []) => {
    try {
      const value = await promise;
      return { resolved: JSON.parse(JSON.stringify(value ?? null)) };
    } catch (e) {
      const out = describe(e);
      for (const f of fields) out[f] = anonymise(e?.[f]);
      return out;
    }
  };
  const outcomes = (report) => report.nodes.map((n) => [n.node, n.outcome, n.state, n.lastError ?? null]);

  const steps = {
    async exports() {
      await load({ nodes: [] });
      return {
        names: Object.keys(api).sort(),
        version: /^\d+\.\d+\.\d+$/.test(api.version()),
        microversion: await client().microversion(),
        deploy: api.tables().actionsByName.deploy,
        // biome-ignore lint/suspicious/noSelfCompare: two calls give the same frozen object.
        frozen: Object.isFrozen(api.tables().limits) && api.tables() === api.tables(),
      };
    },

    async errorNames() {
      return ERROR_CLASSES.map((name) => {
        const e = new api[name]('text');
        return [name, e.name, String(e), e instanceof api.IronicWaitError, e instanceof Error];
      });
    },

    async provisionReached() {
      await load({ nodes: [{ name: 'n1', provision_state: 'available' }] });
      const progress = [];
      const report = await client().provision('n1', 'deploy', {
        wait: true,
        timeout: 10,
        pollInterval: 0.02,
        onProgress: (e) => progress.push(e),
      });
      const last = progress.at(-1);
      return {
        ok: report.ok,
        nodes: outcomes(report),
        lastProgress: [last.node, last.state, last.done, last.outcome],
        walked: (await sim.history('n1')).entries.map((e) => e.provision_state),
        puts: (await sim.log('PUT', '/v1/nodes/n1/states/provision')).length,
      };
    },

    async failureFirst() {
      await load({
        nodes: [{ name: 'n1', provision_state: 'available' }],
        transitions: [{ node: 'n1', action: 'deploy', fail: 'No deploy steps returned by the driver' }],
      });
      let reportOutcomes;
      const out = await rejection(
        client()
          .provision('n1', 'deploy', { wait: true, timeout: 10, pollInterval: 0.02 })
          .catch((e) => {
            reportOutcomes = e?.report && outcomes(e.report);
            throw e;
          }),
        ['node', 'expected', 'state', 'lastError', 'unexpectedStable'],
      );
      return { ...out, reportOutcomes };
    },

    async failureAll() {
      await load({
        nodes: [
          { name: 'good', provision_state: 'available' },
          { name: 'bad', provision_state: 'available' },
        ],
        transitions: [{ node: 'bad', action: 'deploy', fail: 'No deploy steps returned by the driver' }],
      });
      const report = await client().provision(['good', 'bad'], 'deploy', { wait: true, timeout: 10, pollInterval: 0.02, settle: 'all' });
      return { ok: report.ok, nodes: outcomes(report), errors: report.nodes.map((n) => (n.error ? describe(n.error) : null)) };
    },

    async timeout() {
      await load({
        nodes: [
          { name: 'a', provision_state: 'available' },
          { name: 'b', provision_state: 'available' },
        ],
        transitions: [{ action: 'deploy', stall: true }],
      });
      let report;
      // The time-out must leave room for a fresh client's first round (the version, the PUTs, a
      // check) on a loaded machine: the call ends at its deadline, checked or not.
      const out = await rejection(
        client()
          .provision(['a', 'b'], 'deploy', { wait: true, timeout: 3, pollInterval: 10 })
          .catch((e) => {
            report = e?.report;
            throw e;
          }),
        ['nodes', 'expected', 'timeout'],
      );
      return {
        ...out,
        reportNodes: report?.nodes.map((n) => [n.node, n.outcome, n.state, n.polls]),
        // python-ironicclient would sleep the 10 s interval; here: a check at 0 and one at the deadline.
        getsOfA: (await sim.log('GET', '/v1/nodes/a')).length,
      };
    },

    async allocation() {
      await load({
        nodes: [{ name: 'g1', provision_state: 'available', resource_class: 'gold', power_state: 'power off' }],
      });
      const c = client();
      const { allocation, report } = await c.createAllocation(
        { resourceClass: 'gold', name: 'alloc-1' },
        { wait: true, timeout: 5, pollInterval: 0.02 },
      );
      const g1 = await c.getNode('g1');
      const failed = await rejection(
        c.createAllocation({ resourceClass: 'no-such-class', name: 'alloc-2' }, { wait: true, timeout: 5, pollInterval: 0.02 }),
        ['allocation', 'state', 'lastError'],
      );
      return {
        state: allocation.state,
        name: allocation.name,
        onG1: allocation.node_uuid === g1.uuid && g1.allocation_uuid === allocation.uuid,
        outcome: report.allocation.outcome,
        failed,
      };
    },

    async abortMidWait() {
      await load({
        nodes: [
          { name: 'n1', provision_state: 'available' },
          { name: 'n2', provision_state: 'available' },
        ],
        transitions: [{ action: 'deploy', stall: true }],
      });
      const controller = new AbortController();
      const progress = [];
      // The rejection is the signal's own reason, whose message is the runtime's (not compared).
      const waiting = client()
        .provision('n1', 'deploy', {
          wait: true,
          pollInterval: 1,
          signal: controller.signal,
          onProgress: (e) => progress.push(e),
        })
        .then(
          () => 'resolved',
          (e) => e,
        );
      // Two checks answered: the client now sleeps for 1 s, with nothing in flight.
      await sim.until(async () => (await sim.log('GET', '/v1/nodes/n1')).filter((r) => r.status !== null).length >= 2);
      controller.abort();
      const getsAtAbort = (await sim.log('GET', '/v1/nodes/n1')).length;
      const thrown = await waiting;
      // Two poll intervals of this runtime's timers: another wait on the same interval, begun now,
      // has made its third check (at 0, 1 and 2 s).
      const witness = new AbortController();
      const other = client()
        .waitForProvisionState('n2', 'active', { pollInterval: 1, failOnUnexpectedState: false, signal: witness.signal })
        .catch(() => {});
      await sim.until(async () => (await sim.log('GET', '/v1/nodes/n2')).length >= 3);
      witness.abort();
      await other;
      const getsAfter = (await sim.log('GET', '/v1/nodes/n1')).length;

      // A reason of the caller's own comes back as is.
      const reason = new Error('operator cancelled');
      const again = new AbortController();
      let same;
      const second = client()
        .waitForProvisionState('n1', 'active', { signal: again.signal, pollInterval: 0.05 })
        .then(
          () => 'resolved',
          (e) => {
            same = e === reason;
          },
        );
      // Aborted once it is under way (its first check made).
      await sim.until(async () => (await sim.log('GET', '/v1/nodes/n1')).length > getsAfter);
      again.abort(reason);
      await second;
      // An already aborted signal sends nothing at all.
      const before = (await sim.log()).length;
      const pre = await client()
        .provision('n1', 'deploy', { signal: AbortSignal.abort() })
        .catch((e) => e);
      return {
        rejection: thrown?.name,
        isSignalReason: thrown === controller.signal.reason,
        requestsAfterAbort: getsAfter - getsAtAbort,
        lastProgress: progress.at(-1) && [progress.at(-1).node, progress.at(-1).done, progress.at(-1).outcome],
        ownReasonPassedThrough: same,
        alreadyAborted: pre.name,
        sentWhenAlreadyAborted: (await sim.log()).length - before,
      };
    },

    async abortPuts() {
      const names = Array.from({ length: 10 }, (_, i) => `p${i}`);
      await load({
        nodes: [...names, 'q0'].map((name) => ({ name, provision_state: 'enroll' })),
        faults: [{ kind: 'latency', ms: 1000, method: 'PUT' }],
      });
      const controller = new AbortController();
      const aborted = new Set();
      // 4 at a time: below every runtime's own limit of connections per host (Chromium: 6).
      const waiting = client()
        .provision(names, 'manage', {
          wait: true,
          concurrency: 4,
          pollInterval: 0.05,
          signal: controller.signal,
          onProgress: (e) => e.outcome === 'aborted' && aborted.add(e.node),
        })
        .then(
          () => 'resolved',
          (e) => e,
        );
      await sim.until(async () => (await sim.log('PUT')).length >= 4);
      controller.abort();
      const thrown = await waiting;
      // A PUT of another client, sent after the abort and answered as late (1 s): by then the
      // aborted PUTs would have been answered too, and the next ones gone out.
      await client().provision('q0', 'manage', { wait: false });
      return {
        rejection: thrown?.name,
        isSignalReason: thrown === controller.signal.reason,
        puts: (await sim.log('PUT', '/v1/nodes/p*')).length,
        nodeGets: (await sim.log('GET', '/v1/nodes*')).length,
        abortedEvents: aborted.size,
      };
    },

    async malformed() {
      await load({
        nodes: [{ name: 'n1', provision_state: 'active' }],
        faults: [{ path: '/v1/nodes/n1', method: 'GET', kind: 'malformed' }],
      });
      const c = client();
      const get = await rejection(c.getNode('n1'), ['target', 'field']);
      const report = await c.waitForProvisionState('n1', 'active', { settle: 'all', timeout: 5, pollInterval: 0.02 });
      return {
        getNode: get,
        wait: { ok: report.ok, nodes: outcomes(report), error: report.nodes[0].error && describe(report.nodes[0].error) },
        gets: (await sim.log('GET', '/v1/nodes/n1')).length,
      };
    },

    async listMode() {
      const names = Array.from({ length: 60 }, (_, i) => `l${String(i).padStart(2, '0')}`);
      await load({ nodes: names.map((name) => ({ name, provision_state: 'available' })) });
      const report = await client().provision(names, 'deploy', { wait: true, timeout: 30, pollInterval: 0.1, listMode: 'list' });
      const gets = await sim.log('GET', '/v1/nodes*');
      const lists = gets.filter((r) => r.path === '/v1/nodes');
      return {
        ok: report.ok,
        reached: report.nodes.filter((n) => n.outcome === 'reached' && n.state === 'active').length,
        inOrder: report.nodes.every((n, i) => n.node === names[i]),
        puts: (await sim.log('PUT')).length,
        // The first round, with 60 nodes unsettled, is one list; later rounds
        // (fewer than listThreshold left, a number that depends on timing) may GET nodes.
        firstCheck: gets[0].path,
        listQueries: [...new Set(lists.map((r) => r.query))],
      };
    },

    async watch() {
      const names = ['w1', 'w2', 'w3', 'w4', 'w5'];
      await load({ nodes: names.map((name) => ({ name, provision_state: 'available' })) });
      const c = client();
      const added = [];
      let last;
      for await (const change of c.watch({ pollInterval: 0.05 })) {
        if (change.type === 'added') added.push(change.node.name);
        if (added.length === 5 && !last) {
          last = 'sent';
          await c.provision('w2', 'deploy');
        }
        if (change.node?.name === 'w2' && change.node.provision_state === 'active') {
          last = [change.type, change.node.name, change.node.provision_state];
          break;
        }
      }
      // Nothing is listed once the loop broke, while another watch on the same interval (of
      // another scope: its lists name the state) goes round four times.
      const unscoped = async () => (await sim.log('GET', '/v1/nodes')).filter((r) => !r.query.includes('provision_state=')).length;
      const lists = await unscoped();
      const witness = new AbortController();
      const other = (async () => {
        for await (const _ of client().watch({ pollInterval: 0.05, scope: { provisionState: 'active' }, signal: witness.signal })) {
          // Its changes do not matter: its rounds do.
        }
      })().catch(() => {});
      await sim.until(
        async () => (await sim.log('GET', '/v1/nodes')).filter((r) => r.query.includes('provision_state=active')).length >= 4,
      );
      witness.abort();
      await other;
      return { added: added.sort(), last, quietAfterBreak: (await unscoped()) === lists };
    },

    async getNode() {
      await load({ nodes: [{ name: 'n1', provision_state: 'active', resource_class: 'gold' }] });
      const c = client();
      const node = await c.getNode('n1', { fields: ['uuid', 'name', 'provision_state', 'resource_class'] });
      const [get] = await sim.log('GET', '/v1/nodes/n1');
      let error;
      const missing = await rejection(
        c.getNode('ghost').catch((e) => {
          error = e;
          throw e;
        }),
        ['status', 'detail'],
      );
      const [ghost] = await sim.log('GET', '/v1/nodes/ghost');
      return {
        keys: Object.keys(node).sort(),
        node: [node.name, node.provision_state, node.resource_class, anonymise(node.uuid)],
        query: get.query,
        missing,
        // The request id in the error is the one Ironic sent.
        requestId: error.requestId === ghost.id || error.requestId,
      };
    },

    async listNodes() {
      await load({
        nodes: [
          { name: 'a1', provision_state: 'active' },
          { name: 'm1', provision_state: 'manageable' },
          { name: 'a2', provision_state: 'active' },
          { name: 'v1', provision_state: 'available' },
          { name: 'e1', provision_state: 'enroll' },
        ],
      });
      const c = client();
      const names = (list) => list.map((n) => n.name);
      const all = await c.listNodes();
      const narrow = await c.listNodes({ fields: ['name', 'provision_state'] });
      return {
        all: names(all),
        detailed: ['uuid', 'driver', 'driver_info', 'last_error'].every((k) => k in all[0]),
        active: names(await c.listNodes({ scope: { provisionState: 'active' } })),
        limited: names(await c.listNodes({ limit: 2 })),
        fields: [names(narrow), Object.keys(narrow[0]).sort()],
      };
    },
  };

  async function load(scenario) {
    // A fixed epoch: node bodies (quoted in some messages) are the same byte for byte.
    await sim.load({ seed: 7, epoch: '2026-01-01T00:00:00Z', ...scenario, timing: FAST });
  }

  const report = {};
  for (const [name, step] of Object.entries(steps)) {
    try {
      report[name] = await step();
    } catch (e) {
      report[name] = { unexpected: describe(e) };
    }
  }
  return JSON.parse(JSON.stringify(report));
}

/** The simulator's control API (sim/README.md, "Control API"). */
function simulator(url) {
  const call = async (method, path, body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const doc = await res.json();
    if (!res.ok) throw new Error(`simulator ${method} ${path}: ${res.status} ${doc.error}`);
    return doc;
  };
  return {
    load: (scenario) => call('POST', '/__sim/scenario', scenario),
    history: (node) => call('GET', `/__sim/history?node=${encodeURIComponent(node)}`),
    /** Request log entries, by method and path glob. */
    async log(method, path) {
      const q = new URLSearchParams();
      if (method) q.set('method', method);
      if (path) q.set('path', path);
      return (await call('GET', `/__sim/log?${q}`)).entries;
    },
    /**
     * Resolves once `condition()` holds, checking every 20 ms; throws after 3000 checks (a minute
     * at least: a bound, far above the second or two a condition here takes).
     */
    async until(condition) {
      for (let i = 0; i < 3000; i++) {
        if (await condition()) return;
        await sleep(20);
      }
      throw new Error(`condition not met: ${condition}`);
    },
  };
}
