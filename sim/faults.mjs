// Fault injection: rules that pick requests (by method, path, node) and
// break their answers on purpose. Rules are checked in order; every matching
// `latency` rule adds its delay, and the first other matching rule that
// fires decides the answer.

import { gzipSync } from 'node:zlib';
import { rng, uuidFrom } from './rng.mjs';

/**
 * kind -> its parameters, and whether the real handler runs first by default
 * (`process`): kinds that reshape the real answer need it; kinds that replace
 * the answer skip it, so a refused PUT changes nothing (set `process: true`
 * to model an answer lost after the server acted).
 */
export const FAULT_KINDS = {
  status: { process: false, params: ['status', 'retryAfter', 'message', 'versionHeaders'] }, // an Ironic error
  latency: { process: true, params: ['ms'] }, // added delay before the request is served
  hang: { process: false, params: [] }, // never answer; the socket stays open until the client or close() ends it
  reset: { process: false, params: [] }, // destroy the connection (TCP RST) without an answer
  malformed: { process: true, params: [] }, // the real body cut in half: invalid JSON
  html: { process: false, params: ['status'] }, // an HTML error page from a proxy (default 502)
  empty: { process: true, params: ['status'] }, // the body `{}` (default 200)
  body: { process: false, params: ['status', 'body', 'contentType', 'versionHeaders'] }, // exactly `body` (a string, or JSON of any value)
  set: { process: true, params: ['set'] }, // merge { field: value } into the node/allocation document(s)
  omit: { process: true, params: ['omit'] }, // drop fields from the node/allocation document(s)
  large: { process: true, params: ['bytes'] }, // pad the JSON document to about `bytes` (4 MiB) with `sim_padding`
  // What a hostile or broken server (or a proxy in front of one) does to the transport:
  redirect: { process: false, params: ['status', 'location'] }, // a 3xx to `location` ("{path}" = the request's path and query)
  drip: { process: true, params: ['chunk', 'ms'] }, // the real answer `chunk` bytes at a time, `ms` apart
  gzip: { process: true, params: ['bytes'] }, // the real body gzipped, padded with spaces to inflate to `bytes`: a gzip bomb
  length: { process: true, params: ['by'] }, // a Content-Length that lies by `by` bytes; the connection closes after the body
  cut: { process: true, params: ['bytes'] }, // the headers and the first `bytes` of the body, then a reset
  page: { process: true, params: ['limit', 'ignoreMarker', 'next', 'fake'] }, // node list pages that do not advance, or never end
  // Not about a request: a provision state change of a matched node commits `delay` ms late, stamped when it was made.
  'late-commit': { params: ['delay', 'state'], world: true },
};

const DEFAULT_GZIP_BYTES = 64 * 1024 * 1024;
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout's range: a longer delay would fire at once
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const RULE_KEYS = ['kind', 'method', 'path', 'node', 'count', 'skip', 'fraction', 'process', 'id'];

