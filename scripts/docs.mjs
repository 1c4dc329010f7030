// `npm run docs`: the API reference, made by TypeDoc from the hand-written
// types into .cache/api/ (git ignores .cache/; open .cache/api/index.html).
//
// The entry points are package.json's `exports`: each subpath with `types`
// is one module of the reference, named as it is imported (`ironic-wait`,
// `ironic-wait/cloudflare`, ...). A subpath whose types file does not exist
// (yet) is left out and said so. `./pkg/index.d.ts` is the build's copy of
// js/index.d.ts: the reference is made from js/ and needs no build.
//
// It fails (exit 1, nothing written) on any warning: an export or a member
// of one without a doc comment, a `{@link}` to nothing, a type the
// reference would name but not show, a tag TypeDoc does not know, or a
// type error in the declarations.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { Application } from 'typedoc';
import { main, ROOT } from './lib.mjs';

const OUT = join(ROOT, '.cache', 'api');
// Copies of the types files that import pkg/ (edge/deno.d.ts re-exports the
// main entry from '../pkg/index.js'), their import turned to js/: the
// reference then needs no pkg/, and the re-exported declarations are those
// of the main entry (shown once, re-exports linking to them).
const STAGE = join(ROOT, '.cache', 'api-src');

/** Each entry point: { importPath, file (in the repository), entry (what TypeDoc reads) }. */
function entries() {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const found = [];
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'object' && target !== null ? target.types : undefined;
    if (typeof types !== 'string') continue;
    const importPath = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    // The build copies js/'s declarations into pkg/ as they are.
    const file = types.replace(/^\.\/pkg\//, 'js/').replace(/^\.\//, '');
    if (!existsSync(join(ROOT, file))) {
      console.log(`docs: ${importPath} left out: ${file} does not exist`);
      continue;
    }
    found.push({ importPath, file, entry: stage(file) });
  }
  return found;
}

/** `file`, or its copy in STAGE with its imports of pkg/ pointed at js/ (same lines, so positions hold). */
function stage(file) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const copy = join(STAGE, file);
  let changed = false;
  const staged = text.replace(/(\bfrom\s+|\bimport\s*\(\s*)(['"])(\.\.?\/[^'"]*)\2/g, (all, lead, quote, spec) => {
    const target = relative(ROOT, resolve(dirname(join(ROOT, file)), spec));
    if (!target.startsWith(`pkg${sep}`)) return all;
    changed = true;
    const js = relative(dirname(copy), join(ROOT, 'js', target.slice(4)))
      .split(sep)
      .join('/');
    return `${lead}${quote}${js.startsWith('.') ? js : `./${js}`}${quote}`;
  });
  if (!changed) return join(ROOT, file);
  mkdirSync(dirname(copy), { recursive: true });
  writeFileSync(copy, staged);
  return copy;
}

await main('docs', async () => {
  rmSync(STAGE, { recursive: true, force: true });
  const list = entries();
  const app = await Application.bootstrapWithPlugins({
    name: 'ironic-wait',
    entryPoints: list.map((e) => e.entry),
    entryPointStrategy: 'resolve',
    // A module for each entry, even if there were one.
    alwaysCreateEntryPointModule: true,
    // The modules in package.json's order: `ironic-wait` first.
    sortEntryPoints: false,
    out: OUT,
    // The modules' own comments are the front matter; the README's links are to the repository's guides.
    readme: 'none',
    includeVersion: true,
    // The declarations' order is the one they are explained in (IronicClient's methods, the options).
    sort: ['kind', 'instance-first', 'source-order'],
    searchInComments: true,
    // No "Defined in": the files are the package's, the lines those of a build users do not see.
    disableSources: true,
    // As tests/tsconfig.strict.json: the declarations must type-check as a strict consumer reads them.
    compilerOptions: {
      strict: true,
      noEmit: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      lib: ['es2022', 'dom', 'dom.iterable'],
      types: [],
    },
    excludeExternals: true,
    validation: { notExported: true, notDocumented: true, invalidLink: true, rewrittenLink: true, invalidPath: true },
    requiredToBeDocumented: [
      'Module',
      'Namespace',
      'Enum',
      'EnumMember',
      'Variable',
      'Function',
      'Class',
      'Interface',
      'Constructor',
      'Property',
      'Method',
      'Accessor',
      'TypeAlias',
    ],
    // Any warning fails the run, the validation's as TypeDoc's own (an unknown tag, a type error), and nothing is written.
    treatWarningsAsErrors: true,
    treatValidationWarningsAsErrors: true,
  });

  // Messages name the repository's file, not its staged copy.
  const unstage = (text) => list.reduce((t, e) => t.replaceAll(relative(ROOT, e.entry), e.file), text);
  const log = app.logger.log.bind(app.logger);
  app.logger.log = (message, level) => log(unstage(message), level);
  // Either option makes a warning fail the run (both are set).
  const warningsFail = app.options.getValue('treatWarningsAsErrors') || app.options.getValue('treatValidationWarningsAsErrors');
  const check = (when) => {
    const { errorCount, warningCount } = app.logger;
    if (errorCount || (warningsFail && warningCount)) {
      throw new Error(`${errorCount} errors and ${warningCount} warnings ${when}: the reference is not written`);
    }
  };

  const project = await app.convert();
  if (!project) throw new Error('TypeDoc could not read the types (see above)');
  // Each entry's module named as it is imported.
  for (const module of project.children ?? []) {
    const at = project.getSymbolIdFromReflection(module)?.fileName;
    const entry = list.find((e) => at && resolve(at) === e.entry);
    if (!entry) throw new Error(`no entry point for the module ${module.name} (${at})`);
    module.name = entry.importPath;
  }
  check('reading the types');
  app.validate(project);
  check('in the validation');
  await app.generateOutputs(project);
  check('writing the reference');
  console.log(`docs: ${list.map((e) => e.importPath).join(', ')} -> ${relative(ROOT, OUT)}/index.html`);
});
