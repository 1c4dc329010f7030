// A Worker that keeps waits on one Ironic in the IronicWaits Durable Object
// (see README.md). Requests under /ironic/ go to the object of IRONIC_URL,
// with the prefix taken off, once they carry `Authorization: Bearer
// <WAITS_SECRET>`; that header is not passed on.
export { IronicWaits } from 'ironic-wait/cloudflare';

const PREFIX = '/ironic';

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== PREFIX && !url.pathname.startsWith(`${PREFIX}/`)) return new Response('not found', { status: 404 });
    if (!env.WAITS_SECRET) return new Response('WAITS_SECRET is not set', { status: 500 });
    if (!(await bearerMatches(request.headers.get('authorization'), env.WAITS_SECRET))) {
      return new Response('unauthorized', { status: 401, headers: { 'www-authenticate': 'Bearer' } });
    }
    const headers = new Headers(request.headers);
    headers.delete('authorization');
    const inner = new URL(url.pathname.slice(PREFIX.length) || '/', 'https://ironic-waits');
    inner.search = url.search;
    // One object per Ironic: every wait and listener of it shares one loop.
    const stub = env.WAITS.get(env.WAITS.idFromName(env.IRONIC_URL ?? env.OS_AUTH_URL ?? 'ironic'));
    return stub.fetch(new Request(inner, { method: request.method, headers, body: request.body }));
  },
};

/** `Bearer <secret>`, compared by digest so that the time taken says nothing of the secret. */
async function bearerMatches(header, secret) {
  const given = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
  const digest = async (text) => new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  const [a, b] = await Promise.all([digest(given), digest(secret)]);
  let differs = given.length === 0 ? 1 : 0;
  for (let i = 0; i < a.length; i++) differs |= a[i] ^ b[i];
  return differs === 0;
}
