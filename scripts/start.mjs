// `npm start`: builds pkg/ (what is missing or stale; see build.mjs) and
// serves the console on 127.0.0.1 until Ctrl-C.
//   --fleet N     (`npm start -- --fleet 100000`) the embedded simulator plays a
//                 data centre of N nodes (1 to 1,000,000) in racks, about 1 % of
//                 them starting a provision action every 2 s (www/demo-fleet.mjs);
//                 without it, the 24-node demo fleet
//   PORT          the port (default 8000)
//   IRONIC_URL    proxy /v1 to this Ironic instead of the embedded simulator
//   IRONIC_TOKEN  a Keystone token for it, added by the server (never sent to the page)
//   OS_CACERT     the CA bundle of an https Ironic (and Keystone) with a private CA
//   OS_CLOUD, OS_*  or, without IRONIC_URL, the OpenStack configuration the CLI
//                 reads (cli/config.mjs): the server logs in to Keystone, finds
//                 Ironic in the catalog and proxies with the token, renewed as
//                 the package renews it

import { agentFetch, tlsAgent } from '../cli/tls.mjs';
import { demoFleet } from '../www/demo-fleet.mjs';
import { startConsoleServer } from '../www/server.mjs';
import { main, ROOT, run } from './lib.mjs';

await main('start', async () => {
  // Arguments first: a mistake shows before the build runs.
  const fleet = fleetSize(process.argv.slice(2));
  if (fleet !== undefined && (process.env.IRONIC_URL || Object.keys(process.env).some((name) => name.startsWith('OS_')))) {
    throw new Error('--fleet is for the embedded simulator: unset IRONIC_URL and the OS_* variables, or drop --fleet');
  }
  run(process.execPath, ['scripts/build.mjs'], { cwd: ROOT });

  const port = Number(process.env.PORT ?? 8000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${process.env.PORT}`);
  const upstream =
    fleet === undefined
      ? await ironic(process.env)
      : {
          options: { scenario: demoFleet({ size: fleet }) },
          says: `is the Ironic simulator with a demo fleet of ${fleet.toLocaleString('en')} nodes, about 1 % of them starting a provision action every 2 s`,
        };
  const server = await startConsoleServer({ port, ...upstream.options }).catch((e) => {
    throw e.code === 'EADDRINUSE' ? new Error(`port ${port} is in use: set PORT to another one`) : e;
  });

  console.log(`\nironic-wait console: ${server.url}/`);
  console.log(`  /v1 ${upstream.says}`);
  console.log('  Ctrl-C to stop');

  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, async () => {
      await server.close();
      process.exit(0);
    });
  }
});

/** `--fleet N` (or `--fleet=N`): a whole number of nodes from 1 to 1,000,000; undefined without it. */
function fleetSize(args) {
  let raw;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--fleet') {
      raw = args[++i];
      if (raw === undefined) throw new Error('--fleet needs a number of nodes, e.g. --fleet 100000');
    } else if (arg.startsWith('--fleet=')) {
      raw = arg.slice('--fleet='.length);
    } else {
      throw new Error(`unknown argument ${arg} (known: --fleet N)`);
    }
  }
  if (raw === undefined) return undefined;
  const size = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(size >= 1 && size <= 1_000_000)) throw new Error(`--fleet needs a whole number of nodes from 1 to 1000000, not "${raw}"`);
  return size;
}

/**
 * Where /v1 goes: IRONIC_URL (and IRONIC_TOKEN); else, when any OS_* variable
 * is set, the OpenStack configuration, logged in to now so that a mistake
 * shows at once; else the simulator. `says` describes it without credentials.
 */
async function ironic(env) {
  if (env.IRONIC_URL) {
    const shown = Object.assign(new URL(env.IRONIC_URL), { username: '', password: '' }).href;
    const ironicAgent = env.OS_CACERT ? await tlsAgent({ cacert: env.OS_CACERT, verify: true }) : undefined;
    return {
      options: { ironicUrl: env.IRONIC_URL, ironicToken: env.IRONIC_TOKEN || undefined, ironicAgent },
      says: `goes to ${shown}${env.IRONIC_TOKEN ? ' with the token from IRONIC_TOKEN' : ' (no IRONIC_TOKEN set)'}`,
    };
  }
  if (!Object.keys(env).some((name) => name.startsWith('OS_'))) {
    return { options: {}, says: 'is the Ironic simulator with a demo fleet of 24 nodes (set OS_CLOUD or IRONIC_URL to use a real Ironic)' };
  }
  const { resolveConfig } = await import('../cli/config.mjs');
  const { IronicClient } = await import('ironic-wait');
  const { client: options, cloud, tls } = await resolveConfig({ env });
  // A private CA (or `verify: false`): the login and the proxy both trust it.
  const ironicAgent = tls && (await tlsAgent(tls));
  if (ironicAgent) options.fetch = agentFetch(ironicAgent);
  const client = new IronicClient(options);
  const { endpoint, token } = await client.authenticate();
  const auth = options.auth ?? {};
  // Ironic's own HTTP basic auth goes as IRONIC_URL's credentials do.
  const ironicUrl =
    auth.type === 'http_basic' ? Object.assign(new URL(endpoint), { username: auth.username, password: auth.password }).href : endpoint;
  const from = cloud ? `cloud ${cloud}` : 'the OS_* variables';
  return {
    options: {
      ironicUrl,
      ironicToken: token === null ? undefined : async (refused) => (await client.authenticate({ refused })).token,
      ironicAgent,
    },
    says: `goes to ${endpoint} (${from}${token === null ? '' : ', with a Keystone token the server renews'})`,
  };
}
