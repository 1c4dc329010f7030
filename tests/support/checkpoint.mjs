// A checkpoint of format 2 read in JS, for tests that look inside one (the
// format: src/client/checkpoint/format.rs). What it does not check, the wasm
// does: this reads only what the core wrote.

import { Buffer } from 'node:buffer';

/** A column: numbers in a string, `n*count` a run of equal ones; absent, `n` zeros. */
export function column(text, n = 0) {
  if (text === undefined) return new Array(n).fill(0);
  return (text === '' ? [] : text.split(',')).flatMap((item) => {
    const [v, count = '1'] = item.split('*');
    return new Array(Number(count)).fill(Number(v));
  });
}

/** Identifiers; a run of UUIDs is one base64 string in a list of its own, 16 bytes a UUID. */
export function idents(list = []) {
  return list.flatMap((item) =>
    typeof item === 'string'
      ? [item]
      : Buffer.from(item[0], 'base64')
          .toString('hex')
          .match(/.{32}/g)
          .map((h) => h.replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-')),
  );
}

/** An outcome's name: an outcome that carries nothing is its name alone. */
export const outcomeName = (o) => (o === null || typeof o === 'string' ? o : o.is);

/**
 * A checkpoint's text (or parsed JSON) with its tables and columns read back:
 * `targets` as { ident, seen: [state, target state, last error] or null,
 * polls, outcome: as written or null, elapsed: ms or null }, `settled` the
 * settled ones with their index `i`, and `puts` as { node, body, outcome }.
 */
export function decodeCheckpoint(text) {
  const cp = typeof text === 'string' ? JSON.parse(text) : text;
  const names = idents(cp.targets);
  const [states, polls, numbers] = [cp.states, cp.polls, cp.settled].map((c) => column(c, names.length));
  const elapsed = column(cp.elapsed, numbers.filter((k) => k > 0).length);
  const targets = names.map((ident, i) => ({
    ident,
    seen: states[i] ? cp.seen[states[i] - 1] : null,
    polls: polls[i],
    outcome: numbers[i] ? cp.outcomes[numbers[i] - 1] : null,
    elapsed: numbers[i] ? elapsed.shift() : null,
  }));
  // Once the wait has begun, an entry "accepted" alone is the next target's PUT; any other PUT's node is in `nodes`.
  const nodes = idents(cp.nodes);
  let waited = 0;
  const puts = column(cp.puts).map((k) => {
    const entry = cp.putTable[k - 1];
    const takesTarget = names.length > 0 && entry === 'accepted';
    const node = takesTarget ? names[waited++] : nodes.shift();
    return typeof entry === 'string' ? { node, outcome: entry } : { node, ...entry };
  });
  const settled = targets.map((t, i) => ({ i, ...t })).filter((t) => t.outcome !== null);
  return { ...cp, targets, settled, puts };
}
