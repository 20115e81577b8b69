// The `mcp-bridge:` URIs under which MCP resources open in editors. The exact server id and resource
// URI travel in the query as base64url, which no layer encodes or decodes (VS Code percent-encodes a
// query when printing and decodes it when parsing, some displays skip one of the two, and it lower-cases
// the authority), so they survive any round trip; the authority and path are
// only for people and for VS Code's choice of language and editor (the path ends with a file name and an
// extension). A `file://` resource URI is just a name in the server's namespace: it is never mapped to a
// local path, and this scheme's only reader asks the sidecar.
//
// The query also holds the path the URI was made with. A relative link in a document (Markdown's
// `[x](structure.md)`) is resolved by VS Code against the document's URI: a new path, the same query. Such a path
// names the resource the link points to, relative to the resource the query names: the link's reference is
// resolved against that resource's URI (RFC 3986), and it is read from the same server.
import { posix } from "node:path";
import { extensionFits, extensionForMime } from "./mime";
import { INVISIBLE_CHARS } from "../text";

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
  const query = `server=${toBase64Url(address.server)}&uri=${toBase64Url(address.uri)}&path=${toBase64Url(path)}`;
  return { scheme: RESOURCE_SCHEME, authority: authorityLabel(address.server), path, query };
}

/**
 * The server and resource URI of an `mcp-bridge:` URI, from its (decoded) query; `undefined` when it is
 * not one of ours or is malformed. When its `path` is not the one it was made with, it is a relative link
 * resolved by VS Code: the resource it names is the link's reference resolved against the query's resource
 * ({@link linkedResource}), on the same server.
 */
export function decodeResourceUri(
  components: Pick<UriComponents, "scheme" | "query"> & { readonly path?: string },
): ResourceAddress | undefined {
  if (components.scheme !== RESOURCE_SCHEME) {
    return undefined;
  }
  let server: string | undefined;
  let uri: string | undefined;
  let madeWith: string | undefined;
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
    } else if (key === "path") {
      madeWith = value;
    }
  }
  if (server === undefined || server === "" || uri === undefined || uri === "") {
    return undefined;
  }
  if (madeWith !== undefined && components.path !== undefined && components.path !== madeWith) {
    return { server, uri: linkedResource(uri, madeWith, components.path) };
  }
  return { server, uri };
}

/**
 * The URI of the resource a relative link leads to. `resourceUri` was shown under the path `shownAt`; the link
 * was resolved by VS Code against that path to `linkedPath` (its `..` taken out). The link's reference — the way
 * from the folder of `shownAt` to `linkedPath`, its segments percent-encoded again — is resolved against
 * `resourceUri` as RFC 3986 says. The shown path may lack the start of a very long resource URI, so a link
 * climbing above it reaches only its first folder.
 */
export function linkedResource(resourceUri: string, shownAt: string, linkedPath: string): string {
  const relative = posix.relative(posix.dirname(shownAt), linkedPath);
  const trailing = linkedPath.endsWith("/") && relative !== "" ? "/" : "";
  const reference =
    relative === ""
      ? "./"
      : relative
          .split("/")
          .map((segment) => (segment === ".." ? segment : encodeURIComponent(segment)))
          .join("/") + trailing;
  return resolveReference(resourceUri, reference);
}

/** The five components of a URI reference (RFC 3986, appendix B); absent ones are `undefined`. */
interface Reference {
  readonly scheme?: string;
  readonly authority?: string;
  readonly path: string;
  readonly query?: string;
  readonly fragment?: string;
}

function parseReference(text: string): Reference {
  const match = /^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/s.exec(text);
  return {
    scheme: match?.[1],
    authority: match?.[2],
    path: match?.[3] ?? "",
    query: match?.[4],
    fragment: match?.[5],
  };
}

/** RFC 3986 §5.2.4: the path without its `.` and `..` segments. */
export function removeDotSegments(path: string): string {
  let input = path;
  const output: string[] = [];
  while (input !== "") {
    if (input.startsWith("../")) {
      input = input.slice(3);
    } else if (input.startsWith("./")) {
      input = input.slice(2);
    } else if (input.startsWith("/./")) {
      input = input.slice(2);
    } else if (input === "/.") {
      input = "/";
    } else if (input.startsWith("/../")) {
      input = input.slice(3);
      output.pop();
    } else if (input === "/..") {
      input = "/";
      output.pop();
    } else if (input === "." || input === "..") {
      input = "";
    } else {
      const next = input.indexOf("/", input.startsWith("/") ? 1 : 0);
      const segment = next < 0 ? input : input.slice(0, next);
      output.push(segment);
      input = next < 0 ? "" : input.slice(next);
    }
  }
  return output.join("");
}

/** RFC 3986 §5.2.2: the target URI of `reference` resolved against the absolute URI `base`. */
export function resolveReference(base: string, reference: string): string {
  const b = parseReference(base);
  const r = parseReference(reference);
  let target: Reference;
  if (r.scheme !== undefined) {
    target = { ...r, path: removeDotSegments(r.path) };
  } else if (r.authority !== undefined) {
    target = { ...r, scheme: b.scheme, path: removeDotSegments(r.path) };
  } else if (r.path === "") {
    target = { scheme: b.scheme, authority: b.authority, path: b.path, query: r.query ?? b.query };
  } else {
    const merged = r.path.startsWith("/")
      ? r.path
      : b.authority !== undefined && b.path === ""
        ? `/${r.path}`
        : `${b.path.slice(0, b.path.lastIndexOf("/") + 1)}${r.path}`;
    target = { scheme: b.scheme, authority: b.authority, path: removeDotSegments(merged), query: r.query };
  }
  return (
    (target.scheme === undefined ? "" : `${target.scheme}:`) +
    (target.authority === undefined ? "" : `//${target.authority}`) +
    target.path +
    (target.query === undefined ? "" : `?${target.query}`) +
    (r.fragment === undefined ? "" : `#${r.fragment}`)
  );
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
