// Seeded randomness: everything the simulator draws (UUIDs, request ids,
// step durations, fault fractions, the demo fleet) comes from streams keyed
// by the seed and a label, so a run is reproducible and one stream's use does
// not shift another's.

/** 32-bit FNV-1a over the string forms of `parts`. */
export function hash32(...parts) {
  let h = 0x811c9dc5;
  for (const part of parts) {
    const s = String(part);
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    h ^= 0x1f; // separator, so ('ab','c') differs from ('a','bc')
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A mulberry32 generator: returns a function giving floats in [0, 1). */
export function rng(seed, ...labels) {
  let a = hash32(seed, ...labels);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** 8 hex digits of a 32-bit draw (a table, not toString: 100,000 nodes draw 125,000 UUIDs at load). */
const hex8 = (rand) => {
  const n = Math.floor(rand() * 4294967296);
  return HEX[n >>> 24] + HEX[(n >>> 16) & 0xff] + HEX[(n >>> 8) & 0xff] + HEX[n & 0xff];
};

/** A version-4-shaped UUID drawn from `rand`. */
export function uuidFrom(rand) {
  const a = hex8(rand),
    b = hex8(rand),
    c = hex8(rand),
    d = hex8(rand);
  const variant = ((parseInt(c[0], 16) & 0x3) | 0x8).toString(16);
  const uuid = `${a}-${b.slice(0, 4)}-4${b.slice(5, 8)}-${variant}${c.slice(1, 4)}-${c.slice(4)}${d}`;
  // Reading a character makes V8 flatten the concatenation into one string: ~70 bytes kept instead
  // of ~450 for the tree of pieces (the UUIDs of 100,000 nodes and of every node history row).
  uuid.charCodeAt(0);
  return uuid;
}

/** A fixed number, or a uniformly drawn integer from an inclusive [min, max] range. */
export function draw(spec, rand) {
  if (Array.isArray(spec)) {
    const [lo, hi] = spec;
    return lo + Math.floor(rand() * (hi - lo + 1));
  }
  return spec;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
