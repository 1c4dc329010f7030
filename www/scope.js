// A scope of the node table: Ironic's own list filters, as the package's
// `scope` option names them. The hub watches a scope; the page filters what
// it already has by the same rules while the hub's listing of a new one comes.

/** Scope option -> [the node field it matches, the microversion that brought the filter]. */
export const SCOPE_FILTERS = {
  provisionState: ['provision_state', 9],
  resourceClass: ['resource_class', 21],
  fault: ['fault', 42],
  conductorGroup: ['conductor_group', 46],
  owner: ['owner', 50],
  shard: ['shard', 82],
};

/** A scope as the watch takes it: only filters that are set, in one order. */
export function normalScope(scope = {}) {
  const out = {};
  for (const name of Object.keys(SCOPE_FILTERS)) {
    const v = scope?.[name];
    if (typeof v === 'string' && v !== '') out[name] = v;
  }
  return out;
}

/** The same filters, the same key. */
export const scopeKey = (scope) => JSON.stringify(normalScope(scope));

/** Whether a node's known fields fit the scope (a field not known yet is no reason to drop a node). */
export function inScope(scope, node) {
  for (const [name, value] of Object.entries(scope)) {
    const v = node[SCOPE_FILTERS[name][0]];
    if (v !== undefined && v !== value) return false;
  }
  return true;
}
