// The built package, imported by name as a user would (the root package.json
// names it and maps its `exports`; Node picks the `node` condition), runs
// the real wasm.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { version } from 'ironic-wait';

test('version() is the Rust crate version', () => {
  const cargo = readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8');
  const expected = cargo.match(/^\[package\][^[]*?^version = "([^"]+)"/m)[1];
  assert.equal(version(), expected);
});
