// The linters of `npm test` (its `lint` part) and `npm run check`: every
// check runs, and the exit code is 1 if any of them failed.
//   Biome        the formatting and lint rules of the JS and CSS (biome.jsonc);
//                `npx biome check --write .` fixes what it can
//   cargo fmt    rustfmt.toml; `cargo fmt` fixes
//   cargo clippy natively (every target) and for wasm32, where src/wasm/ is
//                built; only the library builds for wasm32 (the tests' dev
//                dependencies do not)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { main, ROOT } from './lib.mjs';

const CHECKS = [
  ['Biome', join(ROOT, 'node_modules', '.bin', 'biome'), ['ci', '--colors=off', '.']],
  ['cargo fmt', 'cargo', ['fmt', '--check']],
  ['cargo clippy', 'cargo', ['clippy', '--all-targets', '--', '-D', 'warnings']],
  ['cargo clippy (wasm32)', 'cargo', ['clippy', '--lib', '--target', 'wasm32-unknown-unknown', '--', '-D', 'warnings']],
];

await main('lint', async () => {
  const failed = [];
  for (const [name, cmd, args] of CHECKS) {
    console.log(`--- ${name}: ${cmd === 'cargo' ? 'cargo' : 'biome'} ${args.join(' ')}`);
    const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) failed.push(name);
  }
  if (failed.length) throw new Error(`failed: ${failed.join(', ')}`);
  console.log('lint: every check passed');
});
