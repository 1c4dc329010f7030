// Ironic's REST surface over the World: microversion negotiation, routes,
// node and allocation documents as the API renders them at a given
// microversion, and Ironic's error bodies. Texts and orders follow
// ironic master (api/controllers/v1) and a real Ironic 39.0 run.

import { ApiError, notAcceptable, NODE_FIELDS, TIMESTAMP_FIELDS, HOST, MIN_MINOR, MAX_MINOR } from './ironic.mjs';
import { ALL_STATES } from './states.mjs';
import { UUID_RE } from './rng.mjs';

const MAX_LIMIT = 1000;

// ---------------------------------------------------------------- JSON as Python writes it

const pyString = (s) => JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** json.dumps() layout (", " and ": " separators, ASCII only): error bodies match Ironic's byte for byte. */
export function pyJson(v) {
  if (v === null || typeof v !== 'object') return typeof v === 'string' ? pyString(v) : JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  return `{${Object.entries(v).map(([k, x]) => `${pyString(k)}: ${pyJson(x)}`).join(', ')}}`;
}

/** Ironic's usual error body: the inner document is a JSON *string*. */
export const faultBody = (faultstring, faultcode = 'Client') =>
  pyJson({ error_message: pyJson({ faultcode, faultstring, debuginfo: null }) });

/** The body of errors raised by webob before Ironic's own code runs (bad version header, unknown route). */
const webobBody = (code, title, description = '') =>
  pyJson({ error_message: pyJson({ code, title, description }) });

/** The range headers; `max` is lower than MAX_MINOR for a scenario that plays an older Ironic. */
export const rangeHeaders = (max = MAX_MINOR) => ({
  'X-OpenStack-Ironic-API-Minimum-Version': `1.${MIN_MINOR}`,
  'X-OpenStack-Ironic-API-Maximum-Version': `1.${max}`,
});
export const versionHeaders = (minor, max = MAX_MINOR) => ({ ...rangeHeaders(max), 'X-OpenStack-Ironic-API-Version': `1.${minor}` });

/** An answer's headers with the maximum version of an older Ironic (the shared header objects stay as they are). */
function capRange(answer, max) {
  if (max === MAX_MINOR || !answer.headers?.['X-OpenStack-Ironic-API-Maximum-Version']) return answer;
  return { ...answer, headers: { ...answer.headers, 'X-OpenStack-Ironic-API-Maximum-Version': `1.${max}` } };
}

const JSON_TYPE = { 'Content-Type': 'application/json' };
const jsonHeadersCache = [];
/** The headers of a JSON answer at `minor` (one shared object per microversion: callers copy before changing). */
const jsonHeaders = (minor) => (jsonHeadersCache[minor] ??= Object.freeze({ ...versionHeaders(minor), ...JSON_TYPE }));

// ---------------------------------------------------------------- microversions

const VERSION_HEADER = 'X-OpenStack-Ironic-API-Version';

/**
 * The requested microversion (api/controllers/base.py Version.parse_headers):
 * `OpenStack-API-Version: baremetal 1.x` or the legacy header; absent -> 1.1.
 * Returns { minor } or { invalid: true } or { outOfRange: text }; `max` is the server's newest version.
 */
export function requestedVersion(headers, max = MAX_MINOR) {
  const range = `[1.${MIN_MINOR}, 1.${max}]`;
  let raw;
  const std = headers['openstack-api-version'];
  if (std) {
    for (const part of std.split(',')) {
      const [service, version] = part.trim().split(/\s+/);
      if (service?.toLowerCase() === 'baremetal') raw = version ?? '';
    }
  }
  raw ??= headers['x-openstack-ironic-api-version'];
  if (raw === undefined || raw === '') return { minor: MIN_MINOR };
  if (raw.trim().toLowerCase() === 'latest') return { minor: max };
  const m = /^\s*(\d+)\s*\.\s*(\d+)\s*$/.exec(raw);
  if (!m) return { invalid: true };
  const major = Number(m[1]), minor = Number(m[2]);
  if (major !== 1) {
    return { outOfRange: `Mutually exclusive versions requested. Version ${major}.${minor} requested but not supported by this service. The supported version range is: ${range}.` };
  }
  if (minor < MIN_MINOR || minor > max) {
    return { outOfRange: `Version ${major}.${minor} was requested but the minor version is not supported by this service. The supported version range is: ${range}.` };
  }
  return { minor };
}

