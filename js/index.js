// The package's JS API: every runtime's entry (node.js, web.js, worker.js)
// initialises the wasm first, then re-exports this module.
//
// SEED: the lead extends this (wrapping the wasm-bindgen exports, real Error
// subclasses, JSDoc). Rule: do not call into the wasm at module top level;
// under top-level await (web.js) this module may be evaluated before the
// wasm has finished instantiating. Calls made after `import` are safe.
export { version } from './ironic_wait.js';
