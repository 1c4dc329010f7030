// Fault injection: rules that pick requests (by method, path, node) and
// break their answers on purpose. Rules are checked in order; every matching
// `latency` rule adds its delay, and the first other matching rule that
// fires decides the answer.

import { rng } from './rng.mjs';

/**
 * kind -> its parameters, and whether the real handler runs first by default
 * (`process`): kinds that reshape the real answer need it; kinds that replace
 * the answer skip it, so a refused PUT changes nothing (set `process: true`
 * to model an answer lost after the server acted).
 */
export const FAULT_KINDS = {
  status: { process: false, params: ['status', 'retryAfter', 'message'] }, // an Ironic error
  latency: { process: true, params: ['ms'] }, // added delay before the request is served
  hang: { process: false, params: [] }, // never answer; the socket stays open until the client or close() ends it
  reset: { process: false, params: [] }, // destroy the connection (TCP RST) without an answer
  malformed: { process: true, params: [] }, // the real body cut in half: invalid JSON
  html: { process: false, params: ['status'] }, // an HTML error page from a proxy (default 502)
  empty: { process: true, params: ['status'] }, // the body `{}` (default 200)
  body: { process: false, params: ['status', 'body', 'contentType'] }, // exactly `body` (a string, or JSON of any value)
  set: { process: true, params: ['set'] }, // merge { field: value } into the node/allocation document(s)
  omit: { process: true, params: ['omit'] }, // drop fields from the node/allocation document(s)
  large: { process: true, params: ['bytes'] }, // pad the JSON document to about `bytes` (4 MiB) with `sim_padding`
};

const RULE_KEYS = ['kind', 'method', 'path', 'node', 'count', 'skip', 'fraction', 'process', 'id'];

/** A path pattern where `*` matches any run of characters (slashes included). */
export const globToRegExp = (glob) =>
  new RegExp(`^${glob.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);

function check(rule) {
  const fail = (why) => { throw new Error(`fault ${JSON.stringify(rule)}: ${why}`); };
  if (rule === null || typeof rule !== 'object') fail('a fault is an object');
  if (!(rule.kind in FAULT_KINDS)) fail(`unknown kind (known: ${Object.keys(FAULT_KINDS).join(', ')})`);
  const known = new Set([...RULE_KEYS, ...FAULT_KINDS[rule.kind].params]);
  for (const k of Object.keys(rule)) if (!known.has(k)) fail(`unknown key "${k}" for kind ${rule.kind}`);
  const isInt = (v, min) => Number.isInteger(v) && v >= min;
  if (rule.count !== undefined && !isInt(rule.count, 1)) fail('"count" must be an integer >= 1');
  if (rule.skip !== undefined && !isInt(rule.skip, 0)) fail('"skip" must be an integer >= 0');
  if (rule.fraction !== undefined && !(rule.fraction > 0 && rule.fraction <= 1)) fail('"fraction" must be in (0, 1]');
  if (rule.kind === 'status' && !(isInt(rule.status, 400) && rule.status <= 599)) fail('"status" must be an HTTP error status');
  if (rule.kind === 'latency' && !(rule.ms >= 0)) fail('"ms" must be a non-negative number');
  if (rule.kind === 'set' && (rule.set === null || typeof rule.set !== 'object')) fail('"set" must be an object');
  if (rule.kind === 'omit' && !Array.isArray(rule.omit)) fail('"omit" must be a list of field names');
  if (rule.path !== undefined && typeof rule.path !== 'string') fail('"path" must be a string (a "*" matches anything)');
}

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
        pathRe: rule.path === undefined ? null : globToRegExp(rule.path),
        method: rule.method?.toUpperCase(),
        seen: 0,
        hits: 0,
        rand: rng(this.seed, 'fault', this.added++),
      });
    }
  }

  clear() {
    this.rules = [];
  }

  /** The rules with their counters, for the control API. */
  list() {
    return this.rules.map(({ pathRe, rand, ...r }) => ({ ...r, remaining: r.count === undefined ? null : r.count - r.hits }));
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
      if (fault && rule.kind !== 'latency') continue;
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

/**
 * The answer a fault gives. `result` is the real answer when the rule
 * processes the request, else undefined. `ironic` = { headers, error(status,
 * message) } gives the headers Ironic sends (version range, negotiated
 * version) and its error bodies. Returns { status, headers, body } or
 * { hang: true } / { reset: true }.
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
      return answer;
    }
    case 'html': {
      const status = rule.status ?? 502;
      return { status, headers: { 'Content-Type': 'text/html' }, body: HTML_PAGE(status) };
    }
    case 'body': {
      const body = typeof rule.body === 'string' ? rule.body : JSON.stringify(rule.body ?? null);
      return { status: rule.status ?? 200, headers: { ...ironic.headers, 'Content-Type': rule.contentType ?? 'application/json' }, body };
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
      return editDocuments(result, (d) => { for (const f of rule.omit) delete d[f]; });
    case 'large': {
      const doc = parseObject(result.body);
      if (!doc) return result;
      const pad = (rule.bytes ?? 4 * 1024 * 1024) - Buffer.byteLength(result.body) - 18;
      doc.sim_padding = 'x'.repeat(Math.max(0, pad));
      return { ...result, body: JSON.stringify(doc) };
    }
    default:
      throw new Error(`unhandled fault kind ${rule.kind}`);
  }
}
