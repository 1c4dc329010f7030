// A process of tests/node/checkpoints.test.mjs: one call of the built
// package, run apart so that the test can SIGKILL it mid-wait, or so that
// each step of a step loop runs in a process of its own.
//
//   node checkpoint-child.mjs '<spec JSON>'
//
// spec: { mode, url, file, nodes, action, options }
// - mode 'provision': client.provision(nodes, action, { ...options,
//   onCheckpoint }), where onCheckpoint writes each checkpoint to `file`
//   synchronously and atomically (a temporary file renamed over it), then
//   prints `checkpoint N S` (the N-th, with S targets settled; stdout is a
//   pipe: synchronous on Linux);
// - mode 'resume': client.resume(the checkpoint in `file`);
// - mode 'step': client.step(the checkpoint in `file`).
// Each prints `result <JSON>` at the end: { ok: true, value } or
// { ok: false, error }, errors as plain data (name, message, fields).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { IronicClient } from 'ironic-wait';
import { decodeCheckpoint } from '../support/checkpoint.mjs';

const spec = JSON.parse(process.argv[2]);
const client = new IronicClient({ endpoint: spec.url });

/** An Error (or anything) as plain JSON data, reports included. */
function plain(value) {
  if (value instanceof Error) {
    const out = { name: value.name, message: value.message };
    for (const key of Object.keys(value)) out[key] = plain(value[key]);
    return out;
  }
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

const print = (line) => process.stdout.write(`${line}\n`);

let written = 0;
function onCheckpoint(checkpoint) {
  const tmp = `${spec.file}.tmp`;
  writeFileSync(tmp, checkpoint);
  renameSync(tmp, spec.file);
  print(`checkpoint ${++written} ${decodeCheckpoint(checkpoint).settled.length}`);
}

let call;
switch (spec.mode) {
  case 'provision':
    call = client.provision(spec.nodes, spec.action, { ...spec.options, onCheckpoint });
    break;
  case 'resume':
    call = client.resume(readFileSync(spec.file, 'utf8'));
    break;
  case 'step':
    call = client.step(readFileSync(spec.file, 'utf8'));
    break;
  default:
    throw new Error(`unknown mode ${spec.mode}`);
}

try {
  print(`result ${JSON.stringify({ ok: true, value: plain(await call) })}`);
} catch (e) {
  print(`result ${JSON.stringify({ ok: false, error: plain(e) })}`);
}
