// Browsers and anything else: fetch the wasm next to this file (the
// wasm-bindgen default URL) and instantiate it. Top-level await: importers
// of web.js wait until the wasm is ready.
import init from './ironic_wait.js';

await init();
