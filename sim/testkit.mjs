// A small HTTP client for tests that drive the simulator (or a real Ironic):
// the whole answer, headers and body, with no retries and no parsing magic.

import http from 'node:http';

/**
 * @param {string} base e.g. sim.url
 * @param {string} method
 * @param {string} path with its query
 * @param {object} [opts] version (sets X-OpenStack-Ironic-API-Version), headers, body (object -> JSON, string -> as is), timeout (ms)
 * @returns {Promise<{status:number, headers:object, text:string, json:any}>} json is undefined when the body is not JSON
 */
export function request(base, method, path, opts = {}) {
  const { version, headers = {}, body, timeout } = opts;
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const all = { ...headers };
  if (version !== undefined) all['X-OpenStack-Ironic-API-Version'] = version;
  if (payload !== undefined) {
    all['Content-Type'] ??= 'application/json';
    all['Content-Length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, base), { method, headers: all, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (timeout !== undefined) req.setTimeout(timeout, () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
    req.end(payload);
  });
}

/** The faultstring inside Ironic's error body ({"error_message": "<JSON string>"}). */
export function faultstring(res) {
  return JSON.parse(res.json.error_message).faultstring;
}

/** A client bound to one base URL and microversion: api.get('/v1/nodes/n1'). */
export function client(base, version = '1.115') {
  const call =
    (method) =>
    (path, opts = {}) =>
      request(base, method, path, { version, ...opts });
  return { get: call('GET'), post: call('POST'), put: call('PUT'), patch: call('PATCH'), delete: call('DELETE') };
}

/** PUT a provision target; resolves to the response. */
export function provision(api, node, target, extra = {}) {
  return api.put(`/v1/nodes/${encodeURIComponent(node)}/states/provision`, { body: { target, ...extra } });
}
