import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { type Command, type Features, commands, registerCommands } from "../../src/commands";

/** The parts of package.json that name commands. */
interface Manifest {
  contributes: {
    commands: { command: string }[];
    menus?: Record<string, { command: string }[]>;
    keybindings?: { command: string }[];
  };
}

const manifest = JSON.parse(readFileSync(path.resolve(__dirname, "../../package.json"), "utf8")) as Manifest;
const declared = manifest.contributes.commands.map((entry) => entry.command);
const table = Object.keys(commands);

describe("the commands table", () => {
  it("holds exactly the commands package.json declares", () => {
    expect([...table].sort()).toEqual([...declared].sort());
  });

  it("declares each command once", () => {
    expect(new Set(declared).size).toBe(declared.length);
  });

  it("has a command for every menu entry and key binding", () => {
    const menus = Object.entries(manifest.contributes.menus ?? {}).flatMap(([menu, entries]) =>
      entries.map((entry) => `${menu}: ${entry.command}`),
    );
    const keys = (manifest.contributes.keybindings ?? []).map((entry) => `keybinding: ${entry.command}`);
    const unknown = [...menus, ...keys].filter((entry) => !table.includes(entry.split(": ")[1] ?? ""));
    expect(menus.length).toBeGreaterThan(0);
    expect(unknown).toEqual([]);
  });
});

describe("registerCommands", () => {
  it("registers every command of the table once, each with its own callback", () => {
    const registered: [string, Command][] = [];
    const disposables = registerCommands({} as Features, (id, callback) => {
      registered.push([id, callback]);
      return id;
    });
    expect(registered.map(([id]) => id)).toEqual(table);
    expect(disposables).toEqual(table);
    expect(new Set(registered.map(([, callback]) => callback)).size).toBe(table.length);
  });
});
