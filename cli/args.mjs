// An argument parser with Python argparse's rules and messages (3.11, as in
// the python-ironicclient venv), so that `ironic-wait` refuses the same
// command lines as `baremetal`, with the same usage text and error line:
// options anywhere, unique prefixes of long options, `--opt=value`, `--`,
// `nargs='?'` options that take the next word (so `--wait n1` swallows n1),
// one run of positionals, required options and mutually exclusive groups.
// Only what the CLI uses is here.
import { pyRepr } from './output.mjs';

/** A command line argparse refuses: `usage` and `prog: error: message`, exit 2. */
export class UsageError extends Error {
  constructor(parser, message) {
    super(message);
    this.parser = parser;
  }
}

// Python's int() of a command-line word: ASCII digits, a sign, underscores
// between digits, surrounding whitespace.
const INT = /^\s*[+-]?\d+(?:_\d+)*\s*$/;
export const TYPES = {
  int: (s) => {
    if (!INT.test(s)) return undefined;
    const n = Number(s.replace(/_/g, ''));
    return Number.isSafeInteger(n) ? n : undefined;
  },
  // Python's float() of a word, finite values only (the CLI's own options).
  float: (s) => {
    if (!FLOAT.test(s)) return undefined;
    const n = Number(s.replace(/_/g, '').trim());
    return Number.isFinite(n) ? n : undefined;
  },
};
const FLOAT = /^\s*[+-]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+(?:_\d+)*)?\s*$/;

const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/**
 * One argparse parser. Options: add({ flags, dest, metavar, help, type,
 * nargs ('?' or absent), const, default, required, action ('store',
 * 'store_true', 'append', 'help', 'version'), choices, secret, exactOnly,
 * hidden, usageHidden }).
 * Positionals: addPositional({ dest, metavar, nargs ('+' or absent), help }).
 * `secret` options' values are never quoted back in an error; `exactOnly`
 * options are not matched by a prefix; `hidden` ones are shown nowhere,
 * `usageHidden` ones in the help's list but not in the usage line (an option
 * of ours on a baremetal command, whose usage text must stay baremetal's).
 */
export class Parser {
  constructor({ prog, description = '', epilog = '', addHelp = true }) {
    this.prog = prog;
    this.description = description;
    this.epilog = epilog;
    this.optionals = [];
    this.positionals = [];
    this.groups = [];
    if (addHelp) this.add({ flags: ['-h', '--help'], action: 'help', help: 'show this help message and exit' });
  }

  add(spec, group = null) {
    const action = {
      action: 'store',
      dest:
        spec.flags
          .find((f) => f.startsWith('--'))
          ?.slice(2)
          .replace(/-/g, '_') ?? spec.flags[0].slice(1),
      ...spec,
      group,
    };
    if (action.action === 'store_true' && !('default' in spec)) action.default = false;
    this.optionals.push(action);
    if (group) group.actions.push(action);
    return action;
  }

  addPositional(spec) {
    const action = { action: 'store', positional: true, ...spec };
    this.positionals.push(action);
    return action;
  }

  /** A mutually exclusive group; `required`: one of its options must be given. */
  addGroup({ required = false } = {}) {
    const group = { required, actions: [], add: (spec) => this.add(spec, group) };
    this.groups.push(group);
    return group;
  }

  error(message) {
    throw new UsageError(this, message);
  }

  /** parse_args: everything must be understood. */
  parse(args) {
    const { values, extras } = this.parseKnown(args);
    if (extras.length) this.error(`unrecognized arguments: ${maskSecrets(extras).join(' ')}`);
    return values;
  }

