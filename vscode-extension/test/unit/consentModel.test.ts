import { describe, expect, it } from "vitest";
import {
  LeftPrivate,
  Choice,
  PromptQueue,
  changeSummary,
  commandLine,
  decisionOfChoice,
  decisionsFor,
  folderChoices,
  folderDetail,
  folderItem,
  foldersWereAsked,
  homeRelative,
  kindsText,
  manageableFolders,
  quoteArg,
  serverItem,
  serverName,
  serverNamed,
  sharedFoldersDiff,
  sourceText,
  trustDetail,
  trustOfChoice,
} from "../../src/consentModel";
import type * as protocol from "../../src/protocol";

const stdio: protocol.ServerRef = {
  id: "fs",
  label: "Files",
  source: "file:///home/me/acme/.vscode/mcp.json",
  transport: "stdio",
  command: "npx",
  args: ["-y", "@modelcontextprotocol/server-filesystem", "my dir", "it's"],
};

const http: protocol.ServerRef = {
  id: "web",
  label: "web",
  source: "settings",
  transport: "http",
  url: "https://mcp.example.com/mcp",
};

function candidate(uri: string, overrides: Partial<protocol.Candidate> = {}): protocol.Candidate {
  return { uri, name: uri.split("/").pop() ?? uri, kinds: [], markers: [], ...overrides };
}

function status(overrides: Partial<protocol.ServerStatus> = {}): protocol.ServerStatus {
  return { ...http, state: "running", sharedRoots: [], ...overrides };
}

describe("command line display", () => {
  it("leaves plain words unquoted", () => {
    expect(quoteArg("@modelcontextprotocol/server-filesystem")).toBe("@modelcontextprotocol/server-filesystem");
    expect(quoteArg("--port=8080")).toBe("--port=8080");
  });

  it("single-quotes arguments with spaces and escapes single quotes inside them", () => {
    expect(quoteArg("my dir")).toBe("'my dir'");
    expect(quoteArg("it's")).toBe("'it'\\''s'");
    expect(quoteArg('say "hi"')).toBe("'say \"hi\"'");
    expect(quoteArg("$HOME")).toBe("'$HOME'");
  });

  it("shows an empty argument as a pair of quotes", () => {
    expect(quoteArg("")).toBe("''");
  });

  it("makes newlines and bidi controls visible instead of printing them", () => {
    expect(quoteArg("a\nb")).toBe("$'a\\nb'");
    expect(quoteArg("x\u202ey")).toBe("$'x\\u202ey'");
    expect(quoteArg("it's\u0007")).toBe("$'it\\'s\\x07'");
  });

  it("joins the command and its quoted arguments", () => {
    expect(commandLine(stdio)).toBe("npx -y @modelcontextprotocol/server-filesystem 'my dir' 'it'\\''s'");
  });

  it("shows an http server's URL", () => {
    expect(commandLine(http)).toBe("https://mcp.example.com/mcp");
  });

  it("names the server by label with its id when they differ", () => {
    expect(serverName(stdio)).toBe("“Files” (fs)");
    expect(serverName(http)).toBe("“web”");
  });

  it("puts the source file and the exact command line in the trust detail", () => {
    const detail = trustDetail(stdio, "~/acme/.vscode/mcp.json");
    expect(detail).toContain("Defined in: ~/acme/.vscode/mcp.json");
    expect(detail).toContain("Command: npx -y @modelcontextprotocol/server-filesystem 'my dir'");
    expect(trustDetail(http, "x")).toContain("URL: https://mcp.example.com/mcp");
  });

  it("says a settings server comes from the settings and a file server from its home-relative path", () => {
    const toPath = (uri: string): string => uri.replace("file://", "");
    expect(sourceText("settings", toPath, "/home/me")).toBe("your settings");
    expect(sourceText("file:///home/me/acme/.mcp.json", toPath, "/home/me")).toBe("~/acme/.mcp.json");
  });
});

