// Ironic's REST surface over the World: microversion negotiation, routes,
// node and allocation documents as the API renders them at a given
// microversion, and Ironic's error bodies. Texts and orders follow
// ironic master (api/controllers/v1) and a real Ironic 39.0 run.

import { pyFormat } from './history.mjs';
import { ApiError, conductorOf, MAX_MINOR, MIN_MINOR, NODE_FIELDS, notAcceptable, SORT_COLUMNS, TIMESTAMP_FIELDS } from './ironic.mjs';
import { UUID_RE } from './rng.mjs';
import { ALL_STATES } from './states.mjs';

const MAX_LIMIT = 1000;

// ---------------------------------------------------------------- JSON as Python writes it

const pyString = (s) => JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** json.dumps() layout (", " and ": " separators, ASCII only): error bodies match Ironic's byte for byte. */
export function pyJson(v) {
  if (v === null || typeof v !== 'object') return typeof v === 'string' ? pyString(v) : JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  return `{${Object.entries(v)
    .map(([k, x]) => `${pyString(k)}: ${pyJson(x)}`)
    .join(', ')}}`;
}

/** Ironic's usual error body: the inner document is a JSON *string*. */
export const faultBody = (faultstring, faultcode = 'Client') =>
  pyJson({ error_message: pyJson({ faultcode, faultstring, debuginfo: null }) });

/** The body of errors raised by webob before Ironic's own code runs (bad version header, unknown route). */
const webobBody = (code, title, description = '') => pyJson({ error_message: pyJson({ code, title, description }) });

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
  const major = Number(m[1]),
    minor = Number(m[2]);
  if (major !== 1) {
    return {
      outOfRange: `Mutually exclusive versions requested. Version ${major}.${minor} requested but not supported by this service. The supported version range is: ${range}.`,
    };
  }
  if (minor < MIN_MINOR || minor > max) {
    return {
      outOfRange: `Version ${major}.${minor} was requested but the minor version is not supported by this service. The supported version range is: ${range}.`,
    };
  }
  return { minor };
}

// ---------------------------------------------------------------- node documents

/** Microversion each node field appeared in (api/controllers/v1/utils.py VERSIONED_FIELDS). */
const FIELD_MIN = {
  driver_internal_info: 3,
  name: 5,
  inspection_finished_at: 6,
  inspection_started_at: 6,
  clean_step: 7,
  raid_config: 12,
  target_raid_config: 12,
  network_interface: 20,
  resource_class: 21,
  storage_interface: 33,
  traits: 37,
  rescue_interface: 38,
  bios_interface: 40,
  fault: 42,
  deploy_step: 44,
  conductor_group: 46,
  automated_clean: 47,
  protected: 48,
  protected_reason: 48,
  conductor: 49,
  owner: 50,
  description: 51,
  allocation_uuid: 52,
  events: 54,
  retired: 61,
  retired_reason: 61,
  lessee: 65,
  network_data: 66,
  boot_mode: 75,
  secure_boot: 75,
  shard: 82,
  parent_node: 83,
  firmware_interface: 86,
  service_step: 87,
  disable_power_off: 95,
  instance_name: 104,
  health: 109,
  boot_interface: 31,
  console_interface: 31,
  deploy_interface: 31,
  inspect_interface: 31,
  management_interface: 31,
  power_interface: 31,
  raid_interface: 31,
  vendor_interface: 31,
};
const allowed = (field, minor) => (FIELD_MIN[field] ?? 0) <= minor;

/** Fields the API fills in itself, after the links. */
const API_FIELDS = ['conductor', 'allocation_uuid', 'chassis_uuid'];
/** What `?fields=` may name: the stored fields but the timestamps, plus the API's own. */
const QUERYABLE = new Set([...NODE_FIELDS.filter((f) => f !== 'created_at' && f !== 'updated_at'), ...API_FIELDS]);
const DEFAULT_LIST_FIELDS = ['instance_uuid', 'maintenance', 'power_state', 'provision_state', 'uuid', 'name'];
const SUBRESOURCES = [
  ['ports', 0],
  ['states', 14],
  ['portgroups', 24],
  ['volume', 32],
];

const links = (base, path) => [
  { href: `${base}/v1/${path}`, rel: 'self' },
  { href: `${base}/${path}`, rel: 'bookmark' },
];

