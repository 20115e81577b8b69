import { describe, expect, it } from "vitest";
import {
  Choice,
  PromptQueue,
  allowKindPlaceholder,
  changeSummary,
  chooserPlaceholder,
  folderChoiceAnswer,
  isReadOnly,
  shareFolderChoice,
  commandLine,
  denyAll,
  folderAnswers,
  folderChoices,
  folderDetail,
  folderItem,
  folderNames,
  folderQuestion,
  homeRelative,
  kindsText,
  launchLines,
  manageItems,
  manageableFolders,
  quoteArg,
  quotedList,
  serverItem,
  serverName,
  serverNamed,
  sharedFoldersDiff,
  sourceText,
  stillVisible,
  trustChoices,
  trustDetail,
  trustOfChoice,
  trustQuestion,
  unshareParentPrompt,
  type AppliedChange,
  type PathDisplay,
} from "../../../src/consent/consentModel";
import type * as protocol from "../../../src/protocol";

const display: PathDisplay = { toPath: (uri) => decodeURIComponent(uri.replace("file://", "")), home: "/home/me" };

const stdio: protocol.ServerRef = {
  id: "fs",
  label: "Files",
  source: "file:///home/me/acme/.vscode/mcp.json",
  transport: "stdio",
  command: "npx",
  args: ["-y", "@modelcontextprotocol/server-filesystem", "my dir", "it's"],
  identity: "file:///home/me/acme/.vscode/mcp.json|fs|abc",
  workspaceDefined: true,
  executable: "/usr/bin/npx",
  env: [],
  envReferences: [],
  headerNames: [],
  passesSharedFolders: false,
};

const http: protocol.ServerRef = {
  id: "web",
  label: "web",
  source: "settings",
  transport: "http",
  url: "https://mcp.example.com/mcp",
  identity: "settings|web|def",
  workspaceDefined: false,
  env: [],
  envReferences: [],
  headerNames: [],
  passesSharedFolders: false,
};

function candidate(uri: string, overrides: Partial<protocol.Candidate> = {}): protocol.Candidate {
  return { uri, name: uri.split("/").pop() ?? uri, kinds: [], markers: [], ...overrides };
}

function sandboxState(overrides: Partial<protocol.SandboxState> = {}): protocol.SandboxState {
  return {
    setting: "enforce",
    enforced: false,
    planned: false,
    summary: "",
    warnings: [],
    network: "on",
    unixSockets: false,
    readOnly: [],
    channels: [],
    ...overrides,
  };
}

function status(overrides: Partial<protocol.ServerStatus> = {}): protocol.ServerStatus {
  return { ...http, state: "running", sharedRoots: [], visibleThrough: [], reach: [], ...overrides };
}

function applied(
  uri: string,
  decision: AppliedChange["decision"],
  result: Partial<protocol.SetConsentResult> = {},
): AppliedChange {
  const holds = decision === "forget" ? "none" : decision;
  return { uri, decision, result: { saved: true, applied: holds, ...result } };
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

  it("makes newlines, bidi controls and zero-width characters visible instead of printing them", () => {
    expect(quoteArg("a\nb")).toBe("$'a\\nb'");
    expect(quoteArg("x\u202ey")).toBe("$'x\\u202ey'");
    expect(quoteArg("it's\u0007")).toBe("$'it\\'s\\x07'");
    expect(quoteArg("a\u200db")).toBe("$'a\\u200db'");
  });

  it("escapes a character beyond the basic plane with eight hex digits", () => {
    expect(quoteArg("tag\u{e0041}")).toBe("$'tag\\U000e0041'");
  });

  it("joins the command and its quoted arguments", () => {
    expect(commandLine(stdio)).toBe("npx -y @modelcontextprotocol/server-filesystem 'my dir' 'it'\\''s'");
  });

  it("shows an http server's URL with invisible characters escaped", () => {
    expect(commandLine(http)).toBe("https://mcp.example.com/mcp");
    expect(commandLine({ ...http, url: "https://a\u202eb" })).toBe("https://a\\u202eb");
  });

  it("names the server by label with its id when they differ", () => {
    expect(serverName(stdio)).toBe("“Files” (fs)");
    expect(serverName(http)).toBe("“web”");
  });

  it("shows invisible characters in a server's name escaped", () => {
    expect(serverName({ id: "x", label: "Fi\u200bles" })).toBe("“Fi\\u200bles” (x)");
  });

  it("says a settings server comes from the settings and a file server from its home-relative path", () => {
    expect(sourceText("settings", display)).toBe("your settings");
    expect(sourceText("file:///home/me/acme/.mcp.json", display)).toBe("~/acme/.mcp.json");
  });
});

