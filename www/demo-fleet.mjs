// The console's demo scenarios for the embedded simulator (sim/README.md,
// "Scenarios").
//
// demoFleet(): 24 nodes across the usual states, phases lasting a few
// seconds (seeded, so the same clicks give the same durations), two actions
// set to fail with the kind of last_error a real deployment shows, two nodes
// already failed, and a `gold` resource class on available nodes so an
// allocation succeeds (and `platinum`, which no node has, fails).
//
// demoFleet({ size }): a data centre of `size` nodes (100,000 is fine) in
// racks of 40 (`rack0012-node034`), spread over conductor groups, shards,
// owners and resource classes, mostly active or available, some manageable
// or enrolled, about 4 % failed (with last_error, some in maintenance with
// a fault), and a background churn: every 2 s about 1 % of the fleet starts
// a provision action (deploys and undeploys mostly, a few that fail), so a
// change feed always has something new. Seeded: the same size and seed
// give the same fleet and the same churn.

import { rng, uuidFrom } from '../sim/rng.mjs';

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
  [
    'gpu-04',
    'deploy failed',
    'gpu',
    {
      traits: ['CUSTOM_GPU_A100'],
      last_error:
        'Deploy step deploy.write_image failed: Image download timed out after 3 attempts: ' +
        "HTTPConnectionPool(host='images.internal', port=80): Read timed out. (read timeout=60)",
    },
  ],
  ['storage-01', 'available', 'storage'],
  ['storage-02', 'available', 'storage'],
  ['storage-03', 'manageable', 'storage'],
  [
    'storage-04',
    'clean failed',
    'storage',
    {
      maintenance: true,
      maintenance_reason: 'Cleaning failed',
      fault: 'clean failure',
      last_error:
        'Clean step erase_devices failed: Failed to erase device /dev/sdc: ' +
        'hdparm: security erase unit failed (exit code 5). Disk may be frozen.',
    },
  ],
  ['edge-01', 'active', 'baremetal'],
  ['edge-02', 'manageable', 'baremetal'],
  ['edge-03', 'enroll', 'baremetal'],
  ['edge-04', 'enroll', 'baremetal'],
];

const TRANSITIONS = [
  {
    node: 'compute-08',
    action: 'deploy',
    fail:
      'Deploy step deploy.write_image failed: Image checksum mismatch for ubuntu-24.04.qcow2: ' +
      'expected sha256 3f2a9c1e…, got 9c41e07b…',
  },
  {
    node: 'edge-03',
    action: 'manage',
    fail:
      'Failed to get power state for node: IPMI call failed: power status. ' +
      'Error: Unable to establish IPMI v2 / RMCP+ session (BMC 10.20.3.17 did not answer)',
  },
];

/**
 * A demo scenario (a fresh object each call: the simulator keeps what it is given).
 * @param {object} [options] without `size`: the 24-node fleet
 * @param {number} [options.size] nodes in the large fleet (1 to 1,000,000)
 * @param {number} [options.seed=1] seeds the fleet's mix (the simulator's own seed draws UUIDs and the churn)
 * @param {number} [options.churn=0.01] share of the fleet that starts an action each round (0: none)
 * @param {number} [options.every=2000] ms between churn rounds
 */
export function demoFleet(options = {}) {
  if (options.size === undefined) {
    return {
      timing: { ...TIMING },
      nodes: NODES.map(([name, provision_state, resource_class, extra = {}]) => ({ name, provision_state, resource_class, ...extra })),
      transitions: TRANSITIONS.map((t) => ({ ...t })),
    };
  }
  const { size, seed = 1, churn = 0.01, every = 2000 } = options;
  if (!Number.isInteger(size) || size < 1 || size > MAX_SIZE)
    throw new Error(`demoFleet: size must be a whole number from 1 to ${MAX_SIZE}, not ${size}`);
  if (!(churn >= 0 && churn <= 1)) throw new Error(`demoFleet: churn is a share of the fleet from 0 to 1, not ${churn}`);
  return {
    timing: { ...TIMING, power: [1000, 3000] },
    nodes: largeFleet(size, seed),
    ...(churn > 0 ? { churn: { every, fraction: churn } } : {}),
  };
}

const MAX_SIZE = 1_000_000;
const PER_RACK = 40;
const DATACENTRES = ['dc1', 'dc2', 'dc3', 'dc4'];
const SHARDS = 16;
const PROJECTS = 12;

