// The console server as a hostile web page (or a hostile local client) sees
// it, over raw HTTP: node:net, since fetch normalises paths and will not send
// a chosen Host or Origin. Every refusal is checked on both sides: the status
// and headers the client got, and that nothing reached Ironic (the requests
// a recording server standing in as IRONIC_URL saw, or the embedded
// simulator's request log and state).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { after, test } from 'node:test';
import { listen } from '../../sim/http.mjs';
import { CSP, MAX_BODY_BYTES, startConsoleServer } from '../../www/server.mjs';
import { startIronic } from '../node/harness.mjs';

const open = [];
after(() => Promise.all(open.map((s) => s.close())));

const IRONIC_TOKEN = 'keystone-SECRET-3f9a7c1e0b';
const BASIC_PASSWORD = 'basic-SECRET-hunter2';
const NODES = [{ name: 'n1', provision_state: 'available', resource_class: 'gold' }];

/**
 * Sends `head` (request line and headers, without the blank line) and `body`
 * on a fresh connection; resolves to the answer once the server closes the
 * connection or a whole answer is in: `{ status, headers, body, text }`
 * (headers: lowercase name -> array of values).
 */
function exchange(port, head, { body = '', halfOpen = false, timeout = 60_000, ended = true } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen });
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer in ${timeout} ms to ${head.split('\r\n')[0]}`));
    }, timeout);
    const done = () => {
      const answer = parseAnswer(data, head.startsWith('HEAD '));
      if (!answer) return false;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
      return true;
    };
    const text = ended ? `${head}\r\n\r\n` : head;
    socket.on('connect', () => socket.write(Buffer.concat([Buffer.from(text, 'latin1'), Buffer.from(body)])));
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      done();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      if (!done()) {
        clearTimeout(timer);
        resolve({ status: null, headers: {}, body: '', text: data.toString('latin1') });
      }
    });
  });
}

/** One HTTP/1.1 answer from `data`, or null while incomplete (ignores a preceding 100 Continue). */
function parseAnswer(data, bodiless = false) {
  let text = data.toString('latin1');
  while (text.startsWith('HTTP/1.1 100')) text = text.slice(text.indexOf('\r\n\r\n') + 4);
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    (headers[name] ??= []).push(line.slice(colon + 1).trim());
  }
  let body = text.slice(end + 4);
  if (bodiless) {
    body = '';
  } else if (headers['transfer-encoding']?.[0] === 'chunked') {
    let out = '';
    for (let at = 0; ; ) {
      const eol = body.indexOf('\r\n', at);
      if (eol < 0) return null;
      const size = parseInt(body.slice(at, eol), 16);
      if (size === 0) break;
      if (body.length < eol + 2 + size) return null;
      out += body.slice(eol + 2, eol + 2 + size);
      at = eol + 4 + size;
    }
    body = out;
  } else {
    const length = Number(headers['content-length']?.[0] ?? 0);
    if (Buffer.byteLength(body, 'latin1') < length) return null;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8'), text };
}

/** The request head for `method target` with the usual headers, overridden or removed (null) by `extra`. */
function head(method, target, server, extra = {}) {
  const headers = {
    Host: server.host,
    'X-OpenStack-Ironic-API-Version': 'latest',
    Connection: 'close',
    ...extra,
  };
  const lines = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === null) continue;
    for (const v of [value].flat()) lines.push(`${name}: ${v}`);
  }
  return [`${method} ${target} HTTP/1.1`, ...lines].join('\r\n');
}

/** The write token a console server put in its page (as the page reads it). */
async function pageToken(port, host) {
  const page = await exchange(port, head('GET', '/', { host }));
  return page.body.match(/<meta name="console-token" content="([A-Za-z0-9_-]{43})">/)[1];
}

/** A console server plus what lets a test see what reached Ironic. */
async function consoleIn(mode, options = {}) {
  let ironic = null;
  let server;
  if (mode === 'proxy') {
    ironic = await startIronic({ nodes: NODES });
    open.push(ironic);
    const url = ironic.url.replace('http://', `http://admin:${BASIC_PASSWORD}@`);
    server = await startConsoleServer({ ironicUrl: url, ironicToken: IRONIC_TOKEN, ...options });
  } else {
    server = await startConsoleServer({ scenario: { nodes: NODES, timing: { allocating: 50 } }, ...options });
  }
  open.push(server);
  const { port, host } = new URL(server.url);
  const token = await pageToken(port, host);
  const state = () => (ironic ? ironic.sim : server.sim);
  return {
    server,
    port,
    host,
    token,
    ironic,
    /** Everything Ironic received so far (the recording server's requests, or the simulator's log). */
    reached: () =>
      ironic
        ? ironic.seen.map((r) => `${r.method} ${r.url}`)
        : server.sim.log().map((e) => `${e.method} ${e.path}${e.query ? `?${e.query}` : ''}`),
    allocations: () => state().summary().allocations,
    nodes: () => state().summary().nodes,
    /** A request with the page's usual headers; a `body` gets its Content-Length unless `extra` says otherwise. */
    send(method, target, extra = {}, options = {}) {
      const length = options.body === undefined || 'Content-Length' in extra ? {} : { 'Content-Length': Buffer.byteLength(options.body) };
      return exchange(port, head(method, target, { host }, { ...length, ...extra }), options);
    },
    /** A GET as the page sends it: with its token. */
    read(target, extra = {}) {
      return this.send('GET', target, { 'X-Console-Token': token, ...extra });
    },
  };
}