function apiField(rec, field) {
  if (field === 'conductor') return conductorOf(rec);
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
 * and base URL at a time. Texts are kept while the world's budget lasts
 * (first come; a node's new text takes its old one's place).
 */
function nodeJson(world, node, minor, base, fields) {
  const slot = fields ? 'subsetCache' : 'fullCache';
  const key = fields ? `${minor} ${base} ${fields.join(',')}` : `${minor} ${base}`;
  const cached = node[slot];
  if (cached && cached.rev === node.rev && cached.key === key) return cached.text;
  const text = JSON.stringify(renderNode(world, node.rec, minor, base, fields));
  const kept = world.cachedChars - (cached ? cached.text.length : 0);
  if (kept + text.length <= world.cacheBudget) {
    node[slot] = { rev: node.rev, key, text };
    world.cachedChars = kept + text.length;
  } else if (cached) {
    node[slot] = undefined;
    world.cachedChars = kept;
  }
  return text;
}

/** `?fields=` of get_one as a list (args.string_list), with its version and validity checks. */
function parseFields(query, minor) {
  const raw = query.get('fields');
  if (raw === null) return undefined;
  if (minor < 8) throw notAcceptable();
  const fields = stringList(raw);
  for (const f of fields) if (!allowed(f, minor)) throw notAcceptable();
  for (const f of fields) if (!QUERYABLE.has(f)) throw new ApiError(400, `Field ${f} is not a valid field.`);
  return fields;
}

// ---------------------------------------------------------------- allocation documents

function renderAllocation(world, a, minor, base) {
  const out = {
    uuid: a.uuid,
    created_at: world.iso(a.created_at),
    updated_at: world.iso(a.updated_at),
    candidate_nodes: a.candidate_nodes,
    extra: a.extra,
    last_error: a.last_error,
    name: a.name,
  };
  if (minor >= 60) out.owner = a.owner;
  Object.assign(out, {
    resource_class: a.resource_class,
    state: a.state,
    traits: a.traits,
    links: links(base, `allocations/${a.uuid}`),
    node_uuid: a.node_uuid,
  });
  return out;
}

// ---------------------------------------------------------------- version documents

const DESCRIPTION = 'Ironic is an OpenStack project which enables the provision and management of baremetal machines.';
const versionDoc = (base, max) => ({
  id: 'v1',
  links: [{ href: `${base}/v1/`, rel: 'self' }],
  status: 'CURRENT',
  min_version: `1.${MIN_MINOR}`,
  version: `1.${max}`,
});
const rootDoc = (base, max) => ({
  name: 'OpenStack Ironic API',
  description: DESCRIPTION,
  default_version: versionDoc(base, max),
  versions: [versionDoc(base, max)],
});

/** Controllers GET /v1 lists, with the microversion each appears in (v1/__init__.py). */
const V1_LINKS = [
  ['chassis', 0],
  ['nodes', 0],
  ['ports', 0],
  ['drivers', 0],
  ['version', null],
  ['portgroups', 23],
  ['volume', 32],
  ['lookup', 22],
  ['heartbeat', 22],
  ['conductors', 49],
  ['allocations', 52],
  ['events', 54],
  ['deploy_templates', 55],
  ['shards', 82],
  ['runbooks', 92],
  ['inspection_rules', 96],
  ['continue_inspection', 84],
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
    else if (minor >= min)
      doc[name] = [
        { href: `${base}/v1/${name}/`, rel: 'self' },
        { href: `${base}/${name}/`, rel: 'bookmark' },
      ];
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
  status,
  headers: { ...headers, ...JSON_TYPE },
  body: webobBody(status, title, description),
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
    return isRoot ? { status: 406, headers: JSON_TYPE, body: faultBody(text) } : webob(406, 'Not Acceptable', text);
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
    if (parts.length === 5 && parts[4] === 'states') return get ? getStates(ctx, minor, ident) : methodNotAllowed();
    if (parts.length === 6 && parts[4] === 'states' && parts[5] === 'power') {
      return method === 'PUT' ? setPowerState(ctx, minor, ident) : methodNotAllowed();
    }
    if (parts[4] === 'history' && parts.length <= 6) {
      // Below 1.78 the route does not exist: pecan's bare 404, before the node is looked up.
      if (minor < 78) return notFoundRoute();
      if (!get) return methodNotAllowed();
      if (parts.length === 5) return listHistory(ctx, minor, ident);
      let event;
      try {
        event = decodeURIComponent(parts[5]);
      } catch {
        return notFoundRoute();
      }
      return getHistoryEvent(ctx, minor, ident, event);
    }
  } else if (parts[2] === 'allocations' && parts.length <= 4) {
    if (minor < 52) throw new ApiError(404, 'The API version does not allow allocations');
    if (parts.length === 3) {
      if (get)
        return json(200, minor, { allocations: [...world.allocations.values()].map((a) => renderAllocation(world, a, minor, base)) });
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

/**
 * A query flag as args.boolean reads it (oslo strutils.bool_from_string,
 * strict): its error names the parameter.
 */
function pyBool(name, raw) {
  const v = raw.trim().toLowerCase();
  if (['1', 't', 'true', 'on', 'y', 'yes'].includes(v)) return true;
  if (['0', 'f', 'false', 'off', 'n', 'no'].includes(v)) return false;
  throw new ApiError(
    400,
    `Invalid ${name}: Unrecognized value '${raw}', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'`,
  );
}

/** args.string_list: comma-separated, trimmed, lower-cased, empty items and repeats dropped. */
const stringList = (raw) => [
  ...new Set(
    raw
      .split(',')
      .map((v) => v.trim().toLowerCase())
      .filter(Boolean),
  ),
];

/**
 * The parameters of NodesController.get_all and .detail, in their signature
 * order (args.validate checks them in that order; a parameter that is not in
 * the signature is 400 "Unexpected arguments"), with their validators.
 * /nodes/detail has no `fields` nor `detail`, and does not validate
 * `include_children` (it stays a string, so any non-empty value is true).
 */
const LIST_PARAMS = {
  chassis_uuid: 'uuid',
  instance_uuid: 'uuid',
  associated: 'boolean',
  maintenance: 'boolean',
  retired: 'boolean',
  provision_state: 'string',
  marker: 'uuid',
  limit: 'integer',
  sort_key: 'string',
  sort_dir: 'string',
  driver: 'string',
  fields: 'list',
  resource_class: 'string',
  fault: 'string',
  conductor_group: 'string',
  detail: 'boolean',
  conductor: 'string',
  owner: 'string',
  description_contains: 'string',
  lessee: 'string',
  project: 'string',
  shard: 'list',
  sharded: 'boolean',
  include_children: 'boolean',
  parent_node: 'string',
  instance_name: 'string',
};
const DETAIL_PARAMS = { ...LIST_PARAMS, include_children: 'string' };
delete DETAIL_PARAMS.fields;
delete DETAIL_PARAMS.detail;

function listArgs(query, resource) {
  const params = resource === 'nodes' ? LIST_PARAMS : DETAIL_PARAMS;
  const unexpected = [...new Set(query.keys())].filter((k) => !(k in params));
  if (unexpected.length) throw new ApiError(400, `Unexpected arguments: ${unexpected.join(', ')}`);
  const args = {};
  for (const [name, kind] of Object.entries(params)) {
    const raw = query.get(name);
    if (raw === null) continue;
    if (kind === 'uuid' && !UUID_RE.test(raw)) throw new ApiError(400, `Expected UUID for ${name}: ${raw}`);
    if (kind === 'integer' && !/^\s*[-+]?\d+\s*$/.test(raw)) throw new ApiError(400, `Expected an integer for ${name}: ${raw}`);
    args[name] = kind === 'boolean' ? pyBool(name, raw) : kind === 'list' ? stringList(raw) : kind === 'integer' ? Number(raw) : raw;
  }
  return args;
}

/** api/controllers/v1/utils.py: the 406 a filter gets below the microversion that brought it. */
const tooOld = (min) => new ApiError(406, `Request not acceptable. The minimal required API version should be 1.${min}`);

/** Ironic's faults.VALID_FAULTS, as the 400 for another value prints the tuple. */
const VALID_FAULTS = ['power failure', 'clean failure', 'rescue abort failure', 'service failure'];

/** Columns the node controller refuses to sort by (NodesController.invalid_sort_key_list). */
const UNSORTABLE = new Set([
  'properties',
  'driver_info',
  'extra',
  'instance_info',
  'driver_internal_info',
  'clean_step',
  'deploy_step',
  'raid_config',
  'target_raid_config',
  'traits',
  'network_data',
  'service_step',
]);

/**
 * The version and validity checks of get_all (and of detail, which runs
 * fewer of them, in another order), each where Ironic makes it.
 */
function checkListArgs(a, minor, resource) {
  const checks = {
    fields: () => {
      if (a.fields === undefined) return;
      if (minor < 8) throw notAcceptable();
      for (const f of a.fields) if (!allowed(f, minor)) throw notAcceptable();
      for (const f of a.fields) if (!QUERYABLE.has(f)) throw new ApiError(400, `Field ${f} is not a valid field.`);
    },
    sort_key: () => {
      if (a.sort_key !== undefined && !allowed(a.sort_key, minor)) throw notAcceptable();
    },
    provision_state: () => {
      if (a.provision_state === undefined) return;
      if (minor < 9) throw notAcceptable();
      if (!ALL_STATES.has(a.provision_state)) throw new ApiError(400, `Provision state "${a.provision_state}" is not valid`);
    },
    driver: () => {
      if (a.driver !== undefined && minor < 16) throw tooOld(16);
    },
    resource_class: () => {
      if (a.resource_class !== undefined && minor < 21) throw tooOld(21);
    },
    fault: () => {
      if (a.fault === undefined) return;
      if (minor < 42) throw tooOld(42);
      if (!VALID_FAULTS.includes(a.fault)) {
        throw new ApiError(
          400,
          `Unrecognized fault "${a.fault}" is specified, allowed faults are (${VALID_FAULTS.map((f) => `'${f}'`).join(', ')})`,
        );
      }
    },
    conductor_group: () => {
      if (a.conductor_group !== undefined && minor < 46) throw tooOld(46);
    },
    conductor: () => {
      if (a.conductor !== undefined && minor < 49) throw tooOld(49);
    },
    owner: () => {
      if (a.owner !== undefined && minor < 50) throw tooOld(50);
    },
    lessee: () => {
      if (a.lessee !== undefined && minor < 65) throw tooOld(65);
    },
    shard: () => {
      if (a.shard !== undefined && minor < 82) throw tooOld(82);
    },
    sharded: () => {
      if (a.sharded !== undefined && minor < 82) throw tooOld(82);
    },
    instance_name: () => {
      if (a.instance_name !== undefined && minor < 104) throw new ApiError(406, 'instance_name is not acceptable in this API version');
    },
    children: () => {
      if ((a.include_children !== undefined || a.parent_node !== undefined) && minor < 83) throw tooOld(83);
    },
    detail: () => {
      // get_request_return_fields
      if (a.detail !== undefined && minor < 43)
        throw new ApiError(400, `Invalid query parameter ?detail=${a.detail ? 'True' : 'False'} received.`);
      if (a.fields !== undefined && a.detail) throw new ApiError(400, 'Can not specify ?detail=True and fields in the same request.');
    },
  };
  const order =
    resource === 'nodes'
      ? [
          'fields',
          'sort_key',
          'provision_state',
          'driver',
          'resource_class',
          'fault',
          'conductor_group',
          'conductor',
          'owner',
          'lessee',
          'shard',
          'sharded',
          'instance_name',
          'children',
          'detail',
        ]
      : [
          'provision_state',
          'driver',
          'resource_class',
          'fault',
          'conductor_group',
          'owner',
          'lessee',
          'sort_key',
          'conductor',
          'shard',
          'sharded',
          'instance_name',
        ];
  for (const name of order) checks[name]();
}

/** SQLite's LIKE '%kw%': `%` and `_` are wildcards, ASCII letters match either case. */
function likeContains(keyword) {
  const pattern = [...keyword].map((c) => (c === '%' ? '.*' : c === '_' ? '.' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
  const re = new RegExp(pattern, 'is');
  return (text) => text != null && re.test(text);
}

/** The database filters of _add_nodes_filters as one predicate (undefined: every node). */
function nodeFilter(a) {
  const tests = [];
  const eq = (field, value) => {
    if (value !== undefined) tests.push((r) => r[field] === value);
  };
  eq('maintenance', a.maintenance);
  eq('retired', a.retired);
  eq('driver', a.driver);
  eq('resource_class', a.resource_class);
  eq('provision_state', a.provision_state);
  eq('instance_uuid', a.instance_uuid);
  eq('fault', a.fault);
  eq('conductor_group', a.conductor_group);
  eq('owner', a.owner);
  eq('lessee', a.lessee);
  eq('instance_name', a.instance_name);
  if (a.shard !== undefined) {
    const shards = new Set(a.shard);
    tests.push((r) => shards.has(r.shard)); // shard IN (...): an empty list matches nothing
  }
  if (a.associated !== undefined) tests.push(a.associated ? (r) => r.instance_uuid != null : (r) => r.instance_uuid == null);
  if (a.sharded !== undefined) tests.push(a.sharded ? (r) => r.shard != null : (r) => r.shard == null);
  if (a.description_contains !== undefined) {
    const has = likeContains(a.description_contains);
    tests.push((r) => has(r.description));
  }
  if (a.project !== undefined) tests.push((r) => r.owner === a.project || r.lessee === a.project);
  // Child nodes are listed only with include_children, or by their parent.
  if (!a.include_children) {
    const parent = a.parent_node ?? null;
    tests.push((r) => r.parent_node === parent);
  }
  if (!tests.length) return undefined;
  return (node) => {
    const r = node.rec;
    for (const t of tests) if (!t(r)) return false;
    return true;
  };
}

/**
 * GET /v1/nodes and /v1/nodes/detail: NodesController.get_all/detail and
 * _get_nodes_collection, with the database's order and paging.
 */
function listNodes({ world, query, base }, minor, resource) {
  const a = listArgs(query, resource);
  checkListArgs(a, minor, resource);
  let fields = a.fields;
  if (resource === 'nodes' && fields === undefined && !a.detail) fields = DEFAULT_LIST_FIELDS;
  // _get_nodes_collection
  let limit = a.limit ?? MAX_LIMIT;
  if (limit <= 0) throw new ApiError(400, 'Limit must be positive');
  limit = Math.min(limit, MAX_LIMIT);
  const sortDir = a.sort_dir ?? 'asc';
  if (sortDir !== 'asc' && sortDir !== 'desc') {
    throw new ApiError(400, `Invalid sort direction: ${sortDir}. Acceptable values are 'asc' or 'desc'`);
  }
  const sortKey = a.sort_key ?? 'id';
  if (UNSORTABLE.has(sortKey)) throw new ApiError(400, `The sort_key value ${sortKey} is an invalid field for sorting`);
  const marker = a.marker === undefined ? undefined : world.nodes.get(a.marker);
  if (a.marker !== undefined && !marker) throw new ApiError(404, `Node ${a.marker} could not be found.`);
  if (a.chassis_uuid !== undefined) throw new ApiError(404, `Chassis ${a.chassis_uuid} could not be found.`); // the simulator has no chassis
  if (sortKey !== '' && !SORT_COLUMNS.has(sortKey))
    throw new ApiError(400, `The sort_key value "${sortKey}" is an invalid field for sorting`);
  let page = world.listNodes({ sortKey, desc: sortDir === 'desc', marker, limit, match: nodeFilter(a) });
  // The conductor filter runs on the page the database gave: a page may come short, and then has no next.
  if (a.conductor) page = page.filter((n) => conductorOf(n.rec) === a.conductor);
  // Joined from cached node texts: a 1000-node page costs 1000 cache look-ups once warm.
  let body = `{"nodes":[${page.map((n) => nodeJson(world, n, minor, base, fields)).join(',')}]`;
  // collection.get_next: a full page links to the next; an instance_uuid query never does.
  if (page.length === limit && a.instance_uuid === undefined) {
    // Only these arguments travel in "next", unencoded: the other filters never do.
    let args = `sort_key=${sortKey}&sort_dir=${sortDir}&`;
    if (a.associated) args += 'associated=True&';
    if (a.maintenance) args += 'maintenance=True&';
    if (a.retired) args += 'retired=True&';
    if (a.detail !== undefined) args += `detail=${a.detail ? 'True' : 'False'}&`;
    if (fields?.length) args += `fields=${fields.join(',')}&`;
    body += `,"next":${JSON.stringify(`${base}/v1/${resource}?${args}limit=${limit}&marker=${page[page.length - 1].rec.uuid}`)}`;
  }
  return json(200, minor, `${body}}`);
}

/** Fields a POST may set (the rest of the node schema is read-only). */
const READ_ONLY = new Set([
  'created_at',
  'updated_at',
  'provision_state',
  'target_provision_state',
  'power_state',
  'target_power_state',
  'provision_updated_at',
  'reservation',
  'last_error',
  'allocation_uuid',
  'instance_uuid',
  'inspection_started_at',
  'inspection_finished_at',
  'clean_step',
  'deploy_step',
  'service_step',
  'fault',
  'console_enabled',
  'maintenance',
  'maintenance_reason',
  'raid_config',
  'target_raid_config',
  'driver_internal_info',
  'traits',
  'health',
]);

function createNode({ world, body, base }, minor) {
  const doc = parseBody(body);
  if (doc === undefined) throw new ApiError(500, 'Expecting value: line 1 column 1 (char 0)');
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new ApiError(400, `Schema error for node: ${pyJson(doc)} is not of type 'object'`);
  for (const k of Object.keys(doc)) {
    if (READ_ONLY.has(k) || !NODE_FIELDS.includes(k))
      throw new ApiError(400, `Schema error for node: Additional properties are not allowed ('${k}' was unexpected)`);
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

/** A state PUT's JSON body as an object (anything else reads as `{}`, which the checks then refuse). */
function stateBody(body) {
  const doc = parseBody(body);
  return doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {};
}

/**
 * A state PUT of `node` the conductor takes: `act()` makes the change (an
 * ApiError it throws names the node), then 202 with Location at the node's
 * states, as Ironic answers both provision and power PUTs.
 */
function stateAccepted(node, act, minor, base, ident) {
  try {
    act();
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

function setProvisionState({ world, body, base }, minor, ident) {
  const node = findNodeOr404(world, ident);
  const fields = stateBody(body);
  return stateAccepted(node, () => world.provision(node, fields, minor, world.now()), minor, base, ident);
}

/** GET /v1/nodes/{id}/states (where the state PUTs' Location points): node_states_convert. */
function getStates({ world }, minor, ident) {
  const node = findNodeOr404(world, ident);
  const fields = [
    'console_enabled',
    'last_error',
    'power_state',
    'provision_state',
    'target_power_state',
    'target_provision_state',
    'provision_updated_at',
  ];
  if (minor >= 12) fields.push('raid_config', 'target_raid_config');
  if (minor >= 75) fields.push('boot_mode', 'secure_boot');
  const doc = {};
  for (const f of fields) doc[f] = fieldValue(world, node.rec, f, minor);
  return { ...json(200, minor, doc), node: node.rec.uuid };
}

/**
 * The arguments of NodeStatesController.power(node_ident, target,
 * timeout=None) as args.validate reads the JSON body: any other key is
 * "Unexpected arguments", then target (a string or null) and timeout (an
 * integer as Python's int() makes one) in that order.
 */
function powerArgs(doc) {
  const unexpected = Object.keys(doc).filter((k) => k !== 'target' && k !== 'timeout');
  if (unexpected.length) throw new ApiError(400, `Unexpected arguments: ${unexpected.join(', ')}`);
  if (!('target' in doc)) throw new ApiError(400, 'Missing mandatory parameter: target');
  const { target = null, timeout = null } = doc;
  if (target !== null && typeof target !== 'string') throw new ApiError(400, `Expected string for target: ${pyFormat(target)}`);
  return { target, timeout: pyInt('timeout', timeout) };
}

/** args.integer: Python's int() of a JSON value (floats truncate, booleans are 0/1, text must be digits). */
function pyInt(name, v) {
  if (v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return Math.trunc(v);
  if (typeof v === 'string' && /^\s*[-+]?\d+(_\d+)*\s*$/.test(v)) return Number(v.replace(/_/g, ''));
  throw new ApiError(400, `Expected an integer for ${name}: ${pyFormat(v)}`);
}

function setPowerState({ world, body, base }, minor, ident) {
  // The arguments are checked before the node is looked up, as Ironic does.
  const args = powerArgs(stateBody(body));
  const node = findNodeOr404(world, ident);
  return stateAccepted(node, () => world.power(node, args, minor, world.now(), ident), minor, base, ident);
}

// ---------------------------------------------------------------- node history

/** NodeHistoryController's field lists: a list shows the standard ones unless `detail`, one event always the detail. */
const HISTORY_STANDARD = ['uuid', 'created_at', 'severity', 'event'];
const HISTORY_DETAIL = [
  'uuid',
  'created_at',
  'severity',
  'event_type',
  'event',
  'conductor',
  'user',
  'project',
  'state',
  'target_provision_state',
  'duration_seconds',
];
/** The node_history table's columns: what sort_key may name. */
const HISTORY_COLUMNS = new Set([
  'id',
  'uuid',
  'created_at',
  'updated_at',
  'conductor',
  'event_type',
  'severity',
  'event',
  'user',
  'project',
  'node_id',
  'state',
  'target_provision_state',
  'duration_seconds',
]);

/** One event as _history_event_convert_with_links renders it at `minor`. */
function renderEvent(world, ev, nodeUuid, minor, base, detail) {
  const out = {};
  for (const f of detail ? HISTORY_DETAIL : HISTORY_STANDARD) {
    if (f === 'project' && minor < 113) continue;
    if ((f === 'state' || f === 'target_provision_state' || f === 'duration_seconds') && minor < 115) continue;
    out[f] = f === 'created_at' ? world.iso(ev.created_at) : ev[f];
  }
  // A list without detail cuts long texts to 251 characters and "..." (Python counts code points).
  if (!detail) {
    const chars = [...ev.event];
    if (chars.length > 255) out.event = `${chars.slice(0, 251).join('')}...`;
  }
  out.links = [{ href: `${base}/v1/nodes/${nodeUuid}/history/${ev.uuid}`, rel: 'self' }];
  return out;
}

/** The marker object as Python prints it into `next` (an oslo versioned object's repr: fields sorted, strings quoted as is). */
function historyRepr(world, ev) {
  const v = (x) => (x === null ? 'None' : typeof x === 'number' ? String(x) : `'${x}'`);
  const when = world.iso(ev.created_at).replace(/(\.\d+)?\+00:00$/, 'Z');
  return (
    `NodeHistory(conductor=${v(ev.conductor)},created_at=${when},duration_seconds=${v(ev.duration_seconds)},` +
    `event=${v(ev.event)},event_type=${v(ev.event_type)},id=${ev.id},node_id=${ev.node_id},project=${v(ev.project)},` +
    `severity=${v(ev.severity)},state=${v(ev.state)},target_provision_state=${v(ev.target_provision_state)},` +
    `updated_at=None,user=${v(ev.user)},uuid=${ev.uuid})`
  );
}

const HISTORY_PARAMS = { detail: 'boolean', marker: 'uuid', limit: 'integer', sort_key: 'string', sort_dir: 'string' };

/**
 * GET /v1/nodes/{id}/history: NodeHistoryController.get_all and the
 * database's paginate_query over the node's rows, ordered by sort_key
 * (created_at) then id, with the marker's values bounding the page.
 */
function listHistory({ world, query, base }, minor, ident) {
  const unexpected = [...new Set(query.keys())].filter((k) => !(k in HISTORY_PARAMS));
  if (unexpected.length) throw new ApiError(400, `Unexpected arguments: ${unexpected.join(', ')}`);
  const a = {};
  for (const [name, kind] of Object.entries(HISTORY_PARAMS)) {
    const raw = query.get(name);
    if (raw === null) continue;
    if (kind === 'uuid' && !UUID_RE.test(raw)) throw new ApiError(400, `Expected UUID for ${name}: ${raw}`);
    if (kind === 'integer' && !/^\s*[-+]?\d+\s*$/.test(raw)) throw new ApiError(400, `Expected an integer for ${name}: ${raw}`);
    a[name] = kind === 'boolean' ? pyBool(name, raw) : kind === 'integer' ? Number(raw) : raw;
  }
  const node = findNodeOr404(world, ident);
  const marker = a.marker === undefined ? undefined : world.nodeHistory.find(a.marker, node, world.order);
  if (a.marker !== undefined && !marker) throw new ApiError(404, `Node history record ${a.marker} could not be found.`);
  let limit = a.limit ?? MAX_LIMIT;
  if (limit <= 0) throw new ApiError(400, 'Limit must be positive');
  limit = Math.min(limit, MAX_LIMIT);
  const sortDir = a.sort_dir ?? 'asc';
  if (sortDir !== 'asc' && sortDir !== 'desc')
    throw new ApiError(400, `Invalid sort direction: ${sortDir}. Acceptable values are 'asc' or 'desc'`);
  const sortKey = a.sort_key ?? 'created_at';
  if (sortKey && !HISTORY_COLUMNS.has(sortKey)) throw new ApiError(400, `The sort_key value "${sortKey}" is an invalid field for sorting`);
  const detail = a.detail ?? false;
  const page = pageOf(node.events ?? [], sortKey || 'id', sortDir === 'desc', marker, limit);
  const doc = { history: page.map((ev) => renderEvent(world, ev, node.rec.uuid, minor, base, detail)) };
  if (page.length === limit) {
    // collection.get_next as Ironic calls it here: the marker object and the field list go in too, so
    // following this link is refused (fields is no argument of get_all); a client builds its own from `marker`.
    const fields = (detail ? HISTORY_DETAIL : HISTORY_STANDARD).join(',');
    const was = marker ? historyRepr(world, marker) : 'None';
    doc.next = `${base}/v1/nodes/${ident}/history?marker=${was}&sort_key=${sortKey}&sort_dir=${sortDir}&fields=${fields}&limit=${limit}&marker=${page[page.length - 1].uuid}`;
  }
  return { ...json(200, minor, doc), node: node.rec.uuid };
}

/** Order by (key, id) as the database does (NULL smallest), then the rows after `marker` by its current values. */
function pageOf(events, key, desc, marker, limit) {
  const cmp = (x, y) => {
    const a = x[key],
      b = y[key];
    const byKey = a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1;
    return (byKey || x.id - y.id) * (desc ? -1 : 1);
  };
  let rows = [...events].sort(cmp);
  if (marker) {
    const m = marker[key];
    const after = (x, y) => (desc ? x < y : x > y);
    // (key op m.key) OR (key = m.key AND id op m.id): a NULL key matches neither; a NULL marker key drops that test
    rows = rows.filter(
      m === null || key === 'id'
        ? (e) => after(e.id, marker.id)
        : (e) => e[key] !== null && (after(e[key], m) || (e[key] === m && after(e.id, marker.id))),
    );
  }
  return rows.slice(0, limit);
}

/** GET /v1/nodes/{id}/history/{uuid}: any row of the table by its uuid, as Ironic looks it up (not only the node's). */
function getHistoryEvent({ world, base }, minor, ident, uuid) {
  if (!UUID_RE.test(uuid) && !/^[A-Za-z0-9._~-]+$/.test(uuid)) throw new ApiError(400, `Expected UUID or name for event: ${uuid}`);
  const node = findNodeOr404(world, ident);
  const ev = world.nodeHistory.find(uuid, node, world.order);
  if (!ev) throw new ApiError(404, `Node history record ${uuid} could not be found.`);
  return { ...json(200, minor, renderEvent(world, ev, node.rec.uuid, minor, base, true)), node: node.rec.uuid };
}

const ALLOCATION_KEYS = new Set(['candidate_nodes', 'extra', 'name', 'node', 'owner', 'resource_class', 'traits', 'uuid']);

function createAllocation({ world, body, base }, minor) {
  const doc = parseBody(body);
  if (doc === undefined) throw new ApiError(500, 'Expecting value: line 1 column 1 (char 0)');
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new ApiError(400, `Schema error: ${pyJson(doc)} is not of type 'object'`);
  for (const k of Object.keys(doc)) {
    if (!ALLOCATION_KEYS.has(k)) throw new ApiError(400, `Schema error: Additional properties are not allowed ('${k}' was unexpected)`);
  }
  if (doc.node != null) throw new ApiError(400, 'The simulator does not backfill allocations: "node" is not supported');
  if (!doc.resource_class) throw new ApiError(400, 'The resource_class field is mandatory when not backfilling');
  if (doc.uuid != null && !UUID_RE.test(doc.uuid)) throw new ApiError(400, `Expected a UUID but received ${doc.uuid}.`);
  const candidates = doc.candidate_nodes ?? [];
  const missing = candidates.filter((c) => !world.findNode(c));
  if (missing.length) throw new ApiError(400, `Nodes cannot be found: ${missing.join(', ')}`);
  const alloc = world.createAllocation(
    {
      ...doc,
      candidate_nodes: candidates.map((c) => world.findNode(c).rec.uuid),
    },
    world.now(),
  );
  return json(201, minor, renderAllocation(world, alloc, minor, base), { Location: `${base}/v1/allocations/${alloc.uuid}` });
}
