// One cold start, in a fresh process (bench/run.mjs starts ~15 of each):
//   node bench/cold-start.mjs ironic-wait   import the package, make the first client
//   node bench/cold-start.mjs floor         import the floor client
//   node bench/cold-start.mjs bare          nothing: the baseline, the same ES module file
// Prints the milliseconds the import and the constructor took, and the CPU
// the whole process used so far (start-up included).
const what = process.argv[2];
const t0 = performance.now();
let imported = t0;
if (what === 'ironic-wait') {
  const { IronicClient } = await import('ironic-wait');
  imported = performance.now();
  new IronicClient({ endpoint: 'http://127.0.0.1:9' });
} else if (what === 'floor') {
  await import('./floor.mjs');
  imported = performance.now();
}
const done = performance.now();
const { user, system } = process.cpuUsage();
process.stdout.write(`${JSON.stringify({ importMs: imported - t0, constructMs: done - imported, cpuMs: (user + system) / 1000 })}\n`);
