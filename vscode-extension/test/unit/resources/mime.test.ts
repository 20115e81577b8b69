import { describe, expect, it } from "vitest";
import {
  classify,
  extensionFits,
  extensionForMime,
  extensionOf,
  formatSize,
  languageFor,
  normalizeMime,
} from "../../../src/resources/mime";

describe("normalizeMime", () => {
  it("drops parameters and case", () => {
    expect(normalizeMime(" Text/Markdown; charset=UTF-8 ")).toBe("text/markdown");
  });

  it("treats an empty type as none", () => {
    expect(normalizeMime("  ")).toBeUndefined();
    expect(normalizeMime(undefined)).toBeUndefined();
  });
});

describe("languageFor", () => {
  it.each([
    ["text/markdown", "markdown"],
    ["application/json", "json"],
    ["text/x-python", "python"],
    ["text/html", "html"],
    ["application/yaml", "yaml"],
    ["text/xml", "xml"],
    ["text/javascript", "javascript"],
    ["application/typescript", "typescript"],
    ["text/css", "css"],
    ["text/x-shellscript", "shellscript"],
    ["application/toml", "toml"],
    ["application/vnd.api+json", "json"],
    ["application/atom+xml", "xml"],
    ["image/svg+xml", "xml"],
  ])("maps %s to %s", (mime, language) => {
    expect(languageFor(mime)).toBe(language);
  });

  it("falls back to plaintext for an unknown type without a telling name", () => {
    expect(languageFor("text/x-unheard-of", "notes")).toBe("plaintext");
    expect(languageFor(undefined)).toBe("plaintext");
  });

  it("uses the file extension when there is no MIME type", () => {
    expect(languageFor(undefined, "src/main.py")).toBe("python");
    expect(languageFor(undefined, "config.YML")).toBe("yaml");
  });

  it("prefers a telling extension over text/plain", () => {
    expect(languageFor("text/plain", "README.md")).toBe("markdown");
  });

  it("prefers a specific MIME type over the extension", () => {
    expect(languageFor("application/json", "data.txt")).toBe("json");
  });
});

describe("classify", () => {
  it.each(["image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"])(
    "opens %s in the image preview",
    (mime) => {
      expect(classify(mime)).toBe("image");
    },
  );

  it("never treats SVG as an image, even by its extension", () => {
    expect(classify("image/svg+xml")).toBe("text");
    expect(classify(undefined, "logo.svg")).toBe("text");
  });

  it("shows text the server sent as text, whatever the MIME type says", () => {
    expect(classify("image/png", "x.png", true)).toBe("text");
  });

  it("shows HTML as text", () => {
    expect(classify("text/html")).toBe("text");
  });

  it("calls other types binary", () => {
    expect(classify("application/pdf")).toBe("binary");
    expect(classify("image/tiff")).toBe("binary");
    expect(classify(undefined)).toBe("binary");
  });

  it("looks at the extension for octet-stream or a missing type", () => {
    expect(classify("application/octet-stream", "photo.JPG")).toBe("image");
    expect(classify(undefined, "notes.md")).toBe("text");
    expect(classify("application/octet-stream", "archive.zip")).toBe("binary");
  });
});

describe("extensions", () => {
  it("reads the extension of the last path segment only", () => {
    expect(extensionOf("a.b/c")).toBeUndefined();
    expect(extensionOf("dir/archive.tar.GZ")).toBe("gz");
    expect(extensionOf(".bashrc")).toBeUndefined();
    expect(extensionOf("trailing.")).toBeUndefined();
  });

  it("names SVG as .svg.xml so it stays text", () => {
    expect(extensionForMime("image/svg+xml")).toBe("svg.xml");
    expect(extensionFits("logo.svg", "image/svg+xml")).toBe(false);
  });

  it("gives common types an extension", () => {
    expect(extensionForMime("text/markdown; charset=utf-8")).toBe("md");
    expect(extensionForMime("image/jpeg")).toBe("jpg");
    expect(extensionForMime("application/pdf")).toBe("pdf");
    expect(extensionForMime("text/x-whatever")).toBe("txt");
    expect(extensionForMime("application/x-unknown")).toBeUndefined();
  });

  it("accepts a name whose extension agrees with the type", () => {
    expect(extensionFits("notes.markdown", "text/markdown")).toBe(true);
    expect(extensionFits("photo.jpeg", "image/jpeg")).toBe(true);
    expect(extensionFits("report.pdf", "application/pdf")).toBe(true);
    expect(extensionFits("anything.py", "text/plain")).toBe(true);
  });

  it("rejects a name whose extension would open it the wrong way", () => {
    expect(extensionFits("report", "text/markdown")).toBe(false);
    expect(extensionFits("data.txt", "application/json")).toBe(false);
    expect(extensionFits("page.html", "application/pdf")).toBe(false);
    expect(extensionFits("photo.txt", "image/png")).toBe(false);
  });
});

describe("formatSize", () => {
  it.each([
    [0, "0 B"],
    [512, "512 B"],
    [1023, "1023 B"],
    [1024, "1 KB"],
    [1229, "1.2 KB"],
    [15 * 1024, "15 KB"],
    [1024 * 1024 - 1, "1 MB"],
    [3.4 * 1024 * 1024, "3.4 MB"],
    [5 * 1024 ** 4, "5 TB"],
  ])("shows %d bytes as %s", (bytes, shown) => {
    expect(formatSize(bytes)).toBe(shown);
  });

  it("says so when the size makes no sense", () => {
    expect(formatSize(-1)).toBe("unknown size");
    expect(formatSize(Number.NaN)).toBe("unknown size");
  });
});
