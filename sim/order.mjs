// Sorted indexes of nodes for `sort_key` lists: entries ordered by (value,
// id) as the database orders them (SQLite and MySQL: NULL is the smallest
// value), kept in blocks of a few hundred so that a node moving (a new
// provision_updated_at, say) costs a binary search and a short splice,
// not a sort of the fleet. Pages walk the blocks from a bound, forwards for
// `asc` and backwards for `desc`.

const LOAD = 256; // a block splits at 2 * LOAD entries

/**
 * SQL order of two column values: NULL first; booleans as 0/1 (as SQLite
 * and MySQL store them); numbers; strings by code unit (SQLite's BINARY
 * collation for anything below U+10000).
 */
export function compareValues(a, b) {
  if (a === b) return 0;
  if (a == null) return b == null ? 0 : -1;
  if (b == null) return 1;
  const x = typeof a === 'boolean' ? Number(a) : a;
  const y = typeof b === 'boolean' ? Number(b) : b;
  const tx = typeof x;
  const ty = typeof y;
  if (tx !== ty) return tx < ty ? -1 : 1; // never in one column of Ironic's; a total order all the same
  if (tx === 'number' || tx === 'string') return x < y ? -1 : x > y ? 1 : 0;
  return 0;
}

/** The same value for the index (an object or a list compares as its JSON: never sortable in Ironic anyway). */
const sameValue = (a, b) => a === b || (a == null && b == null);

export class SortedIndex {
  /**
   * @param {(node) => any} sortValueOf the node's sort value
   * @param {Iterable} nodes the nodes to file at once
   */
  constructor(sortValueOf, nodes = []) {
    this.sortValueOf = sortValueOf;
    this.entries = new Map(); // node -> { v, id, node }
    const all = [];
    for (const node of nodes) {
      const e = { v: sortValueOf(node), id: node.id, node };
      this.entries.set(node, e);
      all.push(e);
    }
    all.sort((p, q) => compareValues(p.v, q.v) || p.id - q.id);
    this.blocks = [];
    for (let i = 0; i < all.length; i += LOAD) this.blocks.push(all.slice(i, i + LOAD));
  }

  get size() {
    return this.entries.size;
  }

  /** First position whose entry is >= (v, id), or > it when `strict`; { b: blocks.length, i: 0 } past the end. */
  bound(v, id, strict) {
    const blocks = this.blocks;
    const after = (e) => {
      // is e after (v, id) in the order (or equal, unless strict)?
      const c = compareValues(e.v, v) || e.id - id;
      return strict ? c > 0 : c >= 0;
    };
    let lo = 0,
      hi = blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const block = blocks[mid];
      if (after(block[block.length - 1])) hi = mid;
      else lo = mid + 1;
    }
    if (lo === blocks.length) return { b: lo, i: 0 };
    const block = blocks[lo];
    let l = 0,
      h = block.length;
    while (l < h) {
      const mid = (l + h) >> 1;
      if (after(block[mid])) h = mid;
      else l = mid + 1;
    }
    return { b: lo, i: l };
  }

  insert(node) {
    const e = { v: this.sortValueOf(node), id: node.id, node };
    this.entries.set(node, e);
    this.place(e);
  }

  place(e) {
    const blocks = this.blocks;
    if (!blocks.length) {
      blocks.push([e]);
      return;
    }
    let { b, i } = this.bound(e.v, e.id, true);
    if (b === blocks.length) {
      b = blocks.length - 1;
      i = blocks[b].length;
    }
    const block = blocks[b];
    block.splice(i, 0, e);
    if (block.length > 2 * LOAD) blocks.splice(b + 1, 0, block.splice(LOAD));
  }

  remove(node) {
    const e = this.entries.get(node);
    if (!e) return;
    this.entries.delete(node);
    this.unplace(e);
  }

  unplace(e) {
    const { b, i } = this.bound(e.v, e.id, false);
    const block = this.blocks[b];
    if (block?.[i] !== e) throw new Error('sorted index out of step with its nodes');
    block.splice(i, 1);
    if (!block.length) this.blocks.splice(b, 1);
  }

  /** Re-file `node` if its sort value changed. */
  update(node) {
    const e = this.entries.get(node);
    if (!e) return;
    const v = this.sortValueOf(node);
    if (sameValue(v, e.v)) return;
    this.unplace(e);
    e.v = v;
    this.place(e);
  }

  /** The last position (the largest entry), or null when empty. */
  last() {
    const b = this.blocks.length - 1;
    return b < 0 ? null : { b, i: this.blocks[b].length - 1 };
  }

  /** The position before `pos`, or null at the start. */
  previous({ b, i }) {
    if (i > 0) return { b, i: i - 1 };
    return b > 0 ? { b: b - 1, i: this.blocks[b - 1].length - 1 } : null;
  }

  /**
   * Call `visit(entry)` from `pos` (included) onwards (`dir` 1) or backwards
   * (`dir` -1) until it returns true or the index ends.
   */
  walk(pos, dir, visit) {
    if (!pos) return;
    const blocks = this.blocks;
    let { b, i } = pos;
    if (dir > 0) {
      for (; b < blocks.length; b++, i = 0) {
        const block = blocks[b];
        for (; i < block.length; i++) if (visit(block[i])) return;
      }
    } else {
      for (; b >= 0; b--, i = b >= 0 ? blocks[b].length - 1 : 0) {
        const block = blocks[b];
        for (; i >= 0; i--) if (visit(block[i])) return;
      }
    }
  }
}
