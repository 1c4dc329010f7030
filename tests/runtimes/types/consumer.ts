// A consumer of every method and option, type-checked with `tsc --strict`
// against the packed package (tests/runtimes/node.test.mjs). Never run: it
// shows what the types let a user write, and (`@ts-expect-error`) what they
// refuse.
import {
  type Allocation,
  AuthError,
  type Checkpoint,
  ConnectionError,
  IronicClient,
  IronicHttpError,
  type IronicWaitError,
  type Node,
  type NodeChange,
  type ProgressEvent,
  type RequestRecord,
  StateTransitionFailed,
  StateTransitionTimeout,
  tables,
  version,
  type WaitReport,
} from 'ironic-wait';
import {
  createSimulator,
  type FaultRule,
  faultstring,
  provision,
  type RunningSimulator,
  client as rawClient,
  request,
  type Scenario,
  type Simulator,
  startSimulator,
  type TransitionRule,
} from 'ironic-wait/sim';

export async function everything(signal: AbortSignal): Promise<void> {
  const v: string = version();
  const t = tables();
  const deployInterval: number | null = t.actionsByName.deploy.pollInterval;
  const max: number = t.limits.maxSeconds;
  const [option, field, since]: readonly [string, string, number] = t.scopeFilters[0];
  const historySince: number = t.versions.history;
  console.log(option, field, since, historySince);

  const client = new IronicClient({
    endpoint: 'https://ironic.example:6385',
    token: 'gAAAA',
    microversion: 'latest',
    maxRetries: 5,
    retryInterval: 2,
    requestTimeout: 60,
    maxResponseBytes: 16 * 1024 * 1024,
    headers: { 'X-OpenStack-Request-Id': 'req-1' },
    userAgent: 'my-tool/1.0',
    fetch: (request: Request) => fetch(request),
    onRequest: (r: RequestRecord) => console.log(r.method, r.path, r.status ?? 'no answer', r.duration, r.requestId),
  });
  new IronicClient({
    auth: { type: 'password', authUrl: 'https://keystone:5000/v3', username: 'u', password: 'p', userDomainName: 'Default' },
    region: 'RegionOne',
    interface: 'internal',
  });
  new IronicClient({ endpoint: 'http://ironic', getToken: async () => 'token' });
  new IronicClient({ endpoint: 'http://ironic', basicAuth: { username: 'u', password: 'p' } });

  const onProgress = (e: ProgressEvent) => {
    const who: string = e.node ?? e.allocation ?? '';
    if (e.done) {
      const how: string = e.outcome; // settled: never null
      console.log(who, how, e.elapsed);
    } else {
      const none: null = e.outcome;
      console.log(who, e.state, e.targetState, e.lastError, none);
    }
  };
  const saved: Checkpoint[] = [];
  const report: WaitReport = await client.provision(['n1', 'n2'], 'deploy', {
    wait: true,
    timeout: 1800,
    pollInterval: 'auto',
    budget: 60,
    settle: 'all',
    holdIsTerminal: true,
    failOnUnexpectedState: false,
    concurrency: 4,
    listThreshold: 20,
    listMode: 'changes',
    scope: {
      conductorGroup: 'dc2',
      shard: ['s1', 's2'],
      owner: 'p',
      lessee: 'l',
      resourceClass: 'gold',
      provisionState: 'available',
      fault: 'power failure',
    },
    signal,
    onProgress,
    onCheckpoint: (text) => saved.push(text),
    diagnose: true,
    configDrive: { user_data: '#cloud-config' },
    deploySteps: [{ interface: 'deploy', step: 'deploy', priority: 80, args: {} }],
  });
  for (const n of report.nodes) {
    const polls: number = n.polls; // always there
    const state: string | null = n.state;
    console.log(n.node, n.outcome, polls, state, n.elapsed, n.history?.[0]?.event, n.historyError, n.error?.message);
  }
  await client.provision('n3', 'clean', { cleanSteps: [{ interface: 'deploy', step: 'erase_devices' }], disableRamdisk: true });
  await client.provision('n3', 'service', { runbook: 'rb-1', wait: true });
  await client.provision('n3', 'rescue', { rescuePassword: 'x', wait: true });
  await client.waitForProvisionState('n1', 'active', { timeout: 600, pollInterval: 2, signal });
  await client.setPowerState(['n1'], 'soft reboot', { wait: true, timeout: 300, powerTimeout: 120, diagnose: true });
  await client.waitForPowerState(['n1'], 'power off', { timeout: 60, settle: 'all' });
  await client.waitForReservation('n1', { timeout: 60 });
  const history = await client.getNodeHistory('n1', { signal });
  console.log(history[0]?.event_type, history[0]?.severity);

  const { allocation, report: made } = await client.createAllocation(
    { resourceClass: 'gold', traits: ['CUSTOM_A'], candidateNodes: ['n1'], name: 'a1', owner: 'p', extra: { k: 'v' } },
    { wait: true, timeout: 120, pollInterval: 1, onProgress, onCheckpoint: (text) => saved.push(text), signal },
  );
  const a: Allocation = allocation;
  console.log(a.uuid, a.state, a.node_uuid, made?.allocation.outcome, made?.allocation.body?.state);
  const waited = await client.waitForAllocation('a1', { timeout: 60, budget: 30, pollInterval: 'auto' });
  console.log(waited.ok, waited.allocation.state);

  const node: Node = await client.getNode('n1', { fields: ['uuid', 'provision_state'], signal });
  const ps: string | undefined = node.provision_state;
  const other: unknown = node.properties;
  const nodes: Node[] = await client.listNodes({ fields: ['uuid'], limit: 100, scope: { provisionState: 'active' }, signal });
  console.log(ps, other, nodes.length);

  for await (const change of client.watch({
    scope: { owner: 'p' },
    listMode: 'list',
    fields: ['power_state'],
    pollInterval: 5,
    initial: false,
    signal,
  })) {
    const c: NodeChange = change;
    if (c.type === 'removed') {
      const gone: null = c.node;
      console.log(c.uuid, gone);
    } else {
      console.log(c.uuid, c.node.provision_state);
    }
  }
  for await (const change of client.watch({ fields: ['power_state'], fieldsInterval: 'auto', retryOutages: true })) {
    if (change.type === 'outage') {
      const e: IronicWaitError = change.error;
      console.log(e.message);
    } else if (change.type !== 'restored') {
      const c: NodeChange = change;
      console.log(c.uuid);
    }
  }
  for await (const change of client.watch({ fields: ['maintenance'], fieldsInterval: 30 })) {
    // @ts-expect-error: without retryOutages there is no outage to say
    if (change.type === 'outage') console.log(change);
  }

  const mv: string = await client.microversion({ signal });
  const { endpoint, token, expiresAt } = await client.authenticate({ signal, refused: 'old-token' });
  console.log(mv, endpoint, token, expiresAt);

  // A checkpoint carries its method: resume and step answer what that call would.
  const cp = client.checkpoint('provision', ['n1'], 'deploy', { wait: true, timeout: 600 });
  const resumed: WaitReport = await client.resume(cp, { signal, onProgress, onCheckpoint: (text) => saved.push(text) });
  const allocationCp = client.checkpoint('createAllocation', { resourceClass: 'gold' }, { wait: true });
  const created = await client.resume(allocationCp);
  console.log(resumed.ok, created.allocation.uuid);
  const step = await client.step(client.checkpoint('waitForAllocation', 'a1', { timeout: 60 }), { onProgress });
  if (step.checkpoint !== null) {
    const at: number = step.wakeAtMs;
    console.log(at);
  } else {
    console.log(step.report?.allocation.outcome, step.error?.message);
  }
  // A checkpoint read back from storage is a string: its answer is any wait's.
  const anyAnswer = await client.resume(saved[0] ?? '');
  console.log(anyAnswer);
  client.checkpoint('setPowerState', 'n1', 'power on', { wait: true });
  client.checkpoint('waitForPowerState', 'n1', 'power on');
  client.checkpoint('waitForReservation', 'n1', { timeout: 5 });
  client.checkpoint('waitForProvisionState', 'n1', 'manageable');

  try {
    await client.waitForProvisionState('n1', 'active');
  } catch (e) {
    if (e instanceof StateTransitionFailed) console.log(e.node, e.expected, e.state, e.lastError, e.report.ok);
    if (e instanceof StateTransitionTimeout) console.log(e.nodes, e.timeout);
    if (e instanceof IronicHttpError) console.log(e.status, e.requestId, e.detail);
    if (e instanceof ConnectionError || e instanceof AuthError) console.log(e.cause);
  }
  console.log(v, deployInterval, max);
}

