// Deploy two nodes and wait for them, against the bundled Ironic simulator.
// Run it with `node node_modules/ironic-wait/examples/quickstart.mjs` where
// the package is installed, or copy it into your project.
import { IronicClient, StateTransitionFailed } from 'ironic-wait';
import { startSimulator } from 'ironic-wait/sim';

// A stand-in Ironic: two available nodes, one of which fails to deploy.
const ironic = await startSimulator({
  scenario: {
    nodes: [
      { name: 'web-1', provision_state: 'available' },
      { name: 'web-2', provision_state: 'available' },
    ],
    timing: { deploying: 300, 'wait call-back': 200 },
    transitions: [{ node: 'web-2', action: 'deploy', fail: 'No deploy steps returned by the driver' }],
  },
});

const client = new IronicClient({ endpoint: ironic.url });
console.log(`Ironic at ${ironic.url}, API ${await client.microversion()}`);

// `deploy --wait 60`, polling every half second, every node's outcome.
const report = await client.provision(['web-1', 'web-2'], 'deploy', {
  wait: true,
  timeout: 60,
  pollInterval: 0.5,
  settle: 'all',
  onProgress: (e) => console.log(`  ${e.node}: ${e.state}${e.done ? ` (${e.outcome})` : ''}`),
});
for (const node of report.nodes) {
  console.log(`${node.node}: ${node.outcome} in ${node.elapsed} s${node.lastError ? `: ${node.lastError}` : ''}`);
}

// The default settle mode rejects on the first failure, like the CLI.
try {
  await client.waitForProvisionState('web-2', 'active');
} catch (e) {
  if (!(e instanceof StateTransitionFailed)) throw e;
  console.log(`${e.name}: ${e.message}`);
}
await ironic.close();
