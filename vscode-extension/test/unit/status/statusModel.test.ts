import { describe, expect, it } from "vitest";
import type { ServerStatus } from "../../../src/protocol";
import {
  copyText,
  foldersText,
  packageRunner,
  startingNote,
  resourcesNote,
  rootName,
  sandboxMessage,
  sandboxText,
  sandboxWord,
  serverActions,
  serverPickTexts,
  sharedFolderCount,
  sidecarPickTexts,
  statusBarView,
  statusTooltip,
  timeText,
  visibleThroughText,
  waitsForServer,
} from "../../../src/status/statusModel";

function server(overrides: Partial<ServerStatus> & { id: string }): ServerStatus {
  return {
    label: overrides.id,
    source: "settings",
    transport: "stdio",
    identity: `settings|${overrides.id}|f`,
    workspaceDefined: false,
    env: [],
    envReferences: [],
    headerNames: [],
    passesSharedFolders: false,
    state: "running",
    resources: { subscribe: false, listChanged: false },
    sharedRoots: [],
    visibleThrough: [],
    reach: [],
    ...overrides,
  };
}

const acme = { uri: "file:///home/me/acme", name: "acme" };
const api = { uri: "file:///home/me/acme/api", name: "acme-api" };
const webapp = { uri: "file:///home/me/webapp", name: "webapp" };

// Local times, so the texts (which show local time) are the same in every time zone.
const now = new Date(2026, 4, 1, 12, 0, 0);
const askedAt = new Date(2026, 4, 1, 10, 42, 7).toISOString();
/** A server that asked for its roots at 10:42:07. */
const asked = { reach: ["roots" as const], rootsAskedAt: askedAt };

const landlock = {
  setting: "enforce" as const,
  enforced: true,
  planned: false,
  mechanism: "landlock",
  warnings: [],
  network: "on" as const,
  unixSockets: false,
  readOnly: [],
  channels: [],
  summary:
    "Linux Landlock (ABI 6) confines this server: it can write only /home/me/webapp and a private temp folder; it can read system folders; everything else, the rest of /home/me included, is refused.",
};

describe("statusBarView", () => {
  it("counts running servers and distinct shared folders", () => {
    const servers = [
      server({ id: "fs", sharedRoots: [acme, api] }),
      server({ id: "git", sharedRoots: [acme] }),
      server({ id: "web" }),
    ];
    const view = statusBarView({ kind: "running" }, servers);
    expect(view.text).toBe("$(plug) MCP 3 · 2 folders shared");
    expect(view.warning).toBe(false);
  });

  it("shows running out of all servers when some are not running", () => {
    const view = statusBarView({ kind: "running" }, [server({ id: "a" }), server({ id: "b", state: "failed" })]);
    expect(view.text).toBe("$(plug) MCP 1/2 · no folders shared");
  });

  it("shows a server that is starting as progress, naming it", () => {
    const view = statusBarView({ kind: "running" }, [server({ id: "a" }), server({ id: "b", state: "starting" })]);
    expect(view.text).toBe("$(sync~spin) MCP 1/2 · starting b…");
    const many = ["b", "c", "d"].map((id) => server({ id, state: "starting" }));
    expect(statusBarView({ kind: "running" }, many).text).toBe("$(sync~spin) MCP 0/3 · starting b, c and 1 more…");
  });

  it("says in the tooltip that npx may be downloading a server's package while it starts", () => {
    const fetching = server({ id: "fs", state: "starting", transport: "stdio", command: "npx", args: ["-y", "pkg"] });
    expect(statusTooltip({ kind: "running" }, [fetching])).toContain(
      "- **fs** — starting (npx may be downloading its package)",
    );
    expect(serverPickTexts(fetching).detail).toContain("(npx may be downloading its package)");
  });

  it("never says “no servers” before the sidecar has read its server configs", () => {
    const loading = statusBarView({ kind: "running" }, [], 7, [], false);
    expect(loading.text).toBe("$(sync~spin) MCP starting…");
    expect(loading.tooltip).toContain("Reading the MCP server configurations…");
    expect(loading.tooltip).not.toContain("No MCP servers are configured");
    expect(statusBarView({ kind: "running" }, [], 7, [], true).text).toBe("$(plug) MCP · no servers");
  });

  it("says one folder in the singular", () => {
    const view = statusBarView({ kind: "running" }, [server({ id: "a", sharedRoots: [acme] })]);
    expect(view.text).toBe("$(plug) MCP 1 · 1 folder shared");
  });

  it("warns when any server failed", () => {
    const view = statusBarView({ kind: "running" }, [server({ id: "a" }), server({ id: "b", state: "failed" })]);
    expect(view.warning).toBe(true);
  });

  it("spins without a warning while the sidecar starts", () => {
    const view = statusBarView({ kind: "starting" }, []);
    expect(view.text).toBe("$(sync~spin) MCP starting…");
    expect(view.warning).toBe(false);
  });

  it("warns when the sidecar failed or stopped", () => {
    expect(statusBarView({ kind: "failed", reason: "Python 3.9 is too old." }, []).warning).toBe(true);
    expect(statusBarView({ kind: "stopped" }, []).warning).toBe(true);
    expect(statusBarView({ kind: "failed", reason: "x" }, []).text).toContain("failed");
  });

  it("says so when no server is configured", () => {
    expect(statusBarView({ kind: "running" }, []).text).toBe("$(plug) MCP · no servers");
  });
});

