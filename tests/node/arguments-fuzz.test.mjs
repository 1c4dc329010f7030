// Hostile arguments on every entry of the built package (issue 8): revoked
// proxies, proxies whose every trap throws, getters, toJSON that throws,
// cycles, fake and booby-trapped AbortSignals, Symbols, BigInts, functions
// where data belongs, numbers out of any range, huge and sparse arrays, lone
// surrogates, NUL and CR LF, path tricks and very long strings, each put in
// one argument or option position of an otherwise valid call, in seeded
// trials against the real simulator.
//
// Every trial must settle, with InvalidArgumentError and nothing sent when
// the input is invalid, or go through when it is valid; nothing may escape
// as an uncaught exception or unhandled rejection; no secret may be quoted;
// and the module must stay healthy: the same client and a fresh one still
// finish a real wait. FUZZ_SEED changes the order of the trials (and the
// shared client's history); FUZZ_TRIALS (per method) adds seeded repeats.

import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { after, before, test } from 'node:test';
import * as api from 'ironic-wait';
import { rng } from '../../sim/rng.mjs';
import { nodes, sleep, startIronic } from './harness.mjs';

const {
  IronicClient,
  IronicWaitError,
  InvalidArgumentError,
  InvalidResponseError,
  IronicHttpError,
  ConnectionError,
  AuthError,
  UnsupportedVersionError,
  StateTransitionFailed,
  StateTransitionTimeout,
} = api;

const SEED = process.env.FUZZ_SEED ?? '1';
const TRIALS = Number(process.env.FUZZ_TRIALS ?? 0);
/** A call that has not settled by then counts as hung. */
const SETTLE_MS = 10_000;
/** Marks strings that stand for secrets: they must never be quoted. */
const SECRET = 'S3CRET';
/** The longest time an option may give, in seconds: what a JS timer holds (2^31-1 ms). */
const MAX_SECONDS = 2_147_483;

// What escapes the package: collected, and charged to the trial it happens in.
const escaped = [];
process.on('uncaughtException', (e) => escaped.push(`uncaught exception: ${safeText(e)}`));
process.on('unhandledRejection', (e) => escaped.push(`unhandled rejection: ${safeText(e)}`));

function safeText(value) {
  try {
    if (typeof value === 'string') return JSON.stringify(value.slice(0, 120));
    if (value instanceof Error) return `${value.name}: ${value.message}`.slice(0, 300);
    return String(value).slice(0, 120);
  } catch {
    return '(unprintable)';
  }
}

let ironic;
let client;
let allocation;
before(async () => {
  ironic = await startIronic({
    nodes: [
      ...nodes({ n1: 'active', e1: 'enroll', e2: 'enroll', m1: 'manageable' }),
      { name: 'g1', provision_state: 'available', resource_class: 'gold' },
    ],
    // The power trials' actions end quickly.
    timing: { power: 20 },
  });
  client = new IronicClient({ endpoint: ironic.url, retryInterval: 0.01, maxRetries: 1, requestTimeout: 5 });
  allocation = (await client.createAllocation({ resourceClass: 'gold', name: 'fuzz-alloc' })).allocation.uuid;
  await client.microversion();
});
after(() => ironic?.close());

/** The same client and a fresh one still finish a real wait and a read: nothing was corrupted. */
async function assertHealthy(label) {
  const fresh = new IronicClient({ endpoint: ironic.url });
  for (const [name, c] of [
    ['the fuzzed client', client],
    ['a fresh client', fresh],
  ]) {
    const waited = await settleWithin(c.waitForProvisionState('n1', 'active', { timeout: 5, pollInterval: 0.05 }), SETTLE_MS);
    assert.equal(waited.value?.nodes[0].outcome, 'reached', `${label}: ${name} finishes a wait: ${describe(waited)}`);
    const read = await settleWithin(c.getNode('n1', { fields: ['name'] }), SETTLE_MS);
    assert.equal(read.value?.name, 'n1', `${label}: ${name} reads a node: ${describe(read)}`);
  }
}

// ---------------------------------------------------------------------------
// Hostile values. `kind` says how a position judges it (see verdict()).

const throwingHandler = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error('trap');
    },
  },
);
const revoked = (target) => {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
};
const cyclic = () => {
  const a = { steps: [] };
  a.steps.push(a);
  return a;
};
/** A genuine signal whose own properties (what a naive reader would call) throw. */
function boobyTrappedSignal(controller) {
  const signal = controller.signal;
  for (const key of ['aborted', 'reason', 'addEventListener', 'removeEventListener', 'throwIfAborted', 'onabort']) {
    Object.defineProperty(signal, key, {
      get() {
        throw new Error(`signal.${key} is a trap`);
      },
      configurable: true,
    });
  }
  return signal;
}

/** A string judged by the position's own rule. */
const str = (name, value) => ({ name, kind: 'string', make: () => value, text: value });
const num = (value) => ({ name: `number ${Object.is(value, -0) ? '-0' : value}`, kind: 'number', make: () => value, number: value });

