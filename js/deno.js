// Entry for the `deno` export condition.
import './init-deno.js';

export * from './index.js';
