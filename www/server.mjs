// The console's local server: the page (www/), the package (pkg/ at /pkg/)
// and, at /v1 on the same origin, either the embedded Ironic simulator with
// the demo fleet or a proxy to a real Ironic (IRONIC_URL), whose token is
// added here and never reaches the page. Same origin: no CORS set-up.
import http from 'node:http';
import https from 'node:https';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSimulator } from '../sim/server.mjs';
import { listen } from '../sim/http.mjs';
import { demoFleet } from './demo-fleet.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WWW = join(ROOT, 'www');
const PKG = join(ROOT, 'pkg');

export const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'";
const PAGE_HEADERS = {
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-cache',
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
// Connection-level headers a proxy must not pass on (RFC 9110 7.6.1), and
// what the page's browser sends that Ironic has no business seeing.
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host',
  'proxy-authorization', 'proxy-authenticate',
]);
const NOT_FORWARDED = new Set(['cookie', 'origin', 'referer', 'x-auth-token']);

/**
 * Starts the console server.
 * @param {object} [options]
 * @param {number} [options.port=0] 0 picks a free port
 * @param {string} [options.host='127.0.0.1']
 * @param {string} [options.ironicUrl] proxy /v1 to this Ironic instead of running the simulator
 * @param {string} [options.ironicToken] sent to that Ironic as X-Auth-Token
 * @param {object} [options.scenario] the simulator's scenario (default: the demo fleet)
 * @param {number} [options.seed=1] the simulator's seed
 * @returns {Promise<{ url: string, sim: object|null, close(): Promise<void> }>}
 */
export async function startConsoleServer(options = {}) {
  const { port = 0, host = '127.0.0.1', ironicUrl, ironicToken, scenario = demoFleet(), seed = 1 } = options;
  const upstream = ironicUrl ? ironicBase(ironicUrl) : null;
  const sim = upstream ? null : createSimulator({ seed, scenario });
  const config = JSON.stringify(upstream ? { mode: 'proxy', ironic: upstream.text } : { mode: 'simulator' });

  const server = http.createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (upstream && (path === '/v1' || path.startsWith('/v1/'))) return proxy(req, res, upstream, ironicToken);
    if (sim?.handle(req, res)) return;
    if (path === '/console.json') return send(res, 200, 'application/json', config);
    serveStatic(req, res, path).catch((e) => send(res, 500, 'text/plain; charset=utf-8', `Internal error: ${e.message}\n`));
  });
  const listening = await listen(server, port, host);
  const address = server.address();
  return {
    url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`,
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
    throw new Error(`IRONIC_URL is not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`IRONIC_URL must be http(s): ${text}`);
  const prefix = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  // Credentials in the URL mean HTTP Basic (Ironic's auth_strategy = http_basic).
  const basic = url.username
    ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
    : null;
  return { origin: url.origin, prefix, text: url.origin + prefix, basic };
}

function send(res, status, type, body, extra = {}) {
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(body);
}

/** `/` is the page; `/pkg/...` the built package; anything else a file of www/ with a known type. */
async function serveStatic(req, res, path) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return send(res, 405, 'text/plain; charset=utf-8', 'Method not allowed\n', { Allow: 'GET, HEAD' });
  }
  const file = resolveFile(path);
  const type = file && MIME[extname(file)];
  const info = type && (await stat(file).catch(() => null));
  if (!info?.isFile()) {
    const hint = path.startsWith('/pkg/') ? ' (pkg/ is built by `npm run build`)' : '';
    return send(res, 404, 'text/plain; charset=utf-8', `Not found: ${path}${hint}\n`);
  }
  const body = await readFile(file);
  res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The file a URL path names, or null when it would leave www/ or pkg/. */
function resolveFile(path) {
  let decoded;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const [base, rest] = decoded.startsWith('/pkg/') ? [PKG, decoded.slice(5)] : [WWW, decoded === '/' ? 'index.html' : decoded.slice(1)];
  const file = normalize(join(base, rest));
  return file.startsWith(base + sep) ? file : null;
}

/** Passes a /v1 request to Ironic with the token added, and its answer back as is. */
function proxy(req, res, upstream, token) {
  const target = new URL(upstream.text + req.url);
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (!HOP_BY_HOP.has(k) && !NOT_FORWARDED.has(k)) headers[k] = v;
  }
  if (token) headers['x-auth-token'] = token;
  if (upstream.basic) headers.authorization = upstream.basic;
  const request = (target.protocol === 'https:' ? https : http).request(target, { method: req.method, headers }, (answer) => {
    const back = {};
    for (const [k, v] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(k)) back[k] = v;
    res.writeHead(answer.statusCode, back);
    answer.pipe(res);
  });
  request.on('error', (e) => {
    if (res.headersSent) return res.destroy();
    // In Ironic's own error shape, so the client reports it like any other.
    const faultstring = `The console server cannot reach Ironic at ${upstream.text}: ${e.message}`;
    send(res, 502, 'application/json', JSON.stringify({
      error_message: JSON.stringify({ faultcode: 'Server', faultstring, debuginfo: null }),
    }));
  });
  res.on('close', () => request.destroy());
  req.pipe(request);
}
