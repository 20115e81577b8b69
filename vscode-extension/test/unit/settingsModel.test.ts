import { describe, expect, it } from "vitest";
import {
  configurationParams,
  initializationOptionsFor,
  settingsChange,
  sidecarSettings,
} from "../../src/settingsModel";

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

  it("gives the same values in initialize, with the storage folder", () => {
    expect(initializationOptionsFor("/data", sidecarSettings(servers, true, true))).toEqual({
      storageDir: "/data",
      servers,
      readWorkspaceConfig: true,
    });
  });
});
