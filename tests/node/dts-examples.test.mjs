// Every `@example` of the types (js/index.d.ts): each method of IronicClient
// has one; each is type-checked (tsc --strict --checkJs, as a JavaScript user's
// editor checks it) and run as written against a fresh simulator, where it must
// finish without throwing. An example's `client` is a client of that
// simulator; `http://127.0.0.1:6385` in it is the simulator's URL.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startIronic } from './harness.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Inside the package, so that `ironic-wait` resolves to it (its own name).
const DIR = join(ROOT, '.cache', 'dts-examples');
const exec = promisify(execFile);

/** Each `@example` fenced block of the types, with the member it documents. */
function examples() {
  const text = readFileSync(join(ROOT, 'js', 'index.d.ts'), 'utf8');
  const found = [];
  const block = /@example\n\s*\* ```js\n([\s\S]*?)\n\s*\* ```\n\s*\*\/\n\s*(?:export class )?(\w+)/g;
  for (const [, body, member] of text.matchAll(block)) {
    found.push({ member, code: body.replace(/^\s*\* ?/gm, '') });
  }
  return found;
}

/** Every export of the package: an example may use any. */
const EXPORTS = Object.keys(await import('ironic-wait'));

/** The example as a module: `client` given (a block of its own, so that an example may make its own). */
const module = (code, endpoint) =>
  `import { ${EXPORTS.join(', ')} } from 'ironic-wait';\n` +
  `const client = new IronicClient({ endpoint: ${JSON.stringify(endpoint)} });\n` +
  `{\n${code.replaceAll('http://127.0.0.1:6385', endpoint)}\n}\n` +
  `export { client, ${EXPORTS.join(', ')} };\n`;

const all = examples();

test('every method of IronicClient has an @example', () => {
  const text = readFileSync(join(ROOT, 'js', 'index.d.ts'), 'utf8');
  const body = text.slice(text.indexOf('export class IronicClient {'), text.indexOf('export class IronicWaitError'));
  const methods = new Set([...body.matchAll(/^ {2}(\w+)[<(]/gm)].map((m) => m[1]));
  assert.ok(methods.size >= 17, [...methods].join(', '));
  assert.deepEqual(
    [...methods].filter((m) => !all.some((e) => e.member === m)),
    [],
  );
});

test('the examples type-check as a JavaScript user writes them (tsc --strict --checkJs)', async () => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const files = all.map(({ code }, i) => {
    const file = `example-${i}.mjs`;
    writeFileSync(join(DIR, file), module(code, 'http://127.0.0.1:6385'));
    return file;
  });
  const config = { extends: join(ROOT, 'tests', 'tsconfig.strict.json'), compilerOptions: { allowJs: true, checkJs: true }, files };
  writeFileSync(join(DIR, 'tsconfig.json'), JSON.stringify(config));
  const tsc = await exec(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', DIR]).catch((e) => e);
  assert.equal(`${tsc.stdout}${tsc.stderr}`, '');
});

for (const [i, { member, code }] of all.entries()) {
  test(`the example of ${member} runs against the simulator`, async () => {
    const node = (name) => ({ name, provision_state: 'available', power_state: 'power off', resource_class: 'gold' });
    const ironic = await startIronic({
      nodes: ['node-1', 'node-2', 'node-3', 'bad-1', 'slow-1'].map(node),
      transitions: [
        { node: 'bad-1', action: 'deploy', fail: 'No deploy steps returned by the driver' },
        { node: 'slow-1', action: 'deploy', stall: true },
      ],
    });
    try {
      const file = join(DIR, `run-${i}.mjs`);
      mkdirSync(DIR, { recursive: true });
      writeFileSync(file, module(code, ironic.url));
      const run = await exec(process.execPath, [file], { timeout: 60_000 }).catch((e) => e);
      assert.equal(run.stderr, '', run.message);
      assert.equal(run.code ?? 0, 0);
      // An error's example meets that error: what it prints is there, and no `instanceof` said false.
      if (/Error$|^StateTransition/.test(member)) assert.match(run.stdout, /^(?!false)\S/, run.stdout);
    } finally {
      await ironic.close();
    }
  });
}
