// The console's local server: the page (www/), the package (pkg/ at /pkg/)
// and, at /v1 on the same origin, either the embedded Ironic simulator with
// the demo fleet or a proxy to a real Ironic (IRONIC_URL), whose token is
// added here and never reaches the page. Same origin: no CORS set-up.
//
// It runs on an operator's workstation next to a browser that visits other
// sites, so every other origin is hostile: it answers only requests addressed
// to its own loopback address (DNS rebinding), refuses any foreign Origin,
// lets API requests and writes through only from its own page (a per-start
// token the page gets in index.html, sent back as a header, and same-origin
// fetch metadata),
// forwards only normalised /v1 paths, limits request bodies, and puts the
// security headers on every answer. See docs/console.md, "Security model".

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { extname, join, normalize, sep } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { listen } from '../sim/http.mjs';
import { createSimulator } from '../sim/server.mjs';
import { demoFleet } from './demo-fleet.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WWW = join(ROOT, 'www');
const PKG = join(ROOT, 'pkg');

/** The page's policy (static files). */
export const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
/** Everything else (API answers, errors): nothing runs, even if opened as a document. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox";
/** The header the page sends its token in, on every write. */
export const TOKEN_HEADER = 'X-Console-Token';
/** Request bodies above this are refused (413). Ironic's own bodies are a few KB; the console sends no config drive. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** A request body must have arrived within this (408 otherwise). */
export const BODY_TIMEOUT_MS = 30_000;
/** The request's headers must have arrived within this (408 otherwise). */
export const HEADERS_TIMEOUT_MS = 20_000;
/** More header lines than this are refused (431) rather than silently cut, as Node would. */
const MAX_HEADERS = 100;
/** An upstream Ironic silent this long is a 504. */
const UPSTREAM_TIMEOUT_MS = 120_000;
const MAX_TARGET_LENGTH = 2048;
/** How long a refused body is still read (and dropped) after the answer, so the client gets to read it. */
const LINGER_MS = 2000;

