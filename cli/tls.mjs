// The library's `fetch` option for a private CA (--os-cacert, OS_CACERT,
// clouds.yaml `cacert`) or no certificate check at all (--insecure,
// clouds.yaml `verify: false`), as python-openstackclient takes them. Node's
// own `fetch` (undici) has no per-request CA and no way to set one for the
// process in Node 20 (`tls.setDefaultCACertificates` came in Node 22.15), so
// requests go through node:https with an Agent that has the CA; plain http
// URLs through node:http. The console server's proxy takes the same Agent.

import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { ConfigError } from './settings.mjs';

/** Statuses whose answer has no body: a Response refuses one. */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * The node:https Agent that trusts the CA bundle in the file `cacert` (it
 * alone, as python's requests does with it) or, with `verify: false`, any
 * certificate; with neither, the system's CAs.
 * @param {{ cacert?: string, verify: boolean }} tls
 */
export async function tlsAgent({ cacert, verify }) {
  let ca;
  if (verify && cacert !== undefined) {
    try {
      ca = await readFile(cacert, 'utf8');
    } catch (e) {
      throw new ConfigError(`The CA bundle file of --os-cacert could not be read (${e.code ?? e.message}).`);
    }
  }
  return new https.Agent({ keepAlive: true, rejectUnauthorized: verify, ...(ca && { ca }) });
}

/** A `fetch` over node:http(s) through `agent` (see tlsAgent). */
export function agentFetch(agent) {
  return (request) => send(request, agent);
}

/** One request over node:http(s): the Request's method, headers, body and signal; the answer as a Response. */
async function send(request, agent) {
  const url = new URL(request.url);
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : null;
  const headers = Object.fromEntries(request.headers);
  if (body) headers['content-length'] = String(body.length);
  const secure = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const options = { method: request.method, headers, signal: request.signal, ...(secure && { agent }) };
    const req = (secure ? https : http).request(url, options, (res) => {
      const answer = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2) answer.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
      const status = res.statusCode;
      if (NO_BODY.has(status)) res.resume();
      try {
        resolve(new Response(NO_BODY.has(status) ? null : Readable.toWeb(res), { status, statusText: res.statusMessage, headers: answer }));
      } catch (e) {
        // A status a Response cannot have (below 200, above 599).
        res.destroy();
        reject(e);
      }
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}