const VALUES = [
  { name: "the position's valid value", kind: 'control', make: (slot) => slot.valid() },
  { name: 'a revoked proxy', kind: 'unreadable', make: () => revoked({}) },
  { name: 'a revoked proxy of an array', kind: 'unreadable', make: () => revoked([]) },
  { name: 'a proxy whose every trap throws', kind: 'unreadable', make: () => new Proxy({}, throwingHandler) },
  { name: 'an array proxy whose every trap throws', kind: 'unreadable', make: () => new Proxy(['n1'], throwingHandler) },
  { name: 'a function proxy whose every trap throws', kind: 'function', make: () => new Proxy(() => 'n1', throwingHandler) },
  {
    name: 'an object whose toJSON throws',
    kind: 'object',
    make: () => ({
      toJSON() {
        throw new Error('toJSON');
      },
    }),
  },
  { name: 'cyclic data', kind: 'object', make: cyclic },
  {
    name: 'a deep nest',
    kind: 'object',
    make: () => {
      let v = [];
      for (let i = 0; i < 200_000; i++) v = [v];
      return v;
    },
  },
  { name: 'Object.create(AbortSignal.prototype)', kind: 'non-plain', make: () => Object.create(AbortSignal.prototype) },
  { name: 'a proxy of a real signal', kind: 'non-plain', make: () => new Proxy(new AbortController().signal, {}) },
  { name: 'a real signal with booby-trapped own properties', kind: 'signal', make: () => boobyTrappedSignal(new AbortController()) },
  { name: 'a Symbol', kind: 'unreadable', make: () => Symbol('s') },
  { name: 'a BigInt', kind: 'unreadable', make: () => 10n },
  { name: 'a function', kind: 'function', make: () => () => 'n1' },
  {
    name: 'a class instance',
    kind: 'non-plain',
    make: () =>
      new (class Options {
        timeout = 1;
      })(),
  },
  { name: 'options inherited from a prototype', kind: 'non-plain', make: () => Object.create({ timeout: 1, signal: 1 }) },
  { name: 'a Date', kind: 'non-plain', make: () => new Date(0) },
  { name: 'a Map', kind: 'non-plain', make: () => new Map([['timeout', 1]]) },
  { name: 'a String object', kind: 'non-plain', make: () => new String('n1') },
  num(1e300),
  num(Infinity),
  num(-Infinity),
  num(NaN),
  num(-0),
  num(2 ** 53 + 1),
  num(-1),
  num(0.5),
  num(MAX_SECONDS),
  num(MAX_SECONDS + 1),
  num(31_536_000),
  num(2 ** 31),
  num(4096),
  { name: 'true', kind: 'boolean', make: () => true },
  { name: '100k strings', kind: 'list', make: (slot) => new Array(slot.listLength ?? 100_000).fill('n1') },
  { name: '100k numbers', kind: 'unreadable-list', make: () => new Array(100_000).fill(7) },
  { name: 'a sparse array of length 2^32-1', kind: 'unreadable-list', make: () => new Array(2 ** 32 - 1) },
  {
    name: 'an array claiming length 1e9',
    kind: 'unreadable-list',
    make: () => new Proxy(['n1'], { get: (t, k) => (k === 'length' ? 1e9 : t[k]) }),
  },
  str('a lone high surrogate', `${SECRET}\uD800x`),
  str('a lone low surrogate', `\uDC00${SECRET}`),
  str('a NUL', `${SECRET}\0x`),
  str('CR LF header injection', `${SECRET}\r\nX-Injected: 1`),
  str('a slash', 'a/b'),
  str('..', '..'),
  str('../ traversal', '../../v1/nodes'),
  str('%2f', 'a%2fb'),
  str('an empty string', ''),
  str('spaces around', ' n1 '),
  str('a 1 MiB string', `${SECRET}${'n'.repeat(1 << 20)}`),
  str('non-Latin-1 text', 'nœud-ノード'),
  str('an endpoint with a password', `http://user:${SECRET}@127.0.0.1:1`),
  // Accessors, placed on the object that holds the position.
  {
    name: 'a getter that throws',
    kind: 'getter',
    accessor: () => ({
      get() {
        throw new Error('getter');
      },
    }),
  },
  {
    name: 'a getter giving a different value each time',
    kind: 'getter',
    accessor: (slot) => {
      let n = 0;
      return { get: () => (n++ % 2 ? slot.valid() : revoked({})) };
    },
  },
  {
    name: 'a getter that aborts the call',
    kind: 'getter',
    accessor: (slot, ctx) => ({
      get() {
        ctx.controller.abort(new Error('getter abort'));
        return slot.valid();
      },
    }),
  },
  { name: 'a getter giving the valid value', kind: 'getter-stable', accessor: (slot) => ({ get: () => slot.valid() }) },
];

// ---------------------------------------------------------------------------
// Positions. A rule judges a string (or a number) put there: 'valid' (the
// call must not fail with InvalidArgumentError), 'invalid' (it must, with
// nothing sent) or 'either' (the contract leaves it open: it must settle).

