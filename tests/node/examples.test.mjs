// The README's example runs as shown.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

test("examples/quickstart.mjs deploys one node and reports the other's failure", () => {
  const out = execFileSync(process.execPath, [new URL('../../examples/quickstart.mjs', import.meta.url).pathname], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.match(out, /^Ironic at http:\/\/127\.0\.0\.1:\d+, API 1\.115$/m);
  assert.match(out, /^web-1: reached in [\d.]+ s$/m);
  assert.match(out, /^web-2: failed in [\d.]+ s: No deploy steps returned by the driver$/m);
  assert.match(
    out,
    /^StateTransitionFailed: Node web-2 failed to reach state active\. It's in state deploy failed, and has error: No deploy steps returned by the driver$/m,
  );
});
