import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * Rules of the code's shape that no compiler checks: modules that import each other (directly or round a
 * loop) can be evaluated half-initialized and cannot be understood one at a time; and pipelines, commands
 * and benchmarks use the warehouse through its named operations (src/load/warehouse.ts), never through its
 * DuckDB connection, which belongs to src/load (and to tests).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function sources(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true })
    .map(String)
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join(ROOT, folder, name));
}

const parse = (file: string) =>
  ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

/** Each file's relative imports (and re-exports) among `files`, type-only ones included. */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets: string[] = [];
    for (const statement of parse(file).statements) {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
      const specifier = statement.moduleSpecifier;
      if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier.text.replace(/\.js$/, '.ts'));
      if (known.has(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Every import cycle, as the files along it (one cycle per strongly connected group). */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const trail: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    trail.push(file);
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open') found.push([...trail.slice(trail.indexOf(target)), target]);
      else if (!state.has(target)) visit(target);
    }
    trail.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

/**
 * The stages' import direction (docs/architecture.md, "Stages and their folders"): what a folder must never
 * import. A file of the first column that imports a module under one of the second is out of place.
 */
const FORBIDDEN_IMPORTS: [string, string[]][] = [
  [
    'src/model/',
    [
      'src/load/',
      'src/normalize/',
      'src/state/',
      'src/extract/',
      'src/ingest/',
      'src/receive/',
      'src/cli/',
      'pipelines/',
    ],
  ],
  [
    'src/normalize/',
    ['src/load/', 'src/state/', 'src/extract/', 'src/ingest/', 'src/receive/', 'src/cli/', 'pipelines/'],
  ],
  [
    'src/state/',
    ['src/load/', 'src/normalize/', 'src/extract/', 'src/ingest/', 'src/receive/', 'src/cli/', 'pipelines/'],
  ],
  [
    'src/extract/',
    [
      'src/load/',
      'src/normalize/',
      'src/model/',
      'src/state/',
      'src/ingest/',
      'src/receive/',
      'src/cli/',
      'pipelines/',
    ],
  ],
  ['src/load/', ['src/ingest/', 'src/extract/', 'src/receive/', 'src/cli/', 'pipelines/']],
  ['src/ingest/', ['src/extract/', 'src/receive/', 'src/cli/', 'pipelines/']],
  [
    'src/receive/',
    ['src/load/', 'src/ingest/', 'src/normalize/', 'src/model/', 'src/state/', 'src/cli/', 'pipelines/'],
  ],
  [
    'src/sandbox/',
    [
      'src/load/',
      'src/normalize/',
      'src/model/',
      'src/state/',
      'src/extract/',
      'src/ingest/',
      'src/receive/',
      'src/cli/',
      'pipelines/',
      'src/config.ts',
    ],
  ],
  // The report reads a warehouse (load/, model/) and a spool's status (receive/); it runs no job.
  ['src/report/', ['src/extract/', 'src/ingest/', 'src/normalize/', 'src/cli/', 'pipelines/']],
  ['pipelines/', ['src/cli/']],
];

/** Every import (file -> imported file, relative to the root) that FORBIDDEN_IMPORTS rules out. */
function misplacedImports(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = path.relative(ROOT, file);
    const rule = FORBIDDEN_IMPORTS.find(([folder]) => from.startsWith(folder));
    if (!rule) continue;
    for (const target of targets) {
      const to = path.relative(ROOT, target);
      if (rule[1].some((forbidden) => to.startsWith(forbidden))) found.push(`${from} -> ${to}`);
    }
  }
  return found;
}

describe('structure', () => {
  it('no module of src/ or pipelines/ imports itself round a loop', () => {
    const found = cycles(importGraph([...sources('src'), ...sources('pipelines')]));
    const shown = found.map((loop) => loop.map((file) => path.relative(ROOT, file)).join(' -> '));
    assert.deepEqual(shown, []);
  });

  it('finds a cycle when there is one (the check above can fail)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    assert.deepEqual(cycles(graph), [['a', 'b', 'c', 'a']]);
  });

  it("pipelines, commands, the report and benchmarks never read a warehouse's DuckDB connection", () => {
    const readers: string[] = [];
    for (const file of [
      ...sources('pipelines'),
      ...sources('src/cli'),
      ...sources('src/report'),
      ...sources('bench'),
    ]) {
      const source = parse(file);
      const visit = (node: ts.Node) => {
        const name = ts.isPropertyAccessExpression(node)
          ? node.name.text
          : ts.isElementAccessExpression(node) && ts.isStringLiteral(node.argumentExpression)
            ? node.argumentExpression.text
            : null;
        if (name === 'connection') {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart());
          readers.push(`${path.relative(ROOT, file)}:${line + 1}: ${node.getText()}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    assert.deepEqual(readers, [], 'use a named operation of Warehouse (src/load/warehouse.ts) instead');
  });
  it('each stage imports only the stages it may (the direction docs/architecture.md draws)', () => {
    const graph = importGraph([...sources('src'), ...sources('pipelines'), ...sources('schemas')]);
    assert.deepEqual(misplacedImports(graph), []);
  });

  it('finds a misplaced import when there is one (the check above can fail)', () => {
    const at = (file: string) => path.join(ROOT, file);
    const graph = new Map([
      [at('src/extract/client.ts'), [at('src/load/warehouse.ts'), at('src/errors.ts')]],
      [at('src/load/warehouse.ts'), [at('src/model/index.ts')]],
    ]);
    assert.deepEqual(misplacedImports(graph), ['src/extract/client.ts -> src/load/warehouse.ts']);
  });
});
