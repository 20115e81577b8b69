import { describe, expect, it } from "vitest";
import type { ServerStatus } from "../../../src/protocol";
import {
  type CopyMemory,
  copiesToNotice,
  copyMemory,
  copyStates,
  definitionIds,
  handOverNotice,
  handedOverMessage,
  offeredToVsCode,
  runsServer,
  vsCodeCopies,
  vsCodeMcpOn,
} from "../../../src/vscodeMcp/vsCodeCopies";

type Server = Parameters<typeof vsCodeCopies>[0][number];

const folders = [
  { uri: "file:///home/me/acme", name: "acme", index: 0 },
  { uri: "file:///home/me/beta", name: "beta", index: 1 },
];

function server(id: string, overrides: Partial<Server> = {}): Server {
  return { id, source: "settings", workspaceDefined: false, passesSharedFolders: false, ...overrides };
}

function workspaceServer(id: string, file: string, folder = "acme"): Server {
  return server(id, { source: `file:///home/me/${folder}/${file}`, workspaceDefined: true });
}

const none: CopyMemory = { handedOver: [], dismissed: [] };

describe("the copies VS Code's own MCP support runs", () => {
  it("are the servers of a folder's .vscode/mcp.json or .mcp.json, trusted or not, with VS Code's ids for them", () => {
    const copies = vsCodeCopies(
      [
        server("fs"),
        workspaceServer("repo", ".vscode/mcp.json"),
        workspaceServer("claude", ".mcp.json", "beta"),
        workspaceServer("untrusted", ".vscode/mcp.json"),
      ],
      folders,
    );
    expect(copies.map((copy) => copy.id)).toEqual(["repo", "claude", "untrusted"]);
    expect(copies[0]?.definitionIds).toEqual(["mcp.config.ws0.repo", "mcp.config.wf0.repo"]);
    expect(copies[0]?.file).toBe("acme/.vscode/mcp.json");
    expect(copies[1]?.definitionIds).toEqual(["workspace-dot-mcp.1.claude", "mcp.config.workspace-dot-mcp.1.claude"]);
  });

  it("find their folder by name when its path differs (a folder opened through a link)", () => {
    const linked = [{ uri: "file:///tmp/link-to-acme", name: "acme", index: 3 }];
    expect(vsCodeCopies([workspaceServer("repo", ".vscode/mcp.json")], linked)[0]?.definitionIds).toEqual(
      definitionIds("/.vscode/mcp.json", 3, "repo"),
    );
  });

  it("do not include servers of the user settings, which VS Code does not read", () => {
    expect(vsCodeCopies([server("fs"), server("web")], folders)).toEqual([]);
  });

  it("say when an entry passes the shared folders, which VS Code cannot fill in", () => {
    const fsv = server("fsv", {
      source: "file:///home/me/acme/.vscode/mcp.json",
      workspaceDefined: true,
      passesSharedFolders: true,
    });
    expect(vsCodeCopies([fsv], folders)[0]?.needsSharedFolders).toBe(true);
  });

  it("matter only while VS Code's MCP access is not none", () => {
    expect(vsCodeMcpOn("all", undefined)).toBe(true);
    expect(vsCodeMcpOn("registry", undefined)).toBe(true);
    expect(vsCodeMcpOn("none", true)).toBe(false);
  });

  it("matter in a VS Code without chat.mcp.access only when its chat.mcp.enabled is on", () => {
    expect(vsCodeMcpOn(undefined, true)).toBe(true);
    expect(vsCodeMcpOn(undefined, false)).toBe(false);
    expect(vsCodeMcpOn(undefined, undefined)).toBe(false);
  });
});

describe("the hand-over", () => {
  const copies = vsCodeCopies(
    [workspaceServer("fs", ".vscode/mcp.json"), workspaceServer("fsv", ".vscode/mcp.json")],
    folders,
  );
  const [fs, fsv] = copies;
  const handed: CopyMemory = { handedOver: [fs?.key ?? "", fsv?.key ?? ""], dismissed: [] };

  it("offers host_bridge's copy to VS Code only once VS Code's own is handed over, so VS Code never lists two", () => {
    expect(offeredToVsCode(copies, none)("fs")).toBe(false);
    expect(offeredToVsCode(copies, none)("files")).toBe(true);
    expect(offeredToVsCode(copies, handed)("fs")).toBe(true);
    expect(offeredToVsCode(copies, handed)("fsv")).toBe(true);
  });

  it("says per server whether it is handed over or VS Code runs its own copy", () => {
    expect([...copyStates(copies, none)]).toEqual([
      ["fs", "vsCodeRunsItsOwn"],
      ["fsv", "vsCodeRunsItsOwn"],
    ]);
    expect(copyStates(copies, handed).get("fs")).toBe("handedOver");
  });

  it("says that VS Code's copy of an entry needing the shared folders cannot start, until it is handed over", () => {
    const needs = vsCodeCopies(
      [
        server("fsv", {
          source: "file:///home/me/acme/.vscode/mcp.json",
          workspaceDefined: true,
          passesSharedFolders: true,
        }),
      ],
      folders,
    );
    expect(copyStates(needs, none).get("fsv")).toBe("vsCodeCopyCannotStart");
    expect(copyStates(needs, { handedOver: [needs[0]?.key ?? ""], dismissed: [] }).get("fsv")).toBe("handedOver");
  });

  it("notices a server once: not when handed over, not after “Not Now”", () => {
    expect(copiesToNotice(copies, none)).toEqual(copies);
    expect(copiesToNotice(copies, handed)).toEqual([]);
    expect(copiesToNotice(copies, { handedOver: [], dismissed: [fs?.key ?? ""] })).toEqual([fsv]);
  });

  it("is remembered as two lists of keys, and anything else stored reads as nothing handed over", () => {
    expect(copyMemory(handed)).toEqual(handed);
    expect(copyMemory(undefined)).toEqual(none);
    expect(copyMemory({ handedOver: [3, "a"], dismissed: "b" })).toEqual({ handedOver: ["a"], dismissed: [] });
  });
});