/** The headers every answer carries, whatever it is. */
function assertSecurityHeaders(answer, what, { api = true } = {}) {
  const h = (name) => answer.headers[name]?.join(', ');
  assert.match(h('content-security-policy') ?? '', /frame-ancestors 'none'/, `${what}: CSP`);
  assert.equal(h('x-frame-options'), 'DENY', `${what}: X-Frame-Options`);
  assert.equal(h('x-content-type-options'), 'nosniff', `${what}: nosniff`);
  assert.equal(h('referrer-policy'), 'no-referrer', `${what}: Referrer-Policy`);
  assert.equal(h('cross-origin-resource-policy'), 'same-origin', `${what}: CORP`);
  if (api) assert.equal(h('cache-control'), 'no-store', `${what}: Cache-Control`);
  const cors = Object.keys(answer.headers).filter((n) => n.startsWith('access-control-'));
  assert.deepEqual(cors, [], `${what}: no CORS headers`);
  assert.equal(answer.headers['set-cookie'], undefined, `${what}: no cookie`);
}

const TRAVERSALS = [
  ['/v1/../admin', 400],
  ['/v1/nodes/../../../../compute/v2.1/servers', 400],
  ['/v1/%2e%2e/x', 400],
  ['/v1/%2E%2E/x', 400],
  ['/v1/.%2e/x', 400],
  ['/v1/%252e%252e/x', 400],
  ['/v1/%25252e%25252e/x', 400],
  ['/v1/nodes/..%2f..%2fx', 400],
  ['/v1/nodes/%2f', 400],
  ['/v1/nodes/%2F..%2Fadmin', 400],
  ['/v1/nodes/%252f', 400],
  ['/v1//nodes', 400],
  ['/v1/nodes/', 400],
  ['/v1/./nodes', 400],
  ['/v1/nodes/.', 400],
  ['/v1\\..\\x', 400],
  ['/v1/nodes/%5c..%5cx', 400],
  ['/v1/nodes/%00', 400],
  ['/v1/nodes/n1%00.json', 400],
  ['/v1/nodes/%0d%0aX-Injected:%20yes', 400],
  ['/v1;/x', 400],
  ['/v1/nodes;x=y/../admin', 400],
  ['/%76%31/nodes', 400],
  ['/v%31/nodes', 400],
  ['/v1/%6eodes', 400],
  ['/v1/nodes/%c0%ae%c0%ae', 400], // overlong UTF-8 dots
  ['/v1/nodes/%ef%bc%8e%ef%bc%8e', 400], // fullwidth dots, which NFKC folds to `..`
  ['/v1/nodes/%e2%80%ae', 400], // a bidi override
  ['/v1/nodes/%', 400],
  ['/v1/nodes/%zz', 400],
  ['/v1/nodes/%ff', 400],
  ['/v1/nodes/n1#/../../admin', 400],
  ['/v1/nodes/n1?x=1#/../admin', 400],
  ['http://evil/v1/nodes', 400],
  ['http://127.0.0.1/v1/nodes', 400],
  ['//evil/v1/nodes', 400],
  ['*', 400],
  [`/v1/nodes/${'a'.repeat(3000)}`, 414],
  [`/v1/${'x/'.repeat(20_000)}nodes`, 431], // past Node's header size limit: refused by its parser, with our headers
];

for (const mode of ['proxy', 'simulator']) {
  test(`${mode}: paths that are not normalised /v1 paths are refused and nothing reaches Ironic`, async () => {
    const c = await consoleIn(mode);
    const before = c.reached().length;
    for (const [target, status] of TRAVERSALS) {
      for (const method of ['GET', 'DELETE']) {
        const answer = await c.send(method, target, { 'X-Console-Token': c.token });
        assert.equal(answer.status, status, `${method} ${target.slice(0, 80)}`);
        assertSecurityHeaders(answer, `${method} ${target.slice(0, 40)}`);
        assert.doesNotMatch(answer.body, /"nodes"|"uuid"/, target);
      }
    }
    assert.deepEqual(c.reached().slice(before), [], 'Ironic saw none of them');

    // The checked path goes as it came; a query only on reads.
    const ok = await c.read('/v1/nodes/n1?fields=name,provision_state');
    assert.equal(ok.status, 200);
    assert.equal(JSON.parse(ok.body).name, 'n1');
    assert.deepEqual(c.reached().slice(before), ['GET /v1/nodes/n1?fields=name,provision_state']);
    const write = await c.send('DELETE', '/v1/nodes/n1?force=true', { 'X-Console-Token': c.token });
    assert.equal(write.status, 400);
    assert.equal(c.nodes(), 1);
    assert.equal(c.reached().length, before + 1);
  });
}

test("proxy: the upstream URL keeps IRONIC_URL's path prefix; no path climbs out of it", async () => {
  const ironic = await startIronic({ nodes: NODES });
  open.push(ironic);
  const server = await startConsoleServer({ ironicUrl: `${ironic.url}/baremetal/v1/` });
  open.push(server);
  const { port, host } = new URL(server.url);
  const token = await pageToken(port, host);
  const answer = await exchange(port, head('GET', '/v1/nodes/a%20b?fields=name', { host }, { 'X-Console-Token': token }));
  assert.equal(answer.status, 404); // the simulator behind has no /baremetal
  assert.deepEqual(
    ironic.seen.map((r) => r.url),
    ['/baremetal/v1/nodes/a%20b?fields=name'],
  );
  for (const [target] of TRAVERSALS) await exchange(port, head('GET', target, { host }, { 'X-Console-Token': token }));
  assert.equal(ironic.seen.length, 1);
});

