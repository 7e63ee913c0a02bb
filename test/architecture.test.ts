// docs/architecture.md: data flows one way (transport → resolvers → engine → store), and no module of src/ needs
// itself back through its imports at run time (a circle makes the order modules load in decide what they see).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');

function sources(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => join(folder, file));
}

/** The relative modules a file loads at run time: `import type` and lists of types only are erased, so left out. */
function runtimeImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(?!type\b)([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    const [, clause, target] = match;
    const named = /^\{([^}]*)\}$/.exec(clause.trim());
    if (named && named[1].split(',').map((n) => n.trim()).filter(Boolean).every((n) => n.startsWith('type '))) continue;
    found.push(relative(root, resolve(root, dirname(file), target)));
  }
  return found;
}

const files = [...sources('src'), ...sources('resolvers'), ...sources('schema')];
const graph = new Map(files.map((file) => [file, runtimeImports(file).filter((target) => target.endsWith('.ts'))]));

/** Every circle of the graph, each as the files around it (found by depth-first search). */
function circles(): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next) && graph.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('the layers', () => {
  it('reads every module it checks', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('src/engine/souls-db.ts')).toContain('src/engine/settings.ts');
  });

  it('has no import circle at run time in src/ (schema/ types name each other, as GraphQL types do)', () => {
    expect(circles().filter((circle) => circle[0].startsWith('src/')).map((circle) => circle.join(' → '))).toEqual([]);
  });

  it('keeps the engine and the store out of the transports, and the store out of the engine but for its errors and text rules', () => {
    const crossings: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        const inner = file.startsWith('src/engine/') || file.startsWith('src/interop/') || file.startsWith('src/store/');
        if (inner && /^(src\/(server|mcp|cli|embedder)|resolvers|schema)\//.test(target)) crossings.push(`${file} → ${target}`);
        if (file.startsWith('src/store/') && target.startsWith('src/engine/') && !/^src\/engine\/(errors|normalize)\.ts$/.test(target)) crossings.push(`${file} → ${target}`);
      }
    }
    expect(crossings).toEqual([]);
  });
});