describe("folder items", () => {
  it("shows paths under the home directory with a tilde", () => {
    expect(homeRelative("/home/me/acme", "/home/me")).toBe("~/acme");
    expect(homeRelative("/home/me", "/home/me/")).toBe("~");
    expect(homeRelative("C:\\Users\\me\\acme", "C:\\Users\\me")).toBe("~\\acme");
  });

  it("does not shorten a sibling whose name merely starts like the home directory", () => {
    expect(homeRelative("/home/meg/acme", "/home/me")).toBe("/home/meg/acme");
    expect(homeRelative("/srv/acme", "/home/me")).toBe("/srv/acme");
    expect(homeRelative("/srv/acme", "")).toBe("/srv/acme");
  });

  it("describes kinds and names the project manifests but not the VCS markers", () => {
    expect(
      kindsText({ kinds: ["workspaceFolder", "git", "project"], markers: [".git", "package.json", "pyproject.toml"] }),
    ).toBe("workspace folder · git · project (package.json, pyproject.toml)");
    expect(kindsText({ kinds: ["worktree", "submodule"], markers: [".git"] })).toBe("git worktree · git submodule");
    expect(kindsText({ kinds: ["project"], markers: [] })).toBe("project");
  });

  it("preselects workspace folders and nothing else", () => {
    const workspace = candidate("file:///home/me/acme", { kinds: ["workspaceFolder", "git"], markers: [".git"] });
    const nested = candidate("file:///home/me/acme/api", { name: "acme-api", kinds: ["project"], markers: ["go.mod"] });
    expect(folderItem(workspace, "/home/me/acme", "/home/me")).toEqual({
      uri: "file:///home/me/acme",
      label: "acme",
      description: "~/acme",
      detail: "workspace folder · git",
      picked: true,
    });
    expect(folderItem(nested, "/home/me/acme/api", "/home/me").picked).toBe(false);
  });

  it("lets the caller decide the preselection", () => {
    const nested = candidate("file:///home/me/acme/api", { kinds: ["project"] });
    expect(folderItem(nested, "/home/me/acme/api", "/home/me", true).picked).toBe(true);
  });

  it("lists the folders in the modal detail and cuts a long list short", () => {
    const paths = Array.from({ length: 10 }, (_, index) => `~/p${index}`);
    const detail = folderDetail(stdio, paths);
    expect(detail).toContain("~/p7");
    expect(detail).not.toContain("~/p8");
    expect(detail).toContain("… and 2 more");
    expect(detail).toContain("Command: npx");
  });
});

describe("consent answers", () => {
  const roots = [candidate("file:///a"), candidate("file:///b"), candidate("file:///c")];

  it("offers quick answers for one folder and a chooser for several", () => {
    expect(folderChoices(roots.slice(0, 1))).toEqual([Choice.allow, Choice.allowSession, Choice.deny]);
    expect(folderChoices(roots)).toEqual([Choice.chooseFolders, Choice.denyAll]);
  });

  it("maps modal buttons to decisions and Escape to none", () => {
    expect(decisionOfChoice(Choice.allow)).toBe("allow");
    expect(decisionOfChoice(Choice.allowSession)).toBe("allowSession");
    expect(decisionOfChoice(Choice.deny)).toBe("deny");
    expect(decisionOfChoice(Choice.denyAll)).toBe("deny");
    expect(decisionOfChoice(Choice.chooseFolders)).toBeUndefined();
    expect(decisionOfChoice(undefined)).toBeUndefined();
  });

  it("answers only the selected folders, in the order asked", () => {
    expect(decisionsFor(roots, ["file:///c", "file:///a"], "allowSession")).toEqual([
      { uri: "file:///a", decision: "allowSession" },
      { uri: "file:///c", decision: "allowSession" },
    ]);
  });

  it("never answers about a folder that was not asked about", () => {
    expect(decisionsFor(roots, ["file:///elsewhere", "file:///b"], "allow")).toEqual([
      { uri: "file:///b", decision: "allow" },
    ]);
  });

  it("answers nothing when nothing is selected", () => {
    expect(decisionsFor(roots, [], "allow")).toEqual([]);
  });
});

describe("manage shared folders", () => {
  it("allows newly checked folders and denies unchecked shared ones", () => {
    expect(sharedFoldersDiff(["file:///a", "file:///b"], ["file:///b", "file:///c"], "allow")).toEqual([
      { uri: "file:///c", decision: "allow" },
      { uri: "file:///a", decision: "deny" },
    ]);
  });

  it("uses the chosen kind of allowance for additions", () => {
    expect(sharedFoldersDiff([], ["file:///a"], "allowSession")).toEqual([
      { uri: "file:///a", decision: "allowSession" },
    ]);
  });

  it("changes nothing when the selection equals what is shared", () => {
    expect(sharedFoldersDiff(["file:///a", "file:///b"], ["file:///b", "file:///a"], "allow")).toEqual([]);
  });

  it("compares folders by their exact URI string", () => {
    expect(sharedFoldersDiff(["file:///a%20b"], ["file:///a b"], "allow")).toEqual([
      { uri: "file:///a b", decision: "allow" },
      { uri: "file:///a%20b", decision: "deny" },
    ]);
  });

  it("keeps a shared folder that is no longer a candidate so that it can be unchecked", () => {
    const folders = manageableFolders(
      [candidate("file:///a")],
      [{ uri: "file:///a" }, { uri: "file:///gone", name: "gone" }],
    );
    expect(folders.map((folder) => [folder.uri, folder.name])).toEqual([
      ["file:///a", "a"],
      ["file:///gone", "gone"],
    ]);
  });

  it("summarises what was shared and what was withdrawn", () => {
    const names: Record<string, string> = { "file:///a": "acme", "file:///b": "api", "file:///c": "old" };
    const summary = changeSummary(
      stdio,
      [
        { uri: "file:///a", decision: "allow" },
        { uri: "file:///b", decision: "allowSession" },
        { uri: "file:///c", decision: "deny" },
      ],
      (uri) => names[uri] ?? uri,
    );
    expect(summary).toBe(
      "MCP server “Files” (fs): now sharing “acme”; sharing “api” for this session; no longer sharing “old”.",
    );
    expect(changeSummary(stdio, [], (uri) => uri)).toBe("Nothing changed for the MCP server “Files” (fs).");
  });

  it("describes a server by its state and shared folder count", () => {
    expect(serverItem(status()).description).toBe("running · no folders shared");
    expect(serverItem(status({ state: "awaitingTrust", sharedRoots: [{ uri: "file:///a" }] })).description).toBe(
      "awaiting trust · 1 folder shared",
    );
    expect(serverItem(status({ sharedRoots: [{ uri: "file:///a" }, { uri: "file:///b" }] })).description).toBe(
      "running · 2 folders shared",
    );
  });
});

