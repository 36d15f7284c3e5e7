/**
 * The public API report: every change to what the three published packages
 * export shows in review. For each entry point in a package's `exports` map
 * (`@baton/engine`, `@baton/engine/testing`, `@baton/store` and its driver
 * subpaths, `@baton/adapters`) the test imports the source entry and lists its
 * runtime export names, then reads the entry with the TypeScript compiler and
 * prints every exported declaration (kind and signature, members of interfaces
 * and classes, sorted by name) as a `.d.ts`-like listing. The result must equal
 * the committed report `packages/<pkg>/api/<entry>.api.md`; a changed
 * signature, a new export or a removed one fails with a line diff. After an
 * intended change, regenerate the reports and commit them with the change:
 *
 *     pnpm vitest run test/api-surface.test.ts -u
 *
 * The test also requires a doc comment on every export, and that every runtime
 * export is declared (nothing reaches users untyped).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = ['engine', 'store', 'adapters'] as const;

interface EntryPoint {
  /** `@baton/store/memory` */
  readonly specifier: string;
  /** Absolute path of the source entry. */
  readonly source: string;
  /** Report path relative to this file. */
  readonly report: string;
}

/**
 * Every entry point of the published packages, from each package.json's `exports` (sources in the
 * workspace: the `default` target; `baton-test-build` names the tests' build).
 */
function entryPoints(): EntryPoint[] {
  return PACKAGES.flatMap((dir) => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as {
      name: string;
      exports: Record<string, string | { default: string }>;
    };
    return Object.entries(manifest.exports)
      .filter(([subpath]) => subpath !== './package.json')
      .map(([subpath, target]) => ({
        specifier: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
        source: join(ROOT, 'packages', dir, typeof target === 'string' ? target : target.default),
        report: `../packages/${dir}/api/${subpath === '.' ? 'index' : subpath.slice(2)}.api.md`,
      }));
  });
}

const ENTRIES = entryPoints();

function createProgram(): ts.Program {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.base.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  return ts.createProgram({
    rootNames: ENTRIES.map((entry) => entry.source),
    options: { ...options, noEmit: true },
  });
}

const program = createProgram();
const checker = program.getTypeChecker();

const FORMAT =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType |
  ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope |
  ts.TypeFormatFlags.WriteTypeArgumentsOfSignature;

/** Drop compiler-chosen module qualifiers (`import("/abs/path").Flow` -> `Flow`): reports must not name local paths. */
const clean = (text: string): string => text.replace(/import\("[^"]*"\)\./g, '');

const typeText = (type: ts.Type, at: ts.Node | undefined, flags = 0): string =>
  clean(checker.typeToString(type, at, FORMAT | flags));

const signatureText = (signature: ts.Signature, at: ts.Node | undefined): string =>
  clean(checker.signatureToString(signature, at, FORMAT));

const typeParameters = (declaration: ts.Declaration | undefined): string => {
  const list = declaration
    ? ts.getEffectiveTypeParameterDeclarations(declaration as ts.DeclarationWithTypeParameters)
    : [];
  return list.length > 0 ? `<${list.map((p) => p.getText()).join(', ')}>` : '';
};

/** `T` of an optional member's `T | undefined` (the `?` says it), unwrapping `(() => T)`. */
const withoutUndefined = (text: string): string => {
  const bare = text.replace(/ \| undefined$/, '');
  return bare !== text && closingParen(bare) === bare.length - 1 ? bare.slice(1, -1) : bare;
};

/** Index of the parenthesis that closes the one `text` opens with (-1 when it does not open with one). */
const closingParen = (text: string): number => {
  if (!text.startsWith('(')) return -1;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return i;
  }
  return -1;
};

/** Code-unit order (as `Array.prototype.sort`), the same on every machine: no locale. */
const byName = (a: ts.Symbol, b: ts.Symbol): number =>
  a.getName() < b.getName() ? -1 : a.getName() > b.getName() ? 1 : 0;

const isOptional = (symbol: ts.Symbol): boolean => (symbol.flags & ts.SymbolFlags.Optional) !== 0;

const isReadonly = (symbol: ts.Symbol): boolean =>
  (symbol.declarations ?? []).some((d) => (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Readonly) !== 0);