/** What each kind of rack holds: its resource class, traits and hardware (shared, frozen: 100,000 nodes). */
const freeze = (o) => Object.freeze(o);
const RACK_KINDS = [
  { resource_class: 'compute', traits: freeze([]), properties: freeze({ cpu_arch: 'x86_64', cpus: 64, memory_mb: 262144, local_gb: 900 }) },
  {
    resource_class: 'gpu',
    traits: freeze(['CUSTOM_GPU_A100']),
    properties: freeze({ cpu_arch: 'x86_64', cpus: 96, memory_mb: 1048576, local_gb: 3500 }),
  },
  {
    resource_class: 'storage',
    traits: freeze(['CUSTOM_NVME']),
    properties: freeze({ cpu_arch: 'x86_64', cpus: 32, memory_mb: 196608, local_gb: 61440 }),
  },
  {
    resource_class: 'highmem',
    traits: freeze([]),
    properties: freeze({ cpu_arch: 'x86_64', cpus: 128, memory_mb: 2097152, local_gb: 1800 }),
  },
];
/** Of ten racks: six compute, two GPU, one storage, one high-memory. */
const RACK_PLAN = [0, 0, 1, 0, 2, 0, 0, 1, 0, 3];

/** The failures the fleet starts with: state, extra fields and a last_error made from the node's BMC address. */
const FAILURES = [
  {
    provision_state: 'deploy failed',
    error: (bmc) =>
      `Deploy step deploy.write_image failed: Image download timed out after 3 attempts: HTTPConnectionPool(host='images.internal', port=80): Read timed out. (read timeout=60) [BMC ${bmc}]`,
  },
  {
    provision_state: 'clean failed',
    maintenance: true,
    fault: 'clean failure',
    error: () =>
      'Clean step erase_devices failed: Failed to erase device /dev/nvme1n1: nvme format exited with 1: NVMe status: Invalid Format (0x410a)',
  },
  {
    // The power sync's text names the node's UUID, so these nodes get theirs here; it set power_state to what it read: None.
    provision_state: 'active',
    maintenance: true,
    fault: 'power failure',
    power_state: null,
    error: (bmc, uuid) =>
      `During sync_power_state, max retries exceeded for node ${uuid}, node state None does not match expected state 'power on'. Updating DB state to 'None' Switching node to maintenance mode. Error: IPMI call failed: power status (BMC ${bmc} did not answer)`,
  },
  {
    provision_state: 'error',
    error: (bmc) =>
      `Failed to tear down: Failed to set boot device: Redfish exception occurred. Error: HTTP GET https://${bmc}/redfish/v1/Systems/1 returned code 503`,
  },
];

/**
 * `size` nodes in racks of 40: rack r sits in datacentre (conductor group)
 * dc1..dc4 by position, in shard r mod 16 (a rack in 50 in none), and is
 * owned by one of 12 projects or (one in five) none, drawn per rack; each
 * node draws its state: 55 % active, 29 % available, 7 % manageable, 5 %
 * enroll, 4 % failed (deploy failed, clean failed in maintenance, active in
 * maintenance with a power failure, error).
 */
function largeFleet(size, seed) {
  const rand = rng(seed, 'demo fleet');
  const owners = rng(seed, 'demo fleet owners'); // streams of their own: the states keep their draws
  const uuids = rng(seed, 'demo fleet uuids');
  const racks = Math.ceil(size / PER_RACK);
  const width = Math.max(2, String(racks).length);
  const nodes = new Array(size);
  let owner = null;
  for (let i = 0; i < size; i++) {
    const r = Math.floor(i / PER_RACK);
    const rack = `rack${String(r + 1).padStart(width, '0')}`;
    const kind = RACK_KINDS[RACK_PLAN[r % RACK_PLAN.length]];
    const group = DATACENTRES[Math.floor((r * DATACENTRES.length) / racks)];
    if (i % PER_RACK === 0) {
      // a rack belongs to one project, or (one in five) to none
      const o = owners();
      owner = o < 0.2 ? null : `project-${String(1 + Math.floor(((o - 0.2) / 0.8) * PROJECTS)).padStart(2, '0')}`;
    }
    const node = {
      name: `${rack}-node${String((i % PER_RACK) + 1).padStart(3, '0')}`,
      provision_state: 'active',
      resource_class: kind.resource_class,
      traits: kind.traits,
      properties: kind.properties,
      conductor_group: group,
      shard: r % 50 === 49 ? null : `shard-${String(r % SHARDS).padStart(2, '0')}`,
      owner,
    };
    const x = rand();
    if (x < 0.55) {
      // active, as set above
    } else if (x < 0.84) {
      node.provision_state = 'available';
    } else if (x < 0.91) {
      node.provision_state = 'manageable';
    } else if (x < 0.96) {
      node.provision_state = 'enroll';
    } else {
      const failure = FAILURES[Math.floor(rand() * FAILURES.length)];
      const bmc = `10.${DATACENTRES.indexOf(group) + 1}.${Math.floor(r / 250)}.${(r % 250) + 1}`;
      node.provision_state = failure.provision_state;
      if ('power_state' in failure) {
        node.uuid = uuidFrom(uuids);
        node.power_state = failure.power_state;
      }
      node.last_error = failure.error(bmc, node.uuid);
      if (failure.maintenance) {
        node.maintenance = true;
        node.maintenance_reason = node.last_error;
        node.fault = failure.fault;
      }
    }
    nodes[i] = node;
  }
  return nodes;
}
