// Which settings reach the sidecar and how: without the vscode API, so the rules are unit-tested.
// `hostBridge.servers` and `hostBridge.readWorkspaceConfig` are sent live (`workspace/didChangeConfiguration`);
// the sidecar re-loads its servers without a restart. `hostBridge.python` picks the process itself and
// `hostBridge.sandbox` is read once in `initialize`: a change of either restarts it.
import type { InitializationOptions } from "../protocol";

/** Settings whose change needs a new sidecar process. */
export const RESTART_SETTINGS = ["hostBridge.python", "hostBridge.sandbox", "hostBridge.network"] as const;

/** Settings the running sidecar takes live. */
export const LIVE_SETTINGS = ["hostBridge.servers", "hostBridge.readWorkspaceConfig"] as const;

/** The settings among {@link RESTART_SETTINGS} that a change `affects`, to name them in the log. */
export function restartSettingsChanged(affects: (setting: string) => boolean): string[] {
  return RESTART_SETTINGS.filter(affects);
}

/** What a configuration change asks of the sidecar. */
export type SettingsChange = "restart" | "reload" | "none";

/** How a change that `affects` the given settings is applied: a restart wins over a live reload. */
export function settingsChange(affects: (setting: string) => boolean): SettingsChange {
  if (RESTART_SETTINGS.some(affects)) {
    return "restart";
  }
  return LIVE_SETTINGS.some(affects) ? "reload" : "none";
}

/** The servers and workspace-config switch the sidecar gets, in `initialize` and on every change. */
export interface SidecarSettings {
  servers: Record<string, unknown>;
  readWorkspaceConfig: boolean;
}

/**
 * The settings as the sidecar must see them: `servers` only when it is an object (anything else is no servers),
 * and workspace config files read only in a trusted workspace (never in Restricted Mode).
 */
export function sidecarSettings(servers: unknown, readWorkspaceConfig: boolean, trusted: boolean): SidecarSettings {
  const isObject = typeof servers === "object" && servers !== null && !Array.isArray(servers);
  return {
    servers: isObject ? { ...(servers as Record<string, unknown>) } : {},
    readWorkspaceConfig: trusted && readWorkspaceConfig,
  };
}

/** The default OS sandbox of stdio servers whose entry does not say (`initializationOptions.sandbox`). */
export type SandboxSetting = NonNullable<InitializationOptions["sandbox"]>;

/** Where a setting's value may come from, as `WorkspaceConfiguration.inspect` reports it. */
export interface SettingValues {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * `hostBridge.sandbox` as the sidecar must see it: the user's own value, and `off` only when the user wrote
 * exactly `off`. A value from the workspace (`.vscode/settings.json`, a `.code-workspace` file) is never read,
 * whatever VS Code does with the setting's scope: a folder you open must not be able to turn the sandbox off for
 * the servers you run. Anything else, or nothing, is `enforce`.
 */
export function sandboxSetting(values: SettingValues | undefined): SandboxSetting {
  return values?.globalValue === "off" ? "off" : "enforce";
}

/** The default network of sandboxed stdio servers whose entry does not say (`initializationOptions.network`). */
export type NetworkSetting = NonNullable<InitializationOptions["network"]>;

/**
 * `hostBridge.network` as the sidecar must see it: `off` only when the user's own settings say exactly `off`. A
 * workspace's value is never read (an application-scoped setting, like `hostBridge.sandbox`).
 */
export function networkSetting(values: SettingValues | undefined): NetworkSetting {
  return values?.globalValue === "off" ? "off" : "on";
}

/** `initializationOptions` for a sidecar keeping its data in `storageDir`. */
export function initializationOptionsFor(
  storageDir: string,
  settings: SidecarSettings,
  sandbox: SandboxSetting = "enforce",
  network: NetworkSetting = "on",
): InitializationOptions {
  return {
    storageDir,
    servers: settings.servers,
    readWorkspaceConfig: settings.readWorkspaceConfig,
    sandbox,
    network,
  };
}

/** The params of `workspace/didChangeConfiguration` the sidecar reads (`settings.hostBridge`). */
export function configurationParams(settings: SidecarSettings): { settings: { hostBridge: SidecarSettings } } {
  return { settings: { hostBridge: { servers: settings.servers, readWorkspaceConfig: settings.readWorkspaceConfig } } };
}