// ---------------------------------------------------------------- node documents

/** Microversion each node field appeared in (api/controllers/v1/utils.py VERSIONED_FIELDS). */
const FIELD_MIN = {
  driver_internal_info: 3, name: 5, inspection_finished_at: 6, inspection_started_at: 6,
  clean_step: 7, raid_config: 12, target_raid_config: 12, network_interface: 20,
  resource_class: 21, storage_interface: 33, traits: 37, rescue_interface: 38,
  bios_interface: 40, fault: 42, deploy_step: 44, conductor_group: 46, automated_clean: 47,
  protected: 48, protected_reason: 48, conductor: 49, owner: 50, description: 51,
  allocation_uuid: 52, retired: 61, retired_reason: 61, lessee: 65, network_data: 66,
  boot_mode: 75, secure_boot: 75, shard: 82, parent_node: 83, firmware_interface: 86,
  service_step: 87, disable_power_off: 95, instance_name: 104, health: 109,
  boot_interface: 31, console_interface: 31, deploy_interface: 31, inspect_interface: 31,
  management_interface: 31, power_interface: 31, raid_interface: 31, vendor_interface: 31,
};
const allowed = (field, minor) => (FIELD_MIN[field] ?? 0) <= minor;

/** Fields the API fills in itself, after the links. */
const API_FIELDS = ['conductor', 'allocation_uuid', 'chassis_uuid'];
/** What `?fields=` may name: the stored fields but the timestamps, plus the API's own. */
const QUERYABLE = new Set([...NODE_FIELDS.filter((f) => f !== 'created_at' && f !== 'updated_at'), ...API_FIELDS]);
const DEFAULT_LIST_FIELDS = ['instance_uuid', 'maintenance', 'power_state', 'provision_state', 'uuid', 'name'];
const SUBRESOURCES = [['ports', 0], ['states', 14], ['portgroups', 24], ['volume', 32]];

const links = (base, path) => [
  { href: `${base}/v1/${path}`, rel: 'self' },
  { href: `${base}/${path}`, rel: 'bookmark' },
];

function apiField(rec, field) {
  if (field === 'conductor') return HOST;
  if (field === 'chassis_uuid') return null;
  return rec.allocation_uuid;
}

function fieldValue(world, rec, field, minor) {
  const v = rec[field];
  if (TIMESTAMP_FIELDS.has(field)) return world.iso(v);
  if (field === 'provision_state') {
    if (v === 'available' && minor < 2) return null; // before 1.2, "available" was NOSTATE
    if (v === 'inspect wait' && minor < 39) return 'inspecting';
  }
  return v;
}

const fullFieldsCache = new Map();
function fullFields(minor) {
  let list = fullFieldsCache.get(minor);
  if (!list) {
    list = NODE_FIELDS.filter((f) => f !== 'allocation_uuid' && allowed(f, minor));
    fullFieldsCache.set(minor, list);
  }
  return list;
}

/** A node as GET /v1/nodes/{id} renders it; `fields` (validated) selects a subset, in Ironic's key order. */
export function renderNode(world, rec, minor, base, fields) {
  const out = {};
  if (fields?.includes('uuid')) out.uuid = rec.uuid;
  const own = fields ? fields.filter((f) => f !== 'uuid' && !API_FIELDS.includes(f) && allowed(f, minor)) : fullFields(minor);
  for (const f of own) out[f] = fieldValue(world, rec, f, minor);
  out.links = links(base, `nodes/${rec.uuid}`);
  for (const f of API_FIELDS) if ((!fields || fields.includes(f)) && allowed(f, minor)) out[f] = apiField(rec, f);
  if (!fields) {
    for (const [sub, min] of SUBRESOURCES) if (minor >= min) out[sub] = links(base, `nodes/${rec.uuid}/${sub}`);
  }
  return out;
}

