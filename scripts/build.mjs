// `npm run build`: makes pkg/ (the npm package's contents) from scratch.
//   1. setup.mjs: npm packages, the wasm32 target, the matching wasm-bindgen
//   2. cargo build with the size-focused release profile
//   3. wasm-bindgen --target web (one output serves every runtime)
//   4. wasm-opt -Oz (npm `binaryen`)
//   5. js/ (entry wrappers per runtime + the JS API layer) copied alongside
// It builds into a staging folder and swaps it in, so pkg/ is never half made.
import { cpSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, PKG, WASM_FILE, BUDGET_GZIP, run, main, gzipSize, pkgSizes, kb } from './lib.mjs';
import { setup, WASM_BINDGEN } from './setup.mjs';

const TARGET = 'wasm32-unknown-unknown';
const CARGO_WASM = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), TARGET, 'release', 'ironic_wait.wasm');
const WASM_OPT = join(ROOT, 'node_modules', 'binaryen', 'bin', 'wasm-opt');
// The features rustc enables by default for wasm32-unknown-unknown. wasm-opt
// reads them from the target_features section, but that section is gone if
// the profile ever sets `strip = true`; naming them keeps -Oz working then.
const WASM_FEATURES = ['bulk-memory', 'nontrapping-float-to-int', 'sign-ext', 'mutable-globals', 'reference-types', 'multivalue'];

await main('build', async () => {
  const started = performance.now();
  await setup();

  run('cargo', ['build', '--release', '--target', TARGET, '--lib']);

  const staging = join(ROOT, 'target', `pkg-staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  run(WASM_BINDGEN, [CARGO_WASM, '--out-dir', staging, '--target', 'web']);

  const wasm = join(staging, WASM_FILE);
  const before = readFileSync(wasm);
  // --strip-producers: the toolchain-version section is of no use to users.
  run(process.execPath, [WASM_OPT, '-Oz', '--strip-producers', ...WASM_FEATURES.map((f) => `--enable-${f}`), wasm, '-o', wasm]);

  for (const f of readdirSync(join(ROOT, 'js'))) {
    if (f.endsWith('.js') || f.endsWith('.d.ts')) cpSync(join(ROOT, 'js', f), join(staging, f));
  }
  rmSync(PKG, { recursive: true, force: true });
  renameSync(staging, PKG);

  const s = pkgSizes();
  const row = (label, raw, gzip) => console.log(`  ${label.padEnd(22)} ${kb(raw).padStart(9)} raw ${kb(gzip).padStart(9)} gzip`);
  console.log('pkg/ sizes:');
  row('wasm before wasm-opt', before.length, gzipSize(before));
  row('wasm', s.wasm.raw, s.wasm.gzip);
  row('JS (all pkg/*.js)', s.js.raw, s.js.gzip);
  row('total', s.total.raw, s.total.gzip);
  console.log(`  budget: ${kb(s.total.gzip)} of ${kb(BUDGET_GZIP)} gzip${s.total.gzip > BUDGET_GZIP ? '  OVER BUDGET' : ''}`);
  console.log(`built pkg/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});
