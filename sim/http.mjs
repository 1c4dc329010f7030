// The HTTP face of the simulator: a (req, res) handler that other servers
// can mount, with CORS for local pages, request ids, the request log and
// fault injection around the Ironic API (api.mjs) and the control API.

import http from 'node:http';
import { faultBody, handleApi, rangeHeaders, requestedVersion, versionHeaders } from './api.mjs';
import { handleControl } from './control.mjs';
import { faultAnswer, faultRequest, globToRegExp } from './faults.mjs';
import { conductorOf, lockedText } from './ironic.mjs';

const LOCAL_ORIGIN = /^https?:\/\/(localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d+)?$/i;
const EXPOSE = [
  'X-OpenStack-Ironic-API-Minimum-Version',
  'X-OpenStack-Ironic-API-Maximum-Version',
  'X-OpenStack-Ironic-API-Version',
  'X-OpenStack-Request-Id',
  'OpenStack-Request-Id',
  'Retry-After',
  'Location',
].join(',');
const NO_CORS = {};

/** CORS for pages served from any localhost port; other origins get none (as Ironic's allow-list does). */
function corsHeaders(req) {
  const origin = req.headers.origin;
  if (!origin || !LOCAL_ORIGIN.test(origin)) return NO_CORS;
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Credentials': 'true',
    'Access-Control-Expose-Headers': EXPOSE,
    Vary: 'Origin',
  };
}

function preflight(req, res, cors, id) {
  const headers = { 'X-OpenStack-Request-Id': id, 'Content-Length': 0, ...cors };
  if (cors !== NO_CORS) {
    headers['Access-Control-Allow-Methods'] = req.headers['access-control-request-method'];
    headers['Access-Control-Allow-Headers'] = req.headers['access-control-request-headers'] ?? '';
    headers['Access-Control-Max-Age'] = '3600';
  }
  res.writeHead(200, headers);
  res.end();
}

/** Every client request the Ironic API saw, oldest first, capped at `limit` entries. */
/**
 * Listens on host:port and keeps track of connections, so that close() also
 * ends hung and keep-alive ones: nothing waits on a socket after it.
 * @returns {Promise<{ port: number, close(): Promise<void> }>}
 */
