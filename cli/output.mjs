// What the CLI prints: cliff's ShowOne formats (table, value, json, shell,
// yaml) of an allocation as `baremetal` prints them, Python's str() of the
// values in them, and the progress of a wait on stderr.
import { stringify as yamlStringify } from 'yaml';

/** Python's repr() of a value JSON.parse made (a str in a list is quoted), as argparse and cliff print it. */
export function pyRepr(value) {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pyFloat(value);
  if (typeof value === 'string') return pyStrRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(value)
    .map(([k, v]) => `${pyStrRepr(k)}: ${pyRepr(v)}`)
    .join(', ')}}`;
}

/** Python's str(): a str as is, anything else as repr(). */
export function pyStr(value) {
  return typeof value === 'string' ? value : pyRepr(value);
}

function pyFloat(n) {
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : n < 0 ? '-inf' : 'nan';
  // Python writes exponents with two digits at least (1e-07, 1e+21).
  return String(n).replace(/e([+-])(\d)$/, 'e$10$2');
}

function pyStrRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0);
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return quote + out + quote;
}

/** The fields `baremetal allocation create` shows, in its order (resource_fields.py). */
export const ALLOCATION_FIELDS = [
  'uuid',
  'name',
  'state',
  'owner',
  'node_uuid',
  'last_error',
  'resource_class',
  'traits',
  'candidate_nodes',
  'extra',
  'created_at',
  'updated_at',
];

export const FORMATS = ['json', 'shell', 'table', 'value', 'yaml'];

/**
 * cliff's ShowOne output of `columns` (names) and `data` (values, in the
 * same order) with the formatter options: format, columns (-c), noindent,
 * prefix. Returns the text, or throws a message for unknown columns.
 */
export function formatShowOne(columns, data, { format = 'table', only = [], noindent = false, prefix = '' } = {}) {
  let pairs = columns.map((c, i) => [c, data[i]]);
  if (only.length) {
    pairs = pairs.filter(([c]) => only.includes(c));
    if (!pairs.length) {
      throw new Error(`No recognized column names in ${pyRepr(only)}. Recognized columns are ${pyRepr(columns)}.`);
    }
  }
  switch (format) {
    case 'value':
      return pairs.map(([, v]) => `${pyStr(v)}\n`).join('');
    case 'shell':
      return pairs.map(([c, v]) => `${prefix}${c.replace(/[^a-zA-Z0-9_]/g, '_')}="${pyStr(v).replace(/"/g, '\\"')}"\n`).join('');
    case 'json':
      return `${pythonJson(Object.fromEntries(pairs), noindent ? null : 2)}\n`;
    case 'yaml':
      // As cliff writes it with PyYAML: keys in column order, YAML 1.1 (timestamps
      // quoted), single quotes, lists not indented; long strings fold at
      // other points (PyYAML breaks at the first space past column 80).
      return yamlStringify(Object.fromEntries(pairs), {
        version: '1.1',
        singleQuote: true,
        indentSeq: false,
        lineWidth: 80,
        minContentWidth: 0,
      });
    default:
      return table([['Field', 'Value'], ...pairs.map(([c, v]) => [c, pyStr(v)])]);
  }
}

