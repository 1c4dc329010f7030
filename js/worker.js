// Entry for the `workerd` and `worker` export conditions.
import './init-worker.js';

export * from './index.js';