describe("the notice about VS Code's copies", () => {
  const [fs, fsv] = vsCodeCopies(
    [
      workspaceServer("fs", ".vscode/mcp.json"),
      server("fsv", {
        source: "file:///home/me/acme/.vscode/mcp.json",
        workspaceDefined: true,
        passesSharedFolders: true,
      }),
    ],
    folders,
  );

  it("names MCP Host Bridge, every server and file, the bypassed consent and what “Hand Over” does", () => {
    const notice = handOverNotice(
      [fs, fsv].filter((copy) => copy !== undefined),
      true,
    );
    expect(notice).toMatch(/^MCP Host Bridge: /);
    expect(notice).toContain("runs “fs” and “fsv” from acme/.vscode/mcp.json as its own copies");
    expect(notice).toContain("outside per-folder consent and the sandbox");
    expect(notice).toContain("“fsv” cannot start there: VS Code does not fill in ${hostBridge:sharedFolders}.");
    expect(notice).toContain("Hand them over: VS Code's copies are stopped");
    expect(notice).toContain("“fs (MCP Host Bridge)” and “fsv (MCP Host Bridge)”");
  });

  it("speaks of one copy for one server, and does not claim VS Code lists host_bridge's where it cannot", () => {
    const notice = handOverNotice(fs === undefined ? [] : [fs], false);
    expect(notice).toContain("as its own copy,");
    expect(notice).toContain("Hand it over: VS Code's copy is stopped");
    expect(notice).not.toContain("(MCP Host Bridge)”");
    expect(notice).not.toContain("cannot start");
  });
});

describe("the message after a hand-over", () => {
  it("says the copies are stopped, that VS Code may start them again, and where to keep it from that", () => {
    const [fs, fsv] = vsCodeCopies(
      [
        server("fs", { source: "file:///home/me/acme/.vscode/mcp.json", workspaceDefined: true }),
        server("fsv", { source: "file:///home/me/acme/.vscode/mcp.json", workspaceDefined: true }),
      ],
      folders,
    );
    const both = handedOverMessage([fs, fsv].filter((copy) => copy !== undefined));
    expect(both).toMatch(/^MCP Host Bridge: handed over “fs” and “fsv”; VS Code's own copies are stopped\./);
    expect(both).toContain("choose “Disable (Workspace)” for each under “MCP Servers - Installed”");
    const one = handedOverMessage(fs === undefined ? [] : [fs]);
    expect(one).toContain("VS Code's own copy is stopped. VS Code may start it again (its chat keeps its tools");
  });
});

describe("a copy seen among the extension host's children", () => {
  const fs: Pick<ServerStatus, "id" | "command" | "args"> = {
    id: "fs",
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"],
  };

  it("is a command line with every literal argument of the entry, however a package runner rewrote it", () => {
    expect(runsServer("npm exec @modelcontextprotocol/server-filesystem /home/me/acme", fs)).toBe(true);
    expect(runsServer("node /usr/bin/npx -y @modelcontextprotocol/server-filesystem /home/me/acme", fs)).toBe(true);
  });

  it("is not host_bridge's own copy, which VS Code runs through host-bridge attach", () => {
    const attach = "/usr/bin/python3 -m host_bridge attach fs --workspace /home/me/acme --storage-dir /s";
    expect(runsServer(`${attach} @modelcontextprotocol/server-filesystem`, fs)).toBe(false);
  });

  it("is never claimed for an entry without a literal argument, or for another program", () => {
    expect(
      runsServer("node /srv/server.js", { id: "x", command: "node", args: ["${workspaceFolder}/server.js"] }),
    ).toBe(false);
    expect(runsServer("git status", fs)).toBe(false);
  });
});
