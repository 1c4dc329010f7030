// A page on its own origin calling a real Ironic directly (?ironic=URL):
// what works through Ironic's CORS and what does not. The node `cors-1`
// (enroll) was made by the test. The report goes on <body data-report>.
import * as api from 'ironic-wait';

const endpoint = new URL(location.href).searchParams.get('ironic');
const anonymise = (text) => text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>');

/** The value, or the error's name and message (and request id, if any, as a shape). */
async function outcome(fn) {
  try {
    return { value: await fn() };
  } catch (e) {
    const out = { error: e.name, message: anonymise(e.message) };
    if ('requestId' in e) out.requestId = e.requestId === null ? null : anonymise(e.requestId);
    return out;
  }
}

async function nameWith(options) {
  const client = new api.IronicClient({ endpoint, maxRetries: 0, ...options });
  return (await client.getNode('cors-1', { fields: ['name'] })).name;
}

async function run() {
  const client = new api.IronicClient({ endpoint });
  const fields = { fields: ['name', 'provision_state'] };
  return {
    microversion: await outcome(() => client.microversion()),
    listNodes: await outcome(async () => (await client.listNodes(fields)).map((n) => [n.name, n.provision_state])),
    getNode: await outcome(async () => (await client.getNode('cors-1', fields)).provision_state),
    missing: await outcome(() => client.getNode('ghost')),
    manage: await outcome(async () => {
      const report = await client.provision('cors-1', 'manage', { wait: true, timeout: 120, pollInterval: 0.5 });
      return report.nodes.map((n) => [n.node, n.outcome, n.state]);
    }),
    // Request headers a preflight must allow (Ironic runs without auth here and ignores them).
    // A refused preflight is a failed fetch, like a network failure: not retried here, to keep the test short.
    token: await outcome(() => nameWith({ token: 'a-keystone-token' })),
    basicAuth: await outcome(() => nameWith({ basicAuth: { username: 'u', password: 'p' } })),
    requestIdHeader: await outcome(() => nameWith({ headers: { 'X-OpenStack-Request-Id': 'req-00000000-0000-4000-8000-000000000000' } })),
  };
}

run().then(
  (report) => {
    document.body.dataset.report = JSON.stringify(report);
  },
  (e) => {
    document.body.dataset.error = String(e?.stack ?? e);
  },
);
