// `npm start`: builds pkg/ (what is missing or stale; see build.mjs) and
// serves the console on 127.0.0.1 until Ctrl-C.
//   PORT          the port (default 8000)
//   IRONIC_URL    proxy /v1 to this Ironic instead of the embedded simulator
//   IRONIC_TOKEN  a Keystone token for it, added by the server (never sent to the page)
import { ROOT, run, main } from './lib.mjs';
import { startConsoleServer } from '../www/server.mjs';

await main('start', async () => {
  run(process.execPath, ['scripts/build.mjs'], { cwd: ROOT });

  const port = Number(process.env.PORT ?? 8000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${process.env.PORT}`);
  const ironicUrl = process.env.IRONIC_URL || undefined;
  const server = await startConsoleServer({ port, ironicUrl, ironicToken: process.env.IRONIC_TOKEN || undefined }).catch((e) => {
    throw e.code === 'EADDRINUSE' ? new Error(`port ${port} is in use: set PORT to another one`) : e;
  });

  console.log(`\nironic-wait console: ${server.url}/`);
  // Credentials in IRONIC_URL are not for the terminal either.
  const shown = ironicUrl && Object.assign(new URL(ironicUrl), { username: '', password: '' }).href;
  console.log(ironicUrl
    ? `  /v1 goes to ${shown}${process.env.IRONIC_TOKEN ? ' with the token from IRONIC_TOKEN' : ' (no IRONIC_TOKEN set)'}`
    : '  /v1 is the Ironic simulator with a demo fleet of 24 nodes (set IRONIC_URL to use a real Ironic)');
  console.log('  Ctrl-C to stop');

  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, async () => {
      await server.close();
      process.exit(0);
    });
  }
});