const LONG = 4096;
const lone = (s) => !s.isWellFormed();
const textRule = (s) => (s.length > LONG ? 'either' : 'valid');
const RULES = {
  'node-id': (s) => (s === '' || s === '.' || s === '..' || s.trim() !== s ? 'invalid' : textRule(s)),
  expected: (s) => (s === '' ? 'invalid' : textRule(s)),
  text: (s) => (s === '' ? 'either' : textRule(s)),
  // Headers.set refuses NUL, CR and LF inside a value and anything above U+00FF.
  header: (s) => (/[\0\r\n]|[^\0-\xff]/.test(s.trim()) ? 'invalid' : textRule(s)),
  // Basic auth may refuse control characters (and ':' in the user name): RFC 7617 has no room for them.
  base64: (s) => (/[\0-\x1f\x7f:]/.test(s) ? 'either' : textRule(s)),
  endpoint: () => 'invalid',
  microversion: () => 'invalid',
  settle: () => 'invalid',
  action: () => 'invalid',
  // With a username and a password only http_basic is complete (the other types need more fields).
  'auth-type': () => 'invalid',
  'field-name': (s) => (/^\w+$/.test(s) ? textRule(s) : 'invalid'),
};
const inRange = (v, min, max) => Number.isFinite(v) && v >= min && v <= max;
const NUMBER_RULES = {
  // A time limit: 0 is refused with the rest (a wait's left out has none, a request's is 60 s).
  timeout: (v) => (inRange(v, 0, MAX_SECONDS) && v > 0 ? 'valid' : 'invalid'),
  interval: (v) => (inRange(v, 0, MAX_SECONDS) && v > 0 ? 'valid' : 'invalid'),
  retryInterval: (v) => (v === 0 ? 'either' : inRange(v, 0, MAX_SECONDS) ? 'valid' : 'invalid'),
  count: (v) => (!Number.isInteger(v) || v < 1 ? 'invalid' : v <= 1e6 ? 'valid' : 'either'),
  retries: (v) => (!Number.isInteger(v) || v < 0 ? 'invalid' : v <= 1000 ? 'valid' : 'either'),
  bytes: (v) => (!Number.isInteger(v) || v < 1024 ? 'invalid' : v < 2 ** 31 ? 'valid' : 'either'),
  roundRequests: (v) => (!Number.isInteger(v) || v < 1 ? 'invalid' : v <= 1e6 ? 'valid' : 'either'),
};

/** How `slot` judges `value` (one of VALUES). */
function verdict(value, slot) {
  const { type } = slot;
  if (type === 'unknown') return 'invalid'; // an option that is not known is refused
  // An item of a list must be a string.
  if (slot.item && !['string', 'control', 'getter', 'getter-stable'].includes(value.kind)) return 'invalid';
  switch (value.kind) {
    case 'control':
      return 'valid';
    case 'getter':
      return 'invalid';
    case 'getter-stable':
      return 'either';
    case 'unreadable':
      return 'invalid';
    case 'unreadable-list':
      // 100k numbers is JSON data all the same; the others cannot be read in bounded time.
      return type === 'json' && value.name === '100k numbers' ? 'either' : 'invalid';
    case 'function':
      return type === 'callback' ? 'valid' : 'invalid';
    case 'signal':
      return type === 'signal' ? 'valid' : type === 'json' ? 'either' : 'invalid';
    case 'object':
      // A plain object of unknown keys: refused as options.
      if (type === 'options') return 'invalid';
      if (type === 'basicAuth') return value.name === 'a deep nest' ? 'invalid' : 'either';
      return 'invalid';
    case 'non-plain':
      return type === 'json' ? 'either' : 'invalid';
    case 'boolean':
      return type === 'boolean' ? 'valid' : type === 'json' ? 'either' : 'invalid';
    case 'list':
      return type === 'idents' || type === 'fields' || type === 'json' ? 'either' : 'invalid';
    case 'number': {
      const rule = NUMBER_RULES[slot.rule];
      if (rule && type === 'number') return rule(value.number);
      return type === 'json' ? 'either' : 'invalid';
    }
    case 'string': {
      const s = value.text;
      if (lone(s)) return 'invalid';
      if (type === 'json') return 'either';
      if (type === 'idents' || type === 'fields') return RULES[slot.rule](s);
      if (type !== 'string') return 'invalid';
      return RULES[slot.rule](s);
    }
    default:
      throw new Error(`no verdict for ${value.kind}`);
  }
}

// Positions of each entry. `path` is where the value goes in the arguments:
// [argument index, key, key...]; `valid()` is a value that works there.
const S = (rule, valid, more = {}) => ({ type: 'string', rule, valid: () => valid, ...more });
const N = (rule, valid) => ({ type: 'number', rule, valid: () => valid });
const B = () => ({ type: 'boolean', valid: () => false });
const J = (valid) => ({ type: 'json', valid: () => structuredClone(valid) });
const SIGNAL = { type: 'signal', valid: () => new AbortController().signal };
const CALLBACK = { type: 'callback', valid: () => () => {} };
const UNKNOWN = { type: 'unknown', valid: () => 1 };
const OPTIONS = { type: 'options', valid: () => ({}) };
const CLEAN_STEPS = [{ interface: 'deploy', step: 'erase_devices', args: {} }];

function base(method, ctx, slot = {}) {
  const signal = ctx?.controller.signal;
  switch (method) {
    case 'constructor': {
      // The `auth` positions put the same credentials in `auth` instead (not both: that is refused).
      const credentials = slot.auth
        ? { auth: { type: 'http_basic', username: 'u', password: 'p' } }
        : { basicAuth: { username: 'u', password: 'p' } };
      return [
        { endpoint: ironic.url, retryInterval: 0.01, maxRetries: 1, requestTimeout: 5, ...credentials, headers: { 'X-Trial': 'fuzz' } },
      ];
    }
    case 'provision':
      // Enroll nodes refuse every action but manage with a 400: a real, quick answer.
      return [['e1', 'e2'], slot.action ?? 'deploy', { wait: true, timeout: 5, pollInterval: 0.05, signal, ...slot.with }];
    case 'waitForProvisionState':
      return [['n1'], 'active', { timeout: 5, pollInterval: 0.05, signal }];
    case 'setPowerState':
      return [['n1'], 'power on', { wait: true, timeout: 5, pollInterval: 0.05, signal }];
    case 'waitForPowerState':
      return [['n1'], 'power on', { timeout: 5, pollInterval: 0.05, signal }];
    case 'waitForReservation':
      return [['n1'], { timeout: 5, pollInterval: 0.05, signal }];
    case 'getNodeHistory':
      return ['n1', { signal }];
    case 'createAllocation':
      return [{ resourceClass: 'gold' }, { signal, ...slot.with }];
    case 'waitForAllocation':
      return [allocation, { timeout: 5, pollInterval: 0.05, signal }];
    case 'getNode':
      return ['n1', { fields: ['uuid', 'name'], signal }];
    case 'listNodes':
      // The positions in the scope get a scope of their own, fresh for each trial.
      return [{ limit: 5, fields: ['uuid', 'name'], signal, ...(slot.scoped && { scope: { provisionState: 'active' } }) }];
    case 'microversion':
      return [{ signal }];
    default:
      throw new Error(method);
  }
}