/** json.dumps as Python writes it: ASCII only; `indent` null = one line with ', ' and ': '. */
export function pythonJson(value, indent) {
  const text = indent ? JSON.stringify(value, null, indent) : oneLine(value);
  return text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function oneLine(value) {
  if (Array.isArray(value)) return `[${value.map(oneLine).join(', ')}]`;
  if (value && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${oneLine(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}

/** prettytable as cliff draws it: a header row, left-aligned, one line per line of a cell. */
export function table(rows) {
  const split = rows.map((row) => row.map((cell) => String(cell).split('\n')));
  const widths = rows[0].map((_, c) => Math.max(...split.flatMap((row) => row[c].map((l) => l.length))));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`;
  const draw = (row) => {
    const height = Math.max(...row.map((lines) => lines.length));
    let out = '';
    for (let l = 0; l < height; l++) out += `|${row.map((lines, c) => ` ${(lines[l] ?? '').padEnd(widths[c])} `).join('|')}|\n`;
    return out;
  };
  return rule + draw(split[0]) + rule + split.slice(1).map(draw).join('') + rule;
}

// ------------------------------------------------------------------ progress

const fmtSeconds = (s) => `${s.toFixed(1)}s`;

/**
 * The progress of a wait on stderr. On a terminal: a live block, one line
 * per node (state and time since the wait began; a summary line instead past
 * `maxLines` nodes), redrawn at most 5 times a second and every second for
 * the clock. Otherwise (a CI log): a plain line when a node's state changes
 * or it settles; past `maxLines` nodes, a summary line when the counts change,
 * at most every 10 s, and a line for each node that settles other than
 * reached. Never writes to stdout.
 */
export class Progress {
  constructor({ stream = process.stderr, targets, quiet = false, maxLines = 20, now = () => performance.now() }) {
    this.stream = stream;
    this.quiet = quiet;
    this.live = !quiet && Boolean(stream.isTTY);
    this.targets = targets;
    this.many = targets.length > maxLines;
    this.nodes = new Map(targets.map((t) => [t, { state: null, outcome: null, elapsed: 0 }]));
    this.now = now;
    this.started = now();
    this.drawn = 0;
    this.lastSummary = '';
    this.lastSummaryAt = -Infinity;
    if (this.live) {
      this.timer = setInterval(() => this.draw(), 1000);
      this.timer.unref?.();
    }
  }

  /** The library's onProgress. */
  event = (e) => {
    if (this.quiet) return;
    const id = e.node ?? e.allocation;
    const entry = this.nodes.get(id);
    if (!entry) return;
    const changed = entry.state !== e.state || (e.done && !entry.outcome);
    entry.state = e.state;
    entry.elapsed = e.elapsed;
    if (e.done) entry.outcome = e.outcome;
    if (this.live) return this.scheduleDraw();
    if (!changed) return;
    if (!this.many) {
      const suffix = e.done ? ` (${e.outcome})` : '';
      this.stream.write(`${fmtSeconds(e.elapsed).padStart(7)} ${id}: ${e.state ?? '-'}${suffix}\n`);
      return;
    }
    if (e.done && e.outcome !== 'reached')
      this.stream.write(`${fmtSeconds(e.elapsed).padStart(7)} ${id}: ${e.state ?? '-'} (${e.outcome})\n`);
    const summary = this.summary();
    const at = this.now();
    if (summary !== this.lastSummary && (at - this.lastSummaryAt >= 10_000 || this.settled())) {
      this.lastSummary = summary;
      this.lastSummaryAt = at;
      this.stream.write(`${fmtSeconds((at - this.started) / 1000).padStart(7)} ${summary}\n`);
    }
  };

  settled() {
    return [...this.nodes.values()].every((n) => n.outcome);
  }

  summary() {
    const counts = new Map();
    for (const n of this.nodes.values()) {
      const key = n.outcome ?? n.state ?? 'waiting';
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  }

  scheduleDraw() {
    if (this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = null;
      this.draw();
    }, 200);
    this.pending.unref?.();
  }

  draw() {
    if (!this.live) return;
    const elapsed = (this.now() - this.started) / 1000;
    const lines = this.many
      ? [`${fmtSeconds(elapsed)} ${this.summary()}`]
      : this.targets.map((t) => {
          const n = this.nodes.get(t);
          const time = n.outcome ? n.elapsed : elapsed;
          return `${t}: ${n.state ?? 'waiting'}${n.outcome ? ` (${n.outcome})` : ''}  ${fmtSeconds(time)}`;
        });
    const width = (this.stream.columns || 80) - 1;
    let out = this.drawn ? `\x1b[${this.drawn}F` : '';
    for (const line of lines) out += `\x1b[2K${line.slice(0, width)}\n`;
    this.stream.write(out);
    this.drawn = lines.length;
  }

  /** The wait is over: a last drawing on a terminal, timers stopped. */
  end() {
    clearInterval(this.timer);
    clearTimeout(this.pending);
    this.pending = null;
    this.draw();
  }
}