describe("what runs, as the trust prompt says it", () => {
  it("names where it is defined, the resolved executable and the command as written", () => {
    expect(launchLines(stdio, display)).toEqual([
      "Defined in: ~/acme/.vscode/mcp.json",
      "Executable: /usr/bin/npx",
      "Command: npx -y @modelcontextprotocol/server-filesystem 'my dir' 'it'\\''s'",
    ]);
  });

  it("says when the command is not found on the server's PATH", () => {
    const { executable: _, ...missing } = stdio;
    expect(launchLines(missing, display)).toContain("Executable: not found on the server's PATH (it would run “npx”)");
  });

  it("gives the working directory, the environment names and only the values that decide which code runs", () => {
    const lines = launchLines(
      {
        ...stdio,
        cwd: "/home/me/acme",
        env: [
          { name: "API_KEY", fromEnvFile: false },
          { name: "PATH", value: "/home/me/acme/bin:/usr/bin", fromEnvFile: false },
        ],
      },
      display,
    );
    expect(lines).toContain("Working directory: /home/me/acme");
    expect(lines).toContain("Environment it sets: API_KEY, PATH=/home/me/acme/bin:/usr/bin");
    expect(lines).toContain("(Values are shown only for variables that decide which code runs, such as PATH.)");
    expect(lines.join("\n")).not.toContain("API_KEY=");
  });

  it("names the envFile and what it sets, such as a PATH that changes which npx runs", () => {
    const lines = launchLines(
      {
        ...stdio,
        envFile: "/home/me/acme/.env",
        env: [
          { name: "PATH", value: "/home/me/acme/evil", fromEnvFile: true },
          { name: "TOKEN", fromEnvFile: true },
        ],
      },
      display,
    );
    expect(lines).toContain("Environment file: /home/me/acme/.env, which sets PATH=/home/me/acme/evil, TOKEN");
  });

  it("says that the folders you share are passed on its command line when its config uses them", () => {
    const line = "Folders you share are passed on its command line (it restarts when they change)";
    expect(launchLines({ ...stdio, passesSharedFolders: true }, display)).toContain(line);
    expect(launchLines(stdio, display)).not.toContain(line);
  });

  it("says that its config turns the sandbox off, and nothing about the sandbox otherwise", () => {
    expect(launchLines({ ...stdio, sandboxSetting: "off" }, display)).toContain(
      "Sandbox: off in its config (it can read and write whatever you can)",
    );
    expect(launchLines({ ...stdio, sandboxSetting: "enforce" }, display).join("\n")).not.toContain("Sandbox");
    expect(launchLines(stdio, display).join("\n")).not.toContain("Sandbox");
  });

  it("puts both in the trust and folder dialogs", () => {
    const both = { ...stdio, passesSharedFolders: true, sandboxSetting: "off" as const };
    for (const text of [trustDetail(both, display), folderDetail(both, [candidate("file:///w/a")], [], display)]) {
      expect(text).toContain("Folders you share are passed on its command line");
      expect(text).toContain("Sandbox: off in its config");
    }
  });

  it("says which of your environment variables it reads and that their values go to the server", () => {
    expect(launchLines({ ...http, envReferences: ["SECRET_TOKEN"] }, display)).toContain(
      "Reads your environment variables: SECRET_TOKEN (their values are sent to the server)",
    );
  });

  it("gives an http server's URL and the names of its headers but never their values", () => {
    expect(launchLines({ ...http, headerNames: ["Authorization", "X-Team"] }, display)).toEqual([
      "Defined in: your settings",
      "URL: https://mcp.example.com/mcp",
      "Headers sent: Authorization, X-Team (values not shown)",
    ]);
  });

  it("escapes invisible characters in every path, name and value", () => {
    const text = launchLines(
      {
        ...stdio,
        executable: "/usr/bin/np\u202ex",
        cwd: "/w\u200b",
        env: [{ name: "P\u2066ATH", value: "/a\u200b", fromEnvFile: false }],
        envFile: "/e\u0000nv",
        envReferences: ["TO\u202eKEN"],
      },
      display,
    ).join("\n");
    // eslint-disable-next-line no-control-regex -- the NUL is what must not get through
    expect(text).not.toMatch(/[\u0000\u200b\u202e\u2066]/u);
    expect(text).toContain("Executable: /usr/bin/np\\u202ex");
    expect(text).toContain("P\\u2066ATH=$'/a\\u200b'");
    expect(text).toContain("Reads your environment variables: TO\\u202eKEN");
  });

  it("names the product in the trust question", () => {
    expect(trustQuestion(stdio)).toBe(
      "MCP Host Bridge: trust and start the MCP server “Files” (fs) defined by this workspace?",
    );
  });

  it("a batched trust question names how many servers it covers and lists every one of them", () => {
    const second = { ...stdio, id: "other", label: "other", executable: "/usr/bin/other", command: "other", args: [] };
    expect(trustQuestion(stdio, [second])).toBe(
      "MCP Host Bridge: trust and start the 2 MCP servers defined by this workspace file?",
    );
    const detail = trustDetail(stdio, display, [second]);
    expect(detail).toContain("1. “Files” (fs)");
    expect(detail).toContain("2. “other”");
    expect(detail).toContain("    Executable: /usr/bin/other");
    expect(detail).toContain(`${Choice.dontTrust}: none of them is started`);
    expect(detail).toContain("all 2 start now");
  });

  it("says per server in the trust detail what will confine it, and never that it runs with your permissions", () => {
    const second = { ...stdio, id: "other", label: "other", sandboxSetting: "off" as const };
    const detail = trustDetail(stdio, display, [second, http], (id) =>
      id === "fs" ? { sandbox: sandboxState({ enforced: true, mechanism: "landlock", planned: true }) } : undefined,
    );
    expect(detail).toContain(
      "    Sandboxed: Linux Landlock confines it, so it will be able to read and change only the folders you then choose",
    );
    expect(detail).toContain(
      '    Not sandboxed: its entry says "sandbox": "off", so it can read and change every file',
    );
    expect(detail).toContain(
      "    It runs elsewhere and is only contacted at its URL, so no sandbox on this machine confines it",
    );
    expect(detail).not.toContain("your permissions");
    const unsupported = trustDetail(stdio, display, [], () => ({
      sandbox: sandboxState({ planned: true, summary: "The sandbox is not enforced: Landlock is off in this kernel." }),
    }));
    expect(unsupported).toContain(
      "Not sandboxed (The sandbox is not enforced: Landlock is off in this kernel): it can read and change every file",
    );
  });

  it("puts what runs and the meaning of every button in the trust detail", () => {
    const detail = trustDetail(stdio, display);
    expect(detail).toContain("Defined in: ~/acme/.vscode/mcp.json");
    expect(detail).toContain("Executable: /usr/bin/npx");
    expect(detail).toContain("Command: npx -y @modelcontextprotocol/server-filesystem 'my dir'");
    expect(detail).toContain(`${Choice.dontTrust}: it is not started`);
    expect(detail).toContain(`${Choice.trust}: it starts now`);
    expect(detail).toContain("Cancel: decide later");
    expect(trustDetail(http, display)).toContain("URL: https://mcp.example.com/mcp");
  });
});

