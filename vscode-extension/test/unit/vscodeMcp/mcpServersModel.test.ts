import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  type AttachTarget,
  PROVIDER_ID,
  attachDefinition,
  attachDefinitions,
  definitionsKey,
  identityVersion,
} from "../../../src/vscodeMcp/mcpServersModel";
import type { ServerState, ServerStatus } from "../../../src/protocol";

const target: AttachTarget = {
  sidecar: { command: "/home/me/.local/share/host-bridge/venv/bin/python", args: ["-m", "host_bridge"] },
  workspace: "/home/me/acme",
  storageDir: "/home/me/.config/Code/User/globalStorage/host-bridge.host-bridge",
};

type Server = Pick<ServerStatus, "id" | "identity" | "state" | "source" | "workspaceDefined">;

function server(id: string, overrides: Partial<Server> = {}): Server {
  return {
    id,
    identity: `settings|${id}|f1`,
    state: "running",
    source: "settings",
    workspaceDefined: false,
    ...overrides,
  };
}

function workspaceServer(id: string, file: string, state: ServerState = "running"): Server {
  const source = `file:///home/me/acme/${file}`;
  return server(id, { source, identity: `${source}|${id}|f1`, workspaceDefined: true, state });
}

describe("the definitions VS Code's MCP support gets", () => {
  it("runs host_bridge attach with the sidecar's interpreter, the first folder and the sidecar's storage directory", () => {
    const definition = attachDefinition(server("fs"), target);
    expect(definition.command).toBe(target.sidecar.command);
    expect(definition.args).toEqual([
      "-m",
      "host_bridge",
      "attach",
      "fs",
      "--workspace",
      "/home/me/acme",
      "--storage-dir",
      target.storageDir,
    ]);
    expect(definition.cwd).toBe("/home/me/acme");
  });

  it("runs attach through the platform package's launcher, isolated, as the sidecar runs", () => {
    const launcher = "/home/me/.vscode/extensions/host-bridge.host-bridge-0.1.0-linux-x64/python/run_sidecar.py";
    const sidecar = { command: "/usr/bin/python3", args: ["-I", "-S", launcher] };
    const definition = attachDefinition(server("fs"), { ...target, sidecar });
    expect([definition.command, ...definition.args]).toEqual([
      "/usr/bin/python3",
      "-I",
      "-S",
      launcher,
      "attach",
      "fs",
      "--workspace",
      "/home/me/acme",
      "--storage-dir",
      target.storageDir,
    ]);
  });

  it("labels each server with its id and MCP Host Bridge", () => {
    expect(attachDefinition(server("fs"), target).label).toBe("fs (MCP Host Bridge)");
  });

  it("shows an id's invisible characters as escapes in the label", () => {
    expect(attachDefinition(server("fs\u202egnp"), target).label).toBe("fs\\u202egnp (MCP Host Bridge)");
  });

  it("keeps the version while the identity stays, and changes it with the identity", () => {
    const version = attachDefinition(server("fs"), target).version;
    expect(attachDefinition(server("fs", { state: "restarting" }), target).version).toBe(version);
    expect(attachDefinition(server("fs", { identity: "settings|fs|f2" }), target).version).not.toBe(version);
    expect(identityVersion("settings|fs|f1")).toMatch(/^[0-9a-f]{16}$/);
  });

  it("offers every configured server except one still awaiting the user's trust", () => {
    const servers = [
      server("fs"),
      workspaceServer("repo", ".vscode/mcp.json", "awaitingTrust"),
      server("web", { state: "failed" }),
      server("slow", { state: "starting" }),
    ];
    expect(attachDefinitions(servers, target).map((definition) => definition.id)).toEqual(["fs", "web", "slow"]);
  });

  it("offers nothing until the sidecar's interpreter and a workspace folder are known", () => {
    expect(attachDefinitions([server("fs")], undefined)).toEqual([]);
  });

  it("changes its key when a server comes, goes or changes identity, not when it only changes state", () => {
    const key = definitionsKey(attachDefinitions([server("fs")], target));
    expect(definitionsKey(attachDefinitions([server("fs", { state: "restarting" })], target))).toBe(key);
    expect(definitionsKey(attachDefinitions([server("fs", { identity: "settings|fs|f2" })], target))).not.toBe(key);
    expect(definitionsKey(attachDefinitions([server("fs"), server("web")], target))).not.toBe(key);
    expect(definitionsKey(attachDefinitions([], target))).not.toBe(key);
  });

  it("is the provider package.json declares", () => {
    const manifest = JSON.parse(readFileSync(path.resolve(__dirname, "../../../package.json"), "utf8")) as {
      contributes: { mcpServerDefinitionProviders: { id: string; label: string }[] };
    };
    expect(manifest.contributes.mcpServerDefinitionProviders).toEqual([{ id: PROVIDER_ID, label: "MCP Host Bridge" }]);
  });
});