const SECURITY_HEADERS = {
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
};
// Only these are served; anything else (server.mjs, .d.ts sources) is 404.
const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};
const TOKEN_PLACEHOLDER = '<meta name="console-token" content="">';
// What of the page's request Ironic sees (besides the server's own credentials).
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'content-type',
  'user-agent',
  'x-openstack-ironic-api-version',
  'openstack-api-version',
  'x-openstack-request-id',
];
// What of Ironic's answer the page sees (Location only rewritten to this origin).
const FORWARDED_RESPONSE_HEADERS = [
  'content-type',
  'content-encoding',
  'retry-after',
  'x-openstack-ironic-api-minimum-version',
  'x-openstack-ironic-api-maximum-version',
  'x-openstack-ironic-api-version',
  'openstack-api-version',
  'x-openstack-request-id',
  'openstack-request-id',
];
const API_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const READS = new Set(['GET', 'HEAD']);
const FRAME_DESTINATIONS = new Set(['iframe', 'frame', 'embed', 'object', 'fencedframe']);
const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost)$/;
// A request target's path: RFC 3986 pchar without `;` (path parameters some servers strip).
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,=:@%/]*$/;
const QUERY_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$/;
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
// %XX of an unreserved character: a normalised path has it plain (`%2e`, `%76%31`).
const ENCODED_UNRESERVED = /%(2[dDeE]|3\d|[46][1-9A-Fa-f]|[57][0-9Aa]|5[fF]|7[eE])/;
// After decoding, a segment holds none of these: no second level of escapes,
// no separators, no controls, nothing outside ASCII (which some servers fold).
const BAD_DECODED = /[%/\\?#;\x00-\x1f\x7f-\uffff]/;

/**
 * Starts the console server.
 * @param {object} [options]
 * @param {number} [options.port=0] 0 picks a free port
 * @param {string} [options.host='127.0.0.1'] a loopback address (127.x.x.x, ::1 or localhost): nothing else is allowed
 * @param {string} [options.ironicUrl] proxy /v1 to this Ironic instead of running the simulator
 * @param {string|function} [options.ironicToken] sent to that Ironic as X-Auth-Token: a token, or
 *   `async (refused) => token` (an IronicClient's authenticate(), say), asked for each request, and once
 *   more with the token an upstream 401 answered, after which the request is sent again
 * @param {import('node:https').Agent} [options.ironicAgent] the Agent of an https Ironic: a private CA, or
 *   no certificate check (cli/tls.mjs's tlsAgent, from OS_CACERT or clouds.yaml); by default the system's CAs
 * @param {object} [options.scenario] the simulator's scenario (default: the demo fleet)
 * @param {number} [options.seed=1] the simulator's seed
 * @param {number} [options.maxBodyBytes=MAX_BODY_BYTES] larger request bodies are refused (413)
 * @param {number} [options.bodyTimeout=BODY_TIMEOUT_MS] ms a request body may take to arrive (408 after)
 * @param {number} [options.headersTimeout=HEADERS_TIMEOUT_MS] ms the request's headers may take (408 after)
 * @returns {Promise<{ url: string, sim: object|null, close(): Promise<void> }>}
 */
export async function startConsoleServer(options = {}) {
  const {
    port = 0,
    host = '127.0.0.1',
    ironicUrl,
    ironicToken,
    ironicAgent,
    scenario = demoFleet(),
    seed = 1,
    maxBodyBytes = MAX_BODY_BYTES,
    bodyTimeout = BODY_TIMEOUT_MS,
    headersTimeout = HEADERS_TIMEOUT_MS,
  } = options;
  if (!LOOPBACK.test(host))
    throw new Error(`The console server listens on a loopback address only (127.0.0.1, ::1, localhost), not ${host}`);
  const upstream = ironicUrl ? ironicBase(ironicUrl) : null;
  const sim = upstream ? null : createSimulator({ seed, scenario });
  const config = JSON.stringify(upstream ? { mode: 'proxy', ironic: upstream.text } : { mode: 'simulator' });
  // The page's proof of origin for writes: new at every start, only ever in index.html.
  const token = randomBytes(32).toString('base64url');
  const tokenDigest = digest(token);
  let hosts = new Set(); // the Host values this server answers to, once it listens

  const handle = (req, res, expectsContinue = false) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    res.setHeader('Content-Security-Policy', API_CSP);
    res.setHeader('Cache-Control', 'no-store');
    const { route, path, query } = parseTarget(req.url);
    const refusal = gate(req, route, hosts, tokenDigest);
    if (refusal) return refuse(req, res, ...refusal);
    if (route.status) return refuse(req, res, route.status, route.message);

    if (route.kind === 'api' || (route.kind === 'control' && sim)) {
      if (!API_METHODS.has(req.method)) return refuse(req, res, 405, 'Method not allowed.', { Allow: [...API_METHODS].join(', ') });
      if (query && !READS.has(req.method)) return refuse(req, res, 400, 'A query string is only accepted on GET and HEAD.');
      readBody(req, res, { limit: maxBodyBytes, ms: bodyTimeout, expectsContinue })
        .then((body) => {
          if (!body) return; // refused or gone
          if (body.length && !BODY_METHODS.has(req.method)) return refuse(req, res, 400, `A ${req.method} request has no body.`);
          if (body.length && !/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
            return refuse(req, res, 415, 'A request body must be application/json.');
          }
          if (upstream && route.kind === 'api') {
            return proxy(req, res, upstream, { path, query, body, token: ironicToken, agent: ironicAgent });
          }
          simulate(sim, req, res, body);
        })
        .catch(() => refuse(req, res, 500, 'Internal error.'));
      return;
    }
    // Pages and files take no body: one still coming is not read.
    if (bodyPending(req)) return refuse(req, res, 400, 'A request body is only accepted on /v1 writes.');
    if (route.kind === 'config') {
      if (!READS.has(req.method)) return refuse(req, res, 405, 'Method not allowed.', { Allow: 'GET, HEAD' });
      return send(res, 200, 'application/json', config, req.method);
    }
    serveStatic(req, res, route.segments, token).catch(() => refuse(req, res, 500, 'Internal error.'));
  };

  const server = http.createServer(
    {
      requireHostHeader: false, // checked here, with the security headers on the answer
      headersTimeout,
      requestTimeout: headersTimeout + 2 * bodyTimeout, // a backstop: bodies have their own timer
      connectionsCheckingInterval: Math.min(1000, headersTimeout),
    },
    handle,
  );
  server.maxHeadersCount = MAX_HEADERS + 1;
  // `Expect: 100-continue`: the checks come before the client is told to send its body.
  server.on('checkContinue', (req, res) => handle(req, res, true));
  server.on('clientError', (err, socket) => rawError(socket, err));

  const listening = await listen(server, port, host);
  const address = server.address();
  const literal = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const names = [literal, ...(address.address === '127.0.0.1' || address.address === '::1' ? ['localhost'] : [])];
  hosts = new Set(names.flatMap((name) => (address.port === 80 ? [name, `${name}:80`] : [`${name}:${address.port}`])));
  return {
    url: `http://${literal}:${address.port}`,
    sim,
    async close() {
      await sim?.close();
      await listening.close();
    },
  };
}

