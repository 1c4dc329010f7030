#!/usr/bin/env node
// `ironic-wait`: python-ironicclient's `baremetal node <action> --wait` and
// `baremetal allocation create --wait`, on the ironic-wait library. Same
// arguments, output, messages and exit codes as `baremetal` (see cli/ and
// the README's "Command line"); run `ironic-wait --help`.
// `ironic-wait sim [flags]` runs the bundled Ironic simulator instead, as
// `node sim/server.mjs` does (sim/README.md); run `ironic-wait sim --help`.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { main } from '../cli/main.mjs';

// A reader that went away (`| head`) ends the program quietly, as it would a shell tool.
for (const stream of [process.stdout, process.stderr]) stream.on('error', (e) => process.exit(e.code === 'EPIPE' ? 0 : 1));

const prog = basename(process.argv[1] ?? 'ironic-wait').replace(/\.(mjs|cjs|js)$/, '');
if (process.argv[2] === 'sim') {
  // baremetal has no `sim` command, so the word cannot mean anything else
  // here. The simulator parses its own flags and serves until SIGINT or
  // SIGTERM; loaded only when asked for.
  const { main: simulate } = await import('../sim/server.mjs');
  await simulate(process.argv.slice(3), { prog: `${prog} sim` });
} else {
  const code = await main(process.argv.slice(2), {
    prog,
    path: process.argv[1],
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    readStdin: () => readFileSync(0, 'utf8'),
  });
  // Leave once everything written has gone out (sockets kept alive would hold the process).
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}