describe("statusTooltip", () => {
  it("lists each server with its state and shared folders", () => {
    const tooltip = statusTooltip(
      { kind: "running" },
      [
        server({ id: "fs", label: "Files", sharedRoots: [acme, api], ...asked }),
        server({ id: "web", label: "Web", state: "failed", lastError: "npx was not found;\ninstall Node." }),
      ],
      4242,
      now,
    );
    expect(tooltip).toContain("running (pid 4242)");
    expect(tooltip).toContain("- **Files** — running; shares acme, acme\\-api — asked for its folders at 10:42:07");
    expect(tooltip).toContain("- **Web** — failed");
    expect(tooltip).toContain("npx was not found; install Node\\.");
  });

  it("escapes Markdown in server labels", () => {
    const tooltip = statusTooltip({ kind: "running" }, [server({ id: "x", label: "[click](command:evil)" })]);
    expect(tooltip).not.toContain("[click](command:evil)");
    expect(tooltip).toContain("\\[click\\]\\(command:evil\\)");
  });

  it("gives the sidecar's failure reason", () => {
    expect(statusTooltip({ kind: "failed", reason: "Python was not found." }, [])).toContain(
      "failed: Python was not found\\.",
    );
  });

  it("names the workspace's servers that wait for workspace trust instead of saying none is configured", () => {
    const waiting = [{ path: "alpha/.vscode/mcp.json", names: ["workspace"] }];
    const tooltip = statusTooltip({ kind: "running" }, [], undefined, now, waiting);
    expect(tooltip).not.toContain("No MCP servers are configured");
    expect(tooltip).toContain("none is configured in your settings, and this workspace is in Restricted Mode");
    expect(tooltip).toContain("Restricted Mode: “workspace” (alpha/\\.vscode/mcp\\.json) waits for workspace trust");
    expect(statusBarView({ kind: "running" }, [], undefined, waiting).text).toBe(
      "$(workspace-untrusted) MCP · waiting for workspace trust",
    );
  });

  it("lists the running servers, then what waits for workspace trust", () => {
    const waiting = [{ path: "alpha/.mcp.json" }];
    const tooltip = statusTooltip({ kind: "running" }, [server({ id: "everything" })], undefined, now, waiting);
    expect(tooltip.indexOf("- **everything** — running")).toBeLessThan(tooltip.indexOf("Restricted Mode"));
    expect(tooltip).toContain("the servers of alpha/\\.mcp\\.json wait for workspace trust");
    expect(statusBarView({ kind: "running" }, [server({ id: "everything" })], undefined, waiting).text).toBe(
      "$(plug) MCP 1 · no folders shared",
    );
  });

  it("tells how to add servers when none is configured", () => {
    expect(statusTooltip({ kind: "running" }, [])).toContain("hostBridge.servers");
  });
});