  /** parse_known_args: [values, words not understood, in order]. */
  parseKnown(args) {
    const values = {};
    for (const a of [...this.optionals, ...this.positionals]) {
      if (a.action !== 'help' && a.action !== 'version') values[a.dest] = a.default;
    }
    const extras = [];
    const seen = new Set();
    const seenNonDefault = new Set();

    // Classify every word: an option (O, with the action and an explicit
    // `=value` if any), or an argument (A). After `--` everything is A.
    const kinds = [];
    let dashdash = -1;
    for (const [i, word] of args.entries()) {
      if (dashdash >= 0) {
        kinds.push({ kind: 'A' });
      } else if (word === '--') {
        dashdash = i;
        kinds.push({ kind: '--' });
      } else {
        const option = this.classify(word);
        kinds.push(option ? { kind: 'O', ...option } : { kind: 'A' });
      }
    }

    const take = (action, raw, optionName) => {
      let value = raw;
      if (action.type && typeof raw === 'string') {
        value = TYPES[action.type](raw);
        if (value === undefined) {
          const shown = action.secret ? "'***'" : pyRepr(raw);
          this.error(`argument ${optionName}: invalid ${action.type} value: ${shown}`);
        }
      }
      if (action.choices && !action.choices.includes(value)) {
        this.error(
          `argument ${optionName}: invalid choice: ${pyRepr(String(value))} (choose from ${action.choices.map((c) => pyRepr(c)).join(', ')})`,
        );
      }
      return value;
    };
    const record = (action, value, optionName) => {
      // argparse checks the group when the value differs from the default.
      if (value !== action.default) {
        seenNonDefault.add(action);
        for (const other of action.group?.actions ?? []) {
          if (other !== action && seenNonDefault.has(other)) {
            this.error(`argument ${optionName}: not allowed with argument ${nameOf(other)}`);
          }
        }
      }
      seen.add(action);
      if (action.action === 'append') (values[action.dest] ??= []).push(value);
      else values[action.dest] = value;
    };

    let positionalsLeft = [...this.positionals];
    const isArg = (k) => k && k.kind === 'A';
    let i = 0;
    while (i < args.length) {
      const k = kinds[i];
      if (k.kind === '--') {
        // A parser without positionals (the global one) passes it on, as
        // parse_known_args does, so that the command's parser still sees it.
        if (!this.positionals.length) extras.push('--');
        i++;
        continue;
      }
      if (k.kind === 'A') {
        // A run of arguments: the positionals still expected take as many
        // as they can (argparse matches them all against this one run).
        let end = i;
        while (end < args.length && (kinds[end].kind === 'A' || kinds[end].kind === '--')) end++;
        const run = args.slice(i, end).filter((_, j) => kinds[i + j].kind === 'A');
        const consumed = this.matchPositionals(positionalsLeft, run);
        let used = 0;
        for (const { action, count } of consumed) {
          const words = run.slice(used, used + count);
          used += count;
          const value = action.nargs === '+' ? words.map((w) => take(action, w, nameOf(action))) : take(action, words[0], nameOf(action));
          record(action, value, nameOf(action));
        }
        positionalsLeft = positionalsLeft.filter((p) => !consumed.some((c) => c.action === p));
        // Without positionals (the global parser) a `--` inside the run is passed on too.
        extras.push(...(this.positionals.length ? run.slice(used) : args.slice(i, end)));
        i = end;
        continue;
      }
      // An option.
      const { action, explicit } = k;
      if (!action) {
        extras.push(args[i]);
        i++;
        continue;
      }
      if (action.action === 'help') throw Object.assign(new Error('help'), { help: this });
      if (action.action === 'version') throw Object.assign(new Error('version'), { version: action.version });
      if (action.action === 'store_true') {
        if (explicit !== undefined) this.error(`argument ${nameOf(action)}: ignored explicit argument ${pyRepr(explicit)}`);
        record(action, true, nameOf(action));
        i++;
        continue;
      }
      if (explicit !== undefined) {
        record(action, take(action, explicit, nameOf(action)), nameOf(action));
        i++;
        continue;
      }
      const next = kinds[i + 1];
      if (action.nargs === '?') {
        if (isArg(next)) {
          record(action, take(action, args[i + 1], nameOf(action)), nameOf(action));
          i += 2;
        } else {
          record(action, action.const, nameOf(action));
          i++;
        }
        continue;
      }
      if (!isArg(next)) this.error(`argument ${nameOf(action)}: expected one argument`);
      record(action, take(action, args[i + 1], nameOf(action)), nameOf(action));
      i += 2;
    }

    const missing = [...this.optionals.filter((a) => a.required && !seen.has(a)), ...positionalsLeft].map(nameOf);
    if (missing.length) this.error(`the following arguments are required: ${missing.join(', ')}`);
    for (const group of this.groups) {
      if (group.required && !group.actions.some((a) => seen.has(a))) {
        this.error(`one of the arguments ${group.actions.map(nameOf).join(' ')} is required`);
      }
    }
    return { values, extras };
  }

