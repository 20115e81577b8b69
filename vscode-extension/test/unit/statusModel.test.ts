import { describe, expect, it } from "vitest";
import type { ServerStatus } from "../../src/protocol";
import {
  rootName,
  serverActions,
  serverPickTexts,
  sharedFolderCount,
  sidecarPickTexts,
  statusBarView,
  statusTooltip,
  visibleThroughText,
  waitsForServer,
} from "../../src/statusModel";

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
    sharedRoots: [],
    visibleThrough: [],
    reach: [],
    ...overrides,
  };
}

const acme = { uri: "file:///home/me/acme", name: "acme" };
const api = { uri: "file:///home/me/acme/api", name: "acme-api" };

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
    const view = statusBarView({ kind: "running" }, [server({ id: "a" }), server({ id: "b", state: "starting" })]);
    expect(view.text).toBe("$(plug) MCP 1/2 · no folders shared");
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
        server({ id: "fs", label: "Files", sharedRoots: [acme, api] }),
        server({ id: "web", label: "Web", state: "failed", lastError: "npx was not found;\ninstall Node." }),
      ],
      4242,
    );
    expect(tooltip).toContain("running (pid 4242)");
    expect(tooltip).toContain("- **Files** — running; shares acme, acme\\-api");
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
      }),
    );
    expect(texts).toEqual({ label: "Files", description: "running · 2025-11-25", detail: "shares acme, data" });
  });

  it("says no folders are shared and gives the last error", () => {
    const texts = serverPickTexts(
      server({ id: "web", state: "awaitingTrust", lastError: "It crashed.\nSee the log." }),
    );
    expect(texts.description).toBe("awaiting trust");
    expect(texts.detail).toBe("no folders shared — last error: It crashed. See the log.");
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

  it("offers every action for a server while the sidecar runs", () => {
    const ids = serverActions(server({ id: "fs" }), { kind: "running" }).map((action) => action.id);
    expect(ids).toEqual(["restartServer", "manageFolders", "showLog", "restartSidecar"]);
  });

  it("does not offer to restart a server while the sidecar is down", () => {
    const ids = serverActions(server({ id: "fs", state: "stopped" }), { kind: "stopped" }).map((action) => action.id);
    expect(ids).not.toContain("restartServer");
    expect(ids).toContain("restartSidecar");
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
  const nested = server({ id: "fs", label: "Files", sharedRoots: [acme], visibleThrough: [ui] });

  it("names each folder and the shared folder it is seen through", () => {
    expect(visibleThroughText(nested)).toBe("ui visible through acme");
    expect(visibleThroughText(server({ id: "none" }))).toBe("");
  });

  it("says so in the status bar tooltip after the shared folders", () => {
    expect(statusTooltip({ kind: "running" }, [nested])).toContain(
      "- **Files** — running; shares acme; ui visible through acme",
    );
  });

  it("says so in the status picker's detail", () => {
    expect(serverPickTexts(nested).detail).toBe("shares acme · ui visible through acme");
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
    });
    expect(serverPickTexts(sneaky)).toEqual({
      label: "safe\\u202eexe.txt",
      description: "running",
      detail: "shares a\\u200bb · c\\u202ed visible through a\\u200bb",
    });
    expect(statusTooltip({ kind: "running" }, [sneaky])).not.toMatch(/[\u200b\u202e]/u);
  });
});
