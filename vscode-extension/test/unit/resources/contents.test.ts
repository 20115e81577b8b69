import { describe, expect, it } from "vitest";
import { kindOf, resourceBytes } from "../../../src/resources/contents";

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("resourceBytes", () => {
  it("encodes text as UTF-8", () => {
    const content = resourceBytes({
      uri: "x://a",
      contents: [{ uri: "x://a", mimeType: "text/plain", text: "héllo 日本" }],
    });
    expect(decode(content.bytes)).toBe("héllo 日本");
    expect(content.isText).toBe(true);
    expect(content.mimeType).toBe("text/plain");
  });

  it("decodes a base64 blob", () => {
    const content = resourceBytes({
      uri: "x://a",
      contents: [{ uri: "x://a", mimeType: "image/png", blob: "iVBORw0KGgo=" }],
    });
    expect([...content.bytes]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(content.isText).toBe(false);
  });

  it("joins several text items with a newline", () => {
    const content = resourceBytes({
      uri: "x://a",
      contents: [
        { uri: "x://a", text: "one" },
        { uri: "x://a", text: "two" },
      ],
    });
    expect(decode(content.bytes)).toBe("one\ntwo");
  });

  it("takes the first item when text and blobs are mixed", () => {
    const content = resourceBytes({
      uri: "x://a",
      contents: [
        { uri: "x://a", blob: "AAE=", mimeType: "application/octet-stream" },
        { uri: "x://a", text: "two" },
      ],
    });
    expect([...content.bytes]).toEqual([0, 1]);
  });
});

describe("kindOf", () => {
  it("shows server text as text and blobs by their type", () => {
    expect(kindOf({ bytes: new Uint8Array(), mimeType: "image/png", isText: true })).toBe("text");
    expect(kindOf({ bytes: new Uint8Array(), mimeType: "image/png", isText: false })).toBe("image");
    expect(kindOf({ bytes: new Uint8Array(), mimeType: "image/svg+xml", isText: false })).toBe("text");
    expect(kindOf({ bytes: new Uint8Array(), mimeType: "application/zip", isText: false })).toBe("binary");
  });
});
