// The caller's side of the edge hosts' HTTP API (edge/waits.mjs), for the
// cloudflare and deno-kv parts: requests with the bearer secret, waits
// posted and read to their end, and the uninterrupted Node run each wait's
// outcome must equal.
import assert from 'node:assert/strict';
import { IronicClient } from 'ironic-wait';

/**
 * `call`, `post` and `finished` against the API at `base()` (a function:
 * a host restarted has a new port), `output()` the host's log for messages.
 */
export function edgeApi({ base, secret: SECRET, output }) {
  /** A request: { status, body, text } (the body parsed when it is JSON). */
  async function call(method, path, { body, secret = SECRET } = {}) {
    const res = await fetch(`${base()}${path}`, {
      method,
      headers: secret === null ? {} : { authorization: `Bearer ${secret}` },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Plain text.
    }
    return { status: res.status, body: parsed, text };
  }

  /** Posts a wait; its id. */
  async function post(method, ...args) {
    const res = await call('POST', '/waits', { body: { method, args } });
    assert.equal(res.status, 201, `POST /waits answered ${res.status}: ${res.text}\n${output()}`);
    return res.body.id;
  }

  /** GET /waits/{id} until done. */
  async function finished(id, ms = 60_000) {
    const end = Date.now() + ms;
    for (;;) {
      const res = await call('GET', `/waits/${id}`);
      assert.equal(res.status, 200, res.text);
      if (res.body.done) return res.body;
      assert.ok(Date.now() < end, `wait ${id} not done after ${ms} ms: ${res.text}\n${output()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  return { call, post, finished };
}

/** Each node's outcome, state and error name: what must match an uninterrupted wait. */
export const outcomes = (report) => (report?.nodes ?? []).map((n) => [n.node, n.outcome, n.state ?? null, n.error?.name ?? null]);

/**
 * Calls in Node on one client with `token` against the `reference`
 * simulator loaded with `scenario`, each begun once the one before has sent
 * its PUTs (as POST /waits answers once they are sent): [{ report, error }].
 */
export async function uninterrupted(reference, token, scenario, calls) {
  reference.load(scenario);
  const client = new IronicClient({ endpoint: reference.url, token });
  const running = [];
  for (const [method, ...args] of calls) {
    const puts = reference.log({ method: 'PUT' }).length + (method === 'provision' ? [args[0]].flat().length : 0);
    running.push(
      client[method](...args).then(
        (report) => ({ report, error: null }),
        (error) => ({ report: error.report ?? null, error }),
      ),
    );
    while (reference.log({ method: 'PUT' }).length < puts) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return Promise.all(running);
}

/** The waits' answers equal the uninterrupted calls': each node's outcome, the error's name and message. */
export function assertSameOutcomes(got, want) {
  for (const [i, g] of got.entries()) {
    assert.deepEqual(outcomes(g.report), outcomes(want[i].report), `wait ${i}: ${JSON.stringify(g)}`);
    assert.equal(g.error?.name ?? null, want[i].error?.name ?? null, `wait ${i}'s error`);
    assert.equal(g.error?.message ?? null, want[i].error?.message ?? null, `wait ${i}'s message`);
  }
}
