// The `mcp-bridge:` URIs under which MCP resources open in editors. The exact server id and resource
// URI travel in the query as base64url, which no layer encodes or decodes (VS Code percent-encodes a
// query when printing and decodes it when parsing, some displays skip one of the two, and it lower-cases
// the authority), so they survive any round trip; the authority and path are
// only for people and for VS Code's choice of language and editor (the path ends with a file name and an
// extension). A `file://` resource URI is just a name in the server's namespace: it is never mapped to a
// local path, and this scheme's only reader asks the sidecar.
import { extensionFits, extensionForMime } from "./mime";
import { INVISIBLE_CHARS } from "./text";

/** The URI scheme of opened MCP resources (VS Code's own MCP support owns `mcp-resource:`). */
export const RESOURCE_SCHEME = "mcp-bridge";

/** Which resource of which server. */
export interface ResourceAddress {
  readonly server: string;
  readonly uri: string;
}

/** The components of a URI as `vscode.Uri.from` takes them (decoded, not percent-encoded). */
export interface UriComponents {
  readonly scheme: string;
  readonly authority: string;
  readonly path: string;
  readonly query: string;
}

const MAX_SEGMENT = 80;
const MAX_PATH = 200;
// Characters that trouble file names on some platform (Save As proposes the name), controls and bidi marks.
const UNSAFE_NAME_CHARS = new RegExp(`[${INVISIBLE_CHARS}\\\\/:*?"<>|#%]`, "gu");

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function cleanSegment(segment: string): string {
  let cleaned = safeDecode(segment).replace(UNSAFE_NAME_CHARS, "_").trim();
  if (cleaned === "." || cleaned === "..") {
    cleaned = cleaned.replace(/\./g, "_");
  }
  return [...cleaned].slice(0, MAX_SEGMENT).join("");
}

// VS Code lower-cases the authority when it prints a URI, so it is a display label only.
function authorityLabel(server: string): string {
  const label = server
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "");
  return label === "" ? "server" : label.slice(0, 63);
}

/**
 * The readable segments of a resource URI: its authority and path without scheme, query or fragment,
 * each decoded and made safe as a file name; at most {@link MAX_PATH} characters, keeping the end.
 */
function displaySegments(resourceUri: string): string[] {
  const withoutScheme = resourceUri.replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:/, "");
  const beforeQuery = withoutScheme.split(/[?#]/, 1)[0] ?? "";
  const segments = beforeQuery
    .split("/")
    .map(cleanSegment)
    .filter((segment) => segment !== "");
  const kept: string[] = [];
  let length = 0;
  for (let index = segments.length - 1; index >= 0; index -= 1) {
    const segment = segments[index] ?? "";
    if (kept.length > 0 && length + segment.length + 1 > MAX_PATH) {
      break;
    }
    kept.unshift(segment);
    length += segment.length + 1;
  }
  return kept;
}

/** The last readable segment of a resource URI (decoded, safe as a file name), if it has one. */
export function lastSegment(resourceUri: string): string | undefined {
  return displaySegments(resourceUri).at(-1);
}

/**
 * A file name for a resource: the last segment of its URI, else its name, else `resource`, with an
 * extension appended when the name lacks one that fits the MIME type (`.svg.xml` for SVG, so it stays text).
 */
export function resourceFileName(resourceUri: string, mimeType?: string, name?: string): string {
  const segments = displaySegments(resourceUri);
  let base = segments[segments.length - 1] ?? (name !== undefined ? cleanSegment(name) : "");
  if (base === "") {
    base = "resource";
  }
  const extension = extensionForMime(mimeType);
  if (extension !== undefined && !extensionFits(base, mimeType)) {
    base = extension === "svg.xml" && base.toLowerCase().endsWith(".svg") ? `${base}.xml` : `${base}.${extension}`;
  }
  return base;
}

/**
 * The `mcp-bridge:` URI components of a resource. `mimeType` only picks the file extension of the path;
 * pass the same one for the same resource (the read's MIME type, when there is one) so it opens once.
 */
export function encodeResourceUri(address: ResourceAddress, mimeType?: string): UriComponents {
  const segments = displaySegments(address.uri);
  const fileName = resourceFileName(address.uri, mimeType);
  const directories = segments.slice(0, -1);
  const path = `/${[...directories, fileName].join("/")}`;
  const query = `server=${toBase64Url(address.server)}&uri=${toBase64Url(address.uri)}`;
  return { scheme: RESOURCE_SCHEME, authority: authorityLabel(address.server), path, query };
}

/**
 * The server and resource URI of an `mcp-bridge:` URI, from its (decoded) query; `undefined` when it is
 * not one of ours or is malformed.
 */
export function decodeResourceUri(components: Pick<UriComponents, "scheme" | "query">): ResourceAddress | undefined {
  if (components.scheme !== RESOURCE_SCHEME) {
    return undefined;
  }
  let server: string | undefined;
  let uri: string | undefined;
  for (const pair of components.query.split("&")) {
    const equals = pair.indexOf("=");
    if (equals < 0) {
      continue;
    }
    const key = pair.slice(0, equals);
    const value = fromBase64Url(pair.slice(equals + 1));
    if (value === undefined) {
      return undefined;
    }
    if (key === "server") {
      server = value;
    } else if (key === "uri") {
      uri = value;
    }
  }
  if (server === undefined || server === "" || uri === undefined || uri === "") {
    return undefined;
  }
  return { server, uri };
}

function toBase64Url(text: string): string {
  return Buffer.from(text, "utf8").toString("base64url");
}

/** The text of a base64url value, or `undefined` when it is not exactly the encoding of some text. */
function fromBase64Url(encoded: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(encoded)) {
    return undefined;
  }
  const text = Buffer.from(encoded, "base64url").toString("utf8");
  return toBase64Url(text) === encoded ? text : undefined;
}

/** A stable key for one resource of one server (maps, subscription counts). */
export function addressKey(address: ResourceAddress): string {
  return `${address.server}\n${address.uri}`;
}