test("only requests addressed to the server's own loopback address are answered (DNS rebinding)", async () => {
  for (const mode of ['proxy', 'simulator']) {
    const c = await consoleIn(mode);
    const before = c.reached().length;
    const hosts = [
      'evil.com',
      `evil.com:${c.port}`,
      `127.0.0.1.evil.com:${c.port}`,
      `${c.port}.127.0.0.1.nip.io:${c.port}`,
      `127.0.0.1:${c.port}.evil.com`,
      '127.0.0.1',
      '127.0.0.1:80',
      `127.0.0.1:${c.port + 1}`,
      `127.0.0.1:0${c.port}`,
      `127.1:${c.port}`,
      `2130706433:${c.port}`,
      `0x7f.0.0.1:${c.port}`,
      `[::1]:${c.port}`,
      `[::ffff:127.0.0.1]:${c.port}`,
      `localhost.:${c.port}`,
      `localhost:${c.port + 1}`,
      `user@127.0.0.1:${c.port}`,
      '',
      ' ',
    ];
    const cases = [
      ...hosts.map((h) => [`Host: ${h}`, { Host: h }]),
      ['no Host', { Host: null }],
      ['two Hosts', { Host: [`127.0.0.1:${c.port}`, 'evil.com'] }],
      ['two Hosts, evil first', { Host: ['evil.com', `127.0.0.1:${c.port}`] }],
    ];
    for (const [what, headers] of cases) {
      for (const [method, target] of [
        ['GET', '/v1/nodes'],
        ['GET', '/'],
        ['POST', '/v1/allocations'],
      ]) {
        const body = method === 'POST' ? '{"resource_class": "gold"}' : '';
        const extra = { ...headers, 'X-Console-Token': c.token, 'Content-Type': 'application/json', 'Content-Length': body.length };
        const answer = await c.send(method, target, extra, { body });
        assert.ok([400, 421].includes(answer.status), `${mode} ${what} ${method} ${target}: ${answer.status}`);
        assert.doesNotMatch(answer.body, /console-token|"nodes"|ironic-wait console/, what);
        assertSecurityHeaders(answer, what);
      }
    }
    // HTTP/1.0 has no Host at all.
    const old = await exchange(c.port, 'GET /v1/nodes HTTP/1.0');
    assert.equal(old.status, 421);
    assert.deepEqual(c.reached().slice(before), [], `${mode}: Ironic saw none of them`);
    assert.equal(c.allocations(), 0);

    // Its own names, in any case; `localhost` too since it listens on 127.0.0.1.
    for (const name of [`127.0.0.1:${c.port}`, `localhost:${c.port}`, `LocalHost:${c.port}`]) {
      assert.equal((await c.read('/v1/nodes', { Host: name })).status, 200, name);
    }
  }
});

test('listening on ::1, it answers as [::1] and localhost; it will not listen beyond loopback', async (t) => {
  const server = await startConsoleServer({ host: '::1', scenario: { nodes: NODES } }).catch((e) => e);
  if (server instanceof Error) return t.skip(`no IPv6 loopback here: ${server.code}`);
  open.push(server);
  const port = Number(new URL(server.url).port);
  const ask = (host, extra = {}) =>
    new Promise((resolve, reject) => {
      const socket = net.connect({ port, host: '::1' }, () => socket.write(`${head('GET', '/v1/nodes', { host }, extra)}\r\n\r\n`));
      let data = '';
      socket.on('data', (d) => (data += d));
      socket.on('close', () => resolve(Number(data.split(' ')[1])));
      socket.on('error', reject);
    });
  const page = await new Promise((resolve) => {
    http.get({ host: '::1', port, path: '/', headers: { Host: `[::1]:${port}` } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d)).on('end', () => resolve(body));
    });
  });
  const token = page.match(/console-token" content="([^"]+)"/)[1];
  assert.equal(await ask(`[::1]:${port}`, { 'X-Console-Token': token }), 200);
  assert.equal(await ask(`localhost:${port}`, { 'X-Console-Token': token }), 200);
  assert.equal(await ask(`127.0.0.1:${port}`, { 'X-Console-Token': token }), 421);
  assert.equal(await ask(`[::1]:${port}`, { 'X-Console-Token': token, Origin: `http://127.0.0.1:${port}` }), 403);
  for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com', '127.0.0.1 ']) {
    await assert.rejects(startConsoleServer({ host }), /loopback address only/, host);
  }
});

