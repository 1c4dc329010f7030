// The console's demo scenario for the embedded simulator (sim/README.md,
// "Scenarios"): 24 nodes across the usual states, phases lasting a few
// seconds (seeded, so the same clicks give the same durations), two actions
// set to fail with the kind of last_error a real deployment shows, two nodes
// already failed, and a `gold` resource class on available nodes so an
// allocation succeeds (and `platinum`, which no node has, fails).

const TIMING = {
  verifying: [1500, 3000],
  deploying: [2000, 4000],
  'wait call-back': [1500, 3500],
  deleting: [1000, 2000],
  cleaning: [2000, 4500],
  'clean wait': [1000, 2500],
  inspecting: [2000, 4000],
  'inspect wait': [1000, 2000],
  adopting: [1000, 2000],
  rescuing: [1500, 3000],
  'rescue wait': [1000, 2000],
  unrescuing: [1000, 2500],
  servicing: [1500, 3000],
  'service wait': [1000, 2000],
  allocating: [400, 900],
};

// name, provision state, resource class, and any other Ironic node fields.
const NODES = [
  ['compute-01', 'active', 'gold'],
  ['compute-02', 'active', 'gold'],
  ['compute-03', 'active', 'gold'],
  ['compute-04', 'active', 'gold'],
  ['compute-05', 'available', 'gold'],
  ['compute-06', 'available', 'gold'],
  ['compute-07', 'available', 'gold'],
  ['compute-08', 'available', 'gold'],
  ['compute-09', 'manageable', 'gold'],
  ['compute-10', 'manageable', 'gold'],
  ['compute-11', 'enroll', 'gold'],
  ['compute-12', 'enroll', 'gold'],
  ['gpu-01', 'active', 'gpu', { traits: ['CUSTOM_GPU_A100'] }],
  ['gpu-02', 'active', 'gpu', { traits: ['CUSTOM_GPU_A100'] }],
  ['gpu-03', 'available', 'gpu', { traits: ['CUSTOM_GPU_A100'] }],
  ['gpu-04', 'deploy failed', 'gpu', {
    traits: ['CUSTOM_GPU_A100'],
    last_error: 'Deploy step deploy.write_image failed: Image download timed out after 3 attempts: '
      + 'HTTPConnectionPool(host=\'images.internal\', port=80): Read timed out. (read timeout=60)',
  }],
  ['storage-01', 'available', 'storage'],
  ['storage-02', 'available', 'storage'],
  ['storage-03', 'manageable', 'storage'],
  ['storage-04', 'clean failed', 'storage', {
    maintenance: true,
    maintenance_reason: 'Cleaning failed',
    fault: 'clean failure',
    last_error: 'Clean step erase_devices failed: Failed to erase device /dev/sdc: '
      + 'hdparm: security erase unit failed (exit code 5). Disk may be frozen.',
  }],
  ['edge-01', 'active', 'baremetal'],
  ['edge-02', 'manageable', 'baremetal'],
  ['edge-03', 'enroll', 'baremetal'],
  ['edge-04', 'enroll', 'baremetal'],
];

const TRANSITIONS = [
  {
    node: 'compute-08',
    action: 'deploy',
    fail: 'Deploy step deploy.write_image failed: Image checksum mismatch for ubuntu-24.04.qcow2: '
      + 'expected sha256 3f2a9c1e…, got 9c41e07b…',
  },
  {
    node: 'edge-03',
    action: 'manage',
    fail: 'Failed to get power state for node: IPMI call failed: power status. '
      + 'Error: Unable to establish IPMI v2 / RMCP+ session (BMC 10.20.3.17 did not answer)',
  },
];

/** The demo scenario (a fresh object each call: the simulator keeps what it is given). */
export function demoFleet() {
  return {
    timing: { ...TIMING },
    nodes: NODES.map(([name, provision_state, resource_class, extra = {}]) => ({ name, provision_state, resource_class, ...extra })),
    transitions: TRANSITIONS.map((t) => ({ ...t })),
  };
}