describe("shared folders", () => {
  it("counts a folder shared with two servers once", () => {
    expect(
      sharedFolderCount([server({ id: "a", sharedRoots: [acme] }), server({ id: "b", sharedRoots: [acme, api] })]),
    ).toBe(2);
  });

  it("names a folder without a name by the last segment of its path", () => {
    expect(rootName({ uri: "file:///home/me/my%20project/" })).toBe("my project");
    expect(rootName({ uri: "file:///home/me/acme", name: "Acme" })).toBe("Acme");
  });
});

describe("status picker texts", () => {
  it("describes a server by state and protocol revision", () => {
    const texts = serverPickTexts(
      server({
        id: "fs",
        label: "Files",
        protocolVersion: "2025-11-25",
        sharedRoots: [acme, { uri: "file:///srv/data" }],
        ...asked,
      }),
      now,
    );
    expect(texts).toEqual({
      label: "Files",
      description: "running · 2025-11-25",
      detail: "shares acme, data — asked for its folders at 10:42:07",
    });
  });

  it("says no folders are shared and gives the last error", () => {
    const texts = serverPickTexts(
      server({ id: "web", state: "awaitingTrust", lastError: "It crashed.\nSee the log." }),
    );
    expect(texts.description).toBe("awaiting trust");
    expect(texts.detail).toBe(
      "no folders shared — waits for your trust: it is not started, so it offers no resources until you trust it — last error: It crashed. See the log.",
    );
  });

  it("says why a server offers no resources: running without the capability, starting, failed", () => {
    const tools = serverPickTexts(server({ id: "tools", protocolVersion: "2025-11-25", resources: undefined }));
    expect(tools.description).toBe("running · 2025-11-25 · no resources");
    expect(tools.detail).toBe("no folders shared — offers no resources: it does not declare the resources capability");
    expect(serverPickTexts(server({ id: "late", state: "starting" })).detail).toBe(
      "no folders shared — is starting: its resources are listed once it runs (its process is starting)",
    );
    expect(serverPickTexts(server({ id: "broken", state: "failed", lastError: "exit 3" })).detail).toBe(
      "no folders shared — failed, so it offers no resources — last error: exit 3",
    );
  });

  it("has no sidecar entry while the sidecar runs", () => {
    expect(sidecarPickTexts({ kind: "running" })).toBeUndefined();
  });

  it("puts the sidecar's failure reason in its entry", () => {
    const texts = sidecarPickTexts({ kind: "failed", reason: "Python 3.9 is too old; set hostBridge.python." });
    expect(texts?.label).toContain("failed");
    expect(texts?.description).toBe("Python 3.9 is too old; set hostBridge.python.");
    expect(texts?.detail).toContain("restart");
  });

  it("offers every action for a server while the sidecar runs, after what its folders are to it", () => {
    const ids = serverActions(server({ id: "fs" }), { kind: "running" }).map((action) => action.id);
    expect(ids).toEqual(["folders", "restartServer", "manageFolders", "showLog", "restartSidecar"]);
  });

  it("does not offer to restart a server while the sidecar is down", () => {
    const ids = serverActions(server({ id: "fs", state: "stopped" }), { kind: "stopped" }).map((action) => action.id);
    expect(ids).not.toContain("restartServer");
    expect(ids).toContain("restartSidecar");
  });
});

