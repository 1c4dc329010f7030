// Cloudflare workerd (and bundlers for workers): there is no fetch of local
// files; the wasm is imported as a compiled WebAssembly.Module, which
// wrangler/workerd provide for `.wasm` imports.

import { initSync } from './ironic_wait.js';
import wasm from './ironic_wait_bg.wasm';

initSync({ module: wasm });
