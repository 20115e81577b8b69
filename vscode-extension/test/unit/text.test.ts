import { describe, expect, it } from "vitest";
import {
  INVISIBLE_CHARS,
  errorMessage,
  escapeMarkdown,
  fileUriPath,
  foldersShared,
  noIcons,
  oneLine,
  product,
  visible,
} from "../../src/text";

describe("errorMessage", () => {
  it("gives an error's message without its class name", () => {
    expect(errorMessage(new TypeError("bad input"))).toBe("bad input");
  });

  it("turns anything else thrown into a string", () => {
    expect(errorMessage("plain")).toBe("plain");
    expect(errorMessage(42)).toBe("42");
  });
});

describe("escapeMarkdown", () => {
  it("escapes every Markdown punctuation character", () => {
    expect(escapeMarkdown("a_b*c`d")).toBe("a\\_b\\*c\\`d");
    expect(escapeMarkdown("[x](command:evil)")).toBe("\\[x\\]\\(command:evil\\)");
  });
});

describe("noIcons", () => {
  it("keeps server text from rendering as an icon", () => {
    expect(noIcons("$(warning) fake")).toBe("$\u200b(warning) fake");
    expect(noIcons("a $(x) b $(y)")).toBe("a $\u200b(x) b $\u200b(y)");
  });

  it("leaves text without icon syntax as it is", () => {
    expect(noIcons("costs $5 (roughly)")).toBe("costs $5 (roughly)");
  });
});

describe("oneLine", () => {
  it("collapses newlines and runs of spaces", () => {
    expect(oneLine("  It crashed.\n\tSee  the log. ")).toBe("It crashed. See the log.");
  });
});

describe("foldersShared", () => {
  it("words none, one and several shared folders", () => {
    expect(foldersShared(0)).toBe("no folders shared");
    expect(foldersShared(1)).toBe("1 folder shared");
    expect(foldersShared(3)).toBe("3 folders shared");
  });
});

describe("INVISIBLE_CHARS", () => {
  it("matches controls and bidi marks but not ordinary text", () => {
    const invisible = new RegExp(`[${INVISIBLE_CHARS}]`, "u");
    for (const char of ["\n", "\u0000", "\u007f", "\u0085", "\u202e", "\u2066", "\u200b", "\ufeff", "\u061c"]) {
      expect(invisible.test(char)).toBe(true);
    }
    expect(invisible.test("héllo wörld – ok")).toBe(false);
  });

  it("matches joiners, tag characters, private use, line separators and lone surrogates too", () => {
    const invisible = new RegExp(`[${INVISIBLE_CHARS}]`, "u");
    for (const char of ["\u200d", "\u{e0041}", "\ue000", "\u2028", "\u2029", "\ud800", "\u00ad"]) {
      expect(invisible.test(char), `U+${char.codePointAt(0)?.toString(16)}`).toBe(true);
    }
  });
});

describe("visible", () => {
  it("writes bidi overrides, zero-width characters and controls as escapes", () => {
    expect(visible("invoice\u202etxt.exe")).toBe("invoice\\u202etxt.exe");
    expect(visible("a\u200bb\u200dc")).toBe("a\\u200bb\\u200dc");
    expect(visible("line\nbreak\u0007")).toBe("line\\u000abreak\\u0007");
  });

  it("writes a character beyond the basic plane with eight hex digits, as the sidecar does", () => {
    expect(visible("tag\u{e0041}")).toBe("tag\\U000e0041");
  });

  it("keeps letters of every script, accents and emoji", () => {
    const text = "Ünïcode – 日本語 عربى עברית 🙂";
    expect(visible(text)).toBe(text);
  });

  it("is idempotent", () => {
    expect(visible(visible("x\u202ey"))).toBe(visible("x\u202ey"));
  });
});

describe("product", () => {
  it("introduces a message with the extension's name", () => {
    expect(product("share folders?")).toBe("MCP Host Bridge: share folders?");
  });
});

describe("fileUriPath", () => {
  it("shows Windows paths without the leading slash", () => {
    expect(fileUriPath("file:///c%3A/work/acme")).toBe("c:/work/acme");
  });

  it("leaves a URI that is not a file URI as it is", () => {
    expect(fileUriPath("https://example.com/x")).toBe("https://example.com/x");
  });

  it("decodes percent-escapes", () => {
    expect(fileUriPath("file:///home/me/my%20project")).toBe("/home/me/my project");
  });

  it("uses backslashes and keeps a UNC host on Windows", () => {
    expect(fileUriPath("file:///c%3A/work/acme", true)).toBe("c:\\work\\acme");
    expect(fileUriPath("file://server/share/x", true)).toBe("\\\\server\\share\\x");
  });
});
