// Small text helpers shared by the UI models, without the vscode API: error messages, making server-controlled
// text safe for Markdown and for QuickPick fields (which render `$(icon)`), and the wording of counts and paths.

/** The message of anything thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How every prompt, notification and picker title names this extension, so it cannot be taken for VS Code's own. */
export const PRODUCT = "MCP Host Bridge";

/** `text` introduced by the product name: "MCP Host Bridge: …". */
export function product(text: string): string {
  return `${PRODUCT}: ${text}`;
}

/**
 * The body of a regular-expression character class (use it inside `[…]` with the `u` flag): every character
 * that is invisible or changes how the text around it reads — controls (C0, C1, DEL), format characters (bidi
 * embeddings, overrides and isolates, zero-width spaces and joiners, the BOM, tag characters), surrogates,
 * private-use and unassigned code points, and the line and paragraph separators. The same categories as the
 * sidecar's `host_bridge.text.visible`.
 */
export const INVISIBLE_CHARS = "\\p{Cc}\\p{Cf}\\p{Cs}\\p{Co}\\p{Cn}\\p{Zl}\\p{Zp}";

const INVISIBLE_RUN = new RegExp(`[${INVISIBLE_CHARS}]`, "gu");

/** The escape {@link visible} writes for one code point: `\u202e`, or `\U000e0001` beyond the BMP. */
export function escapeCodePoint(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\U${code.toString(16).padStart(8, "0")}`;
}

/**
 * `text` with every invisible or control character written as an escape (`\u202e`), so that a name, path or
 * value in a prompt cannot reorder, hide or split what the prompt says. Letters of every script stay as they are.
 */
export function visible(text: string): string {
  return text.replace(INVISIBLE_RUN, escapeCodePoint);
}

/** Escape text so Markdown shows it literally (server labels and messages are not ours). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~&$]/g, (char) => `\\${char}`);
}

/**
 * Text for a QuickPick label, description or detail, where `$(name)` would render as an icon: a zero-width
 * space after each `$` keeps server-controlled text from showing icons it does not have.
 */
export function noIcons(text: string): string {
  return text.replace(/\$\(/g, "$\u200b(");
}

/** Collapse whitespace (including newlines) so a message fits one line of a picker or list. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** "no folders shared", "1 folder shared", "3 folders shared". */
export function foldersShared(count: number): string {
  if (count === 0) {
    return "no folders shared";
  }
  return count === 1 ? "1 folder shared" : `${count} folders shared`;
}

/**
 * The local path of a `file:` URI for display: `/home/me/acme`; with `windows`, `c:\work` and UNC paths
 * (`\\server\share`) like VS Code's `Uri.fsPath`, else `c:/work`. The URI itself if it is not a file URI.
 */
export function fileUriPath(uri: string, windows = false): string {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return uri;
  }
  if (url.protocol !== "file:") {
    return uri;
  }
  let path: string;
  try {
    path = decodeURIComponent(url.pathname);
  } catch {
    path = url.pathname;
  }
  if (/^\/[A-Za-z]:/.test(path)) {
    path = path.slice(1);
  }
  if (!windows) {
    return path;
  }
  const host = url.hostname === "" ? "" : `//${url.hostname}`;
  return `${host}${path}`.replace(/\//g, "\\");
}
