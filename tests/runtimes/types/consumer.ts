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

export async function everything(signal: AbortSignal): Promise<void> {
  const v: string = version();
  const t = tables();
  const deployInterval: number | null = t.actionsByName.deploy.pollInterval;
  const max: number = t.limits.maxSeconds;

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