const WAIT_TUNING = {
  pollInterval: N('interval', 0.05),
  settle: S('settle', 'all'),
  holdIsTerminal: B(),
  failOnUnexpectedState: B(),
  concurrency: N('count', 4),
  listThreshold: N('count', 50),
  signal: SIGNAL,
  onProgress: CALLBACK,
  bogus: UNKNOWN,
};

// The power and lock waits take no provision-state rules: those names are unknown there.
const NODE_FIELD_TUNING = {
  pollInterval: N('interval', 0.05),
  settle: S('settle', 'all'),
  concurrency: N('count', 4),
  listThreshold: N('count', 50),
  signal: SIGNAL,
  onProgress: CALLBACK,
  holdIsTerminal: UNKNOWN,
  listMode: UNKNOWN,
  bogus: UNKNOWN,
};
// A wait on many nodes takes seconds of CPU (see waitForProvisionState).
const NODE_LIST = { path: [0], type: 'idents', rule: 'node-id', valid: () => ['n1'], listLength: 10_000 };
const NODE_IN_LIST = { path: [0, 0], ...S('node-id', 'n1'), type: 'idents', item: true };

/** Positions per entry: name -> { path, ...slot }. */
const POSITIONS = {
  constructor: {
    options: { path: [0], ...OPTIONS, required: true, valid: () => base('constructor')[0] },
    endpoint: { path: [0, 'endpoint'], ...S('endpoint', null), valid: () => ironic.url },
    token: { path: [0, 'token'], ...S('header', 'tok'), secret: true },
    getToken: { path: [0, 'getToken'], ...CALLBACK, valid: () => async () => 'tok' },
    basicAuth: { path: [0, 'basicAuth'], type: 'basicAuth', valid: () => ({ username: 'u', password: 'p' }) },
    'basicAuth.username': { path: [0, 'basicAuth', 'username'], ...S('base64', 'u') },
    'basicAuth.password': { path: [0, 'basicAuth', 'password'], ...S('base64', 'p'), secret: true },
    auth: { path: [0, 'auth'], type: 'auth', auth: true, valid: () => ({ type: 'http_basic', username: 'u', password: 'p' }) },
    'auth.type': { path: [0, 'auth', 'type'], ...S('auth-type', 'http_basic'), auth: true },
    'auth.username': { path: [0, 'auth', 'username'], ...S('base64', 'u'), auth: true },
    'auth.password': { path: [0, 'auth', 'password'], ...S('base64', 'p'), auth: true, secret: true },
    'auth.bogus': { path: [0, 'auth', 'bogus'], ...UNKNOWN, auth: true },
    microversion: { path: [0, 'microversion'], ...S('microversion', '1.80') },
    maxRetries: { path: [0, 'maxRetries'], ...N('retries', 1) },
    retryInterval: { path: [0, 'retryInterval'], ...N('retryInterval', 0.01) },
    requestTimeout: { path: [0, 'requestTimeout'], ...N('timeout', 5) },
    maxResponseBytes: { path: [0, 'maxResponseBytes'], ...N('bytes', 1 << 20) },
    maxRoundRequests: { path: [0, 'maxRoundRequests'], ...N('roundRequests', 45) },
    headers: { path: [0, 'headers'], type: 'headers', valid: () => ({ 'X-Trial': 'fuzz' }) },
    'a header value': { path: [0, 'headers', 'X-Trial'], ...S('header', 'fuzz'), secret: true },
    userAgent: { path: [0, 'userAgent'], ...S('header', 'fuzzer/1') },
    bogus: { path: [0, 'bogus'], ...UNKNOWN },
  },
  provision: {
    nodes: { path: [0], type: 'idents', rule: 'node-id', valid: () => ['e1'] },
    'a node in the list': { path: [0, 1], ...S('node-id', 'e2'), type: 'idents', item: true },
    action: { path: [1], ...S('action', 'deploy') },
    options: { path: [2], ...OPTIONS },
    ...prefixed(2, WAIT_TUNING),
    wait: { path: [2, 'wait'], ...B(), valid: () => true },
    timeout: { path: [2, 'timeout'], ...N('timeout', 5) },
    configDrive: { path: [2, 'configDrive'], ...J({ meta_data: { hostname: 'h' } }) },
    deploySteps: { path: [2, 'deploySteps'], ...J([{ interface: 'deploy', step: 'deploy', args: {}, priority: 50 }]) },
    cleanSteps: { path: [2, 'cleanSteps'], ...J(CLEAN_STEPS), action: 'clean' },
    serviceSteps: { path: [2, 'serviceSteps'], ...J(CLEAN_STEPS), action: 'service' },
    runbook: { path: [2, 'runbook'], ...S('text', 'rb-1'), action: 'clean' },
    rescuePassword: { path: [2, 'rescuePassword'], ...S('text', 'pw'), action: 'rescue', secret: true },
    disableRamdisk: { path: [2, 'disableRamdisk'], ...B(), action: 'clean', with: { cleanSteps: CLEAN_STEPS } },
  },
  waitForProvisionState: {
    // A wait on 100k nodes takes seconds of CPU (faster than linear growth), which is not what this file measures:
    // 10k here, 100k everywhere else.
    nodes: { path: [0], type: 'idents', rule: 'node-id', valid: () => ['n1'], listLength: 10_000 },
    'a node in the list': { path: [0, 0], ...S('node-id', 'n1'), type: 'idents', item: true },
    expectedState: { path: [1], ...S('expected', 'active') },
    options: { path: [2], ...OPTIONS },
    ...prefixed(2, WAIT_TUNING),
    timeout: { path: [2, 'timeout'], ...N('timeout', 5) },
  },
  setPowerState: {
    nodes: NODE_LIST,
    'a node in the list': NODE_IN_LIST,
    action: { path: [1], ...S('action', 'power on') },
    options: { path: [2], ...OPTIONS },
    ...prefixed(2, NODE_FIELD_TUNING),
    wait: { path: [2, 'wait'], ...B(), valid: () => true },
    timeout: { path: [2, 'timeout'], ...N('timeout', 5) },
    powerTimeout: { path: [2, 'powerTimeout'], ...N('count', 5) },
    diagnose: { path: [2, 'diagnose'], ...B() },
    configDrive: { path: [2, 'configDrive'], ...UNKNOWN },
  },
  waitForPowerState: {
    nodes: NODE_LIST,
    'a node in the list': NODE_IN_LIST,
    state: { path: [1], ...S('action', 'power on') },
    options: { path: [2], ...OPTIONS },
    ...prefixed(2, NODE_FIELD_TUNING),
    timeout: { path: [2, 'timeout'], ...N('timeout', 5) },
    diagnose: { path: [2, 'diagnose'], ...B() },
  },
  waitForReservation: {
    nodes: NODE_LIST,
    'a node in the list': NODE_IN_LIST,
    options: { path: [1], ...OPTIONS },
    ...prefixed(1, NODE_FIELD_TUNING),
    timeout: { path: [1, 'timeout'], ...N('timeout', 5) },
    diagnose: { path: [1, 'diagnose'], ...UNKNOWN },
  },
  getNodeHistory: {
    node: { path: [0], ...S('node-id', 'n1') },
    options: { path: [1], ...OPTIONS },
    signal: { path: [1, 'signal'], ...SIGNAL },
    bogus: { path: [1, 'bogus'], ...UNKNOWN },
  },
  createAllocation: {
    fields: { path: [0], type: 'allocation', valid: () => ({ resourceClass: 'gold' }) },
    resourceClass: { path: [0, 'resourceClass'], ...J('gold') },
    traits: { path: [0, 'traits'], ...J(['CUSTOM_GPU']) },
    candidateNodes: { path: [0, 'candidateNodes'], ...J(['g1']) },
    extra: { path: [0, 'extra'], ...J({ purpose: 'fuzz' }) },
    name: { path: [0, 'name'], ...J(undefined), valid: () => undefined },
    options: { path: [1], ...OPTIONS },
    // The new allocation fails (g1, the only gold node, is taken) within a second, or the wait times out.
    wait: { path: [1, 'wait'], ...B(), valid: () => true, with: { timeout: 1, pollInterval: 0.05 } },
    timeout: { path: [1, 'timeout'], ...N('timeout', 1), with: { wait: true, pollInterval: 0.05 } },
    pollInterval: { path: [1, 'pollInterval'], ...N('interval', 0.05), with: { wait: true, timeout: 1 } },
    signal: { path: [1, 'signal'], ...SIGNAL },
    onProgress: { path: [1, 'onProgress'], ...CALLBACK, with: { wait: true, timeout: 1, pollInterval: 0.05 } },
    bogus: { path: [1, 'bogus'], ...UNKNOWN },
  },
  waitForAllocation: {
    id: { path: [0], ...S('node-id', null), valid: () => allocation },
    options: { path: [1], ...OPTIONS },
    timeout: { path: [1, 'timeout'], ...N('timeout', 5) },
    pollInterval: { path: [1, 'pollInterval'], ...N('interval', 0.05) },
    signal: { path: [1, 'signal'], ...SIGNAL },
    onProgress: { path: [1, 'onProgress'], ...CALLBACK },
    bogus: { path: [1, 'bogus'], ...UNKNOWN },
  },
  getNode: {
    id: { path: [0], ...S('node-id', 'n1') },
    options: { path: [1], ...OPTIONS },
    fields: { path: [1, 'fields'], type: 'fields', rule: 'field-name', valid: () => ['uuid'] },
    'a field in the list': { path: [1, 'fields', 1], ...S('field-name', 'name'), type: 'fields', item: true },
    signal: { path: [1, 'signal'], ...SIGNAL },
    bogus: { path: [1, 'bogus'], ...UNKNOWN },
  },
  listNodes: {
    options: { path: [0], ...OPTIONS },
    fields: { path: [0, 'fields'], type: 'fields', rule: 'field-name', valid: () => ['uuid'] },
    'a field in the list': { path: [0, 'fields', 0], ...S('field-name', 'uuid'), type: 'fields', item: true },
    limit: { path: [0, 'limit'], ...N('count', 5) },
    scope: { path: [0, 'scope'], type: 'scope', valid: () => ({ provisionState: 'active' }) },
    // An empty filter is refused (what would it filter by?).
    'scope.provisionState': { path: [0, 'scope', 'provisionState'], ...S('expected', 'active'), scoped: true },
    // The filters are the scope's, as in the waits and watch: not an option of their own.
    provisionState: { path: [0, 'provisionState'], ...UNKNOWN },
    signal: { path: [0, 'signal'], ...SIGNAL },
    bogus: { path: [0, 'bogus'], ...UNKNOWN },
  },
  microversion: {
    options: { path: [0], ...OPTIONS },
    signal: { path: [0, 'signal'], ...SIGNAL },
    bogus: { path: [0, 'bogus'], ...UNKNOWN },
  },
};