/** IRONIC_URL as `{ origin, prefix, text, basic }`: prefix is a path before /v1 (no trailing `/`), text has no credentials. */
function ironicBase(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new Error('IRONIC_URL is not a URL'); // not quoted: it may hold a password
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`IRONIC_URL must be http(s), not ${url.protocol}`);
  const prefix = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  // Credentials in the URL mean HTTP Basic (Ironic's auth_strategy = http_basic).
  const basic = url.username
    ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
    : null;
  return { origin: url.origin, prefix, text: url.origin + prefix, basic };
}

const digest = (text) => createHash('sha256').update(text).digest();

/**
 * The checks every request passes before anything else: its Host, its Origin,
 * its fetch metadata, and for the API and writes the page's token. Returns
 * null, or [status, message] to refuse it with.
 */
function gate(req, route, hosts, tokenDigest) {
  // Node keeps the first maxHeadersCount lines and drops the rest: an Origin could hide past them.
  if (req.rawHeaders.length / 2 > MAX_HEADERS) return [431, `A request may have at most ${MAX_HEADERS} header lines.`];
  const host = req.headersDistinct.host;
  if (host?.length !== 1 || !hosts.has(host[0].toLowerCase())) {
    return [421, 'This console server only answers requests addressed to its own loopback address.'];
  }
  const origin = req.headersDistinct.origin;
  if (origin && (origin.length !== 1 || origin[0] !== `http://${host[0].toLowerCase()}`)) {
    return [403, 'Requests from other origins are refused.'];
  }
  if (FRAME_DESTINATIONS.has(req.headers['sec-fetch-dest'])) return [403, 'The console is not to be framed.'];
  const site = req.headers['sec-fetch-site'];
  const write = !READS.has(req.method);
  if (write && site !== undefined && site !== 'same-origin') return [403, 'Writes are only accepted from the console page itself.'];
  if (!write && site !== undefined && site !== 'same-origin' && site !== 'none') {
    // Another site may link to the console (a top-level navigation to a page), nothing more.
    const navigation = req.headers['sec-fetch-mode'] === 'navigate' && req.headers['sec-fetch-dest'] === 'document';
    if (!navigation || route.kind !== 'static') return [403, 'Requests from other sites are refused.'];
  }
  // The API is the page's alone, reads included (a driver's vendor_passthru may act on a GET).
  if (write || route.kind === 'api' || route.kind === 'control') {
    const given = req.headersDistinct[TOKEN_HEADER.toLowerCase()];
    if (given?.length !== 1 || !timingSafeEqual(digest(given[0]), tokenDigest)) {
      return [403, `The API and writes need the console page's ${TOKEN_HEADER} header.`];
    }
  }
  return null;
}

/**
 * The request target checked and split: `route` is `{ kind: 'api' | 'control'
 * | 'config' | 'static', segments }` (segments percent-decoded) or
 * `{ status, message }`; `path` and `query` are the raw text.
 */
function parseTarget(target) {
  const refused = (status, message) => ({ route: { status, message } });
  if (target.length > MAX_TARGET_LENGTH) return refused(414, 'The request target is too long.');
  if (!target.startsWith('/')) return refused(400, 'Only path requests are served.'); // not `http://host/...` nor `*`
  const qi = target.indexOf('?');
  const path = qi < 0 ? target : target.slice(0, qi);
  const query = qi < 0 ? '' : target.slice(qi + 1);
  if (!PATH_CHARS.test(path) || BAD_ESCAPE.test(path) || ENCODED_UNRESERVED.test(path)) {
    return refused(400, 'The path is not a normalised URL path.');
  }
  if (!QUERY_CHARS.test(query) || BAD_ESCAPE.test(query)) return refused(400, 'The query string is not valid.');
  const segments = [];
  for (const raw of path === '/' ? [] : path.slice(1).split('/')) {
    let segment;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return refused(400, 'The path is not valid UTF-8.');
    }
    if (segment === '' || segment === '.' || segment === '..' || BAD_DECODED.test(segment)) {
      return refused(400, 'The path has an empty, dot or encoded-separator segment.');
    }
    segments.push(segment);
  }
  const kind = { v1: 'api', __sim: 'control' }[segments[0]] ?? (path === '/console.json' ? 'config' : 'static');
  return { route: { kind, segments }, path, query };
}