  // argparse's _parse_optional: is this word an option, and which?
  classify(word) {
    if (!word.startsWith('-') || word === '-') return null;
    const exact = this.optionals.find((a) => a.flags.includes(word));
    if (exact) return { action: exact, word };
    const eq = word.indexOf('=');
    if (eq > 0) {
      const action = this.optionals.find((a) => a.flags.includes(word.slice(0, eq)));
      if (action) return { action, word: word.slice(0, eq), explicit: word.slice(eq + 1) };
    }
    // Unique prefixes of long options (allow_abbrev), and short options
    // with their value attached (-fjson).
    if (word.startsWith('--')) {
      const [head, value] = eq > 0 ? [word.slice(0, eq), word.slice(eq + 1)] : [word, undefined];
      const matches = [];
      for (const a of this.optionals) {
        for (const f of a.flags) if (f.startsWith('--') && f.startsWith(head) && !a.exactOnly) matches.push({ action: a, flag: f });
      }
      if (matches.length > 1) {
        this.error(`ambiguous option: ${head} could match ${matches.map((m) => m.flag).join(', ')}`);
      }
      if (matches.length === 1) return { action: matches[0].action, word: matches[0].flag, explicit: value };
    } else if (word.length > 2) {
      const action = this.optionals.find((a) => a.flags.includes(word.slice(0, 2)));
      if (action && action.action !== 'store_true') return { action, word: word.slice(0, 2), explicit: word.slice(2) };
    }
    if (NEGATIVE_NUMBER.test(word)) return null;
    if (word.includes(' ')) return null;
    return { action: null, word };
  }

  // Greedy, in order, as argparse's regular expression does: each positional
  // takes what it can while leaving enough for the ones after it.
  matchPositionals(positionals, run) {
    const out = [];
    let left = run.length;
    for (let p = 0; p < positionals.length; p++) {
      const action = positionals[p];
      const need = (a) => (a.nargs === '+' ? 1 : a.nargs === '*' ? 0 : 1);
      const after = positionals.slice(p + 1).reduce((n, a) => n + need(a), 0);
      if (left < need(action) + after && action.nargs !== '*') break;
      const count = action.nargs === '+' ? left - after : action.nargs === '*' ? Math.max(0, left - after) : 1;
      out.push({ action, count });
      left -= count;
    }
    return out;
  }

  // ------------------------------------------------------------- usage
  /** argparse's format_usage(), at `width` columns (COLUMNS - 2). */
  formatUsage(width = helpWidth()) {
    const prefix = 'usage: ';
    const grouped = new Set();
    const optParts = [];
    for (const a of this.optionals) {
      if (a.hidden || a.usageHidden || grouped.has(a)) continue;
      if (a.group) {
        const members = a.group.actions.filter((m) => !m.hidden);
        for (const m of members) grouped.add(m);
        const inner = members.map((m) => optionUsage(m)).join(' | ');
        optParts.push(...splitParts(a.group.required ? `(${inner})` : `[${inner}]`));
        continue;
      }
      const text = optionUsage(a);
      optParts.push(...splitParts(a.required ? text : `[${text}]`));
    }
    const posParts = this.positionals.flatMap((p) => splitParts(positionalUsage(p)));
    const usage = [this.prog, ...optParts, ...posParts].join(' ');
    if (prefix.length + usage.length <= width) return `${prefix}${usage}\n`;

    const getLines = (parts, indent, withPrefix) => {
      const lines = [];
      let line = [];
      let lineLen = withPrefix ? prefix.length - 1 : indent.length - 1;
      for (const part of parts) {
        if (lineLen + 1 + part.length > width && line.length) {
          lines.push(indent + line.join(' '));
          line = [];
          lineLen = indent.length - 1;
        }
        line.push(part);
        lineLen += part.length + 1;
      }
      if (line.length) lines.push(indent + line.join(' '));
      if (withPrefix) lines[0] = lines[0].slice(indent.length);
      return lines;
    };
    let lines;
    if (prefix.length + this.prog.length <= 0.75 * width) {
      const indent = ' '.repeat(prefix.length + this.prog.length + 1);
      if (optParts.length) {
        lines = getLines([this.prog, ...optParts], indent, true);
        lines.push(...getLines(posParts, indent, false));
      } else if (posParts.length) {
        lines = getLines([this.prog, ...posParts], indent, true);
      } else {
        lines = [this.prog];
      }
    } else {
      const indent = ' '.repeat(prefix.length);
      const parts = [...optParts, ...posParts];
      lines = [this.prog, ...getLines(parts, indent, false)];
    }
    return `${prefix}${lines.join('\n')}\n`;
  }