function prefixed(index, slots) {
  return Object.fromEntries(Object.entries(slots).map(([key, slot]) => [key, { path: [index, key], ...slot }]));
}

/** Puts `value` (or its accessor) at `slot.path` in `args`. */
function place(args, slot, value, ctx) {
  const path = slot.path;
  if (path.length === 1) {
    args[path[0]] = value.make(slot, ctx);
    return;
  }
  let holder = args[path[0]];
  for (const key of path.slice(1, -1)) holder = holder[key];
  const key = path.at(-1);
  if (value.accessor) {
    Object.defineProperty(holder, key, { ...value.accessor(slot, ctx), enumerable: true, configurable: true });
  } else {
    holder[key] = value.make(slot, ctx);
  }
}

/** The values a position can take: accessors need an object holding the position. */
const applicable = (slot) => VALUES.filter((v) => !v.accessor || slot.path.length > 1);

// ---------------------------------------------------------------------------
// One trial.

const ERROR_CLASSES = [
  InvalidArgumentError,
  InvalidResponseError,
  IronicHttpError,
  ConnectionError,
  AuthError,
  UnsupportedVersionError,
  StateTransitionFailed,
  StateTransitionTimeout,
];

function settleWithin(promise, ms) {
  let timer;
  const outcome = promise.then(
    (value) => ({ resolved: true, value }),
    (error) => ({ rejected: true, error }),
  );
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ hung: true }), ms);
  });
  return Promise.race([outcome, timeout]).finally(() => clearTimeout(timer));
}

