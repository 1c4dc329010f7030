// Deno only: `deno run --allow-net=HOST:PORT deno-permission.mjs URL`, where
// URL is an origin the permission does not cover. Deno refuses the fetch
// itself; that is no connection failure to retry (5 retries 2 s apart would
// take 10 s) but a ConnectionError at once. Prints one JSON line.
import * as api from 'ironic-wait';

const client = new api.IronicClient({ endpoint: Deno.args[0], maxRetries: 5, retryInterval: 2 });
const started = performance.now();
const error = await client.getNode('n1').then(
  () => null,
  (e) => e,
);
console.log(
  JSON.stringify({
    name: error?.name,
    isConnectionError: error instanceof api.ConnectionError,
    message: error?.message,
    retried: performance.now() - started > 1500,
  }),
);
