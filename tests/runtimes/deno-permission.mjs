// Deno only: `deno run --allow-net=HOST:PORT deno-permission.mjs URL`, where
// URL is an origin the permission does not cover. Deno refuses the fetch
// itself; that is no connection failure to retry (5 retries 2 s apart would
// take 10 s) but a ConnectionError at once: one fetch, counted here (the
// package calls the global fetch). Prints one JSON line.
import * as api from 'ironic-wait';

let fetches = 0;
const fetchOfDeno = globalThis.fetch;
globalThis.fetch = (...args) => {
  fetches += 1;
  return fetchOfDeno(...args);
};

const client = new api.IronicClient({ endpoint: Deno.args[0], maxRetries: 5, retryInterval: 2 });
const error = await client.getNode('n1').then(
  () => null,
  (e) => e,
);
console.log(
  JSON.stringify({
    name: error?.name,
    isConnectionError: error instanceof api.ConnectionError,
    message: error?.message,
    retried: fetches !== 1,
  }),
);
