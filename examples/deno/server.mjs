// A Deno server that keeps waits on one Ironic in Deno KV (see README.md):
// every request must carry `Authorization: Bearer <WAITS_SECRET>`, and goes
// to KvWaits (`ironic-wait/deno`): the API of waits and their event streams.
//   WAITS_SECRET  the bearer secret callers send
//   WAITS_KV      the KV file (SQLite): the waits and their queued rounds
//   WAITS_LISTEN  host:port to listen on (default 127.0.0.1:8000)
// and the client's settings: IRONIC_URL with IRONIC_TOKEN, or OS_* variables.
import { KvWaits } from 'ironic-wait/deno';

const secret = Deno.env.get('WAITS_SECRET');
const path = Deno.env.get('WAITS_KV');
if (!secret || !path) {
  console.error('set WAITS_SECRET (the bearer secret callers send) and WAITS_KV (the KV file)');
  Deno.exit(2);
}
const [hostname, port] = (Deno.env.get('WAITS_LISTEN') ?? '127.0.0.1:8000').split(/:(?=\d+$)/);

const kv = await Deno.openKv(path);
const waits = new KvWaits({ kv });
// Before serving: the rounds of waits a previous process left are queued again.
await waits.start();

Deno.serve(
  {
    hostname,
    port: Number(port),
    onListen: ({ hostname, port }) => console.log(`ironic-wait: serving waits on http://${hostname}:${port}/`),
  },
  async (request) => {
    if (!(await bearerMatches(request.headers.get('authorization'), secret))) {
      return new Response('unauthorized', { status: 401, headers: { 'www-authenticate': 'Bearer' } });
    }
    return waits.fetch(request);
  },
);

/** `Bearer <secret>`, compared by digest so that the time taken says nothing of the secret. */
async function bearerMatches(header, secret) {
  const given = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
  const digest = async (text) => new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  const [a, b] = await Promise.all([digest(given), digest(secret)]);
  let differs = given.length === 0 ? 1 : 0;
  for (let i = 0; i < a.length; i++) differs |= a[i] ^ b[i];
  return differs === 0;
}
