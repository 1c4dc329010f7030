// Every HTTP status and error-body shape python-ironicclient tells apart,
// served by the simulator's `status`, `body` and `html` faults, read by
// ironic-wait and by python-ironicclient 6.3 (oracle.py, from the venv of
// scripts/real-ironic.mjs): the messages must be the same, request id aside
// (each side's request has its own). No real Ironic is started here.
//
// What python-ironicclient does with an error answer (common/http.py,
// common/apiclient/exceptions.py): the body is parsed as JSON whatever its
// Content-Type; `error_message` is taken, itself parsed as JSON for its
// `faultstring` (or `description`), else used as it is; but that message is
// used only if the Content-Type starts with `application/json`; otherwise, and
// when there is none, the status's own name ("Not Found"), "HTTP Client Error"
// for another 4xx, "HTTP Server Error" for another 5xx.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IronicClient } from 'ironic-wait';
import { startSimulator } from '../../sim/server.mjs';
import { oracle, withRequestId } from './support.mjs';

const ironicBody = (fault) => ({ error_message: JSON.stringify({ faultcode: 'Client', debuginfo: null, ...fault }) });
const FAULT = ironicBody({ faultstring: 'the faultstring' });

// Every status python-ironicclient has a class for, and some it has not. Not 407: Node's fetch
// refuses a 407 from a server that is not a proxy ("fetch failed"), so no Node client can read one.
const STATUSES = [
  400, 401, 402, 403, 404, 405, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 422, 429, 451, 500, 501, 502, 503, 504, 505, 507,
  599,
];

// Error bodies (on a 400 unless they say otherwise): [label, fault rule].
const SHAPES = [
  ["Ironic's own body", { body: FAULT }],
  ['error_message with a description and no faultstring', { body: ironicBody({ description: 'the description' }) }],
  ['error_message with an empty faultstring and a description', { body: ironicBody({ faultstring: '', description: 'the description' }) }],
  ['error_message with neither faultstring nor description', { body: ironicBody({}) }],
  ['error_message that is not JSON', { body: { error_message: 'plain words' } }],
  ['error_message that is empty', { body: { error_message: '' } }],
  ['a faultstring and a top-level debuginfo', { body: { ...FAULT, debuginfo: 'Traceback ...' } }],
  ['a flat faultstring (no error_message)', { body: { faultstring: 'flat' } }],
  ['a JSON list', { body: [1, 2] }],
  ['a JSON string', { body: '"just a string"' }],
  ['JSON cut short', { body: '{"error_message": "{\\"faultstring\\"' }],
  ['no body', { body: '' }],
  ['plain text', { body: 'something went wrong', contentType: 'text/plain' }],
  ["Ironic's body as text/plain", { body: JSON.stringify(FAULT), contentType: 'text/plain' }],
  ["Ironic's body as text/html", { body: JSON.stringify(FAULT), contentType: 'text/html' }],
  ["Ironic's body with an empty Content-Type", { body: JSON.stringify(FAULT), contentType: '' }],
  ["Ironic's body as application/json; charset=UTF-8", { body: FAULT, contentType: 'application/json; charset=UTF-8' }],
  ["Ironic's body as Application/JSON", { body: FAULT, contentType: 'Application/JSON' }],
  ["Ironic's body as application/vnd.openstack.ironic.v1+json", { body: FAULT, contentType: 'application/vnd.openstack.ironic.v1+json' }],
  ['an HTML error page from a proxy (502)', { kind: 'html', status: 502 }],
  ["Ironic's body on a 500", { body: ironicBody({ faultcode: 'Server', faultstring: 'the faultstring' }), status: 500 }],
  ['error_message with neither, on a 404', { body: ironicBody({}), status: 404 }],
];

