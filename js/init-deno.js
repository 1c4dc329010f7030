// Deno: the wasm is part of the module graph (a source phase import gives
// the compiled WebAssembly.Module), so loading it needs no permission at all:
// a Deno user grants --allow-net for Ironic and nothing else. Fetching the
// file instead (init-web.js) would need --allow-read for node_modules.
// Only Deno resolves the `deno` condition, so bundlers never parse this syntax.

import { initSync } from './ironic_wait.js';
import source wasm from './ironic_wait_bg.wasm';

initSync({ module: wasm });