describe("trust answers", () => {
  it("puts “Don't Trust” first, so that Enter never starts a server", () => {
    expect(trustChoices()).toEqual([Choice.dontTrust, Choice.trust]);
  });

  it("trusts only on “Trust and Start” and distrusts only on “Don't Trust”", () => {
    expect(trustOfChoice(Choice.trust)).toBe(true);
    expect(trustOfChoice(Choice.dontTrust)).toBe(false);
  });

  it("leaves trust unanswered when the modal is cancelled or times out", () => {
    expect(trustOfChoice(undefined)).toBeUndefined();
    expect(trustOfChoice("Cancel")).toBeUndefined();
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

  it("checks nothing, not even a workspace folder", () => {
    const workspace = candidate("file:///home/me/acme", { kinds: ["workspaceFolder", "git"], markers: [".git"] });
    expect(folderItem(workspace, display)).toEqual({
      uri: "file:///home/me/acme",
      label: "acme",
      description: "~/acme",
      detail: "workspace folder · git",
      picked: false,
    });
  });

  it("lets the caller check a folder the server already sees", () => {
    expect(folderItem(candidate("file:///home/me/acme/api", { kinds: ["project"] }), display, true).picked).toBe(true);
  });

  it("says through which shared folder a folder is visible", () => {
    const ui = candidate("file:///home/me/acme/ui", { kinds: ["project"], markers: ["package.json"] });
    expect(folderItem(ui, display, true, { uri: "file:///home/me/acme", name: "acme" }).detail).toBe(
      "project (package.json) · visible through “acme”",
    );
  });

  it("shows a folder name with a bidi override escaped and without icons", () => {
    const sneaky = candidate("file:///home/me/x", { name: "$(check) good\u202etxt.exe" });
    expect(folderItem(sneaky, display).label).toBe("$\u200b(check) good\\u202etxt.exe");
  });
});

describe("the folder dialog", () => {
  const roots = [candidate("file:///home/me/acme", { name: "acme" }), candidate("file:///srv/beta", { name: "beta" })];

  it("names the product and the server in its question", () => {
    expect(folderQuestion(stdio, roots)).toBe(
      "MCP Host Bridge: share folders with the MCP server “Files” (fs)? 2 folders can be shared.",
    );
    expect(folderQuestion(stdio, roots.slice(0, 1))).toBe(
      "MCP Host Bridge: share the folder “acme” with the MCP server “Files” (fs)?",
    );
  });

  it("says first why it asks now, when the sidecar gives a reason", () => {
    const reason = "The sandbox refused the server /srv/beta/README.md, which is in a folder not shared with it.";
    expect(folderQuestion(stdio, roots.slice(1), reason)).toBe(
      `MCP Host Bridge: ${reason} Share the folder “beta” with the MCP server “Files” (fs)?`,
    );
    expect(folderQuestion(stdio, roots, reason)).toBe(
      `MCP Host Bridge: ${reason} Share folders with the MCP server “Files” (fs)? 2 folders can be shared.`,
    );
  });

  it("shows a reason on one line with invisible characters escaped, and no empty one", () => {
    expect(folderQuestion(stdio, roots.slice(1), "Refused /a\u202eb\nfor now.")).toBe(
      "MCP Host Bridge: Refused /a\\u202eb for now. Share the folder “beta” with the MCP server “Files” (fs)?",
    );
    expect(folderQuestion(stdio, roots.slice(1), "  ")).toBe(folderQuestion(stdio, roots.slice(1)));
  });

  it("makes a button that shares nothing the default: the chooser first, then “Don't Share”", () => {
    expect(folderChoices(roots)).toEqual([Choice.chooseFolders, Choice.dontShare]);
    expect(folderChoiceAnswer(Choice.chooseFolders, roots)).toBe("choose");
    expect(folderChoiceAnswer(Choice.dontShare, roots)).toEqual(denyAll(roots));
    expect(folderChoiceAnswer(undefined, roots)).toBeUndefined();
  });

  it("answers one folder in one step, with “Don't Share” as the default and no chooser", () => {
    const one = [candidate("file:///home/me/ws")];
    expect(folderChoices(one)).toEqual([Choice.dontShare, "Share “ws”", Choice.shareForSession, Choice.shareReadOnly]);
    expect(folderChoiceAnswer("Share “ws”", one)).toEqual([{ uri: "file:///home/me/ws", decision: "allow" }]);
    expect(folderChoiceAnswer(Choice.shareForSession, one)).toEqual([
      { uri: "file:///home/me/ws", decision: "allowSession" },
    ]);
    expect(folderChoiceAnswer(Choice.dontShare, one)).toEqual([{ uri: "file:///home/me/ws", decision: "deny" }]);
    expect(folderChoiceAnswer(Choice.chooseFolders, one)).toBeUndefined();
    expect(folderChoiceAnswer(undefined, one)).toBeUndefined();
  });

  it("shares the one folder read only through a step that asks only for how long", () => {
    const one = [candidate("file:///home/me/ws")];
    expect(folderChoiceAnswer(Choice.shareReadOnly, one)).toBe("kind");
    expect(folderChoiceAnswer(Choice.shareReadOnly, roots)).toBeUndefined();
    expect(allowKindPlaceholder(1, true)).toBe("Share the folder read only for how long? Escape shares nothing.");
    expect(isReadOnly("allowReadOnly") && isReadOnly("allowSessionReadOnly")).toBe(true);
    expect(isReadOnly("allow") || isReadOnly("allowSession")).toBe(false);
  });

  it("names the one folder in its button, escaped and cut short when long", () => {
    expect(shareFolderChoice("a\u202eb")).toBe("Share “a\\u202eb”");
    const long = shareFolderChoice("x".repeat(60));
    expect(long).toBe(`Share “${"x".repeat(31)}…”`);
  });

  it("says what each button of a one-folder question means", () => {
    const detail = folderDetail(stdio, [candidate("file:///home/me/ws")], [], display);
    expect(detail).toContain("Don't Share: don't share it with this server, and don't ask again.");
    expect(detail).toContain("Share “ws”: share it with this server until you change that.");
    expect(detail).toContain("Share for This Session: share it until the host bridge or VS Code restarts.");
    expect(detail).not.toContain(Choice.chooseFolders);
  });

  it("says in the folder question what confines the server", () => {
    const boxed = { sandbox: sandboxState({ enforced: true, mechanism: "landlock" }) };
    expect(folderDetail(stdio, roots, [], display, new Map(), boxed)).toContain(
      "Sandboxed: Linux Landlock confines it, so it will be able to read and change only the folders you share with it",
    );
    const loose = { sandbox: sandboxState({ setting: "off" }) };
    expect(folderDetail(stdio, roots, [], display, new Map(), loose)).toContain(
      "Not sandboxed (your setting hostBridge.sandbox is off): it can read and change every file your account can",
    );
  });

  it("lists the folders, what runs and what every button means", () => {
    const detail = folderDetail(stdio, roots, [], display);
    expect(detail).toContain("  ~/acme\n  /srv/beta");
    expect(detail).toContain("Executable: /usr/bin/npx");
    expect(detail).toContain("Choose Folders…: check the folders to share; none is checked to begin with.");
    expect(detail).toContain("Folders you leave unchecked are remembered as not shared with this server.");
    expect(detail).toContain("Don't Share: share none of them with this server, and don't ask again.");
    expect(detail).toContain("Cancel: decide later; nothing is shared now");
    expect(detail).toContain("“MCP: Manage Shared Folders”");
    expect(folderDetail(stdio, roots.slice(0, 1), [], display)).toContain(
      "Don't Share: don't share it with this server, and don't ask again.",
    );
  });

  it("lists the folders already visible through a shared one by the shared folder's name", () => {
    const detail = folderDetail(
      stdio,
      roots.slice(1),
      [{ uri: "file:///home/me/acme/packages/ui", through: "file:///home/me/acme" }],
      display,
      folderNames([candidate("file:///home/me/acme", { name: "Acme Corp" })]),
    );
    expect(detail).toContain("Already visible to it, inside a folder shared with it (nothing to decide):");
    expect(detail).toContain("  ~/acme/packages/ui — visible through “Acme Corp”");
  });

  it("cuts a long list of folders short", () => {
    const many = Array.from({ length: 10 }, (_, index) => candidate(`file:///home/me/p${index}`));
    const detail = folderDetail(stdio, many, [], display);
    expect(detail).toContain("~/p7");
    expect(detail).not.toContain("~/p8");
    expect(detail).toContain("… and 2 more");
  });

  it("tells the chooser's and the duration step's keys", () => {
    expect(chooserPlaceholder()).toBe("Check the folders to share, then press Enter (the rest stay unshared)");
    expect(allowKindPlaceholder(2)).toBe(
      "Share the 2 folders to read and write, or read only, and how long? Escape shares nothing.",
    );
    expect(allowKindPlaceholder(1)).toBe(
      "Share the folder to read and write, or read only, and how long? Escape shares nothing.",
    );
  });
});

describe("folder answers", () => {
  const roots = [candidate("file:///a"), candidate("file:///b"), candidate("file:///c")];

  it("allows the checked folders and denies the unchecked ones, in the order asked", () => {
    expect(folderAnswers(roots, ["file:///c", "file:///a"], "allowSession")).toEqual([
      { uri: "file:///a", decision: "allowSession" },
      { uri: "file:///b", decision: "deny" },
      { uri: "file:///c", decision: "allowSession" },
    ]);
  });

  it("never answers about a folder that was not asked about", () => {
    expect(folderAnswers(roots, ["file:///elsewhere", "file:///b"], "allow").map((answer) => answer.uri)).toEqual([
      "file:///a",
      "file:///b",
      "file:///c",
    ]);
  });

  it("denies every folder when nothing is checked or “Don't Share” is chosen", () => {
    expect(folderAnswers(roots, [], "allow").map((answer) => answer.decision)).toEqual(["deny", "deny", "deny"]);
    expect(denyAll(roots)).toEqual(folderAnswers(roots, [], "allow"));
  });
});

describe("manage shared folders", () => {
  const acme = "file:///w/acme";
  const ui = "file:///w/acme/ui";
  const beta = "file:///w/beta";

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

  it("changes nothing when the selection equals what the server sees", () => {
    expect(sharedFoldersDiff(["file:///a", "file:///b"], ["file:///b", "file:///a"], "allow")).toEqual([]);
    expect(sharedFoldersDiff([acme], [acme, ui], "allow", new Map([[ui, acme]]))).toEqual([]);
  });

  it("compares folders by their exact URI string", () => {
    expect(sharedFoldersDiff(["file:///a%20b"], ["file:///a b"], "allow")).toEqual([
      { uri: "file:///a b", decision: "allow" },
      { uri: "file:///a%20b", decision: "deny" },
    ]);
  });

  it("denies an unchecked folder that is visible through a shared parent", () => {
    expect(sharedFoldersDiff([acme], [acme], "allow", new Map([[ui, acme]]))).toEqual([{ uri: ui, decision: "deny" }]);
  });

  it("allows a folder kept checked whose parent is unchecked, so the server keeps seeing it", () => {
    expect(sharedFoldersDiff([acme], [ui], "allow", new Map([[ui, acme]]))).toEqual([
      { uri: ui, decision: "allow" },
      { uri: acme, decision: "deny" },
    ]);
  });

  it("denies outer folders before the folders inside them", () => {
    expect(sharedFoldersDiff([ui, beta, acme], [], "allow")).toEqual([
      { uri: beta, decision: "deny" },
      { uri: acme, decision: "deny" },
      { uri: ui, decision: "deny" },
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

  it("checks the shared folders and the folders visible through them, naming the parent", () => {
    const folders = [candidate(acme, { name: "Acme" }), candidate(ui), candidate(beta)];
    const items = manageItems(
      folders,
      { sharedRoots: [{ uri: acme, name: "acme" }], visibleThrough: [{ uri: ui, through: acme }] },
      display,
    );
    expect(items.map((item) => [item.label, item.picked, item.detail])).toEqual([
      ["Acme", true, ""],
      ["ui", true, "visible through “Acme”"],
      ["beta", false, ""],
    ]);
  });

  it("summarises what now holds, as the sidecar applied it", () => {
    const names = new Map([
      ["file:///a", "acme"],
      ["file:///b", "api"],
      ["file:///c", "old"],
    ]);
    const summary = changeSummary(
      stdio,
      [applied("file:///a", "allow"), applied("file:///b", "allowSession"), applied("file:///c", "deny")],
      names,
    );
    expect(summary).toBe(
      "MCP Host Bridge: MCP server “Files” (fs): now sharing “acme”; sharing “api” for this session; no longer sharing “old”.",
    );
    expect(changeSummary(stdio, [])).toBe("MCP Host Bridge: nothing changed for the MCP server “Files” (fs).");
  });

  it("says an allowance that could not be saved holds for this session only", () => {
    const summary = changeSummary(stdio, [applied("file:///a", "allow", { saved: false, applied: "allowSession" })]);
    expect(summary).toBe("MCP Host Bridge: MCP server “Files” (fs): sharing “a” for this session.");
  });

  it("says a denied folder stays visible through its shared parent", () => {
    const summary = changeSummary(stdio, [applied(ui, "deny", { visibleThrough: acme })], new Map([[acme, "Acme"]]));
    expect(summary).toBe(
      "MCP Host Bridge: MCP server “Files” (fs): “ui” is not shared on its own but stays visible through “Acme”.",
    );
  });

  it("groups the denied folders that stay visible by the parent they are seen through", () => {
    const other = "file:///w/acme/api";
    expect(
      stillVisible([
        applied(ui, "deny", { visibleThrough: acme }),
        applied(beta, "deny"),
        applied(other, "deny", { visibleThrough: acme }),
        applied("file:///w/new", "allow"),
      ]),
    ).toEqual([{ parent: acme, folders: [ui, other] }]);
  });

  it("offers to unshare the parent in a modal naming both folders, with the product name", () => {
    const prompt = unshareParentPrompt(stdio, acme, [ui], display, new Map([[acme, "Acme"]]));
    expect(prompt.message).toBe(
      "MCP Host Bridge: “ui” stays visible to the MCP server “Files” (fs) through “Acme”. Stop sharing “Acme”?",
    );
    expect(prompt.stop).toBe("Stop Sharing “Acme”");
    expect(prompt.keep).toBe("Keep Sharing “Acme”");
    expect(prompt.detail).toContain("“Acme” (/w/acme) is shared with “Files” (fs), and “ui” is inside it");
    expect(prompt.detail).toContain("Stop Sharing “Acme”: the server sees neither any more.");
    expect(prompt.detail).toContain("Keep Sharing “Acme”: nothing else changes; “ui” stays visible through “Acme”.");
  });

  it("lists several names with commas and a final “and”", () => {
    expect(quotedList(["a"])).toBe("“a”");
    expect(quotedList(["a", "b", "c"])).toBe("“a”, “b” and “c”");
  });

  it("describes a server by its state, shared folder count and folders seen through them", () => {
    expect(serverItem(status()).description).toBe("running · no folders shared");
    expect(serverItem(status({ state: "awaitingTrust", sharedRoots: [{ uri: "file:///a" }] })).description).toBe(
      "awaiting trust · 1 folder shared",
    );
    expect(
      serverItem(status({ sharedRoots: [{ uri: acme }], visibleThrough: [{ uri: ui, through: acme }] })).description,
    ).toBe("running · 1 folder shared · 1 more visible through it");
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
