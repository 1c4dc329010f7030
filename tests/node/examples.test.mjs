// examples/quickstart.mjs runs as shown, here in the repository (it imports
// the package by its name); tests/runtimes/node.test.mjs runs the installed
// package's copy and the README's first example.

import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { assertQuickstartOutput } from '../support/quickstart.mjs';

test("examples/quickstart.mjs deploys one node and reports the other's failure", () => {
  const out = execFileSync(process.execPath, [new URL('../../examples/quickstart.mjs', import.meta.url).pathname], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assertQuickstartOutput(out);
});