test('any foreign Origin is refused, for every method, before anything reaches Ironic', async () => {
  for (const mode of ['proxy', 'simulator']) {
    const c = await consoleIn(mode);
    const before = c.reached().length;
    const origins = [
      'null',
      'http://evil.com',
      `http://127.0.0.1:${c.port + 1}`,
      `http://localhost:${c.port}`,
      `https://127.0.0.1:${c.port}`,
      `http://127.0.0.1:${c.port}/`,
      `http://127.0.0.1:${c.port}.evil.com`,
      `http://127.0.0.1`,
      'http://127.0.0.1:80',
      '',
      `HTTP://127.0.0.1:${c.port}`,
      [`http://127.0.0.1:${c.port}`, 'http://evil.com'],
      'file://',
      `http://[::1]:${c.port}`,
    ];
    for (const origin of origins) {
      for (const [method, target, body] of [
        ['GET', '/v1/nodes'],
        ['HEAD', '/v1/nodes'],
        ['GET', '/'],
        ['GET', '/app.js'],
        ['GET', '/console.json'],
        ['POST', '/v1/allocations', '{"resource_class": "gold"}'],
        ['DELETE', '/v1/nodes/n1'],
        ['PUT', '/v1/nodes/n1/states/provision', '{"target": "active"}'],
        ['PATCH', '/v1/nodes/n1', '[]'],
        ['OPTIONS', '/v1/allocations'],
      ]) {
        const answer = await c.send(
          method,
          target,
          {
            Origin: origin,
            'X-Console-Token': c.token,
            'Content-Type': 'application/json',
            'Content-Length': body?.length ?? 0,
            'Access-Control-Request-Method': method === 'OPTIONS' ? 'POST' : null,
            'Access-Control-Request-Headers': method === 'OPTIONS' ? 'x-console-token, content-type' : null,
          },
          { body },
        );
        assert.equal(answer.status, 403, `${mode} Origin ${origin} ${method} ${target}`);
        assertSecurityHeaders(answer, `Origin ${origin}`);
        assert.doesNotMatch(answer.body, /console-token|"nodes"/);
      }
    }
    assert.deepEqual(c.reached().slice(before), [], `${mode}: Ironic saw none of them`);
    assert.equal(c.allocations(), 0);
    assert.equal(c.nodes(), 1);

    // Its own origin (as the browser sends it, matching the Host it was loaded from) passes.
    const own = await c.send(
      'POST',
      '/v1/allocations',
      {
        Origin: `http://127.0.0.1:${c.port}`,
        'Sec-Fetch-Site': 'same-origin',
        'X-Console-Token': c.token,
        'Content-Type': 'application/json',
        'Content-Length': 26,
      },
      { body: '{"resource_class": "gold"}' },
    );
    assert.equal(own.status, 201);
    const local = await c.read('/v1/nodes', { Host: `localhost:${c.port}`, Origin: `http://localhost:${c.port}` });
    assert.equal(local.status, 200);
    assert.equal(c.allocations(), 1);
  }
});

