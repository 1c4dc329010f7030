// What examples/quickstart.mjs prints, checked where the repository runs it
// (tests/node/examples.test.mjs) and where an installed package does
// (tests/runtimes/node.test.mjs).
import assert from 'node:assert/strict';

/** The quickstart's lines: one node deployed, the other's failure, python-ironicclient's sentence. */
export function assertQuickstartOutput(out) {
  assert.match(out, /^Ironic at http:\/\/127\.0\.0\.1:\d+, API 1\.115$/m);
  assert.match(out, /^web-1: reached in [\d.]+ s$/m);
  assert.match(out, /^web-2: failed in [\d.]+ s: No deploy steps returned by the driver$/m);
  assert.match(
    out,
    /^StateTransitionFailed: Node web-2 failed to reach state active\. It's in state deploy failed, and has error: No deploy steps returned by the driver$/m,
  );
}