/** An answer with a body (the security headers are already set on `res`). */
function send(res, status, type, body, method = 'GET', extra = {}) {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(method === 'HEAD' ? undefined : body);
}

/** An error in Ironic's own shape, so the client reports it like any other. */
function ironicError(message, faultcode = 'Client') {
  return JSON.stringify({ error_message: JSON.stringify({ faultcode, faultstring: message, debuginfo: null }) });
}

/**
 * Refuses a request. When it still has a body coming, that body is not read
 * into memory: the answer goes out at once and the connection is closed.
 */
function refuse(req, res, status, message, extra = {}) {
  if (res.headersSent) return res.destroy();
  if (!bodyPending(req)) return send(res, status, 'application/json', ironicError(message), req.method, extra);
  const socket = res.socket;
  if (!socket) return req.socket.destroy(); // queued behind a pipelined answer: nothing to say it with
  // The answer and our end of the connection at once; what the client still
  // sends is read and dropped (a client busy sending would otherwise lose the
  // answer to a reset), for LINGER_MS at most.
  req.resume();
  socket.end(rawAnswer(status, ironicError(message), { ...res.getHeaders(), ...extra }));
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
}

/** Whether the request declares a body that has not all been read yet. */
function bodyPending(req) {
  return !req.complete && (Number(req.headers['content-length']) > 0 || req.headers['transfer-encoding'] !== undefined);
}

/** An answer written on the socket when Node's parser gives up (bad request, headers too large or too slow). */
function rawError(socket, err) {
  if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
  const status = { HPE_HEADER_OVERFLOW: 431, ERR_HTTP_REQUEST_TIMEOUT: 408 }[err.code] ?? 400;
  const headers = { ...SECURITY_HEADERS, 'Content-Security-Policy': API_CSP, 'Cache-Control': 'no-store' };
  socket.end(rawAnswer(status, ironicError(http.STATUS_CODES[status]), headers));
}

