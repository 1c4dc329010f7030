// The caller's side of the edge hosts' HTTP API (edge/waits.mjs), for the
// cloudflare and deno-kv parts: requests with the bearer secret, waits
// posted and read to their end, and the uninterrupted Node run each wait's
// outcome must equal.
import assert from 'node:assert/strict';
import { IronicClient } from 'ironic-wait';

/**
 * Resolves once `condition()` holds (checked every `every` ms); fails after `ms`, a bound far above
 * the seconds a condition here takes (a loaded machine runs other suites beside this one).
 */
export async function until(condition, what, ms = 120_000, every = 50) {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${typeof what === 'function' ? what() : what}: not so after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

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

  /** GET /waits/{id} until done (a bound of `ms`: the waits here end in seconds). */
  async function finished(id, ms = 180_000) {
    let last;
    await until(
      async () => {
        last = await call('GET', `/waits/${id}`);
        assert.equal(last.status, 200, last.text);
        return last.body.done;
      },
      () => `wait ${id} not done: ${last?.text}\n${output()}`,
      ms,
    );
    return last.body;
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
    await until(() => reference.log({ method: 'PUT' }).length >= puts, `${method}'s PUTs`, 120_000, 5);
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
