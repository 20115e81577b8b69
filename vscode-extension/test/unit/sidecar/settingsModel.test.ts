import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  configurationParams,
  initializationOptionsFor,
  restartSettingsChanged,
  networkSetting,
  sandboxSetting,
  settingsChange,
  sidecarSettings,
} from "../../../src/sidecar/settingsModel";

/** The settings package.json declares. */
const properties = (
  JSON.parse(readFileSync(path.resolve(__dirname, "../../../package.json"), "utf8")) as {
    contributes: {
      configuration: { properties: Record<string, { scope?: string; default?: unknown; enum?: unknown[] }> };
    };
  }
).contributes.configuration.properties;

describe("settings changes", () => {
  const only =
    (...settings: string[]) =>
    (setting: string) =>
      settings.includes(setting);

  it("restarts the sidecar when its interpreter changes", () => {
    expect(settingsChange(only("hostBridge.python"))).toBe("restart");
    expect(settingsChange(only("hostBridge.python", "hostBridge.servers"))).toBe("restart");
  });

  it("sends the servers and the workspace-config switch to the running sidecar instead of restarting it", () => {
    expect(settingsChange(only("hostBridge.servers"))).toBe("reload");
    expect(settingsChange(only("hostBridge.readWorkspaceConfig"))).toBe("reload");
  });

  it("restarts the sidecar when the sandbox default changes, since the sidecar reads it only in initialize", () => {
    expect(settingsChange(only("hostBridge.sandbox"))).toBe("restart");
    expect(settingsChange(only("hostBridge.sandbox", "hostBridge.servers"))).toBe("restart");
  });

  it("names the settings that made it restart", () => {
    expect(restartSettingsChanged(only("hostBridge.sandbox", "hostBridge.servers"))).toEqual(["hostBridge.sandbox"]);
    expect(restartSettingsChanged(only("hostBridge.python", "hostBridge.sandbox"))).toEqual([
      "hostBridge.python",
      "hostBridge.sandbox",
    ]);
  });

  it("ignores every other setting", () => {
    expect(settingsChange(only("hostBridge.trace.server", "editor.fontSize"))).toBe("none");
  });
});

describe("the settings the sidecar sees", () => {
  const servers = { fs: { type: "stdio", command: "npx" } };

  it("reads workspace config files only in a trusted workspace", () => {
    expect(sidecarSettings(servers, true, true).readWorkspaceConfig).toBe(true);
    expect(sidecarSettings(servers, true, false).readWorkspaceConfig).toBe(false);
    expect(sidecarSettings(servers, false, true).readWorkspaceConfig).toBe(false);
  });

  it("treats a servers value that is not an object as no servers", () => {
    expect(sidecarSettings(["fs"], true, true).servers).toEqual({});
    expect(sidecarSettings(null, true, true).servers).toEqual({});
    expect(sidecarSettings("fs", true, true).servers).toEqual({});
  });

  it("sends them under settings.hostBridge, as the sidecar reads workspace/didChangeConfiguration", () => {
    expect(configurationParams(sidecarSettings(servers, true, false))).toEqual({
      settings: { hostBridge: { servers, readWorkspaceConfig: false } },
    });
  });

  it("gives the same values in initialize, with the storage folder and the sandbox enforced unless told", () => {
    expect(initializationOptionsFor("/data", sidecarSettings(servers, true, true))).toEqual({
      storageDir: "/data",
      servers,
      readWorkspaceConfig: true,
      sandbox: "enforce",
      network: "on",
    });
    expect(initializationOptionsFor("/data", sidecarSettings(servers, true, true), "off").sandbox).toBe("off");
    expect(initializationOptionsFor("/data", sidecarSettings(servers, true, true), "enforce", "off").network).toBe(
      "off",
    );
  });
});

describe("the network setting", () => {
  it("is off only when the user's own settings say off, never from a workspace", () => {
    expect(networkSetting(undefined)).toBe("on");
    expect(networkSetting({ globalValue: "off" })).toBe("off");
    expect(networkSetting({ workspaceValue: "on", globalValue: "off" })).toBe("off");
    expect(networkSetting({ workspaceValue: "off" })).toBe("on");
    expect(networkSetting({ globalValue: "sometimes" })).toBe("on");
  });
});

describe("the sandbox setting", () => {
  it("enforces the sandbox when the user set nothing", () => {
    expect(sandboxSetting(undefined)).toBe("enforce");
    expect(sandboxSetting({})).toBe("enforce");
  });

  it("turns it off when the user's own settings say off", () => {
    expect(sandboxSetting({ globalValue: "off" })).toBe("off");
  });

  it("never lets the workspace or a workspace folder turn it off", () => {
    expect(sandboxSetting({ workspaceValue: "off" })).toBe("enforce");
    expect(sandboxSetting({ workspaceFolderValue: "off" })).toBe("enforce");
    expect(sandboxSetting({ globalValue: "enforce", workspaceValue: "off", workspaceFolderValue: "off" })).toBe(
      "enforce",
    );
  });

  it("enforces it for any value other than exactly off", () => {
    for (const value of ["OFF", "Off", "disabled", false, 0, null, ""]) {
      expect(sandboxSetting({ globalValue: value }), String(value)).toBe("enforce");
    }
  });

  it("is declared for user settings only (application scope), enforcing by default", () => {
    const declared = properties["hostBridge.sandbox"];
    expect(declared?.scope).toBe("application");
    expect(declared?.default).toBe("enforce");
    expect(declared?.enum).toEqual(["enforce", "off"]);
  });
});
