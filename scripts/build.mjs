// `npm run build`: makes pkg/ (the npm package's contents) from scratch.
//   1. setup.mjs: npm packages, the wasm32 target, the matching wasm-bindgen
//   2. cargo build with the size-focused release profile
//   3. wasm-bindgen --target web (one output serves every runtime)
//   4. wasm-opt (npm `binaryen`), size first: see WASM_OPT_ARGS
//   5. js/ (entry wrappers per runtime + the JS API layer) copied alongside
// Steps 3-4 are cached next to cargo's output, keyed by the wasm's hash:
// wasm-opt (a JS build of binaryen) takes ~10 s, and most `npm test` runs
// change no Rust. pkg/ is assembled in a staging folder and swapped in, so
// it is never half made.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { minifySync } from 'rolldown/experimental';
import { ROOT, PKG, WASM_FILE, BUDGET_GZIP, run, main, gzipSize, pkgSizes, kb } from './lib.mjs';
import { setup, WASM_BINDGEN, wasmBindgenVersion } from './setup.mjs';

const TARGET = 'wasm32-unknown-unknown';
const CARGO_OUT = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), TARGET, 'release');
const CARGO_WASM = join(CARGO_OUT, 'ironic_wait.wasm');
const CACHE = join(CARGO_OUT, 'ironic_wait.pkg'); // wasm-bindgen + wasm-opt output
const STAMP = join(CACHE, 'build.json'); // what CACHE was made from
const WASM_OPT = join(ROOT, 'node_modules', 'binaryen', 'bin', 'wasm-opt');
// The features rustc enables by default for wasm32-unknown-unknown. wasm-opt
// reads them from the target_features section, but that section is gone if
// the profile ever sets `strip = true`; naming them keeps -Oz working then.
const WASM_FEATURES = ['bulk-memory', 'nontrapping-float-to-int', 'sign-ext', 'mutable-globals', 'reference-types', 'multivalue'];
// --strip-producers: the toolchain-version section is of no use to users.
// Merging similar functions, then flattening and re-looping the control
// flow before -Oz twice, takes a few seconds more and 2 KB off the gzip
// (measured on this wasm against -Oz alone: 147.6 KB against 149.6 KB).
const WASM_OPT_ARGS = [
  '--merge-similar-functions',
  '--flatten',
  '--rereloop',
  '-Oz',
  '-Oz',
  '--strip-producers',
  ...WASM_FEATURES.map((f) => `--enable-${f}`),
];

await main('build', async () => {
  const started = performance.now();
  await setup();

  run('cargo', ['build', '--release', '--target', TARGET, '--lib']);
  const before = bindgenAndOptimise();

  const staging = join(ROOT, 'target', `pkg-staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  cpSync(CACHE, staging, { recursive: true, filter: (f) => f !== STAMP });
  for (const f of readdirSync(join(ROOT, 'js'))) {
    if (f.endsWith('.js') || f.endsWith('.d.ts')) cpSync(join(ROOT, 'js', f), join(staging, f));
  }
  minifyJs(staging);
  rmSync(PKG, { recursive: true, force: true });
  renameSync(staging, PKG);

  const s = pkgSizes();
  const row = (label, raw, gzip) => console.log(`  ${label.padEnd(22)} ${kb(raw).padStart(9)} raw ${kb(gzip).padStart(9)} gzip`);
  console.log('pkg/ sizes:');
  row('wasm before wasm-opt', before.raw, before.gzip);
  row('wasm', s.wasm.raw, s.wasm.gzip);
  row('JS (all pkg/*.js)', s.js.raw, s.js.gzip);
  row('total', s.total.raw, s.total.gzip);
  console.log(`  budget: ${kb(s.total.gzip)} of ${kb(BUDGET_GZIP)} gzip${s.total.gzip > BUDGET_GZIP ? '  OVER BUDGET' : ''}`);
  console.log(`built pkg/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});

// The JS users download, minified (its readable sources are js/ and
// wasm-bindgen's output): comments and whitespace out, local names
// shortened; exported names and property names are kept, and the error
// classes set their names themselves (js/index.js). The minifier is
// rolldown's, which vite (a dev dependency) brings. The types stay as
// written.
function minifyJs(dir) {
  for (const f of readdirSync(dir).filter((name) => name.endsWith('.js'))) {
    const path = join(dir, f);
    const { code } = minifySync(f, readFileSync(path, 'utf8'), { compress: true, mangle: true, module: true });
    writeFileSync(path, code);
  }
}

// Runs wasm-bindgen and wasm-opt into CACHE unless it already holds the
// output for this very wasm and these tools; returns the pre-opt wasm size.
function bindgenAndOptimise() {
  const key = createHash('sha256')
    .update(readFileSync(CARGO_WASM))
    .update(JSON.stringify([wasmBindgenVersion(), readFileSync(join(WASM_OPT, '../../package.json'), 'utf8'), WASM_OPT_ARGS]))
    .digest('hex');
  const cached = existsSync(STAMP) && JSON.parse(readFileSync(STAMP, 'utf8'));
  if (cached?.key === key) return cached.before;

  rmSync(CACHE, { recursive: true, force: true });
  run(WASM_BINDGEN, [CARGO_WASM, '--out-dir', CACHE, '--target', 'web']);
  const wasm = join(CACHE, WASM_FILE);
  const bytes = readFileSync(wasm);
  const before = { raw: bytes.length, gzip: gzipSize(bytes) };
  run(process.execPath, [WASM_OPT, ...WASM_OPT_ARGS, wasm, '-o', wasm]);
  writeFileSync(STAMP, JSON.stringify({ key, before }));
  return before;
}
