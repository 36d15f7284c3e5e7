/**
 * The documentation's code compiles. Every TypeScript snippet a user may copy
 * is type-checked against the packages' sources: the ```ts (or ```typescript)
 * fenced blocks of the root README.md, packages/*\/README.md and docs/approvals.md, and the ```ts
 * fences inside `@example` tags of the doc comments in packages/*\/src. Each
 * snippet becomes a module of its own (a virtual file in `test/docs/`, checked
 * with the repository's compiler options in one TypeScript program), so a
 * renamed export, a changed signature or a typo in the docs fails here with the
 * document's own line number.
 *
 * Conventions for writers:
 * - A snippet is a module: it imports what it uses from the published entry
 *   points (`@baton/engine`, `@baton/store/memory`, ...), the MCP SDK, zod or
 *   xstate. Two things may be used without being declared, because the docs
 *   treat them as the reader's own: the modules `./flows.js` (exports
 *   `deployProduction` and `expenseApproval`, the example flows),
 *   `./deployProduction.js` and `./expenseApproval.js`, and the names of
 *   {@link WORLD} below (`runner`, `flows`, `audit`, `options`).
 * - A Markdown snippet marked on the line right before its fence with
 *   `<!-- file: NAME.ts -->` is checked as the module `./NAME.js` of that
 *   document, so the document's other snippets can import it (the root
 *   README's test imports its own flow from `./flows.js`). The snippets of
 *   such a document live in a folder of their own, where its names shadow the
 *   shared modules below.
 * - A snippet that cannot compile on purpose (pseudo-code, an excerpt) is
 *   marked on the line right before its fence with `<!-- no-check: why -->` in
 *   Markdown; in a doc comment, give it another language (```text, ```json).
 *   Keep these rare.
 * - An `@example` without a fence must be a single line of inline code or a
 *   value (`isLoopbackAddress('127.0.0.1')` -> true): anything longer is fenced,
 *   so it gets checked.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = ['engine', 'store', 'adapters'];
const DOCS_DIR = join(ROOT, 'test', 'docs');

/** The reader's own names a snippet may use without declaring them (each one's type is what the docs assume). */
const WORLD = `
declare const runner: import('@baton/engine').Runner;
declare const flows: import('@baton/engine').Flow[];
declare const audit: import('@baton/store').StoreAuditLog;
/** The options of \`createRunner\` a snippet spreads (\`{ ...options, audit }\`). */
declare const options: import('@baton/engine').RunnerOptions;
`;

/** Virtual modules next to the snippets. */
const VIRTUAL_MODULES: Record<string, string> = {
  'flows.ts': `export { deployProduction, expenseApproval } from '../../examples/approvals/index.js';\n`,
  'deployProduction.ts': `export { deployProduction } from '../../examples/approvals/index.js';\n`,
  'expenseApproval.ts': `export { expenseApproval } from '../../examples/approvals/index.js';\n`,
  'world.d.ts': WORLD,
};

interface Snippet {
  /** Path of the document, relative to the repository. */
  readonly document: string;
  /** 1-based line in the document of the snippet's first code line. */
  readonly line: number;
  readonly code: string;
  /** Virtual file name the snippet is checked as. */
  readonly file: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)[^\n]*$/;
const TS_LANGUAGES = new Set(['ts', 'typescript']);
const NO_CHECK = /<!--\s*no-check:\s*\S.*-->/;
const FILE_NAME = /<!--\s*file:\s*([\w-]+\.ts)\s*-->/;

const virtualName = (document: string, index: number) =>
  join(DOCS_DIR, `${document.replace(/[/\\.]/g, '_')}_${index + 1}.ts`);

/** The ```ts blocks of a Markdown document, minus those marked `<!-- no-check: why -->`. */
function markdownSnippets(document: string, text: string): { snippets: Snippet[]; unchecked: number } {
  const lines = text.split('\n');
  const snippets: Snippet[] = [];
  let unchecked = 0;
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, , marker, language] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end]!.trimStart().startsWith(marker!)) end++;
    if (TS_LANGUAGES.has(language!.toLowerCase())) {
      let before = i - 1;
      while (before >= 0 && lines[before]!.trim() === '') before--;
      if (before >= 0 && NO_CHECK.test(lines[before]!)) unchecked++;
      else {
        const code = lines.slice(i + 1, end).join('\n');
        const named = before >= 0 ? FILE_NAME.exec(lines[before]!)?.[1] : undefined;
        snippets.push({ document, line: i + 2, code, file: named ?? virtualName(document, snippets.length) });
      }
    }
    i = end;
  }
  // A document that names a snippet gets a folder of its own; otherwise its snippets sit beside the shared modules.
  const own = snippets.some((snippet) => !snippet.file.includes('/'));
  const dir = own ? join(DOCS_DIR, document.replace(/[/\\.]/g, '_')) : DOCS_DIR;
  return {
    snippets: snippets.map((snippet) => ({ ...snippet, file: join(dir, basename(snippet.file)) })),
    unchecked,
  };
}