describe("resourcesNote", () => {
  it("says nothing of a running server with resources, and why any other has none", () => {
    expect(resourcesNote({ state: "running", resources: { subscribe: false, listChanged: false } })).toBeUndefined();
    expect(resourcesNote({ state: "running" })).toBe(
      "offers no resources: it does not declare the resources capability",
    );
    expect(resourcesNote({ state: "awaitingTrust" })).toContain("waits for your trust");
    expect(resourcesNote({ state: "stopped" })).toBe("is stopped, so it offers no resources");
  });
});

describe("waitsForServer", () => {
  it("waits until the first status of a started sidecar is known", () => {
    expect(waitsForServer("running", false, undefined)).toBe(true);
    expect(waitsForServer("running", false, "running")).toBe(true);
    expect(waitsForServer("running", true, "running")).toBe(false);
  });

  it("waits while the server is unknown, starting or restarting", () => {
    expect(waitsForServer("running", true, undefined)).toBe(true);
    expect(waitsForServer("running", true, "starting")).toBe(true);
    expect(waitsForServer("running", true, "restarting")).toBe(true);
    expect(waitsForServer("starting", false, undefined)).toBe(true);
  });

  it("does not wait for a stopped server or a sidecar that is down", () => {
    expect(waitsForServer("running", true, "stopped")).toBe(false);
    expect(waitsForServer("running", true, "awaitingTrust")).toBe(false);
    expect(waitsForServer("stopped", false, undefined)).toBe(false);
    expect(waitsForServer("failed", false, undefined)).toBe(false);
  });
});

describe("server texts with icon syntax", () => {
  it("does not let a server's label, version or error render icons in the picker", () => {
    const texts = serverPickTexts(
      server({
        id: "x",
        label: "$(pass) Safe",
        protocolVersion: "$(check)",
        state: "failed",
        lastError: "$(key) enter",
      }),
    );
    expect(texts.label).toBe("$\u200b(pass) Safe");
    expect(texts.description).not.toContain("$(");
    expect(texts.detail).not.toContain("$(");
  });

  it("names a server with an empty label by its id", () => {
    expect(serverPickTexts(server({ id: "fs", label: "" })).label).toBe("fs");
  });

  it("names a server with an empty label by its id in the tooltip", () => {
    expect(statusTooltip({ kind: "running" }, [server({ id: "fs", label: "" })])).toContain("- **fs** — running");
  });
});

describe("folders visible through a shared folder", () => {
  const ui = { uri: "file:///home/me/acme/packages/ui", through: acme.uri };
  const nested = server({ id: "fs", label: "Files", sharedRoots: [acme], visibleThrough: [ui], ...asked });

  it("names each folder and the shared folder it is seen through", () => {
    expect(visibleThroughText(nested)).toBe("ui visible through acme");
    expect(visibleThroughText(server({ id: "none" }))).toBe("");
  });

  it("says so in the status bar tooltip after the shared folders", () => {
    expect(statusTooltip({ kind: "running" }, [nested], undefined, now)).toContain(
      "- **Files** — running; shares acme — asked for its folders at 10:42:07; ui visible through acme",
    );
  });

  it("says so in the status picker's detail", () => {
    expect(serverPickTexts(nested, now).detail).toBe(
      "shares acme — asked for its folders at 10:42:07 · ui visible through acme",
    );
  });

  it("does not count a folder seen through a shared one as shared in the status bar", () => {
    expect(statusBarView({ kind: "running" }, [nested]).text).toBe("$(plug) MCP 1 · 1 folder shared");
  });

  it("shows invisible characters in folder and server names escaped", () => {
    const sneaky = server({
      id: "x",
      label: "safe\u202eexe.txt",
      sharedRoots: [{ uri: "file:///w/a", name: "a\u200bb" }],
      visibleThrough: [{ uri: "file:///w/a/c%E2%80%AEd", through: "file:///w/a" }],
      ...asked,
    });
    expect(serverPickTexts(sneaky, now)).toEqual({
      label: "safe\\u202eexe.txt",
      description: "running",
      detail: "shares a\\u200bb — asked for its folders at 10:42:07 · c\\u202ed visible through a\\u200bb",
    });
    expect(statusTooltip({ kind: "running" }, [sneaky])).not.toMatch(/[\u200b\u202e]/u);
  });
});

