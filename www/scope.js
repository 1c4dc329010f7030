// A scope of the node table: Ironic's own list filters, as the package's
// `scope` option names them. The hub watches a scope; the page filters what
// it already has by the same rules while the hub's listing of a new one comes.
// The filters are the package's (its `tables().scopeFilters`), given once the
// package has loaded: the hub loads it, and the page has them in its hello.

/** Scope option -> [the node field it matches, the API version 1.x (its x) that brought the filter]. */
let filters = null;

/** Takes the filters from the package's tables; call before any other function here. */
export function useScopeFilters(scopeFilters) {
  filters = new Map(scopeFilters.map(([option, field, minor]) => [option, [field, minor]]));
}

/** [the node field a scope option matches, the API version 1.x (its x) that brought it]. */
export const scopeFilter = (name) => filters.get(name);

/** A scope as the watch takes it: only filters that are set, in one order. */
export function normalScope(scope = {}) {
  const out = {};
  for (const name of filters.keys()) {
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
    const v = node[filters.get(name)[0]];
    if (v !== undefined && v !== value) return false;
  }
  return true;
}
