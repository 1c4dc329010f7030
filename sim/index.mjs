// `ironic-wait/sim`: the Ironic simulator for a user's own tests (types and
// documentation in index.d.ts, the whole story in README.md). Node only: it
// is an HTTP server.

export { createSimulator, startSimulator } from './server.mjs';
export { client, faultstring, provision, request } from './testkit.mjs';