describe("what the shared folders are to a server", () => {
  it("says a server that never asked and gets them no other way was only offered them", () => {
    const never = server({ id: "probe", sharedRoots: [webapp] });
    expect(foldersText(never)).toBe("offered webapp — has not asked for its folders");
    expect(serverPickTexts(never).detail).toBe("offered webapp — has not asked for its folders");
    expect(statusTooltip({ kind: "running" }, [never])).toContain(
      "- **probe** — running; offered webapp — has not asked for its folders",
    );
    expect(statusTooltip({ kind: "running" }, [never])).not.toContain("shares");
  });

  it("says it shares them with a server that asked for them, and when it last asked", () => {
    const fs = server({ id: "fs", sharedRoots: [webapp], ...asked });
    expect(foldersText(fs, now)).toBe("shares webapp — asked for its folders at 10:42:07");
  });

  it("gives the day too when the server last asked on another day", () => {
    const fs = server({ id: "fs", sharedRoots: [webapp], ...asked });
    expect(foldersText(fs, new Date(2026, 4, 3, 9, 0, 0))).toBe(
      "shares webapp — asked for its folders at 2026-05-01 10:42",
    );
  });

  it("says the folders are on the command line of a server that gets them at launch", () => {
    const cli = server({ id: "cli", sharedRoots: [webapp], reach: ["launch"] });
    expect(foldersText(cli)).toBe("shares webapp — has not asked for its folders; they are on its command line");
  });

  it("says the sandbox confines a server that never asked, without claiming it got the folders", () => {
    const boxed = server({ id: "probe", sharedRoots: [webapp], reach: ["sandbox"], sandbox: landlock });
    expect(foldersText(boxed)).toBe("offered webapp — has not asked for its folders; its sandbox confines it to them");
  });

  it("names every way the folders reach a server, in order", () => {
    const all = server({
      id: "fs",
      sharedRoots: [webapp, acme],
      reach: ["roots", "launch", "sandbox"],
      rootsAskedAt: askedAt,
    });
    expect(foldersText(all, now)).toBe(
      "shares webapp, acme — asked for its folders at 10:42:07; they are on its command line; its sandbox confines it to them",
    );
  });

  it("says no folders are shared when none is, whatever else is known", () => {
    expect(foldersText(server({ id: "fs", ...asked }))).toBe("no folders shared");
  });

  it("shows a time it cannot read as it came, escaped", () => {
    expect(timeText("yesterday\u202e", now)).toBe("yesterday\\u202e");
  });
});

