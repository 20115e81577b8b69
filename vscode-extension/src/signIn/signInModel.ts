// Sign-ins to http MCP servers, the parts that need no `vscode` API: which sign-in addresses may be opened, the
// words of the question, and where a token is kept in SecretStorage.
import { product, visible } from "../text";

/** The buttons of the sign-in notification; the first opens the browser. */
export const SignInChoice = { signIn: "Sign in", notNow: "Not now" } as const;

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * `url` when a browser may be sent there for a sign-in: `https:`, or `http:` on this machine's loopback; never
 * `javascript:`, `data:`, `file:`, a command URI or an address with a user name. The sidecar checks the same
 * before it asks; this is the editor's own check before it opens anything.
 */
export function openableSignInUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (
    parsed.username !== "" ||
    parsed.password !== "" ||
    [...url].some((c) => c.charCodeAt(0) <= 0x20 || c === "\u007f")
  ) {
    return undefined;
  }
  if (parsed.protocol === "https:") {
    return url;
  }
  return parsed.protocol === "http:" && LOOPBACK.has(parsed.hostname) ? url : undefined;
}

/** The notification asking to sign in to a server. */
export function signInQuestion(label: string): string {
  return product(
    `${visible(label)} needs you to sign in. “${SignInChoice.signIn}” opens its sign-in page in your browser.`,
  );
}

/** The SecretStorage key of a sidecar secret (an opaque server identity key). */
export function secretKey(key: string): string {
  return `hostBridge.signIn.${key}`;
}