test("writes need same-origin fetch metadata and the page's token, in a header, exactly", async () => {
  for (const mode of ['proxy', 'simulator']) {
    const c = await consoleIn(mode);
    const other = await consoleIn('simulator'); // another start: another token
    const before = c.reached().length;
    const body = '{"resource_class": "gold"}';
    const json = { 'Content-Type': 'application/json', 'Content-Length': body.length };
    const refused = [
      ['no token', { ...json }],
      ['empty token', { ...json, 'X-Console-Token': '' }],
      ['wrong token', { ...json, 'X-Console-Token': 'A'.repeat(43) }],
      ['token of another start', { ...json, 'X-Console-Token': other.token }],
      ['token prefix', { ...json, 'X-Console-Token': c.token.slice(0, 42) }],
      ['token and more', { ...json, 'X-Console-Token': `${c.token}x` }],
      ['token twice', { ...json, 'X-Console-Token': [c.token, c.token] }],
      ['token, then a wrong one', { ...json, 'X-Console-Token': [c.token, 'x'] }],
      ['token as a cookie', { ...json, Cookie: `X-Console-Token=${c.token}; console-token=${c.token}` }],
      ['token as Authorization', { ...json, Authorization: `Bearer ${c.token}` }],
      ['token as X-Auth-Token', { ...json, 'X-Auth-Token': c.token }],
      ['cross-site', { ...json, 'X-Console-Token': c.token, 'Sec-Fetch-Site': 'cross-site' }],
      ['same-site (another port)', { ...json, 'X-Console-Token': c.token, 'Sec-Fetch-Site': 'same-site' }],
      ['none (no page)', { ...json, 'X-Console-Token': c.token, 'Sec-Fetch-Site': 'none' }],
      ['framed', { ...json, 'X-Console-Token': c.token, 'Sec-Fetch-Dest': 'iframe' }],
      // The simple cross-origin form posts: no token can come with them.
      ['form, urlencoded', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': body.length }],
      ['form, text/plain', { 'Content-Type': 'text/plain', 'Content-Length': body.length }],
      ['form, multipart', { 'Content-Type': 'multipart/form-data; boundary=x', 'Content-Length': body.length }],
    ];
    for (const [what, headers] of refused) {
      for (const target of ['/v1/allocations', `/v1/allocations?X-Console-Token=${c.token}`, `/v1/allocations?token=${c.token}`]) {
        const answer = await c.send('POST', target, headers, { body });
        assert.equal(answer.status, 403, `${mode}: ${what} ${target}`);
        assertSecurityHeaders(answer, what);
      }
    }
    // The token's header name is case-insensitive like any other; a body must still be JSON.
    const plain = await c.send(
      'POST',
      '/v1/allocations',
      { 'x-console-token': c.token, 'Content-Type': 'text/plain', 'Content-Length': body.length },
      { body },
    );
    assert.equal(plain.status, 415);
    if (mode === 'simulator') {
      // The simulator's control API is a write surface too (scenarios, faults, reset).
      for (const target of ['/__sim/scenario', '/__sim/reset', '/__sim/faults']) {
        const answer = await c.send(
          'POST',
          target,
          { 'Content-Type': 'application/json', 'Content-Length': 12 },
          { body: '{"nodes": []}'.slice(0, 12) },
        );
        assert.equal(answer.status, 403, target);
      }
      assert.equal((await c.send('DELETE', '/__sim/log')).status, 403);
    }
    assert.deepEqual(c.reached().slice(before), [], `${mode}: Ironic saw none of them`);
    assert.equal(c.allocations(), 0);
    assert.equal(c.nodes(), 1);

    const ok = await c.send('POST', '/v1/allocations', { 'X-CONSOLE-TOKEN': c.token, 'Sec-Fetch-Site': 'same-origin', ...json }, { body });
    assert.equal(ok.status, 201);
    assert.equal(c.allocations(), 1);
    // API reads need the token too (a driver's vendor_passthru may act on a GET); pages and files do not.
    assert.equal((await c.send('GET', '/v1/nodes')).status, 403);
    assert.equal((await c.send('HEAD', '/v1')).status, 403);
    assert.equal((await c.send('GET', `/v1/nodes?X-Console-Token=${c.token}`)).status, 403);
    assert.equal((await c.read('/v1/nodes')).status, 200);
    assert.equal((await c.read('/v1/nodes', { 'Sec-Fetch-Site': 'same-origin', 'Sec-Fetch-Mode': 'cors' })).status, 200);
    for (const target of ['/', '/app.js', '/console.json']) assert.equal((await c.send('GET', target)).status, 200, target);
    // Other sites may only navigate to the page.
    for (const [target, mode2, dest, status] of [
      ['/', 'navigate', 'document', 200],
      ['/v1/nodes', 'navigate', 'document', 403],
      ['/v1/nodes', 'cors', 'empty', 403],
      ['/v1/nodes', 'no-cors', 'script', 403],
      ['/app.js', 'no-cors', 'script', 403],
      ['/', 'navigate', 'iframe', 403],
      ['/console.json', 'cors', 'empty', 403],
      ['/pkg/ironic_wait_bg.wasm', 'cors', 'empty', 403],
    ]) {
      for (const site of ['cross-site', 'same-site']) {
        const answer = await c.read(target, { 'Sec-Fetch-Site': site, 'Sec-Fetch-Mode': mode2, 'Sec-Fetch-Dest': dest });
        assert.equal(answer.status, status, `${site} ${mode2} ${dest} ${target}`);
      }
    }
  }
});

test('preflights get no CORS headers, and other methods are refused', async () => {
  for (const mode of ['proxy', 'simulator']) {
    const c = await consoleIn(mode);
    const before = c.reached().length;
    for (const origin of [null, `http://127.0.0.1:${c.port}`, 'http://evil.com']) {
      const answer = await c.send('OPTIONS', '/v1/allocations', {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-console-token',
      });
      assert.equal(answer.status, 403);
      assertSecurityHeaders(answer, `preflight from ${origin}`);
    }
    for (const method of ['OPTIONS', 'TRACE', 'PROPFIND', 'LINK', 'PURGE']) {
      const answer = await c.send(method, '/v1/nodes', { 'X-Console-Token': c.token });
      assert.equal(answer.status, 405, method);
      assertSecurityHeaders(answer, method);
    }
    assert.deepEqual(c.reached().slice(before), [], `${mode}: Ironic saw none of them`);
  }
});

test('request bodies: the limit is exact, larger ones are refused at once, slow ones time out', async () => {
  for (const mode of ['proxy', 'simulator']) {
    // The server's own time limits for the bodies that do come (a loaded
    // machine may take a while over a 1 MiB body); a second server with
    // short ones for the body and the headers that never come.
    const c = await consoleIn(mode);
    const slowServer = await consoleIn(mode, { bodyTimeout: 600, headersTimeout: 800 });
    const write = (body, extra = {}) =>
      c.send(
        'POST',
        '/v1/allocations',
        {
          'X-Console-Token': c.token,
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          ...extra,
        },
        { body },
      );
    // A body of exactly the limit is read and passed on (Ironic refuses the unknown field); one byte more is not.
    const fill = (n) => `{"resource_class": "gold", "x": "${'a'.repeat(n - 35)}"}`;
    assert.equal(fill(MAX_BODY_BYTES).length, MAX_BODY_BYTES);
    const before = c.reached().length;
    const atLimit = await write(fill(MAX_BODY_BYTES));
    assert.equal(atLimit.status, 400);
    assert.equal(c.reached().length, before + 1);
    const over = await write(fill(MAX_BODY_BYTES + 1));
    assert.equal(over.status, 413);
    assert.equal(over.headers.connection[0], 'close');
    assertSecurityHeaders(over, '413');

    // Declared too large: refused before a byte of it is read, even before `100 Continue`.
    const declared = await c.send('POST', '/v1/allocations', {
      'X-Console-Token': c.token,
      'Content-Type': 'application/json',
      'Content-Length': 50 * 2 ** 20,
      Expect: '100-continue',
    });
    assert.equal(declared.status, 413);
    assert.doesNotMatch(declared.text, /100 Continue/);

    // Pages take no body at all: one announced is refused before it comes.
    for (const [method, target] of [
      ['GET', '/'],
      ['POST', '/index.html'],
      ['GET', '/console.json'],
    ]) {
      const answer = await c.send(method, target, { 'X-Console-Token': c.token, 'Content-Length': 10 * 2 ** 20 });
      assert.equal(answer.status, 400, `${method} ${target} with a body`);
    }

    // Chunked past the limit.
    const chunked = await c.send(
      'POST',
      '/v1/allocations',
      {
        'X-Console-Token': c.token,
        'Content-Type': 'application/json',
        'Transfer-Encoding': 'chunked',
        'Content-Length': null,
      },
      { body: `100000\r\n${'a'.repeat(0x100000)}\r\n10\r\n${'b'.repeat(16)}\r\n0\r\n\r\n` },
    );
    assert.equal(chunked.status, 413);

    // A body that stops coming: 408 by the body's own timer (its message names its limit; Node's
    // request timeout, the backstop, would answer a bare 408 later), the connection closed.
    const slow = await slowServer.send(
      'POST',
      '/v1/allocations',
      {
        'X-Console-Token': slowServer.token,
        'Content-Type': 'application/json',
        'Content-Length': 100,
      },
      { body: '{"resource_class": ', timeout: 60_000 },
    );
    assert.equal(slow.status, 408);
    assertSecurityHeaders(slow, '408');
    assert.equal(
      JSON.parse(JSON.parse(slow.body).error_message).faultstring,
      'The request body did not arrive within 0.6 s.',
      'the slow body was cut',
    );
    assert.equal(slow.headers.connection[0], 'close');
    // Headers that never end: Node's headers timeout, answered with the security headers.
    const slowHead = await exchange(slowServer.port, `GET /v1/nodes HTTP/1.1\r\nHost: ${slowServer.host}\r\nX-Slow: 1`, {
      ended: false,
      timeout: 60_000,
    });
    assert.equal(slowHead.status, 408);
    assertSecurityHeaders(slowHead, 'headers timeout');
    assert.deepEqual(slowServer.reached(), [], `${mode}: neither slow request reached Ironic`);
    assert.equal(slowServer.allocations(), 0);

    // Too many or too large headers.
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`X-H${i}`, 'x']));
    const tooMany = await c.send('GET', '/v1/nodes', many);
    assert.equal(tooMany.status, 431);
    assertSecurityHeaders(tooMany, '431 (count)');
    const hidden = await c.send('POST', '/v1/allocations', { ...many, Origin: 'http://evil.com', 'X-Console-Token': c.token });
    assert.equal(hidden.status, 431, 'an Origin past the header limit is not dropped unseen');
    const tooLarge = await c.send('GET', '/v1/nodes', { 'X-Big': 'x'.repeat(20_000) });
    assert.equal(tooLarge.status, 431);
    assertSecurityHeaders(tooLarge, '431 (size)');
    assert.equal(c.allocations(), 0);
    assert.equal(c.reached().length, before + 1, `${mode}: only the body at the limit reached Ironic`);
  }
});