/** A path pattern where `*` matches any run of characters (slashes included). */
export const globToRegExp = (glob) =>
  new RegExp(
    `^${glob
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

function check(rule) {
  const fail = (why) => {
    throw new Error(`fault ${JSON.stringify(rule)}: ${why}`);
  };
  if (rule === null || typeof rule !== 'object') fail('a fault is an object');
  if (!(rule.kind in FAULT_KINDS)) fail(`unknown kind (known: ${Object.keys(FAULT_KINDS).join(', ')})`);
  const known = new Set([...RULE_KEYS, ...FAULT_KINDS[rule.kind].params]);
  for (const k of Object.keys(rule)) if (!known.has(k)) fail(`unknown key "${k}" for kind ${rule.kind}`);
  const isInt = (v, min) => Number.isInteger(v) && v >= min;
  if (rule.count !== undefined && !isInt(rule.count, 1)) fail('"count" must be an integer >= 1');
  if (rule.skip !== undefined && !isInt(rule.skip, 0)) fail('"skip" must be an integer >= 0');
  if (rule.fraction !== undefined && !(rule.fraction > 0 && rule.fraction <= 1)) fail('"fraction" must be in (0, 1]');
  if (rule.kind === 'status' && !(isInt(rule.status, 400) && rule.status <= 599)) fail('"status" must be an HTTP error status');
  if (rule.kind === 'latency' && !(rule.ms >= 0 && rule.ms <= MAX_TIMER_MS)) fail(`"ms" must be a number from 0 to ${MAX_TIMER_MS}`);
  if (rule.retryAfter !== undefined) {
    const seconds = typeof rule.retryAfter === 'number' && rule.retryAfter >= 0;
    const text = typeof rule.retryAfter === 'string' && rule.retryAfter !== '' && HEADER_VALUE.test(rule.retryAfter);
    if (!seconds && !text) fail('"retryAfter" must be seconds (a number >= 0) or a header text such as an HTTP date');
  }
  if (rule.versionHeaders !== undefined && typeof rule.versionHeaders !== 'boolean') fail('"versionHeaders" must be true or false');
  if (rule.kind === 'redirect') {
    if (rule.status !== undefined && !(isInt(rule.status, 300) && rule.status <= 399)) fail('"status" must be a 3xx status');
    if (typeof rule.location !== 'string' || rule.location === '' || !HEADER_VALUE.test(rule.location))
      fail('"location" must be a URL or a path');
  }
  if (rule.kind === 'drip') {
    if (rule.chunk !== undefined && !isInt(rule.chunk, 1)) fail('"chunk" must be an integer >= 1 (bytes)');
    if (rule.ms !== undefined && !(rule.ms >= 0 && rule.ms <= MAX_TIMER_MS)) fail(`"ms" must be a number from 0 to ${MAX_TIMER_MS}`);
  }
  if ((rule.kind === 'gzip' || rule.kind === 'cut' || rule.kind === 'large') && rule.bytes !== undefined && !isInt(rule.bytes, 0)) {
    fail('"bytes" must be an integer >= 0');
  }
  if (rule.kind === 'length' && !(Number.isInteger(rule.by) && rule.by !== 0))
    fail('"by" must be a non-zero integer (bytes more or fewer than the body)');
  if (rule.kind === 'page') {
    if (rule.limit !== undefined && !isInt(rule.limit, 1)) fail('"limit" must be an integer >= 1');
    if (rule.ignoreMarker !== undefined && typeof rule.ignoreMarker !== 'boolean') fail('"ignoreMarker" must be true or false');
    if (rule.next !== undefined && (typeof rule.next !== 'string' || rule.next === ''))
      fail('"next" must be "same", "none", "fake" or a node');
    if (rule.fake !== undefined && !(isInt(rule.fake, 0) && rule.fake <= 1000)) fail('"fake" must be an integer from 0 to 1000');
  }
  if (rule.kind === 'set' && (rule.set === null || typeof rule.set !== 'object')) fail('"set" must be an object');
  if (rule.kind === 'omit' && !Array.isArray(rule.omit)) fail('"omit" must be a list of field names');
  if (rule.path !== undefined && typeof rule.path !== 'string') fail('"path" must be a string (a "*" matches anything)');
  if (FAULT_KINDS[rule.kind].world) {
    for (const k of ['method', 'path', 'process'])
      if (rule[k] !== undefined) fail(`"${k}": a ${rule.kind} rule matches node changes, not requests`);
    if (!(rule.delay > 0 && rule.delay <= MAX_TIMER_MS))
      fail(`"delay" must be a number of milliseconds from 0 (excluded) to ${MAX_TIMER_MS}`);
    const states = rule.state === undefined ? [] : Array.isArray(rule.state) ? rule.state : [rule.state];
    if (!states.every((st) => typeof st === 'string')) fail('"state" must be a provision state or a list of them');
  }
}

/** Does a rule's `node` (absent, "*", a name or UUID, or a list) name this node? */
const namesNode = (spec, uuid, name) => {
  if (spec === undefined || spec === '*') return true;
  const one = (x) => x === uuid || (name !== null && x === name);
  return Array.isArray(spec) ? spec.some(one) : one(spec);
};

export class Faults {
  constructor(seed) {
    this.seed = seed;
    this.rules = [];
    this.added = 0;
  }

  /** Add rules (validated first: one bad rule adds none). */
  add(list) {
    const rules = Array.isArray(list) ? list : [list];
    rules.forEach(check);
    for (const rule of rules) {
      this.rules.push({
        ...rule,
        process: rule.process ?? FAULT_KINDS[rule.kind].process,
        world: FAULT_KINDS[rule.kind].world ?? false,
        pathRe: rule.path === undefined ? null : globToRegExp(rule.path),
        method: rule.method?.toUpperCase(),
        seen: 0,
        hits: 0,
        rand: rng(this.seed, 'fault', this.added),
        fakes: rng(this.seed, 'fake nodes', this.added++), // UUIDs of the `page` kind's fake nodes
      });
    }
  }

  clear() {
    this.rules = [];
  }

  /** The rules with their counters, for the control API. */
  list() {
    return this.rules.map(({ pathRe, rand, fakes, world, ...r }) => ({ ...r, remaining: r.count === undefined ? null : r.count - r.hits }));
  }

  /**
   * How many ms the change of `rec` (a node) into provision state `state`
   * stays uncommitted: the delay of the first late-commit rule that matches
   * and fires (count, skip and fraction as for requests), else 0.
   */
  commitDelay(rec, state) {
    for (const rule of this.rules) {
      if (rule.kind !== 'late-commit' || !namesNode(rule.node, rec.uuid, rec.name)) continue;
      if (rule.state !== undefined && !(Array.isArray(rule.state) ? rule.state.includes(state) : rule.state === state)) continue;
      rule.seen++;
      if (rule.seen <= (rule.skip ?? 0)) continue;
      if (rule.count !== undefined && rule.hits >= rule.count) continue;
      if (rule.fraction !== undefined && rule.rand() >= rule.fraction) continue;
      rule.hits++;
      return rule.delay;
    }
    return 0;
  }

  /**
   * Decide the fate of one request.
   * @param req { method, path, nodeIs(spec) -> boolean }
   * @returns { latency: ms, fault: rule | null }
   */
  pick(req) {
    let latency = 0;
    let fault = null;
    for (const rule of this.rules) {
      if (rule.world || (fault && rule.kind !== 'latency')) continue;
      if (rule.method && rule.method !== req.method) continue;
      if (rule.pathRe && !rule.pathRe.test(req.path)) continue;
      if (rule.node !== undefined && !req.nodeIs(rule.node)) continue;
      rule.seen++;
      if (rule.seen <= (rule.skip ?? 0)) continue;
      if (rule.count !== undefined && rule.hits >= rule.count) continue;
      if (rule.fraction !== undefined && rule.rand() >= rule.fraction) continue;
      rule.hits++;
      if (rule.kind === 'latency') latency += rule.ms;
      else fault = rule;
    }
    return { latency, fault };
  }
}

const HTML_PAGE = (status) =>
  `<html>\r\n<head><title>${status} Bad Gateway</title></head>\r\n<body>\r\n<center><h1>${status} Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`;

function parseObject(text) {
  try {
    const doc = JSON.parse(text);
    return doc !== null && typeof doc === 'object' && !Array.isArray(doc) ? doc : null;
  } catch {
    return null; // nothing to edit (an empty 202, say)
  }
}

/** For each document in a JSON body (a node, or the items of a list), apply `fn`. */
function editDocuments(result, fn) {
  const doc = parseObject(result.body);
  if (!doc) return result;
  const items = Array.isArray(doc.nodes) ? doc.nodes : Array.isArray(doc.allocations) ? doc.allocations : [doc];
  items.forEach(fn);
  return { ...result, body: JSON.stringify(doc) };
}

const withoutVersionHeaders = (headers) =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => !k.startsWith('X-OpenStack-Ironic-API-')));

/** A 1 MiB run of spaces, gzipped once: a bomb is this member repeated (gzip allows concatenated members). */
let spacesMember;
const MIB = 1024 * 1024;

/** `body` gzipped, followed by spaces (still valid JSON) so that it inflates to `bytes` in all. */
function gzipPadded(body, bytes) {
  spacesMember ??= gzipSync(Buffer.alloc(MIB, 0x20));
  const pad = Math.max(0, bytes - body.length);
  const members = [gzipSync(body)];
  for (let i = 0; i < Math.floor(pad / MIB); i++) members.push(spacesMember);
  if (pad % MIB) members.push(gzipSync(Buffer.alloc(pad % MIB, 0x20)));
  return Buffer.concat(members);
}

/** A query string with `limit` and `marker` set (undefined: removed), other arguments kept as sent. */
function withPaging(query, { limit, marker }) {
  const args = query.split('&').filter((a) => a !== '' && !a.startsWith('limit=') && !a.startsWith('marker='));
  if (limit !== undefined) args.push(`limit=${limit}`);
  if (marker !== undefined) args.push(`marker=${encodeURIComponent(marker)}`);
  return args.join('&');
}

/**
 * Changes a `page` rule makes to the request before the real handler sees
 * it: a lower page size (Ironic's `max_limit`) and a server that ignores
 * `marker`. `params` is the request's URLSearchParams.
 */
export function faultRequest(rule, params) {
  if (rule.kind !== 'page') return;
  const asked = params.get('limit');
  if (rule.limit !== undefined && (asked === null || Number(asked) > rule.limit)) params.set('limit', String(rule.limit));
  if (rule.ignoreMarker) params.delete('marker');
}

/** A `page` rule's answer: the real page (or `fake` made-up nodes) with `next` as the rule says. */
function pageAnswer(rule, result, ironic) {
  const { base, path, query, params } = ironic.request;
  let doc;
  if (rule.fake !== undefined) {
    doc = { nodes: [] };
    for (let i = 0; i < rule.fake; i++) {
      const uuid = uuidFrom(rule.fakes);
      doc.nodes.push({
        uuid,
        name: `fake-${uuid.slice(0, 8)}`,
        provision_state: 'deploying',
        target_provision_state: 'active',
        last_error: null,
        links: [{ href: `${base}/v1/nodes/${uuid}`, rel: 'self' }],
      });
    }
    result = { status: 200, headers: { ...ironic.headers, 'Content-Type': 'application/json' } };
  } else {
    doc = result.status === 200 ? parseObject(result.body) : null;
    if (!doc || !Array.isArray(doc.nodes)) return result; // an error, or not a list: as the server said
  }
  const limit = params.get('limit') ?? undefined;
  const link = (marker) => `${base}${path}?${withPaging(query, { limit, marker })}`;
  const next = rule.next;
  if (next === 'none') delete doc.next;
  else if (next === 'same')
    doc.next = link(new URLSearchParams(query).get('marker') ?? undefined); // as asked, even if ignored
  else if (next === 'fake') doc.next = link(uuidFrom(rule.fakes));
  else if (next !== undefined) doc.next = link(ironic.uuidOf(next));
  else if (rule.fake !== undefined) doc.next = link(doc.nodes.at(-1)?.uuid ?? uuidFrom(rule.fakes));
  return { ...result, body: JSON.stringify(doc) };
}

/**
 * The answer a fault gives. `result` is the real answer when the rule
 * processes the request, else undefined. `ironic` = { headers, error(status,
 * message), request: { base, path, query, params }, uuidOf(ident) } gives
 * the headers Ironic sends (version range, negotiated version), its error
 * bodies and the request as served. Returns { status, headers, body } (a
 * string or a Buffer), possibly with how to send it: `drip: { chunk, ms }`,
 * `contentLength` (a lie) with `close`, or `cut` (bytes before a reset);
 * or { hang: true } / { reset: true }.
 */
export function faultAnswer(rule, result, ironic) {
  switch (rule.kind) {
    case 'hang':
      return { hang: true };
    case 'reset':
      return { reset: true };
    case 'status': {
      const answer = ironic.error(rule.status, rule.message);
      if (rule.retryAfter !== undefined) answer.headers['Retry-After'] = String(rule.retryAfter);
      if (rule.versionHeaders === false) answer.headers = withoutVersionHeaders(answer.headers);
      return answer;
    }
    case 'html': {
      const status = rule.status ?? 502;
      return { status, headers: { 'Content-Type': 'text/html' }, body: HTML_PAGE(status) };
    }
    case 'body': {
      const body = typeof rule.body === 'string' ? rule.body : JSON.stringify(rule.body ?? null);
      const headers = { ...ironic.headers, 'Content-Type': rule.contentType ?? 'application/json' };
      return { status: rule.status ?? 200, headers: rule.versionHeaders === false ? withoutVersionHeaders(headers) : headers, body };
    }
    case 'empty':
      return { ...result, status: rule.status ?? 200, headers: { ...result.headers, 'Content-Type': 'application/json' }, body: '{}' };
    case 'malformed': {
      const body = result.body.length > 2 ? result.body.slice(0, Math.floor(result.body.length / 2)) : '{"';
      return { ...result, headers: { ...result.headers, 'Content-Type': 'application/json' }, body };
    }
    case 'set':
      return editDocuments(result, (d) => Object.assign(d, rule.set));
    case 'omit':
      return editDocuments(result, (d) => {
        for (const f of rule.omit) delete d[f];
      });
    case 'large': {
      const doc = parseObject(result.body);
      if (!doc) return result;
      const pad = (rule.bytes ?? 4 * 1024 * 1024) - Buffer.byteLength(result.body) - 18;
      doc.sim_padding = 'x'.repeat(Math.max(0, pad));
      return { ...result, body: JSON.stringify(doc) };
    }
    case 'redirect': {
      const { path, query } = ironic.request;
      const location = rule.location.replaceAll('{path}', query ? `${path}?${query}` : path);
      const status = rule.status ?? 307;
      // As a proxy or load balancer sends it: no Ironic headers, a short HTML page.
      return { status, headers: { Location: location, 'Content-Type': 'text/html' }, body: `<html><body>${status} moved</body></html>` };
    }
    case 'drip':
      return { ...result, drip: { chunk: rule.chunk ?? 16, ms: rule.ms ?? 50 } };
    case 'gzip':
      return {
        ...result,
        headers: { ...result.headers, 'Content-Encoding': 'gzip' },
        body: gzipPadded(Buffer.from(result.body ?? ''), rule.bytes ?? DEFAULT_GZIP_BYTES),
      };
    case 'length':
      return { ...result, contentLength: Math.max(0, Buffer.byteLength(result.body ?? '') + rule.by), close: true };
    case 'cut': {
      const length = Buffer.byteLength(result.body ?? '');
      return { ...result, cut: Math.min(rule.bytes ?? Math.floor(length / 2), length) };
    }
    case 'page':
      return pageAnswer(rule, result, ironic);
    default:
      throw new Error(`unhandled fault kind ${rule.kind}`);
  }
}