describe("trust answers", () => {
  it("trusts only on “Trust and Start” and distrusts only on “Don't Trust”", () => {
    expect(trustOfChoice(Choice.trust)).toBe(true);
    expect(trustOfChoice(Choice.dontTrust)).toBe(false);
  });

  it("leaves trust unanswered when the modal is dismissed or times out", () => {
    expect(trustOfChoice(undefined)).toBeUndefined();
    expect(trustOfChoice("Cancel")).toBeUndefined();
  });

  it("counts folders as asked only when no trust was needed or trust was given", () => {
    expect(foldersWereAsked(false, { decisions: [] })).toBe(true);
    expect(foldersWereAsked(true, { trust: true, decisions: [] })).toBe(true);
    expect(foldersWereAsked(true, { trust: false, decisions: [] })).toBe(false);
    expect(foldersWereAsked(true, { decisions: [] })).toBe(false);
  });
});

describe("server-controlled text in pickers", () => {
  it("does not let a server label render icons in the server picker", () => {
    expect(serverItem(status({ label: "$(shield) Trusted" })).label).toBe("$\u200b(shield) Trusted");
  });

  it("names a server with an empty label by its id", () => {
    expect(serverItem(status({ label: "" })).label).toBe(status().id);
  });
});

describe("server named by a command argument", () => {
  const servers = [status({ id: "fs" }), status({ id: "web" })];

  it("finds the server whose id the status picker passed", () => {
    expect(serverNamed(servers, "web")?.id).toBe("web");
  });

  it("finds none for an unknown id or an argument that is no id", () => {
    expect(serverNamed(servers, "gone")).toBeUndefined();
    expect(serverNamed(servers, undefined)).toBeUndefined();
    expect(serverNamed(servers, { id: "fs" })).toBeUndefined();
  });
});

describe("prompt queue", () => {
  function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
    let resolve = (): void => undefined;
    let reject = (_error: Error): void => undefined;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  it("runs one prompt at a time, in the order they came", async () => {
    const queue = new PromptQueue();
    const events: string[] = [];
    const first = deferred();
    const a = queue.run(async () => {
      events.push("a start");
      await first.promise;
      events.push("a end");
      return "a";
    });
    const b = queue.run(async () => {
      events.push("b start");
      return "b";
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(events).toEqual(["a start"]);
    expect(queue.size).toBe(2);
    first.resolve();
    expect(await a).toBe("a");
    expect(await b).toBe("b");
    expect(events).toEqual(["a start", "a end", "b start"]);
    expect(queue.size).toBe(0);
  });

  it("starts the next prompt after one fails and still reports the failure", async () => {
    const queue = new PromptQueue();
    const failing = queue.run(async () => {
      throw new Error("dialog failed");
    });
    const next = queue.run(async () => "next");
    await expect(failing).rejects.toThrow("dialog failed");
    expect(await next).toBe("next");
  });
});

describe("folders left unshared in this window", () => {
  const server: protocol.ServerRef = { id: "fs", label: "fs", source: "settings", transport: "stdio", command: "node", args: ["fs.js"] };
  const folder = (name: string): protocol.Candidate => ({ uri: `file:///w/${name}`, name, kinds: ["workspaceFolder"], markers: [] });

  it("are not asked about again for the same server launch, while allowed ones and new ones are", () => {
    const memory = new LeftPrivate();
    const [a, b, c] = [folder("a"), folder("b"), folder("c")];
    memory.answered(server, [a, b], [{ uri: a.uri, decision: "allow" }]);
    expect(memory.unasked(server, [a, b, c]).map((r) => r.name)).toEqual(["a", "c"]);
  });

  it("are asked about again when the server's command changes", () => {
    const memory = new LeftPrivate();
    memory.answered(server, [folder("a")], []);
    expect(memory.unasked({ ...server, args: ["other.js"] }, [folder("a")])).toHaveLength(1);
  });

  it("include denied folders", () => {
    const memory = new LeftPrivate();
    memory.answered(server, [folder("a")], [{ uri: folder("a").uri, decision: "deny" }]);
    expect(memory.unasked(server, [folder("a")])).toHaveLength(0);
  });
});
