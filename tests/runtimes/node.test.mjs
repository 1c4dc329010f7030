// The runtime matrix, Node: the scenario in this Node (20), from a consumer
// project with the package installed from its `npm pack` tarball.
import { test, before, after } from 'node:test';
import { startSim, nodeReport, assertReport } from './harness.mjs';

let sim;
before(async () => { sim = await startSim(); });
after(() => sim?.close());

test('Node: the scenario from the packed package', async (t) => {
  await assertReport(t, await nodeReport('node', sim.url));
});