// Answers python-ironicclient crashes on (TypeError/AttributeError: no message to compare), all 400s:
// ironic-wait must still give an IronicHttpError with the status.
const CRASHES = [
  ['error_message that is an object', { body: { error_message: { faultstring: 'as object' } } }, 'TypeError'],
  ['error_message that is a number', { body: { error_message: 3 } }, 'TypeError'],
  ['error_message whose JSON is a list', { body: { error_message: '[1]' } }, 'AttributeError'],
  ['error_message whose JSON is null', { body: { error_message: 'null' } }, 'AttributeError'],
  ['a Retry-After on a 400', { kind: 'status', retryAfter: 1 }, 'TypeError'],
];

// Answers of 200 (and 204) that are not a node: the wait's first rule.
const NOT_A_NODE = [
  ['a JSON list', { body: [] }],
  ['JSON null', { body: null }],
  ['a JSON string', { body: '"node"' }],
  ['a JSON number', { body: 3 }],
  ['a node as text/html', { body: JSON.stringify({ provision_state: 'active' }), contentType: 'text/html' }],
  ['a node with an empty Content-Type', { body: JSON.stringify({ provision_state: 'active' }), contentType: '' }],
  ['JSON cut short', { body: '{"provision_state": "act' }],
  ['204 No Content', { body: '', status: 204 }],
];

// One node per case, named after its index; its GETs get the case's answer.
const CASES = [
  ...STATUSES.map((status) => [`${status} with Ironic's body`, { kind: 'status', status, message: `the faultstring of ${status}` }]),
  ...STATUSES.map((status) => [`${status} with no body`, { body: '', status }]),
  ...SHAPES.map(([label, rule]) => [label, { status: 400, ...rule }]),
];

let sim;
before(async () => {
  const names = (prefix, list) => list.map((_, i) => `${prefix}${i}`);
  const all = [...names('c', CASES), ...names('x', CRASHES), ...names('w', NOT_A_NODE), 'v406', 'v406-bare'];
  sim = await startSimulator({ port: 0, scenario: { nodes: all.map((name) => ({ name, provision_state: 'deploying' })) } });
  const rule = (name, r) => ({ node: name, method: 'GET', kind: 'body', ...r });
  sim.faults.add([
    ...CASES.map(([, r], i) => rule(`c${i}`, r)),
    ...CRASHES.map(([, r], i) => rule(`x${i}`, { status: 400, ...r })),
    ...NOT_A_NODE.map(([, r], i) => rule(`w${i}`, { status: 200, ...r })),
    rule('v406', { kind: 'status', status: 406 }),
    rule('v406-bare', { kind: 'status', status: 406, versionHeaders: false }),
  ]);
});
after(() => sim?.close());

const client = () => new IronicClient({ endpoint: sim.url, maxRetries: 0 });

/** ironic-wait's error for each promise, in order (null if it resolved). */
const errorsOf = (promises) =>
  Promise.all(
    promises.map((p) =>
      p.then(
        () => null,
        (e) => e,
      ),
    ),
  );

test("every status and error body: getNode and a wait give python-ironicclient's message", async () => {
  const c = client();
  const names = CASES.map((_, i) => `c${i}`);
  const gets = await errorsOf(names.map((n) => c.getNode(n)));
  // Each wait GETs its own node, as python-ironicclient does: on one
  // client so many waits would otherwise share a list (listThreshold).
  const waits = await errorsOf(names.map((n) => c.waitForProvisionState(n, 'active', { timeout: 5, listThreshold: 1000 })));
  const theirs = await oracle(
    sim.url,
    names.flatMap((n) => [
      { op: 'get', node: n },
      { op: 'wait', nodes: [n], expected: 'active', timeout: 5 },
    ]),
  );
  const mismatches = [];
  for (const [i, [label]] of CASES.entries()) {
    for (const [what, e, py] of [
      ['get', gets[i], theirs[2 * i]],
      ['wait', waits[i], theirs[2 * i + 1]],
    ]) {
      assert.equal(py.ok, false, `${label}: python-ironicclient failed`);
      assert.ok(e, `${label} (${what}): ironic-wait failed`);
      const expected = withRequestId(py.message, e.requestId);
      if (e.name !== 'IronicHttpError' || e.message !== expected) {
        mismatches.push(
          `${label} (${what}):\n  python-ironicclient ${py.type}: ${JSON.stringify(py.message)}\n  ironic-wait ${e.name}: ${JSON.stringify(e.message)}`,
        );
      }
    }
  }
  assert.equal(mismatches.length, 0, `${mismatches.length} of ${CASES.length * 2} differ:\n${mismatches.join('\n')}`);
});

