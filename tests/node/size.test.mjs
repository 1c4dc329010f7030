// Size budget: what a JS user downloads (the wasm plus the JS in pkg/) must
// stay within the budget in scripts/lib.mjs. Reads the built pkg/ (npm test builds it first).

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import test from 'node:test';
import { BUDGET_GZIP, kb, PKG, pkgSizes } from '../../scripts/lib.mjs';

test('wasm + JS glue fit the gzip budget', () => {
  assert.ok(existsSync(PKG), 'pkg/ is missing: run `npm run build`');
  const { wasm, js, total } = pkgSizes();
  assert.ok(
    total.gzip <= BUDGET_GZIP,
    `over budget: ${kb(total.gzip)} gzip (wasm ${kb(wasm.gzip)} + JS ${kb(js.gzip)}) > ${kb(BUDGET_GZIP)}`,
  );
});