/**
 * A node's JSON text, cached per node until it changes (node.rev): polling
 * clients read the same unchanged nodes over and over. One slot for the full
 * document and one for field subsets (list items), each for one microversion
 * and base URL at a time.
 */
function nodeJson(world, node, minor, base, fields) {
  const slot = fields ? 'subsetCache' : 'fullCache';
  const key = fields ? `${minor} ${base} ${fields.join(',')}` : `${minor} ${base}`;
  const cached = node[slot];
  if (cached && cached.rev === node.rev && cached.key === key) return cached.text;
  const text = JSON.stringify(renderNode(world, node.rec, minor, base, fields));
  node[slot] = { rev: node.rev, key, text };
  return text;
}

/** `?fields=` as a list, with the version and validity checks of get_one/get_all. */
function parseFields(query, minor) {
  const raw = query.get('fields');
  if (raw === null) return undefined;
  if (minor < 8) throw notAcceptable();
  const fields = raw.split(',').map((f) => f.trim()).filter(Boolean);
  for (const f of fields) if (!allowed(f, minor)) throw notAcceptable();
  for (const f of fields) if (!QUERYABLE.has(f)) throw new ApiError(400, `Field ${f} is not a valid field.`);
  return fields;
}

// ---------------------------------------------------------------- allocation documents

function renderAllocation(world, a, minor, base) {
  const out = {
    uuid: a.uuid, created_at: world.iso(a.created_at), updated_at: world.iso(a.updated_at),
    candidate_nodes: a.candidate_nodes, extra: a.extra, last_error: a.last_error, name: a.name,
  };
  if (minor >= 60) out.owner = a.owner;
  Object.assign(out, {
    resource_class: a.resource_class, state: a.state, traits: a.traits,
    links: links(base, `allocations/${a.uuid}`), node_uuid: a.node_uuid,
  });
  return out;
}

// ---------------------------------------------------------------- version documents

const DESCRIPTION = 'Ironic is an OpenStack project which enables the provision and management of baremetal machines.';
const versionDoc = (base, max) => ({
  id: 'v1', links: [{ href: `${base}/v1/`, rel: 'self' }], status: 'CURRENT',
  min_version: `1.${MIN_MINOR}`, version: `1.${max}`,
});
const rootDoc = (base, max) => ({
  name: 'OpenStack Ironic API', description: DESCRIPTION,
  default_version: versionDoc(base, max), versions: [versionDoc(base, max)],
});

/** Controllers GET /v1 lists, with the microversion each appears in (v1/__init__.py). */
const V1_LINKS = [
  ['chassis', 0], ['nodes', 0], ['ports', 0], ['drivers', 0], ['version', null],
  ['portgroups', 23], ['volume', 32], ['lookup', 22], ['heartbeat', 22], ['conductors', 49],
  ['allocations', 52], ['events', 54], ['deploy_templates', 55], ['shards', 82], ['runbooks', 92],
  ['inspection_rules', 96], ['continue_inspection', 84],
];
function v1Doc(base, minor, max) {
  const doc = {
    id: 'v1',
    links: [
      { href: `${base}/v1/`, rel: 'self' },
      { href: 'https://docs.openstack.org//ironic/latest/contributor//webapi.html', rel: 'describedby', type: 'text/html' },
    ],
    media_types: { base: 'application/json', type: 'application/vnd.openstack.ironic.v1+json' },
  };
  for (const [name, min] of V1_LINKS) {
    if (min === null) doc.version = versionDoc(base, max);
    else if (minor >= min) doc[name] = [{ href: `${base}/v1/${name}/`, rel: 'self' }, { href: `${base}/${name}/`, rel: 'bookmark' }];
  }
  return doc;
}

