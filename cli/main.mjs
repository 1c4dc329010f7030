// The command line as cliff runs `baremetal`: global options are taken from
// anywhere on the line first (parse_known_args), the command is the longest
// run of leading words naming one, and the rest goes to its own parser.
// `-h` anywhere shows the command's help (cliff's deferred help).
import { constants as osConstants } from 'node:os';
import { IronicClient, IronicWaitError, version } from 'ironic-wait';
import { helpWidth, maskSecrets, Parser, UsageError } from './args.mjs';
import { COMMANDS, CommandError } from './commands.mjs';
import { ConfigError, OS_FLAGS, resolveConfig } from './config.mjs';
import { Progress } from './output.mjs';
import { agentFetch, tlsAgent } from './tls.mjs';

const GLOBAL_NOTES =
  'Configuration: --os-cloud (clouds.yaml), the OS_* variables and the --os-* options, with ' +
  "python-openstackclient's precedence. Output, messages and exit codes are those of baremetal (1: the action or " +
  'the wait failed; 2: a usage error; 130 or 143: stopped by Ctrl-C or SIGTERM, after which nothing more is sent and a --checkpoint file holds the wait). Unlike ' +
  'baremetal: a --wait timeout ends at its deadline; a negative timeout is refused before anything is sent; an ' +
  'unusable answer from Ironic is an error naming the node and field instead of a traceback; Retry-After is ' +
  'honoured; redirects are not followed; PUTs go out up to 8 at a time; progress is shown on stderr (-q hides ' +
  'it); --json prints the wait report on stdout; --settle all waits for every node and reports every failure; ' +
  '--checkpoint FILE saves the wait as it goes, and `resume FILE` goes on with it in another process. ' +
  '`sim` runs the bundled Ironic simulator as a server for tests (`sim --help`).';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'];

function globalParser(prog) {
  const parser = new Parser({
    prog,
    description: 'Wait for OpenStack Ironic, like baremetal --wait.',
    epilog: GLOBAL_NOTES,
    addHelp: false,
  });
  parser.add({ flags: ['--version'], action: 'version', version: `${prog} ${version()}`, help: "show program's version number and exit" });
  const verbosity = parser.addGroup();
  verbosity.add({ flags: ['-v', '--verbose'], action: 'store_true', help: 'accepted for baremetal compatibility' });
  verbosity.add({ flags: ['-q', '--quiet'], action: 'store_true', help: 'no progress on stderr' });
  parser.add({ flags: ['-h', '--help'], dest: 'help', action: 'store_true', help: 'show help message and exit' });
  for (const f of OS_FLAGS) {
    parser.add({
      flags: [f.flag],
      dest: `os:${f.key}`,
      metavar: f.metavar ?? '<value>',
      secret: f.secret,
      help: f.help ?? `(Env: ${f.env})`,
    });
  }
  const verification = parser.addGroup();
  verification.add({ flags: ['--verify'], action: 'store_true', help: 'Verify server certificate (default)' });
  verification.add({ flags: ['--insecure'], action: 'store_true', help: 'Disable server certificate verification' });
  parser.add({
    flags: ['--max-retries'],
    metavar: '<max-retries-number>',
    type: 'int',
    help: 'Maximum number of retries on connection problems and resource state conflicts',
  });
  parser.add({
    flags: ['--retry-interval'],
    metavar: '<retry-interval-seconds>',
    type: 'int',
    help: 'Interval in seconds between two retries',
  });
  // ironic-wait's own global options answer to their full names only: a prefix
  // such as --se (for a command's --service-steps) must reach the command, as
  // it does with baremetal.
  parser.add({
    flags: ['--json'],
    action: 'store_true',
    exactOnly: true,
    help: 'print the wait report (or the allocation) as JSON on stdout, and nothing else there',
  });
  parser.add({
    flags: ['--checkpoint'],
    exactOnly: true,
    metavar: '<file>',
    help: 'save the wait as it goes to this file (written whole and renamed; no credential in it), for `resume <file>` to go on from after a restart',
  });
  parser.add({
    flags: ['--settle'],
    exactOnly: true,
    choices: ['first-failure', 'all'],
    default: 'first-failure',
    help: "first-failure (default, as baremetal): stop at the first failure; all: wait for every node and report each one's outcome",
  });
  return parser;
}

function commandList() {
  return COMMANDS.map((c) => `  ${c.words.join(' ').padEnd(20)}${c.summary}`).join('\n');
}

/**
 * Runs one command line; resolves to the exit code. io: { prog, path (the
 * program as started, for the messages that name it so), env, stdout,
 * stderr, readStdin }.
 */