export async function refused(client: IronicClient): Promise<void> {
  // @ts-expect-error the time limit is `timeout`; `wait` is only whether to wait
  await client.provision('n1', 'deploy', { wait: 600 });
  // @ts-expect-error not a provision action
  await client.provision('n1', 'explode');
  // @ts-expect-error listNodes filters by `scope`
  await client.listNodes({ provisionState: 'active' });
  // @ts-expect-error an allocation wait has no settle mode
  await client.waitForAllocation('a1', { settle: 'all' });
  // @ts-expect-error only 'power on' or 'power off' is waited for
  await client.waitForPowerState('n1', 'rebooting');
  // @ts-expect-error a lock wait has nothing to diagnose
  await client.waitForReservation('n1', { diagnose: true });
  const step = await client.step(client.checkpoint('provision', 'n1', 'deploy', { wait: true }));
  // @ts-expect-error a step that goes on has no report yet
  if (step.checkpoint !== null) step.report.nodes;
}

// The simulator, as a test of the user's own code drives it.
export async function simulated(): Promise<void> {
  const faults: FaultRule[] = [
    { node: 'n2', method: 'GET', kind: 'status', status: 503, retryAfter: 1, count: 3 },
    { path: '/v1/nodes*', kind: 'latency', ms: 200, fraction: 0.1 },
    { path: '/v1/nodes', kind: 'page', limit: 10, next: 'same', skip: 1 },
    { node: ['n1', 'n3'], kind: 'late-commit', delay: 500, state: ['active', 'available'] },
  ];
  const transitions: TransitionRule[] = [
    { node: 'n1', action: 'deploy', fail: 'Deploy step failed: no image', at: 'deploying', maintenance: true },
    { node: 'n2', action: 'deleted', hold: true },
    { action: 'provide', fail: true, times: 1 },
    { node: 'n3', action: 'power off', stall: true },
    { action: 'power', fail: 'BMC unreachable', maintenance: true },
  ];
  const scenario: Scenario = {
    seed: 7,
    epoch: '2026-01-01T00:00:00Z',
    maxVersion: '1.80',
    timing: { cleaning: [1000, 4000], deploying: 1500, 'wait call-back': 0 },
    nodes: [
      { name: 'n1', provision_state: 'available', resource_class: 'gold', traits: ['CUSTOM_GPU'] },
      { name: 'n2', provision_state: 'active', timing: { deleting: 50 }, provision_updated_at: '2025-12-31T23:59:58+00:00' },
      { name: 'n3', provision_state: 'clean failed', last_error: 'disk on fire', maintenance: true, power_state: 'power off' },
    ],
    transitions,
    faults,
    nodeHistory: { steps: false, maxEntries: 50 },
    churn: { every: 2000, fraction: 0.01 },
  };
  const sim: RunningSimulator = await startSimulator({ port: 0, host: '127.0.0.1', manualClock: true, scenario });
  const client = new IronicClient({ endpoint: sim.url });
  await client.provision('n1', 'deploy');
  sim.advance(5000);
  const n1 = sim.node('n1');
  const state: string | undefined = n1?.provision_state;
  const moved: number | null | undefined = n1?.provision_updated_at;
  console.log(state, moved, n1?.plan?.phases.length, n1?.history.at(-1)?.t);
  sim.setNode('n2', { provision_state: 'deploy failed', last_error: 'x', updated_at: '2026-01-01T00:00:00Z' });
  sim.deleteNode('n3');
  sim.faults.add({ kind: 'hang' });
  sim.faults.add([{ kind: 'reset', count: 1 }]);
  const hits: number | undefined = sim.faults.list()[0]?.hits;
  sim.transitions.add({ node: 'n1', action: 'rebuild', stall: true });
  sim.transitions.clear();
  const flips = sim.churn({ count: 2, states: ['available'] });
  const moves = sim.churn({ moves: true, count: 2 });
  console.log(hits, flips.changed[0]?.visible, moves.started[0]?.action);
  const { entries, next } = sim.requests({ since: 0, method: 'GET', path: '/v1/nodes/*', node: 'n1' });
  console.log(entries[0]?.status, entries[0]?.fault, next, sim.log().length);
  const history = sim.history('n1');
  const first = history?.entries[0];
  if (first && !first.deleted) console.log(first.provision_state, first.action);
  console.log(sim.history().length, sim.events('n1')?.[0]?.event_type, sim.summary().byState.active);
  sim.skew(-1000);
  console.log(sim.now(), sim.port, sim.host, sim.server.address());
  sim.load({ nodes: 5 });
  sim.reset();
  await sim.close();

  const mounted: Simulator = createSimulator({
    nodes: 10,
    seed: 2,
    timeScale: 5,
    logLimit: 100,
    historyLimit: 1000,
    timestampResolution: 'second',
  });
  const taken: boolean = mounted.handle(
    { method: 'GET', url: '/v1', headers: { host: 'localhost' }, on: () => undefined },
    {
      headersSent: false,
      destroyed: false,
      socket: null,
      writeHead: () => undefined,
      write: () => true,
      end: () => undefined,
      on: () => undefined,
      destroy: () => undefined,
    },
  );
  console.log(taken);
  await mounted.close();

  const res = await request('http://127.0.0.1:6385', 'GET', '/v1/nodes/ghost', { version: 'latest', timeout: 1000 });
  const status: number = res.status;
  const text: string = faultstring(res);
  const api = rawClient('http://127.0.0.1:6385', '1.80');
  const put = await provision(api, 'n1', 'clean', { clean_steps: [] });
  console.log(status, text, put.headers.location, (await api.get('/v1/nodes')).json.nodes);
}

export async function simRefused(sim: RunningSimulator): Promise<void> {
  // @ts-expect-error a fault's kind is one the simulator knows
  sim.faults.add({ kind: 'explode' });
  // @ts-expect-error a status fault needs its status
  sim.faults.add({ kind: 'status' });
  // @ts-expect-error a late commit is about node changes, not requests: no path
  sim.faults.add({ kind: 'late-commit', delay: 10, path: '/v1/nodes' });
  // @ts-expect-error a transition rule has exactly one outcome
  sim.transitions.add({ node: 'n1', fail: 'x', hold: true });
  // @ts-expect-error a power rule fails or stalls; it cannot hold
  sim.transitions.add({ action: 'power on', hold: true });
  // @ts-expect-error timing keys are the working states
  await startSimulator({ scenario: { timing: { deploy: 5 } } });
  // @ts-expect-error not a provision state
  sim.setNode('n1', { provision_state: 'broken' });
  // @ts-expect-error churn by hand needs a count
  sim.churn({ moves: true });
  // @ts-expect-error the port is startSimulator's: createSimulator opens none
  createSimulator({ port: 0 });
}