// ---------------------------------------------------------------- routes

/** A JSON answer; `doc` may already be JSON text. */
const json = (status, minor, doc, extra) => ({
  status,
  headers: extra ? { ...jsonHeaders(minor), ...extra } : jsonHeaders(minor),
  body: typeof doc === 'string' ? doc : JSON.stringify(doc),
});
const webob = (status, title, description, headers = {}) => ({
  status, headers: { ...headers, ...JSON_TYPE }, body: webobBody(status, title, description),
});
export const notFoundRoute = () => webob(404, 'Not Found');
const methodNotAllowed = () => webob(405, 'Method Not Allowed');

function parseBody(text) {
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function findNodeOr404(world, ident) {
  const node = world.findNode(ident);
  if (!node) throw new ApiError(404, `Node ${ident} could not be found.`);
  return node;
}

/**
 * Serve one request to the Ironic API.
 * @param ctx { world, method, path, query: URLSearchParams, headers, body: string, base: 'http://host:port' }
 * @returns { status, headers, body, node? } where node is the uuid the request addressed
 */
export function handleApi(ctx) {
  const { path, headers } = ctx;
  const max = ctx.world.maxMinor;
  const asked = requestedVersion(headers, max);
  const isRoot = path === '/';
  if (asked.invalid) {
    const text = `Invalid value for ${VERSION_HEADER} header`;
    return isRoot
      ? { status: 406, headers: JSON_TYPE, body: faultBody(text) }
      : webob(406, 'Not Acceptable', text);
  }
  if (asked.outOfRange) {
    return isRoot
      ? { status: 406, headers: { ...rangeHeaders(max), ...JSON_TYPE }, body: faultBody(asked.outOfRange) }
      : webob(406, 'Not Acceptable', asked.outOfRange, rangeHeaders(max));
  }
  const minor = asked.minor;
  try {
    return capRange(route(ctx, minor), max);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    const faultcode = e.status >= 500 ? 'Server' : 'Client';
    return capRange({ status: e.status, headers: jsonHeaders(minor), body: faultBody(e.faultstring, faultcode), node: e.node }, max);
  }
}

function route(ctx, minor) {
  const { method, base, world } = ctx;
  const path = ctx.path.length > 1 && ctx.path.endsWith('/') ? ctx.path.slice(0, -1) : ctx.path;
  const get = method === 'GET' || method === 'HEAD';
  if (path === '/') return get ? json(200, minor, rootDoc(base, world.maxMinor)) : methodNotAllowed();
  if (path === '/v1') return get ? json(200, minor, v1Doc(base, minor, world.maxMinor)) : methodNotAllowed();
  const parts = path.split('/'); // ['', 'v1', collection, id, ...]
  let ident;
  try {
    ident = parts[3] === undefined ? undefined : decodeURIComponent(parts[3]);
  } catch {
    return notFoundRoute();
  }
  if (parts[2] === 'nodes') {
    if (parts.length === 3) {
      if (get) return listNodes(ctx, minor, 'nodes');
      return method === 'POST' ? createNode(ctx, minor) : methodNotAllowed();
    }
    if (parts.length === 4 && ident === 'detail') return get ? listNodes(ctx, minor, 'nodes/detail') : methodNotAllowed();
    if (parts.length === 4) return get ? getNode(ctx, minor, ident) : methodNotAllowed();
    if (parts.length === 6 && parts[4] === 'states' && parts[5] === 'provision') {
      return method === 'PUT' ? setProvisionState(ctx, minor, ident) : methodNotAllowed();
    }
  } else if (parts[2] === 'allocations' && parts.length <= 4) {
    if (minor < 52) throw new ApiError(404, 'The API version does not allow allocations');
    if (parts.length === 3) {
      if (get) return json(200, minor, { allocations: [...world.allocations.values()].map((a) => renderAllocation(world, a, minor, base)) });
      return method === 'POST' ? createAllocation(ctx, minor) : methodNotAllowed();
    }
    if (!get) return methodNotAllowed();
    const alloc = world.findAllocation(ident);
    if (!alloc) throw new ApiError(404, `Allocation ${ident} could not be found.`);
    return json(200, minor, renderAllocation(world, alloc, minor, base));
  }
  return notFoundRoute();
}

function getNode({ world, query, base }, minor, ident) {
  const node = findNodeOr404(world, ident);
  const fields = parseFields(query, minor);
  return { ...json(200, minor, nodeJson(world, node, minor, base, fields)), node: node.rec.uuid };
}

const pyBool = (s) => {
  const v = s.toLowerCase();
  if (['true', '1', 'yes', 'on', 'y', 't'].includes(v)) return true;
  if (['false', '0', 'no', 'off', 'n', 'f'].includes(v)) return false;
  return undefined;
};

function listNodes({ world, query, base }, minor, resource) {
  const rawLimit = query.get('limit');
  const rawMarker = query.get('marker');
  const state = query.get('provision_state') ?? undefined;
  const rawDetail = resource === 'nodes' ? query.get('detail') : null;
  if (rawMarker !== null && !UUID_RE.test(rawMarker)) throw new ApiError(400, `Expected UUID for marker: ${rawMarker}`);
  if (rawLimit !== null && !/^\s*[-+]?\d+\s*$/.test(rawLimit)) throw new ApiError(400, `Expected an integer for limit: ${rawLimit}`);
  let detail;
  if (rawDetail !== null) {
    detail = pyBool(rawDetail);
    if (detail === undefined) throw new ApiError(400, `Invalid boolean value: ${rawDetail}`);
  }
  let fields = resource === 'nodes' ? parseFields(query, minor) : undefined;
  if (state !== undefined) {
    if (minor < 9) throw notAcceptable();
    if (!ALL_STATES.has(state)) throw new ApiError(400, `Provision state "${state}" is not valid`);
  }
  if (detail !== undefined) {
    if (minor < 43) throw new ApiError(400, `Invalid query parameter ?detail=${detail ? 'True' : 'False'} received.`);
    if (detail && fields) throw new ApiError(400, 'Can not specify ?detail=True and fields in the same request.');
  }
  if (resource === 'nodes' && !fields && !detail) fields = DEFAULT_LIST_FIELDS;
  let limit = rawLimit === null ? MAX_LIMIT : Number(rawLimit);
  if (limit <= 0) throw new ApiError(400, 'Limit must be positive');
  limit = Math.min(limit, MAX_LIMIT);
  const sortKey = query.get('sort_key') ?? 'id';
  const sortDir = query.get('sort_dir') ?? 'asc';
  if (sortKey !== 'id' || sortDir !== 'asc') {
    throw new ApiError(400, 'The simulator lists nodes by sort_key=id, sort_dir=asc only');
  }
  const marker = rawMarker === null ? undefined : world.nodes.get(rawMarker);
  if (rawMarker !== null && !marker) throw new ApiError(404, `Node ${rawMarker} could not be found.`);
  const page = world.listNodes({ marker, limit, provisionState: state });
  // Joined from cached node texts: a 1000-node page costs 1000 cache look-ups once warm.
  let body = `{"nodes":[${page.map((n) => nodeJson(world, n, minor, base, fields)).join(',')}]`;
  if (page.length === limit) {
    // Only these arguments travel in "next" (collection.get_next): never the filters.
    let args = 'sort_key=id&sort_dir=asc&';
    if (detail !== undefined) args += `detail=${detail ? 'True' : 'False'}&`;
    if (fields) args += `fields=${fields.join(',')}&`;
    body += `,"next":${JSON.stringify(`${base}/v1/${resource}?${args}limit=${limit}&marker=${page[page.length - 1].rec.uuid}`)}`;
  }
  return json(200, minor, `${body}}`);
}

/** Fields a POST may set (the rest of the node schema is read-only). */
const READ_ONLY = new Set([
  'created_at', 'updated_at', 'provision_state', 'target_provision_state', 'power_state',
  'target_power_state', 'provision_updated_at', 'reservation', 'last_error', 'allocation_uuid',
  'instance_uuid', 'inspection_started_at', 'inspection_finished_at', 'clean_step', 'deploy_step',
  'service_step', 'fault', 'console_enabled', 'maintenance', 'maintenance_reason', 'raid_config',
  'target_raid_config', 'driver_internal_info', 'traits', 'health',
]);

function createNode({ world, body, base }, minor) {
  const doc = parseBody(body);
  if (doc === undefined) throw new ApiError(500, 'Expecting value: line 1 column 1 (char 0)');
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ApiError(400, `Schema error for node: ${pyJson(doc)} is not of type 'object'`);
  for (const k of Object.keys(doc)) {
    if (READ_ONLY.has(k) || !NODE_FIELDS.includes(k)) throw new ApiError(400, `Schema error for node: Additional properties are not allowed ('${k}' was unexpected)`);
  }
  if (typeof doc.driver !== 'string') throw new ApiError(400, "Schema error for node: 'driver' is a required property");
  for (const k of Object.keys(doc)) {
    if (!allowed(k, minor) && doc[k] !== null) throw notAcceptable();
  }
  if (doc.uuid !== undefined && !UUID_RE.test(doc.uuid)) throw new ApiError(400, `Expected a UUID but received ${doc.uuid}.`);
  const t = world.now();
  const node = world.addNode({ ...doc, provision_state: minor >= 11 ? 'enroll' : 'available' }, t, 'create');
  const uuid = node.rec.uuid;
  return { ...json(201, minor, renderNode(world, node.rec, minor, base), { Location: `${base}/v1/nodes/${uuid}` }), node: uuid };
}

function setProvisionState({ world, body, base }, minor, ident) {
  const node = findNodeOr404(world, ident);
  const doc = parseBody(body);
  const fields = doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {};
  try {
    world.provision(node, fields, minor, world.now());
  } catch (e) {
    if (e instanceof ApiError) e.node = node.rec.uuid;
    throw e;
  }
  return {
    status: 202,
    headers: { ...versionHeaders(minor), Location: `${base}/v1/nodes/${ident}/states` },
    body: '',
    node: node.rec.uuid,
  };
}

const ALLOCATION_KEYS = new Set(['candidate_nodes', 'extra', 'name', 'node', 'owner', 'resource_class', 'traits', 'uuid']);

function createAllocation({ world, body, base }, minor) {
  const doc = parseBody(body);
  if (doc === undefined) throw new ApiError(500, 'Expecting value: line 1 column 1 (char 0)');
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ApiError(400, `Schema error: ${pyJson(doc)} is not of type 'object'`);
  for (const k of Object.keys(doc)) {
    if (!ALLOCATION_KEYS.has(k)) throw new ApiError(400, `Schema error: Additional properties are not allowed ('${k}' was unexpected)`);
  }
  if (doc.node != null) throw new ApiError(400, 'The simulator does not backfill allocations: "node" is not supported');
  if (!doc.resource_class) throw new ApiError(400, 'The resource_class field is mandatory when not backfilling');
  if (doc.uuid != null && !UUID_RE.test(doc.uuid)) throw new ApiError(400, `Expected a UUID but received ${doc.uuid}.`);
  const candidates = doc.candidate_nodes ?? [];
  const missing = candidates.filter((c) => !world.findNode(c));
  if (missing.length) throw new ApiError(400, `Nodes cannot be found: ${missing.join(', ')}`);
  const alloc = world.createAllocation({
    ...doc, candidate_nodes: candidates.map((c) => world.findNode(c).rec.uuid),
  }, world.now());
  return json(201, minor, renderAllocation(world, alloc, minor, base), { Location: `${base}/v1/allocations/${alloc.uuid}` });
}