/** A whole HTTP/1.1 answer as text, with `Connection: close`. */
function rawAnswer(status, body, headers) {
  const all = { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' };
  const head = Object.entries(all)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${head}\r\n${body}`;
}

/**
 * The request body as a Buffer, at most `limit` bytes, within `ms`; null when
 * it was refused (413, 408: answered here, the connection closed) or the
 * client went away. Nothing past the limit is read, let alone kept.
 */
function readBody(req, res, { limit, ms, expectsContinue }) {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    refuse(req, res, 413, `A request body may be at most ${limit} bytes.`);
    return Promise.resolve(null);
  }
  if ((declared === undefined || declared === '0') && req.headers['transfer-encoding'] === undefined) {
    return Promise.resolve(Buffer.alloc(0));
  }
  if (expectsContinue) res.writeContinue();
  return new Promise((resolve) => {
    const chunks = [];
    let size = 0;
    const finish = (body, refusal) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('aborted', onGone);
      if (refusal) {
        chunks.length = 0;
        refuse(req, res, ...refusal);
      }
      resolve(body);
    };
    const onData = (chunk) => {
      size += chunk.length;
      if (size > limit) finish(null, [413, `A request body may be at most ${limit} bytes.`]);
      else chunks.push(chunk);
    };
    const onEnd = () => finish(Buffer.concat(chunks));
    const onGone = () => finish(null);
    const timer = setTimeout(() => finish(null, [408, `The request body did not arrive within ${ms / 1000} s.`]), ms);
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('aborted', onGone);
  });
}

/** `/` is the page (with this start's token); `/pkg/...` the built package; anything else a file of www/ with a known type. */
async function serveStatic(req, res, segments, token) {
  if (!READS.has(req.method)) return refuse(req, res, 405, 'Method not allowed.', { Allow: 'GET, HEAD' });
  const file = resolveFile(segments);
  const type = file && MIME[extname(file)];
  const info = type && (await stat(file).catch(() => null));
  if (!info?.isFile()) {
    const hint = segments[0] === 'pkg' ? ' (pkg/ is built by `npm run build`)' : '';
    return refuse(req, res, 404, `Not found${hint}.`);
  }
  let body = await readFile(file);
  const page = file === join(WWW, 'index.html');
  if (page) body = Buffer.from(body.toString('utf8').replace(TOKEN_PLACEHOLDER, `<meta name="console-token" content="${token}">`));
  res.setHeader('Content-Security-Policy', CSP);
  // The page holds this start's token: never stored; the rest is revalidated.
  res.setHeader('Cache-Control', page ? 'no-store' : 'no-cache');
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The file decoded, checked path segments name, or null when it would leave www/ or pkg/. */
function resolveFile(segments) {
  const [base, rest] = segments[0] === 'pkg' ? [PKG, segments.slice(1)] : [WWW, segments.length ? segments : ['index.html']];
  if (rest.length === 0) return null;
  const file = normalize(join(base, ...rest));
  return file.startsWith(base + sep) ? file : null;
}

/**
 * The embedded simulator answers a checked request, with its body already
 * read (and limited) here. It gets no Origin, so it adds no CORS headers:
 * this server answers its own page only.
 */
function simulate(sim, req, res, body) {
  const headers = { ...req.headers, 'content-length': String(body.length) };
  delete headers.origin;
  delete headers['transfer-encoding'];
  const checked = Object.assign(Readable.from(body.length ? [body] : []), { method: req.method, url: req.url, headers });
  if (!sim.handle(checked, res)) refuse(req, res, 404, 'Not found.');
}

/** Passes a checked /v1 request to Ironic with the server's credentials, and an allow-listed part of its answer back. */
function proxy(req, res, upstream, { path, query, body, token, agent }) {
  // Built from the configured origin and prefix; the checked path cannot
  // climb out of it, and the URL parser must not have changed it.
  const target = new URL(upstream.origin);
  target.pathname = upstream.prefix + path;
  if (query) target.search = `?${query}`;
  if (target.origin !== upstream.origin || target.pathname !== upstream.prefix + path) {
    return refuse(req, res, 400, 'The path is not a normalised URL path.');
  }
  const headers = {};
  for (const name of FORWARDED_REQUEST_HEADERS) if (req.headers[name] !== undefined) headers[name] = req.headers[name];
  if (upstream.basic) headers.authorization = upstream.basic;
  if (body.length) headers['content-length'] = body.length;

  // Generic on purpose: no upstream address, credentials or error text reach the page.
  const failed = (status, message) => {
    if (res.headersSent) return res.destroy();
    send(res, status, 'application/json', ironicError(message, 'Server'), req.method);
  };
  const client = target.protocol === 'https:' ? https : http;
  // A token source is asked for a token per request; after a 401 once more,
  // naming the refused token, and the (buffered) request is sent again.
  const renews = typeof token === 'function';
  const forward = (current, retried) => {
    if (current) headers['x-auth-token'] = current;
    const options = { method: req.method, headers, timeout: UPSTREAM_TIMEOUT_MS, ...(client === https && agent && { agent }) };
    const request = client.request(target, options, (answer) => {
      if (answer.statusCode === 401 && renews && !retried) {
        answer.resume();
        return tokenOf(current).then(
          (next) => forward(next, true),
          () => failed(502, 'The console server cannot log in to Keystone.'),
        );
      }
      const back = {};
      for (const name of FORWARDED_RESPONSE_HEADERS) if (answer.headers[name] !== undefined) back[name] = answer.headers[name];
      const location = answer.headers.location === undefined ? null : localLocation(answer.headers.location, target, upstream);
      if (location) back.location = location;
      if (answer.statusCode >= 300 && answer.statusCode < 400 && !location) {
        answer.destroy();
        return failed(502, 'Ironic answered with a redirect the console server does not follow.');
      }
      res.writeHead(answer.statusCode, back);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    request.on('error', (e) =>
      failed(
        e.code === 'ETIMEDOUT' ? 504 : 502,
        e.code === 'ETIMEDOUT' ? 'Ironic did not answer the console server in time.' : 'The console server cannot reach Ironic.',
      ),
    );
    res.on('close', () => request.destroy());
    request.end(body.length ? body : undefined);
  };
  const tokenOf = async (refused) => (renews ? token(refused) : token);
  tokenOf(undefined).then(
    (first) => {
      if (!res.destroyed) forward(first, false);
    },
    () => failed(502, 'The console server cannot log in to Keystone.'),
  );
}

/** An upstream `Location` as a path on this origin, or null when it points outside Ironic's /v1. */
function localLocation(value, base, upstream) {
  let url;
  try {
    url = new URL(value, base);
  } catch {
    return null;
  }
  if (url.origin !== upstream.origin || !url.pathname.startsWith(`${upstream.prefix}/v1`)) return null;
  const local = url.pathname.slice(upstream.prefix.length) + url.search;
  const { route } = parseTarget(local);
  return route.kind === 'api' ? local : null;
}
