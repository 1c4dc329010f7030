// Entry for the `node` export condition.
import './init-node.js';

export * from './index.js';
