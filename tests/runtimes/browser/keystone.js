// A page on its own origin logging in to a real Keystone (?auth=URL, with the
// test's user, password and project) and driving the Ironic its catalog
// names, both through CORS: a wait on the node `kb-1` (enroll, made by the
// test), and a wrong password. The report goes on <body data-report>.
import { IronicClient } from 'ironic-wait';

const given = Object.fromEntries(new URL(location.href).searchParams);
const auth = (password) => ({
  type: 'password',
  authUrl: given.auth,
  username: given.user,
  password,
  userDomainName: 'Default',
  projectName: given.project,
  projectDomainName: 'Default',
});

async function outcome(fn) {
  try {
    return { value: await fn() };
  } catch (e) {
    return { error: e.name, message: e.message, status: e.status ?? null, requestId: e.requestId ?? null };
  }
}

async function run() {
  const client = new IronicClient({ auth: auth(given.password) });
  return {
    manage: await outcome(async () => {
      const report = await client.provision('kb-1', 'manage', { wait: true, timeout: 120, pollInterval: 0.5 });
      return report.nodes.map((n) => [n.node, n.outcome, n.state]);
    }),
    endpoint: await outcome(async () => (await client.authenticate()).endpoint),
    wrongPassword: await outcome(() => new IronicClient({ auth: auth(`${given.password}-not`) }).listNodes()),
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