/** Every string an error shows: message, stack, own fields. */
function errorText(e) {
  try {
    return [e.message, e.stack, JSON.stringify(e, (_k, v) => (typeof v === 'bigint' ? String(v) : v))].join('\n');
  } catch {
    return String(e?.message);
  }
}

const describe = (o) =>
  o.hung ? 'no settlement' : o.resolved ? 'resolved' : o.thrown ? `threw ${safeText(o.error)}` : `rejected with ${safeText(o.error)}`;

/** Runs one trial; returns a failure text or null. */
async function trial(method, slotName, value) {
  const slot = POSITIONS[method][slotName];
  const ctx = { controller: new AbortController() };
  const args = base(method, ctx, slot);
  place(args, slot, value, ctx);
  const expected = verdict(value, slot);
  const sentBefore = ironic.seen.length;
  const escapedBefore = escaped.length;
  let outcome;
  let constructed = null;
  if (method === 'constructor') {
    try {
      constructed = new IronicClient(...args);
    } catch (error) {
      outcome = { thrown: true, error };
    }
    // A client that was made must work as a client: one read through it.
    if (constructed) outcome = await settleWithin(constructed.getNode('n1', { signal: ctx.controller.signal }), SETTLE_MS);
  } else {
    let promise;
    try {
      promise = client[method](...args);
    } catch (error) {
      return `${method} threw synchronously: ${safeText(error)}`;
    }
    if (!(promise instanceof Promise)) return `${method} did not return a promise`;
    outcome = await settleWithin(promise, SETTLE_MS);
  }
  await sleep(0); // let a stray rejection or exception surface now
  const label = `${method}: ${slotName} <- ${value.name}`;
  const problems = [];
  if (escaped.length > escapedBefore) problems.push(escaped.slice(escapedBefore).join('; '));
  const error = outcome.error;
  const sent = ironic.seen.length - sentBefore;
  const refused = error instanceof InvalidArgumentError;
  const aborted = ctx.controller.signal.aborted && error === ctx.controller.signal.reason;
  if (outcome.hung) problems.push(`did not settle in ${SETTLE_MS} ms`);
  else if (expected === 'invalid' && !refused) problems.push(`expected InvalidArgumentError, got: ${describe(outcome)}`);
  else if (expected === 'valid' && refused) problems.push(`expected it to go through, got: ${describe(outcome)}`);
  if (outcome.thrown && method !== 'constructor') problems.push('threw synchronously');
  if (method === 'constructor' && refused && !outcome.thrown) problems.push('the constructor did not throw the InvalidArgumentError');
  if (error !== undefined && !refused && !aborted && !ERROR_CLASSES.some((C) => error instanceof C)) {
    problems.push(`rejected with a foreign error: ${safeText(error)}`);
  }
  if (refused) {
    if (error.name !== 'InvalidArgumentError') problems.push(`error name ${error.name}`);
    if (sent !== 0 && method !== 'constructor') problems.push(`${sent} request(s) sent for an invalid input`);
  }
  // A valid call sends (the client has negotiated already, so microversion() does not; a getToken that fails neither).
  if (expected === 'valid' && !refused && sent === 0 && method !== 'microversion' && !(error instanceof AuthError)) {
    problems.push('nothing was sent for a valid input');
  }
  if (error !== undefined && slot.secret && typeof value.text === 'string' && errorText(error).includes(SECRET)) {
    problems.push(`the error quotes the secret: ${safeText(error.message)}`);
  }
  if (slotName === 'endpoint' && value.name === 'an endpoint with a password' && error !== undefined && errorText(error).includes(SECRET)) {
    problems.push("the error quotes the endpoint's password");
  }
  return problems.length ? `${label} (expected ${expected}): ${problems.join('; ')}` : null;
}

