// The repository's fixture MCP servers (tests/servers, see its README) as stdio entries of
// `initializationOptions.servers`, and readers for their record files.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";

/** The repository root (this file is vscode-extension/test/integration/fixtures.ts). */
export const REPO = path.resolve(__dirname, "../../..");

/** The interpreter that has host_bridge and the MCP SDK: `HOST_BRIDGE_PYTHON` (made absolute and normal: the sidecar
 * reports executables so), else the repository's venv. */
export const PYTHON = path.resolve(
  process.env.HOST_BRIDGE_PYTHON ?? path.resolve(__dirname, "../../../.venv/bin/python"),
);

/** A stdio server entry in the `.vscode/mcp.json` `servers` format. */
export interface StdioEntry {
  type: "stdio";
  command: string;
  args: string[];
}

/** `tests/servers/<script> <args>` run with {@link PYTHON}. */
export function fixtureServer(script: string, ...args: string[]): StdioEntry {
  return { type: "stdio", command: PYTHON, args: [path.join(REPO, "tests", "servers", script), ...args] };
}

/** The canonical `file://` URI the sidecar uses for an existing folder (symlinks resolved). */
export function folderUri(folder: string): string {
  return pathToFileURL(realpathSync(folder)).href;
}

/** Every JSON line of a fixture's record file so far (none while the file does not exist). */
export function recordLines(record: string): Record<string, unknown>[] {
  if (!existsSync(record)) return [];
  return readFileSync(record, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** One `roots/list` answer as roots_recorder.py recorded it. */
export interface RootsAnswer {
  trigger: string;
  protocolVersion: string;
  roots: { uri: string; name?: string }[];
}

/** Every successful roots answer in a roots_recorder.py record file, oldest first. */
export function recordedRoots(record: string): RootsAnswer[] {
  return recordLines(record).filter((line): line is Record<string, unknown> & RootsAnswer => Array.isArray(line.roots));
}
