// The built package, imported by name as a user would (the root package.json
// names it and maps its `exports`; Node picks the `node` condition), runs
// the real wasm.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import test from 'node:test';
import { version } from 'ironic-wait';

test('version() is the Rust crate version', () => {
  const cargo = readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8');
  const expected = cargo.match(/^\[package\][^[]*?^version = "([^"]+)"/m)[1];
  assert.equal(version(), expected);
});

test('the constructor loads no fetch implementation: Node loads it at the first request', () => {
  // Node's fetch (undici) takes ~20 ms to load; a client that is made and
  // never used must not pay it. A fresh process, so nothing loaded it before.
  const script = `
    const { IronicClient } = await import('ironic-wait');
    new IronicClient({ endpoint: 'http://127.0.0.1:9' });
    const afterConstructor = process.moduleLoadList.some((m) => m.includes('undici'));
    await new IronicClient({ endpoint: 'http://127.0.0.1:9', maxRetries: 0 }).microversion().catch(() => {});
    const afterRequest = process.moduleLoadList.some((m) => m.includes('undici'));
    console.log(JSON.stringify({ afterConstructor, afterRequest }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: new URL('../..', import.meta.url) });
  assert.deepEqual(JSON.parse(out), { afterConstructor: false, afterRequest: true });
});
