import { describe, expect, it } from "vitest";
import {
  RESOURCE_SCHEME,
  addressKey,
  decodeResourceUri,
  encodeResourceUri,
  linkedResource,
  removeDotSegments,
  resolveReference,
  resourceFileName,
} from "../../../src/resources/resourceUri";

// What VS Code does to a URI's query between `Uri.from` and `Uri.parse(uri.toString())`: it encodes every
// character outside the unreserved set and decodes percent escapes.
function throughString(query: string): string {
  return decodeURIComponent(encodeURIComponent(query));
}

// `uri.toString(true)` (for display) skips the encoding, and parsing it decodes once more.
function throughDisplayString(query: string): string {
  return decodeURIComponent(query);
}

const tricky = [
  "demo://resource/static/document/architecture.md",
  "file:///etc/passwd",
  "file:///home/me/My Documents/résumé 2024.pdf",
  "notes://日本語/ノート.md",
  "emoji://😀/🎉?x=1#frag",
  "x://host/a#b?c",
  "x://host/a?b=c&d=e&server=evil&uri=evil",
  "x://host/%41%2F%zz/100%",
  "x://host/a+b%20c d",
  "x://host/\u202eevil\u202c.txt",
  `long://${"a/".repeat(20_000)}end.txt`,
];

describe("encodeResourceUri and decodeResourceUri", () => {
  it.each(tricky)("give back exactly the server and URI of %s", (uri) => {
    const address = { server: "My Server #1 / ü", uri };
    const components = encodeResourceUri(address, "text/plain");
    expect(decodeResourceUri(components)).toEqual(address);
    expect(decodeResourceUri({ scheme: components.scheme, query: throughString(components.query) })).toEqual(address);
    expect(decodeResourceUri({ scheme: components.scheme, query: throughDisplayString(components.query) })).toEqual(
      address,
    );
  });

  it("use the mcp-bridge scheme, so a file:// resource is never read from the disk", () => {
    const components = encodeResourceUri({ server: "fs", uri: "file:///etc/passwd" });
    expect(components.scheme).toBe(RESOURCE_SCHEME);
    expect(components.scheme).not.toBe("file");
  });

  it("keep the query to characters no layer re-interprets", () => {
    const { query } = encodeResourceUri({ server: "s", uri: "weird://x/ ?#%&=+日本" });
    expect(query).toMatch(/^server=[A-Za-z0-9_-]+&uri=[A-Za-z0-9_-]+&path=[A-Za-z0-9_-]+$/);
  });

  it("end the path with a file name and an extension from the MIME type", () => {
    const components = encodeResourceUri(
      { server: "everything", uri: "demo://resource/static/document/guide" },
      "text/markdown",
    );
    expect(components.path).toBe("/resource/static/document/guide.md");
    expect(components.authority).toBe("everything");
  });

  it("keep a name's own extension when it fits", () => {
    expect(encodeResourceUri({ server: "s", uri: "x://h/pic.png" }, "image/png").path).toBe("/h/pic.png");
  });

  it("make a path segment of every odd character safe and keep the path short", () => {
    const { path } = encodeResourceUri({ server: "s", uri: `x://h/${"d".repeat(300)}/${"e/".repeat(500)}a:b*c?.txt` });
    expect(path.length).toBeLessThanOrEqual(260);
    expect(path.endsWith("/a_b_c")).toBe(true);
    expect(path).not.toMatch(/[?#:*]/);
  });

  it("replace controls, bidi marks and path separators in file names", () => {
    const name = resourceFileName("x://h/a\u202eb\u0007c\\d%e.txt", "text/plain");
    expect(name).toBe("a_b_c_d_e.txt");
  });

  it("never put a dot-dot segment in the path", () => {
    const { path } = encodeResourceUri({ server: "s", uri: "x://h/../../etc/passwd" });
    expect(path.split("/")).not.toContain("..");
  });

  it("label the authority with a lower-case form of the server id", () => {
    expect(encodeResourceUri({ server: "My_Server", uri: "x://y" }).authority).toBe("my-server");
    expect(encodeResourceUri({ server: "!!!", uri: "x://y" }).authority).toBe("server");
  });

  it("reject other schemes and incomplete queries", () => {
    expect(decodeResourceUri({ scheme: "file", query: "server=s&uri=x" })).toBeUndefined();
    expect(decodeResourceUri({ scheme: RESOURCE_SCHEME, query: "server=s" })).toBeUndefined();
    expect(decodeResourceUri({ scheme: RESOURCE_SCHEME, query: "uri=eDovL3k" })).toBeUndefined();
    expect(decodeResourceUri({ scheme: RESOURCE_SCHEME, query: "server=cw&uri=x%3A%2F%2Fy" })).toBeUndefined();
    expect(decodeResourceUri({ scheme: RESOURCE_SCHEME, query: "server=cw&uri=eDovL3k=" })).toBeUndefined();
    expect(decodeResourceUri({ scheme: RESOURCE_SCHEME, query: "server=cw&uri=eDovL3k" })).toEqual({
      server: "s",
      uri: "x://y",
    });
  });

  it("give different resources different URIs even when their paths look alike", () => {
    const a = encodeResourceUri({ server: "s", uri: "x://h/a#1" });
    const b = encodeResourceUri({ server: "s", uri: "x://h/a#2" });
    expect(a.path).toBe(b.path);
    expect(a.query).not.toBe(b.query);
  });
});

describe("resourceFileName", () => {
  it("falls back to the resource's name, then to 'resource'", () => {
    expect(resourceFileName("x:", "text/markdown", "Release notes")).toBe("Release notes.md");
    expect(resourceFileName("x:")).toBe("resource");
  });

  it("makes an SVG end in .xml so it opens as text", () => {
    expect(resourceFileName("x://h/logo.svg", "image/svg+xml")).toBe("logo.svg.xml");
    expect(resourceFileName("x://h/logo", "image/svg+xml")).toBe("logo.svg.xml");
  });
});

describe("addressKey", () => {
  it("tells apart servers and URIs that concatenate alike", () => {
    expect(addressKey({ server: "a", uri: "bc" })).not.toBe(addressKey({ server: "ab", uri: "c" }));
  });
});

describe("relative links in a resource's document", () => {
  const howItWorks = { server: "everything", uri: "demo://resource/static/document/how-it-works.md" };

  it("name the resource the link points to, on the same server, when VS Code resolved one against the document", () => {
    const document = encodeResourceUri(howItWorks, "text/markdown");
    expect(document.path).toBe("/resource/static/document/how-it-works.md");
    // What VS Code's Markdown support makes of `[Project Structure](structure.md)`: a new path, the same query.
    const link = { ...document, path: "/resource/static/document/structure.md" };
    expect(decodeResourceUri(link)).toEqual({
      server: "everything",
      uri: "demo://resource/static/document/structure.md",
    });
  });

  it("name the document itself while its path is the one it was made with", () => {
    const document = encodeResourceUri(howItWorks, "text/markdown");
    expect(decodeResourceUri(document)).toEqual(howItWorks);
    expect(
      decodeResourceUri({ scheme: document.scheme, query: throughString(document.query), path: document.path }),
    ).toEqual(howItWorks);
  });

  it("leave a URI made before paths were kept in the query as it was", () => {
    const query = "server=ZXZlcnl0aGluZw&uri=ZGVtbzovL3Jlc291cmNlL3N0YXRpYy9kb2N1bWVudC9ob3ctaXQtd29ya3MubWQ";
    expect(decodeResourceUri({ scheme: RESOURCE_SCHEME, query, path: "/elsewhere/structure.md" })).toEqual(howItWorks);
  });

  it("climb folders, enter others and encode what the link's path decoded", () => {
    const base = "demo://resource/static/document/how-it-works.md";
    const shown = "/resource/static/document/how-it-works.md";
    expect(linkedResource(base, shown, "/resource/static/images/logo.png")).toBe(
      "demo://resource/static/images/logo.png",
    );
    expect(linkedResource(base, shown, "/resource/static/document/sub/deep.md")).toBe(
      "demo://resource/static/document/sub/deep.md",
    );
    expect(linkedResource(base, shown, "/resource/static/document/my notes#1.md")).toBe(
      "demo://resource/static/document/my%20notes%231.md",
    );
    // VS Code takes `..` out of the path at its root; so does RFC 3986 at the authority.
    expect(linkedResource(base, shown, "/top.md")).toBe("demo://resource/top.md");
  });

  it("resolve against a file URI's folders, keeping its authority empty", () => {
    expect(linkedResource("file:///home/me/docs/a.md", "/home/me/docs/a.md", "/home/me/b.md")).toBe(
      "file:///home/me/b.md",
    );
  });
});

describe("resolveReference", () => {
  // RFC 3986 §5.4.1 and §5.4.2: the normal and abnormal examples.
  const base = "http://a/b/c/d;p?q";
  it.each([
    ["g:h", "g:h"],
    ["g", "http://a/b/c/g"],
    ["./g", "http://a/b/c/g"],
    ["g/", "http://a/b/c/g/"],
    ["/g", "http://a/g"],
    ["//g", "http://g"],
    ["?y", "http://a/b/c/d;p?y"],
    ["g?y", "http://a/b/c/g?y"],
    ["#s", "http://a/b/c/d;p?q#s"],
    ["g#s", "http://a/b/c/g#s"],
    ["g?y#s", "http://a/b/c/g?y#s"],
    [";x", "http://a/b/c/;x"],
    ["g;x", "http://a/b/c/g;x"],
    ["", "http://a/b/c/d;p?q"],
    [".", "http://a/b/c/"],
    ["./", "http://a/b/c/"],
    ["..", "http://a/b/"],
    ["../", "http://a/b/"],
    ["../g", "http://a/b/g"],
    ["../..", "http://a/"],
    ["../../g", "http://a/g"],
    ["../../../g", "http://a/g"],
    ["../../../../g", "http://a/g"],
    ["/./g", "http://a/g"],
    ["/../g", "http://a/g"],
    ["g.", "http://a/b/c/g."],
    [".g", "http://a/b/c/.g"],
    ["g..", "http://a/b/c/g.."],
    ["..g", "http://a/b/c/..g"],
    ["./../g", "http://a/b/g"],
    ["./g/.", "http://a/b/c/g/"],
    ["g/./h", "http://a/b/c/g/h"],
    ["g/../h", "http://a/b/c/h"],
    ["g;x=1/./y", "http://a/b/c/g;x=1/y"],
    ["g;x=1/../y", "http://a/b/c/y"],
    ["g?y/./x", "http://a/b/c/g?y/./x"],
    ["g#s/../x", "http://a/b/c/g#s/../x"],
  ])("resolves %j as RFC 3986 says", (reference, target) => {
    expect(resolveReference(base, reference)).toBe(target);
  });
});

describe("removeDotSegments", () => {
  it("removes the dot segments as RFC 3986 §5.2.4 shows", () => {
    expect(removeDotSegments("/a/b/c/./../../g")).toBe("/a/g");
    expect(removeDotSegments("mid/content=5/../6")).toBe("mid/6");
  });
});