export async function main(argv, { prog, path, env, stdout, stderr, readStdin }) {
  const out = (text) => stdout.write(text);
  const err = (text) => stderr.write(text);
  const usageError = (e) => {
    err(e.parser.formatUsage(helpWidth(stderr)));
    err(`${e.parser.prog}: error: ${e.message}\n`);
    return 2;
  };

  const global = globalParser(prog);
  let options;
  let rest;
  try {
    ({ values: options, extras: rest } = global.parseKnown(argv));
  } catch (e) {
    if (e instanceof UsageError) return usageError(e);
    if (e.version) {
      out(`${e.version}\n`);
      return 0;
    }
    throw e;
  }

  // The command: the longest run of leading words that names one.
  let words = rest.findIndex((w) => w.startsWith('-'));
  if (words < 0) words = rest.length;
  let helpOnly = false;
  if (rest[0] === 'help') {
    helpOnly = true;
    rest = rest.slice(1);
    words = Math.max(0, words - 1);
  }
  let command = null;
  for (let n = words; n > 0 && !command; n--) {
    command = COMMANDS.find((c) => c.words.length === n && c.words.every((w, i) => w === rest[i]));
  }
  if (!command) {
    if (options.help || helpOnly) {
      out(`${global.formatHelp(helpWidth(stdout))}\ncommands:\n${commandList()}\n`);
      return 0;
    }
    if (!rest.length) {
      err(global.formatUsage(helpWidth(stderr)));
      err(`${prog}: error: a command is required; the commands:\n${commandList()}\n`);
      return 2;
    }
    err(`${prog}: '${maskSecrets(rest).join(' ')}' is not an ${prog} command. See '${prog} --help'.\n`);
    // `node power foo`: the commands under `node power`; else those under `node`.
    const under = COMMANDS.filter((c) => c.words.length > 2 && c.words[0] === rest[0] && c.words[1] === rest[1]);
    const near = under.length ? under : COMMANDS.filter((c) => c.words[0] === rest[0]);
    err(`Did you mean one of these?\n${(near.length ? near : COMMANDS).map((c) => `  ${c.words.join(' ')}`).join('\n')}\n`);
    return 2;
  }

  const parser = command.parser(`${prog} ${command.words.join(' ')}`);
  if (options.help || helpOnly) {
    out(parser.formatHelp(helpWidth(stdout)));
    return 0;
  }
  let values;
  try {
    values = parser.parse(rest.slice(command.words.length));
  } catch (e) {
    if (e instanceof UsageError) return usageError(e);
    if (e.help) {
      out(parser.formatHelp(helpWidth(stdout)));
      return 0;
    }
    throw e;
  }

  // Ctrl-C or SIGTERM (a CI job cancelled, a pod stopped): the library's
  // abort, so nothing more is sent and a --checkpoint file keeps the last
  // checkpoint; a second signal leaves at once. The exit code is the
  // shell's for the signal: 128 + its number.
  const controller = new AbortController();
  let stop = null;
  const onSignal = (signal) => {
    const code = 128 + osConstants.signals[signal];
    if (controller.signal.aborted) process.exit(code);
    stop = { code, word: signal === 'SIGINT' ? 'Interrupted' : 'Terminated' };
    controller.abort();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    const flags = {};
    for (const f of OS_FLAGS) if (options[`os:${f.key}`] !== undefined) flags[f.key] = options[`os:${f.key}`];
    const verify = options.insecure ? false : options.verify ? true : undefined;
    const { client: clientOptions, tls } = await resolveConfig({ flags, verify, env });
    if (tls) clientOptions.fetch = agentFetch(await tlsAgent(tls));
    if (options.max_retries !== undefined) clientOptions.maxRetries = options.max_retries;
    if (options.retry_interval !== undefined) clientOptions.retryInterval = options.retry_interval;
    const client = new IronicClient(clientOptions);
    const ctx = {
      client,
      signal: controller.signal,
      out,
      err,
      json: options.json,
      settle: options.settle,
      checkpointFile: options.checkpoint,
      readStdin,
      progress: (targets) => new Progress({ stream: stderr, targets, quiet: options.quiet }),
    };
    const code = await command.run(ctx, values);
    return stop ? stop.code : code;
  } catch (e) {
    if (stop) {
      err(`${stop.word}: stopped waiting; nothing more was sent (the action goes on in Ironic).\n`);
      return stop.code;
    }
    if (e instanceof CommandError || e instanceof IronicWaitError || e instanceof ConfigError) {
      // baremetal closes a configuration error with where to read more, naming itself as started.
      const more = e.seeHelp ? `\n* See \`${path ?? prog} --help\` for more details` : '';
      err(`${e.message}${more}\n`);
      return 1;
    }
    // A bug of ours: its message, never a stack trace.
    err(`${prog}: unexpected error: ${e?.message ?? String(e)}\n`);
    return 1;
  } finally {
    for (const signal of STOP_SIGNALS) process.removeListener(signal, onSignal);
  }
}