test('bodies python-ironicclient crashes on are still IronicHttpErrors with their status', async () => {
  const c = client();
  const names = CRASHES.map((_, i) => `x${i}`);
  const ours = await errorsOf(names.map((n) => c.getNode(n)));
  const theirs = await oracle(
    sim.url,
    names.map((n) => ({ op: 'get', node: n })),
  );
  for (const [i, [label, , crash]] of CRASHES.entries()) {
    assert.equal(theirs[i].type, crash, `${label}: python-ironicclient crashes (${theirs[i].message})`);
    assert.equal(ours[i]?.name, 'IronicHttpError', `${label}: ${ours[i]?.message}`);
    assert.equal(ours[i].status, 400);
    assert.match(ours[i].message, / \(HTTP 400\) \(Request-ID: req-[^)]+\)$/, label);
  }
});

test("answers that are not a node: the wait fails with python-ironicclient's message", async () => {
  const c = client();
  const names = NOT_A_NODE.map((_, i) => `w${i}`);
  const ours = await errorsOf(names.map((n) => c.waitForProvisionState(n, 'active', { timeout: 5 })));
  const theirs = await oracle(
    sim.url,
    names.map((n) => ({ op: 'wait', nodes: [n], expected: 'active', timeout: 5 })),
  );
  const mismatches = [];
  for (const [i, [label]] of NOT_A_NODE.entries()) {
    assert.equal(theirs[i].ok, false, label);
    if (!ours[i] || ours[i].message !== theirs[i].message) {
      const got = ours[i] ? `${ours[i].name}: ${JSON.stringify(ours[i].message)}` : 'no error: the wait resolved';
      mismatches.push(`${label}:\n  python-ironicclient ${theirs[i].type}: ${JSON.stringify(theirs[i].message)}\n  ironic-wait ${got}`);
    }
  }
  assert.equal(mismatches.length, 0, `${mismatches.length} of ${NOT_A_NODE.length} differ:\n${mismatches.join('\n')}`);
});

test("a 406 for a version inside the range: python-ironicclient's UnsupportedVersion words", async () => {
  // python-ironicclient answers any 406 with GET /v1 and its range: with a version negotiated from
  // 'latest' it says so, with a pinned one it says that one is not supported.
  const mismatches = [];
  for (const microversion of ['latest', '1.38']) {
    const c = new IronicClient({ endpoint: sim.url, maxRetries: 0, microversion });
    const nodes = ['v406', 'v406-bare'];
    const ours = await errorsOf(nodes.map((n) => c.getNode(n)));
    const theirs = await oracle(
      sim.url,
      nodes.map((n) => ({ op: 'get', node: n })),
      { version: microversion },
    );
    for (const [i, node] of nodes.entries()) {
      assert.equal(theirs[i].type, 'UnsupportedVersion', theirs[i].message);
      if (ours[i]?.name !== 'UnsupportedVersionError' || ours[i].message !== theirs[i].message) {
        mismatches.push(
          `${microversion}, ${node === 'v406' ? 'with' : 'without'} version headers:\n  python-ironicclient ${theirs[i].type}: ${JSON.stringify(theirs[i].message)}\n  ironic-wait ${ours[i]?.name}: ${JSON.stringify(ours[i]?.message)}`,
        );
      }
    }
  }
  assert.equal(mismatches.length, 0, `${mismatches.length} of 4 differ:\n${mismatches.join('\n')}`);
});