test("a 50 MB body is refused with 413 without growing the server's memory", { timeout: 300_000 }, async () => {
  // The server in a process of its own, so its RSS is its alone.
  const code = `
    import { startConsoleServer } from ${JSON.stringify(new URL('../../www/server.mjs', import.meta.url).href)};
    const server = await startConsoleServer({ scenario: { nodes: [] } });
    process.on('message', async (m) => {
      if (m === 'rss') return process.send({ rss: process.memoryUsage().rss });
      await server.close();
      process.exit(0);
    });
    process.send({ url: server.url });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const [{ url }] = await once(child, 'message');
    const rss = async () => {
      child.send('rss');
      return (await once(child, 'message'))[0].rss;
    };
    const { port, host } = new URL(url);
    const page = await exchange(port, head('GET', '/', { host }));
    const token = page.body.match(/console-token" content="([^"]+)"/)[1];

    /** Sends 50 MB (declared or chunked) whatever the server says, as a hostile client would; resolves to the status. */
    const flood = (chunked) =>
      new Promise((resolve, reject) => {
        const size = 50 * 2 ** 20;
        const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
        const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
        const block = Buffer.alloc(64 * 1024, 'a');
        const piece = chunked ? Buffer.concat([Buffer.from(`${block.length.toString(16)}\r\n`), block, Buffer.from('\r\n')]) : block;
        let sent = 0;
        let data = '';
        const pump = () => {
          while (sent < size && !socket.destroyed) {
            sent += block.length;
            if (!socket.write(piece)) return socket.once('drain', pump);
          }
          if (!socket.destroyed) socket.end(chunked ? '0\r\n\r\n' : '');
        };
        socket.on('connect', () => {
          socket.write(
            `POST /v1/allocations HTTP/1.1\r\nHost: ${host}\r\nX-Console-Token: ${token}\r\n` +
              `Content-Type: application/json\r\n${framing}\r\n\r\n`,
          );
          pump();
        });
        socket.on('data', (d) => (data += d));
        socket.on('error', () => {});
        socket.on('close', () => (data ? resolve(Number(data.split(' ')[1])) : reject(new Error('no answer'))));
      });

    assert.equal(await flood(false), 413); // warm-up: buffers and code paths in place
    const before = await rss();
    for (const chunked of [false, true, false, true]) assert.equal(await flood(chunked), 413);
    const growth = (await rss()) - before;
    // Before the limit, one such body grew the server by ~900 MB.
    assert.ok(growth < 40 * 2 ** 20, `RSS grew by ${(growth / 2 ** 20).toFixed(1)} MB`);
  } finally {
    const exited = once(child, 'exit');
    if (child.connected) child.send('close');
    const timer = setTimeout(() => child.kill(), 5000);
    await exited;
    clearTimeout(timer);
  }
});

test('every kind of answer carries the security headers', async () => {
  const c = await consoleIn('simulator');
  const p = await consoleIn('proxy');
  const dead = await startConsoleServer({ ironicUrl: 'http://127.0.0.1:9' });
  open.push(dead);
  const token = { 'X-Console-Token': c.token };
  const answers = {
    page: [await c.send('GET', '/'), false],
    'page (HEAD)': [await c.send('HEAD', '/'), false],
    script: [await c.send('GET', '/app.js'), false],
    wasm: [await c.send('GET', '/pkg/ironic_wait_bg.wasm'), false],
    'missing file': [await c.send('GET', '/nope.css'), true],
    config: [await c.send('GET', '/console.json'), true],
    'simulator list': [await c.read('/v1/nodes'), true],
    'simulator 404': [await c.read('/v1/nodes/nope'), true],
    'simulator 406': [await c.read('/v1/nodes', { 'X-OpenStack-Ironic-API-Version': '9.99' }), true],
    'simulator write': [
      await c.send(
        'PUT',
        '/v1/nodes/n1/states/provision',
        { ...token, 'Content-Type': 'application/json' },
        { body: '{"target": "active"}' },
      ),
      true,
    ],
    'simulator control': [await c.read('/__sim'), true],
    'proxied list': [await p.read('/v1/nodes'), true],
    'proxied 404': [await p.read('/v1/nodes/nope'), true],
    'proxy 502': [
      await exchange(
        new URL(dead.url).port,
        head(
          'GET',
          '/v1/nodes',
          { host: new URL(dead.url).host },
          {
            'X-Console-Token': await pageToken(new URL(dead.url).port, new URL(dead.url).host),
          },
        ),
      ),
      true,
    ],
    'bad path': [await c.send('GET', '/v1/../x'), true],
    'wrong Host': [await c.send('GET', '/', { Host: 'evil.com' }), true],
    'foreign Origin': [await c.send('GET', '/', { Origin: 'http://evil.com' }), true],
    'no token': [await c.send('POST', '/v1/allocations'), true],
    'static write': [await c.send('POST', '/index.html', token), true],
    'parser error': [await exchange(c.port, 'GET /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked'), true],
    garbage: [await exchange(c.port, '\x16\x03\x01 hello'), true],
  };
  for (const [what, [answer, api]] of Object.entries(answers)) {
    assert.ok(answer.status >= 200, `${what}: answered`);
    assertSecurityHeaders(answer, what, { api });
  }
  assert.equal(answers.page[0].headers['content-security-policy'][0], CSP);
  assert.equal(answers.page[0].headers['cache-control'][0], 'no-store', 'the page holds the token: never stored');
  assert.equal(answers['simulator write'][0].status, 202);
  assert.equal(answers['proxy 502'][0].status, 502);
});

/**
 * A hostile Ironic: answers each path as `routesFor(its url)` scripts it, with
 * headers a proxy must not pass on; records what it got.
 */
async function hostileIronic(routesFor) {
  const seen = [];
  let routes = {};
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    const route = routes[req.url.split('?')[0]] ?? { status: 200 };
    res.writeHead(route.status, {
      'Content-Type': 'application/json',
      'X-OpenStack-Request-Id': 'req-1',
      'X-OpenStack-Ironic-API-Version': '1.99',
      'Set-Cookie': 'session=upstream; Path=/',
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Credentials': 'true',
      'Content-Security-Policy': "script-src 'unsafe-inline' *",
      'X-Frame-Options': 'ALLOWALL',
      'WWW-Authenticate': 'Basic realm="ironic"',
      Refresh: '0; url=http://evil.com/',
      'X-Echo-Auth-Token': req.headers['x-auth-token'] ?? '',
      'X-Echo-Authorization': req.headers.authorization ?? '',
      ...route.headers,
    });
    res.end(route.body ?? '{"nodes": []}');
  });
  const listening = await listen(server, 0, '127.0.0.1');
  const url = `http://127.0.0.1:${listening.port}`;
  routes = routesFor(url);
  return { url, seen, routes, close: () => listening.close() };
}

test("proxy: only an allow-list of Ironic's headers comes back; redirects stay on this origin or are refused", async () => {
  const hostile = await hostileIronic((url) => ({
    '/v1/nodes': { status: 200 },
    '/v1/moved-here': { status: 301, headers: { Location: `${url}/v1/nodes/n1?fields=name` } },
    '/v1/moved-relative': { status: 302, headers: { Location: '/v1/nodes/n2' } },
    '/v1/moved-away': { status: 302, headers: { Location: 'http://evil.com/v1/nodes' } },
    '/v1/moved-out': { status: 307, headers: { Location: `${url}/admin` } },
    '/v1/moved-up': { status: 307, headers: { Location: `${url}/v1/../admin` } },
    '/v1/moved-protocol': { status: 302, headers: { Location: '//evil.com/v1/nodes' } },
    '/v1/created': { status: 201, headers: { Location: 'http://evil.com/steal' } },
    '/v1/accepted': { status: 202, headers: { Location: `${url}/v1/nodes/n1/states` } },
  }));
  open.push(hostile);
  const server = await startConsoleServer({
    ironicUrl: hostile.url.replace('http://', `http://admin:${BASIC_PASSWORD}@`),
    ironicToken: IRONIC_TOKEN,
  });
  open.push(server);
  const { port, host } = new URL(server.url);
  const token = await pageToken(port, host);
  const get = (target) => exchange(port, head('GET', target, { host }, { 'X-Console-Token': token }));

  const list = await get('/v1/nodes');
  assert.equal(list.status, 200);
  assert.deepEqual(Object.keys(list.headers).sort(), [
    'cache-control',
    'connection',
    'content-security-policy',
    'content-type',
    'cross-origin-opener-policy',
    'cross-origin-resource-policy',
    'date',
    'referrer-policy',
    'transfer-encoding',
    'x-content-type-options',
    'x-frame-options',
    'x-openstack-ironic-api-version',
    'x-openstack-request-id',
  ]);
  assert.match(list.headers['content-security-policy'][0], /^default-src 'none'/, "our CSP, not Ironic's");
  assert.equal(list.headers['x-frame-options'][0], 'DENY');
  assert.equal(hostile.seen[0].headers['x-auth-token'], IRONIC_TOKEN, 'Ironic got the token...');
  assert.doesNotMatch(
    list.text,
    new RegExp(`${IRONIC_TOKEN}|${BASIC_PASSWORD}|${Buffer.from(`admin:${BASIC_PASSWORD}`).toString('base64')}`),
    '...the page did not',
  );

  const same = await get('/v1/moved-here');
  assert.equal(same.status, 301);
  assert.deepEqual(same.headers.location, ['/v1/nodes/n1?fields=name'], 'rewritten to this origin');
  assert.deepEqual((await get('/v1/moved-relative')).headers.location, ['/v1/nodes/n2']);
  for (const target of ['/v1/moved-away', '/v1/moved-out', '/v1/moved-up', '/v1/moved-protocol']) {
    const answer = await get(target);
    assert.equal(answer.status, 502, target);
    assert.equal(answer.headers.location, undefined, target);
    assert.doesNotMatch(answer.body, /evil|admin/);
  }
  const created = await get('/v1/created');
  assert.equal(created.status, 201);
  assert.equal(created.headers.location, undefined, 'a Location elsewhere is dropped');
  assert.deepEqual((await get('/v1/accepted')).headers.location, ['/v1/nodes/n1/states']);
  // The proxy followed none of them.
  assert.deepEqual(
    hostile.seen.map((r) => r.url),
    Object.keys(hostile.routes),
  );
});

test("the server's credentials reach Ironic only: never a response, an error or a log line", async () => {
  const logged = [];
  const originals = { log: console.log, error: console.error, warn: console.warn, info: console.info };
  for (const name of Object.keys(originals)) console[name] = (...args) => logged.push(args.join(' '));
  const writeErr = process.stderr.write;
  process.stderr.write = (chunk, ...rest) => {
    logged.push(String(chunk));
    return writeErr.call(process.stderr, chunk, ...rest);
  };
  try {
    const secrets = [IRONIC_TOKEN, BASIC_PASSWORD, Buffer.from(`admin:${BASIC_PASSWORD}`).toString('base64')];
    const answers = [];
    const c = await consoleIn('proxy');
    const ironicUrl = c.ironic.url;
    // Ironic up, down, and a timing-out one; every kind of route and refusal.
    const requests = [
      ['GET', '/'],
      ['GET', '/console.json'],
      ['GET', '/v1'],
      ['GET', '/v1/nodes'],
      ['GET', '/v1/nodes/nope'],
      ['GET', '/v1/../x'],
      ['POST', '/v1/allocations'],
      ['GET', '/', { Host: 'evil' }],
      ['GET', '/v1/nodes', { Origin: 'null' }],
    ];
    const withToken = { 'X-Console-Token': c.token };
    for (const [method, target, extra] of requests) answers.push(await c.send(method, target, { ...withToken, ...extra }));
    const config = JSON.parse(answers[1].body);
    assert.deepEqual(config, { mode: 'proxy', ironic: ironicUrl }, 'the page is told where Ironic is, without credentials');
    await c.ironic.close();
    for (const [method, target] of requests) answers.push(await c.send(method, target, withToken));
    assert.equal(answers.at(-6).status, 502);
    assert.equal(JSON.parse(JSON.parse(answers.at(-6).body).error_message).faultstring, 'The console server cannot reach Ironic.');
    for (const answer of answers) {
      for (const secret of secrets) assert.ok(!answer.text.includes(secret), `a secret in ${answer.text.slice(0, 200)}`);
    }
    for (const line of logged) for (const secret of secrets) assert.ok(!line.includes(secret), `a secret in a log line: ${line}`);
  } finally {
    Object.assign(console, originals);
    process.stderr.write = writeErr;
  }
});

test('the token is new at every start and only ever in the page', async () => {
  const a = await consoleIn('simulator');
  const b = await consoleIn('simulator');
  assert.notEqual(a.token, b.token);
  assert.match(a.token, /^[A-Za-z0-9_-]{43}$/, '32 random bytes');
  for (const target of ['/console.json', '/v1', '/v1/nodes', '/__sim', '/app.js', '/nope']) {
    const answer = await a.read(target);
    assert.ok(answer.status < 400 || target === '/nope', `${target}: ${answer.status}`);
    assert.ok(!answer.text.includes(a.token), `${target} shows the token`);
  }
  // The page: in a meta element, nowhere else.
  const page = await a.send('GET', '/');
  assert.equal(page.text.split(a.token).length, 2);
});