/**
 * Trials on one entry: every value in every position, in a seeded order (the
 * client is shared, so the order is part of the test), then seeded repeats
 * up to FUZZ_TRIALS.
 */
async function fuzz(method) {
  const rand = rng(SEED, 'arguments-fuzz', method);
  const pairs = Object.entries(POSITIONS[method]).flatMap(([name, slot]) => applicable(slot).map((value) => [name, value]));
  const plan = [...pairs];
  while (plan.length < TRIALS) plan.push(pairs[Math.floor(rand() * pairs.length)]);
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [plan[i], plan[j]] = [plan[j], plan[i]];
  }
  const failures = [];
  for (const [i, [slotName, value]] of plan.entries()) {
    const failure = await trial(method, slotName, value);
    if (failure) failures.push(failure);
    if (i % 50 === 49) await assertHealthy(`after ${i + 1} ${method} trials`);
  }
  await assertHealthy(`after the ${method} trials`);
  const kinds = [...new Set(failures)];
  assert.deepEqual(kinds.slice(0, 40), [], `${failures.length} of ${plan.length} ${method} trials failed (seed ${SEED})`);
}

for (const method of Object.keys(POSITIONS)) {
  test(`hostile arguments: ${method} (seeded trials, then a real wait on the same and a fresh client)`, () => fuzz(method));
}

// ---------------------------------------------------------------------------
// Cases that need more than one call, or an abort.

test('every error class keeps its own name, also when a minifier renames the classes', () => {
  const names = {
    IronicWaitError,
    InvalidArgumentError,
    InvalidResponseError,
    IronicHttpError,
    ConnectionError,
    AuthError,
    UnsupportedVersionError,
    StateTransitionFailed,
    StateTransitionTimeout,
  };
  const source = IronicWaitError.toString() + InvalidArgumentError.toString();
  assert.doesNotMatch(source, /new\.target\.name|constructor\.name/, "the name must not come from the class's own name");
  for (const [name, Class] of Object.entries(names)) {
    const e = new Class('m', { status: 1 });
    assert.equal(e.name, name);
    assert.equal(String(e), `${name}: m`);
    assert.ok(e.stack.startsWith(`${name}: m`), e.stack.split('\n')[0]);
    assert.ok(e instanceof IronicWaitError && e instanceof Error);
  }
});

test('a getter that aborts the call, and one that mutates the arguments, are refused before anything is sent', async () => {
  const sent = ironic.seen.length;
  const controller = new AbortController();
  const options = { signal: controller.signal, pollInterval: 0.05 };
  Object.defineProperty(options, 'timeout', {
    enumerable: true,
    get() {
      controller.abort();
      return 5;
    },
  });
  await assert.rejects(client.waitForProvisionState('n1', 'active', options), InvalidArgumentError);
  const list = ['n1'];
  Object.defineProperty(list, 1, {
    enumerable: true,
    get() {
      list.push('..');
      return 'e1';
    },
  });
  await assert.rejects(client.waitForProvisionState(list, 'active', { timeout: 5 }), InvalidArgumentError);
  assert.equal(ironic.seen.length, sent);
});

test('arguments are read once, when the call is made: changing them afterwards changes nothing', async () => {
  const list = ['n1'];
  const options = { timeout: 5, pollInterval: 0.05, settle: 'all' };
  const waiting = settleWithin(client.waitForProvisionState(list, 'active', options), SETTLE_MS);
  list[0] = '..';
  list.push('e1');
  options.timeout = -1;
  options.pollInterval = Symbol('later');
  const outcome = await waiting;
  assert.deepEqual(
    outcome.value?.nodes.map((n) => [n.node, n.outcome]),
    [['n1', 'reached']],
    describe(outcome),
  );
});

test('a detached method rejects instead of throwing', async () => {
  const { getNode } = client;
  let promise;
  assert.doesNotThrow(() => {
    promise = getNode('n1');
  });
  await assert.rejects(promise);
});

test('a genuine signal with booby-trapped own properties: the call works, and its abort rejects with the reason itself', async () => {
  const before = escaped.length;
  const controller = new AbortController();
  const signal = boobyTrappedSignal(controller);
  const first = await settleWithin(client.waitForProvisionState('n1', 'active', { timeout: 5, signal }), SETTLE_MS);
  assert.equal(first.value?.nodes[0].outcome, 'reached', describe(first));
  // m1 rests in manageable: without failOnUnexpectedState the wait goes on until aborted.
  const waiting = client.waitForProvisionState('m1', 'active', { pollInterval: 0.05, failOnUnexpectedState: false, signal });
  const outcome = settleWithin(waiting, 5000);
  await sleep(100);
  const reason = new Error('stop');
  controller.abort(reason);
  const settled = await outcome;
  assert.equal(settled.error, reason, describe(settled));
  assert.deepEqual(escaped.slice(before), []);
});

