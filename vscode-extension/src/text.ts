// Small text helpers shared by the UI models, without the vscode API: error messages, making server-controlled
// text safe for Markdown and for QuickPick fields (which render `$(icon)`), and the wording of counts and paths.

/** The message of anything thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The body of a regular-expression character class (use it inside `[…]` with the `u` flag): C0/C1 controls,
 * DEL, and the bidi and zero-width marks that make text read differently from what it is.
 */
export const INVISIBLE_CHARS = "\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b-\\u200f\\u202a-\\u202e\\u2066-\\u2069\\ufeff";

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