/** One member line of an interface, object type or class: `readonly name?: type;` or `name(args): result;`. */
function memberLine(member: ts.Symbol, at: ts.Node): string {
  const declaration = member.valueDeclaration ?? member.declarations?.[0];
  const type = checker.getTypeOfSymbolAtLocation(member, declaration ?? at);
  const declaredName = (declaration as ts.NamedDeclaration | undefined)?.name;
  // Symbol-keyed members (`[inspect.custom]`) by their source text: the compiler's name holds a per-run id.
  const name = declaredName && ts.isComputedPropertyName(declaredName) ? declaredName.getText() : member.getName();
  if (declaration && (ts.isMethodSignature(declaration) || ts.isMethodDeclaration(declaration))) {
    // An optional method's type is `(signature) | undefined`: its signatures are the defined part's.
    return (isOptional(member) ? checker.getNonNullableType(type) : type)
      .getCallSignatures()
      .map((s) => `${name}${isOptional(member) ? '?' : ''}${signatureText(s, declaration)};`)
      .join('\n');
  }
  let text = typeText(type, declaration ?? at);
  if (isOptional(member)) text = withoutUndefined(text);
  return `${isReadonly(member) ? 'readonly ' : ''}${name}${isOptional(member) ? '?' : ''}: ${text};`;
}

const indent = (lines: string[]): string =>
  lines
    .flatMap((l) => l.split('\n'))
    .map((l) => `  ${l}`)
    .join('\n');

function heritage(declaration: ts.Declaration | undefined): string {
  if (!declaration || !(ts.isInterfaceDeclaration(declaration) || ts.isClassDeclaration(declaration))) return '';
  const clauses = declaration.heritageClauses ?? [];
  return clauses.map((c) => ` ${c.getText()}`).join('');
}

/** The members of an object-like type, sorted, with its call, construct and index signatures. */
function objectMembers(type: ts.Type, at: ts.Node): string[] {
  const lines = checker
    .getPropertiesOfType(type)
    .sort(byName)
    .map((p) => memberLine(p, at));
  for (const s of type.getCallSignatures()) lines.push(`${signatureText(s, at)};`);
  for (const info of checker.getIndexInfosOfType(type)) {
    lines.push(
      `${info.isReadonly ? 'readonly ' : ''}[key: ${typeText(info.keyType, at)}]: ${typeText(info.type, at)};`,
    );
  }
  return lines;
}

/** The `.d.ts`-like declaration(s) of one export: a symbol can be a value and a type at once. */
function declare(name: string, exported: ts.Symbol): string[] {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const declarations = symbol.declarations ?? [];
  const first = <T extends ts.Node>(is: (node: ts.Node) => node is T) => declarations.find(is);
  const out: string[] = [];

  if (symbol.flags & ts.SymbolFlags.Function) {
    const at = first(ts.isFunctionDeclaration);
    for (const s of checker.getTypeOfSymbol(symbol).getCallSignatures())
      out.push(`function ${name}${signatureText(s, at)};`);
  }
  if (symbol.flags & ts.SymbolFlags.Variable) {
    const at = first(ts.isVariableDeclaration);
    const isConst = at && (ts.getCombinedNodeFlags(at) & ts.NodeFlags.Const) !== 0;
    out.push(`${isConst ? 'const' : 'let'} ${name}: ${typeText(checker.getTypeOfSymbol(symbol), at)};`);
  }
  if (symbol.flags & ts.SymbolFlags.Class) {
    const at = first(ts.isClassDeclaration)!;
    const ownMember = (m: ts.Symbol) =>
      (m.declarations ?? []).some(
        (d) =>
          d.parent === at &&
          !(ts.getCombinedModifierFlags(d) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) &&
          !((d as ts.NamedDeclaration).name && ts.isPrivateIdentifier((d as ts.NamedDeclaration).name!)),
      );
    const statics = checker
      .getPropertiesOfType(checker.getTypeOfSymbol(symbol))
      .filter((m) => m.getName() !== 'prototype' && ownMember(m))
      .map((m) => `static ${memberLine(m, at)}`);
    const constructors = checker
      .getTypeOfSymbol(symbol)
      .getConstructSignatures()
      .map((s) => `constructor(${s.parameters.map((p) => parameterText(p, at)).join(', ')});`)
      .filter((line, i, all) => all.indexOf(line) === i);
    const members = checker
      .getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))
      .filter(ownMember)
      .sort(byName)
      .map((m) => memberLine(m, at));
    out.push(
      `class ${name}${typeParameters(at)}${heritage(at)} {\n${indent([...statics, ...constructors, ...members])}\n}`,
    );
  }
  if (symbol.flags & ts.SymbolFlags.Interface) {
    const at = first(ts.isInterfaceDeclaration)!;
    const members = objectMembers(checker.getDeclaredTypeOfSymbol(symbol), at);
    out.push(`interface ${name}${typeParameters(at)}${heritage(at)} {\n${indent(members)}\n}`);
  }
  if (symbol.flags & ts.SymbolFlags.TypeAlias) {
    const at = first(ts.isTypeAliasDeclaration)!;
    const text = typeText(checker.getDeclaredTypeOfSymbol(symbol), at, ts.TypeFormatFlags.InTypeAlias);
    out.push(`type ${name}${typeParameters(at)} = ${text};`);
  }
  if (symbol.flags & ts.SymbolFlags.Enum)
    out.push(`enum ${name} { ${[...(symbol.exports?.keys() ?? [])].join(', ')} }`);
  if (out.length === 0)
    out.push(`/* ${name}: unsupported export kind ${ts.SymbolFlags[symbol.flags] ?? symbol.flags} */`);
  return out;
}

