// `npm run build`: makes pkg/ (the npm package's contents) from scratch.
//   1. setup.mjs: npm packages, the wasm32 target, the matching wasm-bindgen
//   2. cargo build with the size-focused release profile
//   3. wasm-bindgen --target web (one output serves every runtime)
//   4. wasm-opt (npm `binaryen`), size first: see WASM_OPT_ARGS
//   5. js/ (entry wrappers per runtime + the JS API layer) copied alongside
// Steps 3-4 are cached next to cargo's output, keyed by the wasm's hash:
// wasm-opt (a JS build of binaryen) takes ~10 s, and most `npm test` runs
// change no Rust. pkg/ is assembled in a staging folder and swapped in, so
// it is never half made, and only when it changed, so a build with nothing
// to do leaves it alone for the programs loading it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive, BUDGET_GZIP, gzipSize, kb, main, PKG, pkgSizes, ROOT, run, WASM_FILE } from './lib.mjs';
import { setup, WASM_BINDGEN, wasmBindgenVersion } from './setup.mjs';

const TARGET = 'wasm32-unknown-unknown';
const CARGO_OUT = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), TARGET, 'release');
const CARGO_WASM = join(CARGO_OUT, 'ironic_wait.wasm');
const CACHE = join(CARGO_OUT, 'ironic_wait.pkg'); // wasm-bindgen + wasm-opt output
const STAMP = join(CACHE, 'build.json'); // what CACHE was made from
const WASM_OPT = join(ROOT, 'node_modules', 'binaryen', 'bin', 'wasm-opt');
const MAP_MIN_BYTES = 1024; // see minifyJs
const LOCK = join(ROOT, 'target', 'build.lock'); // see buildLock
// The features rustc enables by default for wasm32-unknown-unknown. wasm-opt
// reads them from the target_features section, but that section is gone if
// the profile ever sets `strip = true`; naming them keeps -Oz working then.
const WASM_FEATURES = ['bulk-memory', 'nontrapping-float-to-int', 'sign-ext', 'mutable-globals', 'reference-types', 'multivalue'];
// --strip-producers: the toolchain-version section is of no use to users.
// Merging similar functions, then flattening and re-looping the control
// flow before -Oz twice, took a few seconds more and 2 KB off the gzip
// (measured against -Oz alone: 147.6 KB against 149.6 KB). -Oz until it
// converges, then merging the functions it made alike and -Oz once more,
// takes 10 s more and 0.56 KB off (measured on 2026-12-04: 153,301 bytes of
// gzip against 153,877, before the import names are shortened). Flattening
// and re-looping once more after that, and --ignore-implicit-traps (the
// wasm's only implicit traps would be out-of-bounds memory from unsafe code
// or a division by zero, which Rust checks for itself before it divides),
// took 0.32 KB more off (151,479 bytes against 151,803, 2026-12-04).
// --low-memory-unused lets wasm-opt fold constant offsets into loads and
// stores: the wasm's stack comes first and grows down from 1 MiB, so the
// first KiB is only ever reached by a stack a frame short of overflowing.
// It took 0.76 KB off, and a GUFA pass before the last -Oz 60 bytes more
// (156,529 bytes against 157,367, 2026-12-05).
// IRONIC_WAIT_WASM_NAMES=1 keeps the functions' names (a larger wasm, for
// profiles that name the wasm's frames: see bench/README.md), never for a release.
const KEEP_NAMES = process.env.IRONIC_WAIT_WASM_NAMES === '1' ? ['-g'] : [];
const WASM_OPT_ARGS = [
  '--merge-similar-functions',
  '--flatten',
  '--rereloop',
  '-Oz',
  '--converge',
  '--flatten',
  '--rereloop',
  '-Oz',
  '--converge',
  '--merge-similar-functions',
  '--gufa-optimizing',
  '-Oz',
  '--ignore-implicit-traps',
  '--low-memory-unused',
  '--strip-producers',
  ...WASM_FEATURES.map((f) => `--enable-${f}`),
  ...KEEP_NAMES,
];

await main('build', async () => {
  const started = performance.now();
  const unlock = await buildLock();
  try {
    await build(started);
  } finally {
    unlock();
  }
});

