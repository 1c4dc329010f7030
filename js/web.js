// Entry for the `browser` and `default` export conditions.
import './init-web.js';

export * from './index.js';