  /** argparse's format_help(): usage, description, arguments, epilog. */
  formatHelp(width = helpWidth()) {
    const out = [this.formatUsage(width).trimEnd(), ''];
    if (this.description) out.push(...wrap(this.description, width), '');
    const maxHelpPosition = Math.min(24, Math.max(width - 20, 11 * 2));
    // One help column for every section, as argparse aligns them.
    const invocation = (a) => (a.positional ? (a.metavar ?? a.dest) : optionInvocation(a));
    const shown = [...this.positionals, ...this.optionals.filter((a) => !a.hidden)];
    const helpPosition = Math.min(Math.max(...shown.map((a) => invocation(a).length + 4)), maxHelpPosition);
    const section = (title, actions) => {
      if (!actions.length) return;
      out.push(`${title}:`);
      actions.forEach((a) => {
        const head = `  ${invocation(a)}`;
        const helpLines = a.help ? wrap(a.help.replace(/%\(default\)s/g, String(a.default)), width - helpPosition) : [];
        if (!helpLines.length) out.push(head);
        else if (head.length + 2 <= helpPosition)
          out.push(head.padEnd(helpPosition) + helpLines[0], ...helpLines.slice(1).map((l) => ' '.repeat(helpPosition) + l));
        else out.push(head, ...helpLines.map((l) => ' '.repeat(helpPosition) + l));
      });
      out.push('');
    };
    section('positional arguments', this.positionals);
    section(
      'options',
      this.optionals.filter((a) => !a.hidden),
    );
    if (this.epilog) {
      for (const paragraph of this.epilog.split('\n\n')) out.push(...paragraph.split('\n').flatMap((l) => (l ? wrap(l, width) : [''])), '');
    }
    return `${out.join('\n').trimEnd()}\n`;
  }
}

// A misspelt secret option (`--rescue-pasword x`) is not known, so argparse
// would quote its value back: the word after an option whose name says
// password (or pasword), secret or token is masked instead.
export function maskSecrets(words) {
  return words.map((w, i) =>
    i > 0 && /^-.*(pass|pasw|pwd|secret|token)/i.test(words[i - 1]) && !words[i - 1].includes('=')
      ? '***'
      : w.replace(/^(-[^=]*(?:pass|pasw|pwd|secret|token)[^=]*=).*$/i, '$1***'),
  );
}

/** The name argparse uses for an argument in errors: the flags, or the metavar. */
export function nameOf(action) {
  if (action.positional) return action.metavar ?? action.dest;
  return action.flags.join('/');
}

function metavarOf(action) {
  return action.metavar ?? action.dest.toUpperCase();
}

function optionUsage(a) {
  const flag = a.flags[0];
  if (a.action === 'store_true' || a.action === 'help' || a.action === 'version') return flag;
  const metavar = a.choices && !a.metavar ? `{${a.choices.join(',')}}` : metavarOf(a);
  return a.nargs === '?' ? `${flag} [${metavar}]` : `${flag} ${metavar}`;
}

function optionInvocation(a) {
  if (a.action === 'store_true' || a.action === 'help' || a.action === 'version') return a.flags.join(', ');
  const metavar = a.choices && !a.metavar ? `{${a.choices.join(',')}}` : metavarOf(a);
  const arg = a.nargs === '?' ? `[${metavar}]` : metavar;
  return a.flags.map((f) => `${f} ${arg}`).join(', ');
}

function positionalUsage(p) {
  const m = p.metavar ?? p.dest;
  return p.nargs === '+' ? `${m} [${m} ...]` : m;
}

// argparse's part_regexp: bracketed and parenthesised groups stay whole,
// anything else splits at spaces.
function splitParts(text) {
  return text.match(/\(.*?\)+(?=\s|$)|\[.*?\]+(?=\s|$)|\S+/g) ?? [];
}

/** textwrap.wrap of one paragraph (whitespace collapsed). */
export function wrap(text, width) {
  const words = text.split(/\s+/).filter(Boolean);
  const lines = [];
  let line = '';
  for (const word of words) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** argparse's width: COLUMNS or the terminal's, minus 2 (80 - 2 otherwise). */
export function helpWidth(stream = process.stdout) {
  const columns = Number.parseInt(process.env.COLUMNS ?? '', 10);
  const total = columns > 0 ? columns : stream.isTTY && stream.columns ? stream.columns : 80;
  return Math.max(total - 2, 11);
}