async function build(started) {
  await setup();

  run('cargo', ['build', '--release', '--target', TARGET, '--lib']);
  const before = bindgenAndOptimise();

  const staging = join(ROOT, 'target', `pkg-staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  cpSync(CACHE, staging, { recursive: true, filter: (f) => f !== STAMP });
  for (const f of readdirSync(join(ROOT, 'js'))) {
    if (f.endsWith('.js') || f.endsWith('.d.ts')) cpSync(join(ROOT, 'js', f), join(staging, f));
  }
  await minifyJs(staging);
  if (sameFiles(staging, PKG)) {
    // Nothing to change: pkg/ stays as it is, not even swapped, since other
    // programs may be loading it (`npm start` in a test while other parts
    // of `npm test` run the package).
    rmSync(staging, { recursive: true, force: true });
  } else {
    // Moved aside, then replaced: pkg/ is missing for two renames, not for
    // a whole deletion.
    const old = `${staging}-old`;
    if (existsSync(PKG)) renameSync(PKG, old);
    renameSync(staging, PKG);
    rmSync(old, { recursive: true, force: true });
  }

  const s = pkgSizes();
  const row = (label, raw, gzip) => console.log(`  ${label.padEnd(22)} ${kb(raw).padStart(9)} raw ${kb(gzip).padStart(9)} gzip`);
  console.log('pkg/ sizes:');
  row('wasm before wasm-opt', before.raw, before.gzip);
  row('wasm', s.wasm.raw, s.wasm.gzip);
  row('JS (all pkg/*.js)', s.js.raw, s.js.gzip);
  row('total', s.total.raw, s.total.gzip);
  console.log(`  budget: ${kb(s.total.gzip)} of ${kb(BUDGET_GZIP)} gzip${s.total.gzip > BUDGET_GZIP ? '  OVER BUDGET' : ''}`);
  console.log(`built pkg/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

// One build at a time: `npm pack` builds (prepack), the runtime tests pack in
// parallel, and `npm start` builds too. Two builds at once would rewrite
// CACHE and swap pkg/ under each other. The lock file holds the builder's
// pid; a lock whose process is gone (killed mid-build) is taken over.
async function buildLock() {
  mkdirSync(join(LOCK, '..'), { recursive: true });
  let told = false;
  for (;;) {
    try {
      writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    const holder = lockHolder();
    if (holder === null ? lockAge() > 5000 : !alive(holder)) {
      rmSync(LOCK, { force: true });
      continue;
    }
    if (!told) console.error(`build: waiting for the build of process ${holder ?? '?'} (lock: ${LOCK})`);
    told = true;
    await sleep(200);
  }
  // Only ever our own lock: once released, the file may be another build's.
  const release = () => {
    process.off('exit', release);
    if (lockHolder() === process.pid) rmSync(LOCK, { force: true });
  };
  process.on('exit', release);
  return release;
}

/**
 * The pid in the lock file; null when there is none: it is written just
 * after the file is made, so an empty lock is either that instant or a build
 * that died in it (lockAge tells which).
 */
function lockHolder() {
  let text = '';
  try {
    text = readFileSync(LOCK, 'utf8').trim();
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  return /^\d+$/.test(text) ? Number(text) : null;
}

/** Milliseconds since the lock file was made (0 if it is gone). */
function lockAge() {
  try {
    return Date.now() - statSync(LOCK).mtimeMs;
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
    return 0;
  }
}

/** Whether folders `a` and `b` hold the same files with the same bytes (neither has subfolders). */
function sameFiles(a, b) {
  if (!existsSync(b)) return false;
  const names = readdirSync(a).sort();
  const others = readdirSync(b).sort();
  return (
    names.length === others.length && names.every((n, i) => n === others[i] && readFileSync(join(a, n)).equals(readFileSync(join(b, n))))
  );
}

// The JS users download, minified (its readable sources are js/ and
// wasm-bindgen's output): comments and whitespace out, local names
// shortened; exported names and property names are kept, and the error
// classes set their names themselves (js/index.js). The minifier is
// rolldown's, which vite (a dev dependency) brings. The types stay as
// written. Imported here, not at the top: on a fresh clone the npm packages
// come with setup(), after this module has loaded.
//
// A file of MAP_MIN_BYTES or more also gets a source map next to it (the
// readable source inside it) and the comment naming it, so that `node
// --enable-source-maps`, a browser's devtools and bundlers show readable
// lines: js/'s where the API checks its arguments and throws, and
// wasm-bindgen's glue as it wrote it. The maps are not part of the download
// (pkgSizes counts the .js files only); each comment is, about 30 bytes of
// gzip, so the smaller files, which minify to a line that reads as it is (an
// entry's import and export, an init's one call), go without.
async function minifyJs(dir) {
  const { minifySync } = await import('rolldown/experimental');
  for (const f of readdirSync(dir).filter((name) => name.endsWith('.js'))) {
    const path = join(dir, f);
    const source = readFileSync(path, 'utf8');
    const { code, map } = minifySync(f, source, { compress: true, mangle: true, module: true, sourcemap: true });
    if (code.length < MAP_MIN_BYTES) {
      writeFileSync(path, code);
      continue;
    }
    // Named where the source lives in the repository (the glue, made by the
    // build, under wasm-bindgen's name); its text is in the map.
    const origin = existsSync(join(ROOT, 'js', f)) ? `../js/${f}` : `wasm-bindgen/${f}`;
    const full = { version: 3, file: f, sources: [origin], sourcesContent: [source], names: map.names, mappings: map.mappings };
    writeFileSync(`${path}.map`, JSON.stringify(full));
    writeFileSync(path, `${code}\n//# sourceMappingURL=${f}.map`);
  }
}

// Runs wasm-bindgen and wasm-opt into CACHE unless it already holds the
// output for this very wasm and these tools; returns the pre-opt wasm size.
function bindgenAndOptimise() {
  const key = createHash('sha256')
    .update(readFileSync(CARGO_WASM))
    .update(
      JSON.stringify([
        wasmBindgenVersion(),
        readFileSync(join(WASM_OPT, '../../package.json'), 'utf8'),
        WASM_OPT_ARGS,
        shortenWasmNames.toString(),
      ]),
    )
    .digest('hex');
  const cached = existsSync(STAMP) && JSON.parse(readFileSync(STAMP, 'utf8'));
  if (cached?.key === key) return cached.before;

  rmSync(CACHE, { recursive: true, force: true });
  run(WASM_BINDGEN, [CARGO_WASM, '--out-dir', CACHE, '--target', 'web']);
  const wasm = join(CACHE, WASM_FILE);
  const bytes = readFileSync(wasm);
  const before = { raw: bytes.length, gzip: gzipSize(bytes) };
  run(process.execPath, [WASM_OPT, ...WASM_OPT_ARGS, wasm, '-o', wasm]);
  shortenWasmNames(wasm, join(CACHE, 'ironic_wait.js'));
  writeFileSync(STAMP, JSON.stringify({ key, before }));
  return before;
}

// wasm-bindgen names each import after its JS function plus a 16-digit
// hash (`__wbg_parse_c3f72b5a24f83c01`), written twice (in the wasm and in
// its glue) and all but incompressible: about 2 KB of the gzip. wasm-opt
// gives every import, export and module a name of a letter or two and
// prints the map, which is applied to the glue here. Each name must be
// where the glue is known to use it (an import as a key, an export after
// a dot), or the build stops.
function shortenWasmNames(wasm, glue) {
  const features = WASM_FEATURES.map((f) => `--enable-${f}`);
  const printed = execFileSync(
    process.execPath,
    [WASM_OPT, wasm, '--minify-imports-and-exports-and-modules', ...features, ...KEEP_NAMES, '-o', wasm],
    {
      encoding: 'utf8',
    },
  );
  const map = JSON.parse(printed.slice(printed.indexOf('{')));
  const modules = new Set(WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasm))).map((i) => i.module));
  if (modules.size !== 1) throw new Error(`shortening wasm names: ${modules.size} import modules, not 1`);
  let js = readFileSync(glue, 'utf8');
  const rename = (pattern, short, expected, what) => {
    const found = js.match(pattern)?.length ?? 0;
    if (found !== (expected ?? found) || found === 0) throw new Error(`shortening wasm names: ${what} found ${found} times in the glue`);
    js = js.replace(pattern, () => short);
  };
  for (const [, name, short] of map.imports) rename(new RegExp(`\\b${name}\\b`, 'g'), short, 1, `import ${name}`);
  for (const [name, short] of map.exports) {
    // Exports the glue never uses (the runtime's own) keep no name there.
    if (new RegExp(`\\b${name}\\b`).test(js)) rename(new RegExp(`\\.${name}\\b`, 'g'), `.${short}`, undefined, `export ${name}`);
  }
  rename(/(["'])\.\/ironic_wait_bg\.js\1/g, JSON.stringify([...modules][0]), 1, 'the import module');
  writeFileSync(glue, js);
}