describe("the sandbox in status", () => {
  const boxed = server({ id: "probe", sharedRoots: [webapp], reach: ["sandbox"], sandbox: landlock });
  const unboxed = server({
    id: "loose",
    sandboxSetting: "off",
    sandbox: {
      setting: "off",
      enforced: false,
      planned: false,
      mechanism: "none",
      warnings: [],
      network: "on",
      unixSockets: false,
      readOnly: [],
      channels: [],
      summary: "The sandbox is off for this server (its setting): it can read and write every file your account can.",
    },
  });

  it("shows the sidecar's summary for a sandboxed stdio server", () => {
    expect(sandboxText(boxed)).toBe(`Sandbox: ${landlock.summary}`);
    expect(statusTooltip({ kind: "running" }, [boxed])).toContain("  \n  Sandbox: Linux Landlock \\(ABI 6\\) confines");
    expect(serverPickTexts(boxed).description).toBe("running · sandboxed");
  });

  it("says plainly that a server is not sandboxed when the sandbox is not enforced", () => {
    expect(sandboxWord(unboxed)).toBe("not sandboxed");
    expect(sandboxText(unboxed)).toMatch(/^not sandboxed: The sandbox is off for this server/);
    expect(serverPickTexts(unboxed).description).toBe("running · not sandboxed");
    expect(statusTooltip({ kind: "running" }, [unboxed])).toContain("  \n  not sandboxed: The sandbox is off");
  });

  it("says before a server's first start what its sandbox will be, never that it is sandboxed already", () => {
    const summary =
      "Linux Landlock (ABI 6) confines each stdio server's file access to its shared folders, a private temp folder, and read-only system and runtime paths";
    const waiting = server({
      id: "later",
      state: "awaitingTrust",
      sandbox: {
        setting: "enforce",
        enforced: true,
        planned: true,
        mechanism: "landlock",
        summary,
        warnings: [],
        network: "on",
        unixSockets: false,
        readOnly: [],
        channels: [],
      },
    });
    expect(sandboxText(waiting)).toBe(`Sandbox: not started yet; it will run confined: ${summary}`);
    expect(sandboxWord(waiting)).toBe("to be sandboxed");
    const off = server({
      id: "off",
      state: "awaitingTrust",
      sandbox: {
        ...landlock,
        setting: "off",
        enforced: false,
        planned: true,
        mechanism: "none",
        summary: "off",
      },
    });
    expect(sandboxText(off)).toBe("not sandboxed (off): it will be able to read and write every file your account can");
    expect(sandboxWord(off)).toBe("not sandboxed");
  });

  it("shows no sandbox for a server without one (http)", () => {
    const web = server({ id: "web", transport: "http" });
    expect(sandboxText(web)).toBeUndefined();
    expect(serverPickTexts(web).description).toBe("running");
    expect(statusTooltip({ kind: "running" }, [web])).not.toContain("andbox");
  });

  it("does not let the summary render icons or hide characters in the picker", () => {
    const sneaky = server({ id: "s", sandbox: { ...landlock, summary: "$(check) all\u202e fine" } });
    const row = serverActions(sneaky, { kind: "running" }).find((action) => action.id === "sandbox");
    expect(row?.detail).toBe("Sandbox: $\u200b(check) all\\u202e fine");
  });

  it("offers the sandbox in the server's picker, which shows the whole sentence when picked", () => {
    const rows = serverActions(boxed, { kind: "running" });
    expect(rows.map((row) => row.id).slice(0, 2)).toEqual(["folders", "sandbox"]);
    expect(rows[0]?.label).toBe(
      "$(folder) offered webapp — has not asked for its folders; its sandbox confines it to them",
    );
    expect(rows[1]).toMatchObject({ label: "$(shield) Sandboxed", detail: `Sandbox: ${landlock.summary}` });
    expect(serverActions(unboxed, { kind: "running" })[1]?.label).toBe("$(warning) Not sandboxed");
    expect(
      serverActions(server({ id: "web", transport: "http" }), { kind: "running" }).map((row) => row.id),
    ).not.toContain("sandbox");
  });

  it("names MCP Host Bridge and the whole summary in the sandbox message", () => {
    expect(sandboxMessage(boxed)).toEqual({
      message: "MCP Host Bridge: the MCP server “probe” runs in its OS sandbox.",
      detail: landlock.summary,
    });
  });

  it("says which setting turned the sandbox off", () => {
    expect(sandboxMessage(unboxed).message).toBe("MCP Host Bridge: the MCP server “loose” is not sandboxed.");
    expect(sandboxMessage(unboxed).detail).toContain('Its entry says "sandbox": "off".');
    const byDefault = server({ id: "d", sandbox: { ...landlock, setting: "off", enforced: false, mechanism: "none" } });
    expect(sandboxMessage(byDefault).detail).toContain("Your setting hostBridge.sandbox is off");
  });
});

