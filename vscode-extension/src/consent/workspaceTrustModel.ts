// What waits for workspace trust in Restricted Mode: the host bridge is not given the workspace's MCP server files
// then (it starts none of their servers, so it reports none), and the status would say no server is configured.
// The extension names those servers itself, from the files' `servers` keys only (nothing in them runs or is
// passed on), so the status, the resource picker and the view can say what trusting the workspace starts.
// No vscode here: workspaceTrust.ts finds and reads the files.
import { escapeMarkdown, noIcons, oneLine, visible } from "../text";

/** The workspace files that define MCP servers, and the key holding them (as the sidecar reads them). */
export const WORKSPACE_SERVER_FILES = [
  { path: ".vscode/mcp.json", key: "servers" },
  { path: ".mcp.json", key: "mcpServers" },
] as const;

/** A workspace file whose servers wait for workspace trust. */
export interface WaitingFile {
  /** Where it is, for people: `alpha/.vscode/mcp.json`. */
  readonly path: string;
  /** The ids of its servers, in the file's order; `undefined` when the file could not be read as JSON. */
  readonly names?: readonly string[];
}

/** Every workspace file whose servers wait for workspace trust (none when the workspace is trusted). */
export type WaitingForTrust = readonly WaitingFile[];

/** The end of a JSON string starting at `start` (its opening quote): the index after its closing quote. */
function stringEnd(text: string, start: number): number {
  let index = start + 1;
  while (index < text.length) {
    const char = text[index];
    if (char === "\\") {
      index += 2;
    } else if (char === '"') {
      return index + 1;
    } else {
      index += 1;
    }
  }
  return text.length;
}

/**
 * JSON with comments and trailing commas (as VS Code reads `mcp.json`) made plain JSON: `//` and `/* *\/`
 * comments outside strings and commas before `}` or `]` become spaces.
 */
export function stripJsonc(text: string): string {
  const out: string[] = [];
  let pendingComma: number | undefined;
  let index = 0;
  while (index < text.length) {
    const char = text[index] ?? "";
    if (char === '"') {
      const end = stringEnd(text, index);
      out.push(text.slice(index, end));
      index = end;
      pendingComma = undefined;
    } else if (text.startsWith("//", index)) {
      const newline = text.indexOf("\n", index);
      const end = newline < 0 ? text.length : newline;
      out.push(" ".repeat(end - index));
      index = end;
    } else if (text.startsWith("/*", index)) {
      const close = text.indexOf("*/", index + 2);
      const end = close < 0 ? text.length : close + 2;
      out.push(text.slice(index, end).replace(/[^\n]/g, " "));
      index = end;
    } else {
      if (char === ",") {
        pendingComma = out.length;
      } else if ((char === "}" || char === "]") && pendingComma !== undefined) {
        out[pendingComma] = " ";
        pendingComma = undefined;
      } else if (!/\s/.test(char)) {
        pendingComma = undefined;
      }
      out.push(char);
      index += 1;
    }
  }
  return out.join("");
}

/**
 * The ids of the servers under `key` of a workspace MCP file's text, in the file's order; `undefined` when the
 * text is not JSON(C) or `key` holds no object.
 */
export function serverIdsIn(text: string, key: string): string[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripJsonc(text.replace(/^\uFEFF/, "")));
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return undefined;
  }
  const servers = (parsed as Record<string, unknown>)[key];
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    return undefined;
  }
  return Object.keys(servers);
}

/** The waiting servers in words: `“a”, “b” (alpha/.vscode/mcp.json)`, or `the servers of beta/.mcp.json`. */
function waitingList(waiting: WaitingForTrust, quote: (text: string) => string): string {
  return waiting
    .map((file) => {
      const where = visible(oneLine(file.path));
      if (file.names === undefined) {
        return `the servers of ${quote(where)}`;
      }
      return `${file.names.map((name) => `“${quote(visible(oneLine(name)))}”`).join(", ")} (${quote(where)})`;
    })
    .join("; ");
}

/** How many servers wait, when every file could be read; `undefined` when some could not. */
function waitingCount(waiting: WaitingForTrust): number | undefined {
  let count = 0;
  for (const file of waiting) {
    if (file.names === undefined) {
      return undefined;
    }
    count += file.names.length;
  }
  return count;
}

/** The files that define at least one server, or could not be read (and may). */
export function withServers(waiting: WaitingForTrust): WaitingForTrust {
  return waiting.filter((file) => file.names === undefined || file.names.length > 0);
}

/**
 * One sentence for the status tooltip (Markdown) or a view's message (plain): which servers of the workspace's
 * files wait for workspace trust and what to do. Empty when none waits.
 */
export function waitingSentence(waiting: WaitingForTrust, markdown: boolean): string {
  const files = withServers(waiting);
  if (files.length === 0) {
    return "";
  }
  const quote = markdown ? escapeMarkdown : (text: string): string => text;
  const one = waitingCount(files) === 1;
  return (
    `Restricted Mode: ${waitingList(files, quote)} ${one ? "waits" : "wait"} for workspace trust; ` +
    `trust the workspace to start ${one ? "it" : "them"} (each still asks for your trust first).`
  );
}

/** A status picker row of one file's waiting servers (server-controlled text cannot render icons). */
export interface WaitingPick {
  readonly label: string;
  readonly description: string;
  readonly detail: string;
}

/** The status picker's rows for what waits for workspace trust: one per server (or per file not read). */
export function waitingPicks(waiting: WaitingForTrust): WaitingPick[] {
  return withServers(waiting).flatMap((file) => {
    const detail = noIcons(`defined in ${visible(oneLine(file.path))} — pick to manage workspace trust`);
    if (file.names === undefined) {
      return [
        { label: noIcons(`the servers of ${visible(file.path)}`), description: "wait for workspace trust", detail },
      ];
    }
    return file.names.map((name) => ({
      label: noIcons(visible(oneLine(name))),
      description: "waits for workspace trust (Restricted Mode)",
      detail,
    }));
  });
}
