// Entry for the `deno`, `browser` and `default` export conditions.
import './init-web.js';
export * from './index.js';