interface ExampleProblem {
  readonly where: string;
  readonly problem: string;
}

/** The ```ts fences of the `@example` tags in one source file, and the examples that break the conventions. */
function exampleSnippets(document: string, text: string): { snippets: Snippet[]; problems: ExampleProblem[] } {
  const snippets: Snippet[] = [];
  const problems: ExampleProblem[] = [];
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const startLine = text.slice(0, comment.index).split('\n').length;
    const lines = comment[0].split('\n').map((l) => l.replace(/^\s*\/?\*\*?\/?\s?/, '').replace(/\s*\*\/$/, ''));
    for (let i = 0; i < lines.length; i++) {
      const tag = /^@example\b\s*(.*)$/.exec(lines[i]!);
      if (!tag) continue;
      const where = `${document}:${startLine + i}`;
      // The example runs to the next tag or the end of the comment.
      let end = i + 1;
      while (end < lines.length && !/^@\w/.test(lines[end]!)) end++;
      const body = [tag[1]!, ...lines.slice(i + 1, end)].filter((l, k) => k > 0 || l.trim() !== '');
      while (body.length > 0 && body[body.length - 1]!.trim() === '') body.pop();
      const fenced = body.length > 0 && FENCE.test(body[0]!);
      if (!fenced) {
        if (body.length !== 1 || !body[0]!.includes('`')) {
          problems.push({ where, problem: 'an @example longer than one line of inline code must be a ```ts fence' });
        }
        continue;
      }
      const language = FENCE.exec(body[0]!)![3]!.toLowerCase();
      const close = body.findIndex((l, k) => k > 0 && /^\s*(`{3,}|~{3,})\s*$/.test(l));
      if (close < 0) problems.push({ where, problem: 'unclosed fence' });
      else if (TS_LANGUAGES.has(language)) {
        const firstCodeLine = startLine + i + (tag[1]!.trim() === '' ? 2 : 1);
        snippets.push({
          document,
          line: firstCodeLine,
          code: body.slice(1, close).join('\n'),
          file: virtualName(`${document}:${startLine + i}`, 0),
        });
      }
      i = end - 1;
    }
  }
  return { snippets, problems };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const MARKDOWN = ['README.md', ...PACKAGES.map((p) => `packages/${p}/README.md`), 'docs/approvals.md'];
const markdown = MARKDOWN.map((document) => ({
  document,
  ...markdownSnippets(document, readFileSync(join(ROOT, document), 'utf8')),
}));
const examples = PACKAGES.flatMap((p) => sourceFiles(join(ROOT, 'packages', p, 'src'))).map((path) =>
  exampleSnippets(relative(ROOT, path), readFileSync(path, 'utf8')),
);
const SNIPPETS = [...markdown.flatMap((m) => m.snippets), ...examples.flatMap((e) => e.snippets)];

/** One program for every snippet: the repository's compiler options, snippets and world served from memory. */
function createProgram(snippets: readonly Snippet[]): ts.Program {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.base.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const compilerOptions: ts.CompilerOptions = {
    ...options,
    noEmit: true,
    // A snippet without imports is still a module of its own: no clashes between snippets.
    moduleDetection: ts.ModuleDetectionKind.Force,
  };
  const virtual = new Map<string, string>([
    ...Object.entries(VIRTUAL_MODULES).map(([name, text]) => [join(DOCS_DIR, name), text] as const),
    ...snippets.map((s) => [s.file, s.code] as const),
  ]);
  const host = ts.createCompilerHost(compilerOptions, true);
  const { getSourceFile, fileExists, readFile, directoryExists } = host;
  const folders = new Set([...virtual.keys()].map((name) => dirname(name)));
  host.directoryExists = (name) => folders.has(name) || directoryExists?.call(host, name) !== false;
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = virtual.get(name);
    return text === undefined
      ? getSourceFile.call(host, name, language, ...rest)
      : ts.createSourceFile(name, text, language, true);
  };
  return ts.createProgram({ rootNames: [...virtual.keys()], options: compilerOptions, host });
}

/** The checker's own cases (below): broken on purpose, checked in the same program. */
const BROKEN_MARKDOWN = markdownSnippets(
  'broken.md',
  ['# Title', '', '```ts', "import { createRunner } from '@baton/engine';", 'createRunner(42);', '```'].join('\n'),
);
const BROKEN_SOURCE = exampleSnippets(
  'src/x.ts',
  [
    '/**',
    ' * Make one.',
    ' *',
    ' * @example',
    ' * ```ts',
    " * const n: number = 'x';",
    ' * ```',
    ' */',
    '/**',
    ' * @example const a = 1;',
    ' * const b = 2;',
    ' */',
  ].join('\n'),
);

const program = createProgram([...SNIPPETS, ...BROKEN_MARKDOWN.snippets, ...BROKEN_SOURCE.snippets]);

/** The compiler's complaints about some snippets, as `document:line: TSnnnn message`. */
function check(snippets: readonly Snippet[]): string[] {
  return snippets.flatMap((snippet) => {
    const file = program.getSourceFile(snippet.file)!;
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
    return diagnostics.map((d) => {
      const line = d.start === undefined ? 0 : file.getLineAndCharacterOfPosition(d.start).line;
      return `${snippet.document}:${snippet.line + line}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
  });
}

/** Statements that call a method returning a promise and drop it, as `document:line: code`. */
function floating(snippets: readonly Snippet[]): string[] {
  const checker = program.getTypeChecker();
  return snippets.flatMap((snippet) => {
    const file = program.getSourceFile(snippet.file)!;
    const found: string[] = [];
    const visit = (node: ts.Node) => {
      // Method calls only: a test runner's own `test(...)` returns a promise nobody awaits.
      if (
        ts.isExpressionStatement(node) &&
        ts.isCallExpression(node.expression) &&
        ts.isPropertyAccessExpression(node.expression.expression)
      ) {
        const type = checker.getTypeAtLocation(node.expression);
        if (type.getSymbol()?.getName() === 'Promise') {
          const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
          found.push(`${snippet.document}:${snippet.line + line}: ${node.getText(file)}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
    return found;
  });
}

describe('the documentation', () => {
  it('has TypeScript snippets in every README and @example, and checks them', () => {
    for (const { document, snippets } of markdown) expect(snippets.length, document).toBeGreaterThan(0);
    expect(examples.flatMap((e) => e.snippets).length).toBeGreaterThan(10);
  });

  it('marks few snippets as unchecked', () => {
    // Each one is a `<!-- no-check: why -->` before its fence; the why says what is left out.
    expect(markdown.reduce((sum, m) => sum + m.unchecked, 0)).toBeLessThanOrEqual(3);
  });

  it('fences every multi-line @example', () => {
    expect(examples.flatMap((e) => e.problems.map((p) => `${p.where}: ${p.problem}`))).toEqual([]);
  });

  it('type-checks every snippet against the packages', () => {
    expect(check(SNIPPETS)).toEqual([]);
  });

  it('awaits every promise a snippet starts as a statement (no floating promise: tester.clock.advance)', () => {
    expect(floating(SNIPPETS)).toEqual([]);
  });
});

describe('the snippet checker', () => {
  it('reports a snippet that does not compile, at its line in the document', () => {
    expect(check(BROKEN_MARKDOWN.snippets)).toEqual([
      "broken.md:5: TS2345 Argument of type 'number' is not assignable to parameter of type 'RunnerOptions'.",
    ]);
  });

  it('skips fences marked no-check and other languages', () => {
    const doc = ['<!-- no-check: pseudo-code -->', '```ts', 'not code', '```', '```sh', 'not code', '```'];
    expect(markdownSnippets('skip.md', doc.join('\n'))).toMatchObject({ snippets: [], unchecked: 1 });
  });

  it('reads @example fences out of doc comments and flags unfenced multi-line examples', () => {
    expect(BROKEN_SOURCE.snippets).toMatchObject([{ line: 6, code: "const n: number = 'x';" }]);
    expect(BROKEN_SOURCE.problems).toEqual([{ where: 'src/x.ts:10', problem: expect.stringContaining('```ts fence') }]);
    expect(check(BROKEN_SOURCE.snippets)).toEqual([expect.stringMatching(/^src\/x\.ts:6: TS2322 /)]);
  });
});