test('getToken: whatever it throws, returns or never settles is an AuthError or the abort reason, never a hang or an escape', async () => {
  const before = escaped.length;
  const { proxy: revokedToken, revoke } = Proxy.revocable({}, {});
  revoke();
  const sources = [
    [
      'throws',
      () => {
        throw new Error('keystone is down');
      },
    ],
    [
      'throws a revoked proxy',
      () => {
        throw revokedToken;
      },
    ],
    [
      'throws a trap-throwing proxy',
      () => {
        throw new Proxy({}, throwingHandler);
      },
    ],
    ['rejects with a trap-throwing proxy', () => Promise.reject(new Proxy({}, throwingHandler))],
    ['returns a number', () => 42],
    ['returns a revoked proxy', () => revokedToken],
    ['returns a proxy whose every trap throws', () => new Proxy({}, throwingHandler)],
    [
      'returns a thenable whose then throws',
      () => ({
        then() {
          throw new Error('then');
        },
      }),
    ],
    [
      'returns a thenable whose then getter throws',
      () => ({
        get then() {
          throw new Error('then getter');
        },
      }),
    ],
    ['returns a token with CR LF', () => `${SECRET}\r\nX-Injected: 1`],
    ['returns a token with a lone surrogate', () => `${SECRET}\uD800`],
    ['is a revoked function proxy', revoked(() => 'tok')],
  ];
  for (const [name, getToken] of sources) {
    const ironicClient = new IronicClient({ endpoint: ironic.url, getToken, microversion: '1.80', maxRetries: 1, retryInterval: 0.01 });
    const sent = ironic.seen.length;
    const outcome = await settleWithin(ironicClient.getNode('n1'), 5000);
    assert.ok(
      outcome.error instanceof AuthError || (name.includes('token with') && outcome.error instanceof InvalidArgumentError),
      `getToken ${name}: ${describe(outcome)}`,
    );
    assert.ok(!errorText(outcome.error).includes(SECRET), `getToken ${name}: the token is quoted: ${outcome.error.message}`);
    assert.equal(
      ironic.seen.slice(sent).filter((r) => r.headers['x-auth-token'] !== undefined).length,
      0,
      `getToken ${name}: a request went out with a token`,
    );
  }
  // One that never settles: only the caller's abort can end the call, at once, with its reason.
  const neverClient = new IronicClient({ endpoint: ironic.url, getToken: () => new Promise(() => {}) });
  for (const call of [
    (o) => neverClient.getNode('n1', o),
    (o) => neverClient.listNodes(o),
    (o) => neverClient.createAllocation({ resourceClass: 'gold' }, o),
    (o) => neverClient.waitForProvisionState('n1', 'active', o),
    (o) => neverClient.provision('e1', 'manage', o),
  ]) {
    const controller = new AbortController();
    const outcome = settleWithin(call({ signal: controller.signal }), 3000);
    await sleep(50);
    const reason = { why: 'tired of waiting' };
    controller.abort(reason);
    const settled = await outcome;
    assert.equal(settled.error, reason, `${call}: ${describe(settled)}`);
  }
  await sleep(0);
  assert.deepEqual(escaped.slice(before), []);
});

test('onProgress: throwing, rejecting and hostile return values are ignored', async () => {
  const before = escaped.length;
  const callbacks = [
    () => {
      throw new Error('progress');
    },
    () => {
      throw revoked({});
    },
    async () => {
      throw new Error('async progress');
    },
    () => Promise.reject(new Proxy({}, throwingHandler)),
    () => revoked({}),
    () => new Proxy({}, throwingHandler),
    () => ({
      then() {
        throw new Error('then');
      },
    }),
    new Proxy(() => {}, throwingHandler),
  ];
  for (const [i, onProgress] of callbacks.entries()) {
    const options = { timeout: 5, pollInterval: 0.05, settle: 'all', onProgress };
    const outcome = await settleWithin(client.waitForProvisionState(['n1', 'm1'], 'active', options), SETTLE_MS);
    assert.deepEqual(
      outcome.value?.nodes.map((n) => n.outcome),
      ['reached', 'unexpected-stable'],
      `callback ${i}: ${describe(outcome)}`,
    );
  }
  await sleep(10);
  assert.deepEqual(escaped.slice(before), []);
});

test('one long-lived signal for many calls: no listener is left on it', async () => {
  const controller = new AbortController();
  const signal = controller.signal;
  const listeners = () => getEventListeners(signal, 'abort').length;
  const calls = [];
  for (let i = 0; i < 50; i++) {
    calls.push(client.getNode('n1', { signal }));
    calls.push(client.getNode('nope', { signal }).catch((e) => e));
    calls.push(client.getNode('..', { signal }).catch((e) => e));
    calls.push(client.waitForProvisionState('n1', 'active', { signal, timeout: 60 })); // a bound, not the subject: 5 s ran out under load
  }
  // 200 calls at once: a loaded machine took more than 5 s over them. Each ends by its own bounds (the
  // waits' timeout, requestTimeout 5 s and one retry); this bound, far past those, only tells a hang.
  const outcome = await settleWithin(Promise.all(calls), 120_000);
  assert.ok(outcome.resolved, describe(outcome));
  assert.equal(listeners(), 0);
});