export async function listen(server, port, host) {
  const sockets = new Set();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: server.address().port,
    close() {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
}

export class RequestLog {
  constructor(limit = 100_000) {
    this.limit = limit;
    this.entries = [];
    this.nextSeq = 1;
    this.dropped = 0;
  }

  begin(fields) {
    const entry = { seq: this.nextSeq++, ...fields, status: null, tEnd: null, bytes: 0, fault: null, node: null };
    this.entries.push(entry);
    if (this.entries.length > this.limit * 1.25) {
      const excess = this.entries.length - this.limit;
      this.entries.splice(0, excess); // in batches: amortised O(1) per request
      this.dropped += excess;
    }
    return entry;
  }

  clear() {
    this.dropped += this.entries.length;
    this.entries = [];
  }

  /**
   * Entries after `since` (a seq), optionally by method, path glob or node (uuid or name via `resolve`).
   * @returns { entries, next, dropped } where `next` is the seq to pass as `since` next time
   */
  query({ since = 0, method, path, node, resolve = (x) => x } = {}) {
    const pathRe = path ? globToRegExp(path) : null;
    const uuid = node === undefined ? undefined : resolve(node);
    const entries = [];
    for (const e of this.entries) {
      if (e.seq <= since) continue;
      if (method && e.method !== method.toUpperCase()) continue;
      if (pathRe && !pathRe.test(e.path)) continue;
      if (uuid !== undefined && e.node !== uuid) continue;
      entries.push({ ...e });
    }
    return { entries, next: this.nextSeq - 1, dropped: this.dropped };
  }
}

function readBody(req, done) {
  const length = req.headers['content-length'];
  if ((length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined) {
    done('');
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
}

/** The uuid (or, if unknown, the identifier) of the node a /v1/nodes/{ident}... path names. */
function nodeIdentOf(world, path) {
  if (!path.startsWith('/v1/nodes/')) return undefined;
  let ident = path.slice(10);
  const slash = ident.indexOf('/');
  if (slash >= 0) ident = ident.slice(0, slash);
  if (ident === '' || ident === 'detail') return undefined;
  try {
    ident = decodeURIComponent(ident);
  } catch {
    return undefined;
  }
  const node = world.findNode(ident);
  return node ? { ident, uuid: node.rec.uuid, name: node.rec.name, conductor: conductorOf(node.rec) } : { ident, uuid: ident, name: null };
}

const nodeMatches = (spec, n) => {
  if (!n) return false;
  const one = (s) => s === n.ident || s === n.uuid || s === n.name;
  return Array.isArray(spec) ? spec.some(one) : one(spec);
};

/** What a fault needs to answer as Ironic would: its headers and error bodies, and the request as served. */
function ironicFor(req, nodeRef, world, request) {
  const max = world.maxMinor;
  const asked = requestedVersion(req.headers, max);
  const headers = asked.minor ? versionHeaders(asked.minor, max) : rangeHeaders(max);
  return {
    headers,
    request,
    uuidOf: (ident) => world.findNode(ident)?.rec.uuid ?? ident,
    error(status, message) {
      const text =
        message ??
        (status === 409 && nodeRef
          ? lockedText(nodeRef.uuid, nodeRef.conductor)
          : status === 409
            ? 'Conflict.'
            : status === 503
              ? 'Resource temporarily unavailable, please retry.'
              : (http.STATUS_CODES[status] ?? 'Error'));
      return {
        status,
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: faultBody(text, status >= 500 ? 'Server' : 'Client'),
      };
    },
  };
}

function send(sim, res, entry, answer, common) {
  const world = sim.world;
  if (answer.hang) {
    sim.hung.add(res);
    res.on('close', () => sim.hung.delete(res));
    return;
  }
  if (res.destroyed || res.socket?.destroyed) return; // the client went away during added latency
  entry.tEnd = world.now();
  if (answer.reset) {
    resetSocket(res.socket);
    return;
  }
  const body = answer.body ?? '';
  const bytes = Buffer.byteLength(body);
  const headers = { ...answer.headers, ...common, 'Content-Length': answer.contentLength ?? bytes };
  if (answer.close) headers.Connection = 'close';
  entry.status = answer.status;
  entry.bytes = bytes;
  if (answer.drip) {
    res.writeHead(answer.status, headers);
    drip(sim, res, Buffer.from(body), answer.drip);
  } else if (answer.cut !== undefined) {
    entry.bytes = answer.cut;
    res.writeHead(answer.status, headers);
    // The client gets the headers and the start of the body before the reset.
    res.write(Buffer.from(body).subarray(0, answer.cut), () => sim.later(() => resetSocket(res.socket), 20));
  } else {
    res.writeHead(answer.status, headers);
    res.end(body);
  }
}

function resetSocket(socket) {
  if (!socket || socket.destroyed) return;
  if (socket.resetAndDestroy) socket.resetAndDestroy();
  else socket.destroy();
}

/** Writes `body` `chunk` bytes at a time, `ms` apart; stops if the client hangs up (or close() ends it). */
function drip(sim, res, body, { chunk, ms }) {
  let sent = 0;
  const next = () => {
    if (res.destroyed) return;
    const part = body.subarray(sent, sent + chunk);
    sent += part.length;
    if (sent >= body.length) {
      res.end(part);
      return;
    }
    res.write(part);
    sim.later(next, ms);
  };
  next();
}

function serve(sim, req, res, path, query, body, common) {
  const world = sim.world;
  const t = world.now();
  world.advance(t);
  const entry = sim.requestLog.begin({ id: common['X-OpenStack-Request-Id'], method: req.method, path, query, t });
  const nodeRef = nodeIdentOf(world, path);
  entry.node = nodeRef?.uuid ?? null;
  const { latency, fault } = sim.faults.pick({ method: req.method, path, nodeIs: (spec) => nodeMatches(spec, nodeRef) });
  entry.fault = fault?.kind ?? (latency > 0 ? 'latency' : null);
  const run = () => {
    let answer;
    const base = `http://${req.headers.host ?? 'localhost'}`;
    const params = new URLSearchParams(query);
    if (fault) faultRequest(fault, params);
    if (!fault || fault.process) {
      world.advance(world.now());
      answer = handleApi({ world, method: req.method, path, query: params, headers: req.headers, body, base });
      if (answer.node) entry.node = answer.node;
    }
    if (fault) answer = faultAnswer(fault, answer, ironicFor(req, nodeRef, world, { base, path, query, params }));
    send(sim, res, entry, answer, common);
  };
  if (latency > 0) sim.later(run, latency);
  else run();
}

/**
 * A (req, res) => boolean handler: true when it took the request (/v1, /v1/...,
 * /__sim/..., and / when `root`), false to let the caller serve it.
 */
export function createHandler(sim, { root = false } = {}) {
  return function handle(req, res) {
    const url = req.url ?? '/';
    const qi = url.indexOf('?');
    const path = qi < 0 ? url : url.slice(0, qi);
    const query = qi < 0 ? '' : url.slice(qi + 1);
    const control = path === '/__sim' || path.startsWith('/__sim/');
    if (!control && !(path === '/v1' || path.startsWith('/v1/') || (root && path === '/'))) return false;
    const cors = corsHeaders(req);
    const id = sim.world.requestId();
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      preflight(req, res, cors, id);
      return true;
    }
    const common = { 'X-OpenStack-Request-Id': id, 'OpenStack-Request-Id': id, ...cors };
    readBody(req, (body) => {
      try {
        if (control) handleControl(sim, req, res, path, query, body, common);
        else serve(sim, req, res, path, query, body, common);
      } catch (e) {
        // A bug in the simulator: answer like Ironic's unexpected errors, keep serving.
        if (res.headersSent) return res.destroy();
        res.writeHead(500, { ...common, 'Content-Type': 'application/json' });
        res.end(faultBody(String(e?.stack ?? e), 'Server'));
      }
    });
    return true;
  };
}