describe("the sandbox sentence", () => {
  it("adds each warning of the policy after the summary, so an exposed unshared folder is said", () => {
    const warning =
      "The server can read /home/me/billing/.venv (its runtime), which is or contains /home/me/billing; that folder is not shared with it.";
    const text = sandboxText({ sandbox: { ...landlock, warnings: [warning] } });
    expect(text).toContain(landlock.summary);
    expect(text).toContain(`Note: ${warning}`);
  });
});

describe("package runners", () => {
  const stdio = (command: string, args: string[] = []) => ({ transport: "stdio" as const, command, args });

  it("names the commands that fetch their package before running it", () => {
    expect(packageRunner(stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem"]))).toBe("npx");
    expect(packageRunner(stdio("/usr/local/bin/uvx", ["mcp-server-git"]))).toBe("uvx");
    expect(packageRunner(stdio("C:\\Program Files\\nodejs\\npx.cmd"))).toBe("npx");
    expect(packageRunner(stdio("npm", ["exec", "pkg"]))).toBe("npm exec");
    expect(packageRunner(stdio("pnpm", ["dlx", "pkg"]))).toBe("pnpm dlx");
    expect(packageRunner(stdio("pipx", ["run", "pkg"]))).toBe("pipx run");
    expect(packageRunner(stdio("uv", ["tool", "run", "pkg"]))).toBe("uv tool run");
    expect(packageRunner(stdio("docker", ["run", "-i", "image"]))).toBe("docker run");
  });

  it("names no runner for a program run as it is, or an HTTP server", () => {
    expect(packageRunner(stdio("node", ["server.js"]))).toBeUndefined();
    expect(packageRunner(stdio("npm", ["start"]))).toBeUndefined();
    expect(packageRunner({ transport: "http" as const, command: undefined, args: undefined })).toBeUndefined();
  });

  it("says what a starting server may wait for, and nothing once it runs", () => {
    expect(startingNote({ state: "starting", ...stdio("npx", ["pkg"]) })).toBe("npx may be downloading its package");
    expect(startingNote({ state: "restarting", ...stdio("npx", ["pkg"]) })).toBe("its process is starting");
    expect(startingNote({ state: "starting", ...stdio("docker", ["run", "img"]) })).toBe(
      "docker run may be pulling its image",
    );
    expect(startingNote({ state: "starting", ...stdio("node", ["s.js"]) })).toBe("its process is starting");
    expect(startingNote({ state: "running", ...stdio("npx", ["pkg"]) })).toBeUndefined();
  });
});

describe("VS Code's own copy in the status", () => {
  const fs = server({ id: "fs" });

  it("says a server is handed over, or that VS Code runs its own copy, and offers the matching action", () => {
    expect(serverPickTexts(fs, new Date(), "handedOver").description).toBe("running · handed over");
    expect(serverPickTexts(fs, new Date(), "vsCodeRunsItsOwn").description).toBe("running · VS Code runs its own copy");
    const own = serverActions(fs, { kind: "running" }, new Date(), "vsCodeRunsItsOwn");
    expect(own.find((action) => action.id === "handOver")?.detail).toBe(copyText("vsCodeRunsItsOwn"));
    const handed = serverActions(fs, { kind: "running" }, new Date(), "handedOver");
    expect(handed.map((action) => action.id)).toContain("giveBack");
    expect(handed.map((action) => action.id)).not.toContain("handOver");
    expect(serverActions(fs, { kind: "running" }).map((action) => action.id)).not.toContain("handOver");
  });

  it("explains why VS Code's copy of an entry that needs the shared folders fails", () => {
    expect(copyText("vsCodeCopyCannotStart")).toBe(
      "VS Code's own copy cannot start: VS Code does not fill in ${hostBridge:sharedFolders}; hand it over",
    );
    expect(statusTooltip({ kind: "running" }, [fs], 1, new Date(), [], true, () => "vsCodeCopyCannotStart")).toContain(
      "VS Code's own copy cannot start",
    );
  });
});