function parameterText(parameter: ts.Symbol, at: ts.Node): string {
  const declaration = parameter.valueDeclaration as ts.ParameterDeclaration | undefined;
  const optional = declaration ? checker.isOptionalParameter(declaration) : false;
  const rest = declaration?.dotDotDotToken ? '...' : '';
  let text = typeText(checker.getTypeOfSymbolAtLocation(parameter, declaration ?? at), declaration ?? at);
  if (optional) text = withoutUndefined(text);
  return `${rest}${parameter.getName()}${optional ? '?' : ''}: ${text}`;
}

const hasDocComment = (exported: ts.Symbol): boolean => {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  return (symbol.declarations ?? []).some((d) => ts.getJSDocCommentsAndTags(d).length > 0);
};

function exportsOf(entry: EntryPoint): ts.Symbol[] {
  const file = program.getSourceFile(entry.source);
  if (!file) throw new Error(`not in the program: ${entry.source}`);
  const moduleSymbol = checker.getSymbolAtLocation(file)!;
  return checker.getExportsOfModule(moduleSymbol).sort(byName);
}

function report(entry: EntryPoint, runtime: readonly string[]): string {
  const declarations = exportsOf(entry).flatMap((symbol) => declare(symbol.getName(), symbol));
  return [
    `# API report: \`${entry.specifier}\``,
    '',
    `Source: \`${relative(ROOT, entry.source)}\`. Generated by \`test/api-surface.test.ts\`: do not edit by hand.`,
    'After an intended change to the public API, regenerate with',
    '`pnpm vitest run test/api-surface.test.ts -u` and commit the report with the change.',
    '',
    `## Runtime exports (${runtime.length})`,
    '',
    ...runtime.map((name) => `- \`${name}\``),
    '',
    `## Declarations (${declarations.length})`,
    '',
    '```ts',
    declarations.join('\n\n'),
    '```',
    '',
  ].join('\n');
}

describe.each(ENTRIES)('$specifier', (entry) => {
  it('matches its committed API report', async () => {
    const runtime = Object.keys(await import(entry.source)).sort();
    await expect(report(entry, runtime)).toMatchFileSnapshot(entry.report);
  });

  it('declares every runtime export as a value', async () => {
    const runtime = Object.keys(await import(entry.source));
    const values = exportsOf(entry)
      .filter((s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s).flags & ts.SymbolFlags.Value)
      .map((s) => s.getName());
    expect(runtime.filter((name) => !values.includes(name))).toEqual([]);
  });

  it('documents every export with a doc comment', () => {
    const undocumented = exportsOf(entry)
      .filter((symbol) => !hasDocComment(symbol))
      .map((s) => s.getName());
    expect(undocumented).toEqual([]);
  });
});
