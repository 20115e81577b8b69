import { readFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(__dirname, "../../src");

/** Every module under src/, as a path relative to it without `.ts`. */
function modules(folder = SRC): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) {
      return modules(full);
    }
    return entry.name.endsWith(".ts") ? [path.relative(SRC, full).slice(0, -".ts".length)] : [];
  });
}

/** The modules of src/ that `module` imports, type-only imports included. */
function importsOf(module: string): string[] {
  const text = readFileSync(path.join(SRC, `${module}.ts`), "utf8");
  return [...text.matchAll(/from\s+"(\.{1,2}\/[^"]+)"/g)].map((match) =>
    path.normalize(path.join(path.dirname(module), match[1] ?? "")),
  );
}

/** One import cycle among `graph`'s modules, as the modules on it, or `undefined`. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (module: string): string[] | undefined => {
    const at = onPath.indexOf(module);
    if (at >= 0) {
      return [...onPath.slice(at), module];
    }
    if (done.has(module)) {
      return undefined;
    }
    onPath.push(module);
    for (const next of graph.get(module) ?? []) {
      const cycle = visit(next);
      if (cycle !== undefined) {
        return cycle;
      }
    }
    onPath.pop();
    done.add(module);
    return undefined;
  };
  for (const module of graph.keys()) {
    const cycle = visit(module);
    if (cycle !== undefined) {
      return cycle;
    }
  }
  return undefined;
}

describe("the extension's modules", () => {
  const graph = new Map(modules().map((module) => [module, importsOf(module)]));

  it("import only modules that exist", () => {
    const missing = [...graph].flatMap(([module, imports]) =>
      imports.filter((target) => !graph.has(target)).map((target) => `${module} → ${target}`),
    );
    expect(missing).toEqual([]);
  });

  it("import one another without a cycle, type-only imports included", () => {
    expect(findCycle(graph)).toBeUndefined();
  });

  it("name commands through the leaf of command ids, which imports nothing", () => {
    expect(graph.get("commandIds")).toEqual([]);
    const viaTable = [...graph].filter(([module, imports]) => module !== "extension" && imports.includes("commands"));
    expect(viaTable.map(([module]) => module)).toEqual([]);
  });

  it("finds a cycle where there is one", () => {
    const cycle = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
    ]);
    expect(findCycle(cycle)).toEqual(["a", "b", "c", "a"]);
  });
});
