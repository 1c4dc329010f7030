// Node: read the wasm next to this file and instantiate it synchronously
// (~5 ms cold start, versus ~24 ms for async init). A separate module so it
// is evaluated before index.js (ESM runs a module's imports in order).
import { readFileSync } from 'node:fs';
import { initSync } from './ironic_wait.js';

initSync({ module: readFileSync(new URL('./ironic_wait_bg.wasm', import.meta.url)) });
