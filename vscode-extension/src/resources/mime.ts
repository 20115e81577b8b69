// MIME type and file-name rules for showing MCP resources: which language a text resource gets, which
// resources open in the image preview, which are binary, and a file extension for a resource's tab name.
// The server's MIME type is only a label: nothing here ever makes content render as HTML or SVG.

/** How a resource is shown: in a text editor, in the image preview, or offered for saving. */
export type ContentKind = "text" | "image" | "binary";

/** A MIME type without parameters, lower-cased and trimmed (`"Text/Plain; charset=utf-8"` → `"text/plain"`). */
export function normalizeMime(mimeType: string | undefined): string | undefined {
  if (mimeType === undefined) {
    return undefined;
  }
  const bare = mimeType.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  return bare === "" ? undefined : bare;
}

// Raster formats VS Code's image preview shows; SVG is deliberately missing (it can carry script).
const IMAGE_MIMES: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/jpg": "jpg",
  "image/pjpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/bmp": "bmp",
  "image/x-ms-bmp": "bmp",
};

const IMAGE_EXTENSIONS = new Set(["png", "jpg", "jpeg", "gif", "webp", "bmp"]);

interface TextType {
  readonly language: string;
  readonly extension: string;
}

const TEXT_MIMES: Record<string, TextType> = {
  "text/plain": { language: "plaintext", extension: "txt" },
  "text/markdown": { language: "markdown", extension: "md" },
  "text/x-markdown": { language: "markdown", extension: "md" },
  "application/json": { language: "json", extension: "json" },
  "application/ld+json": { language: "json", extension: "json" },
  "application/x-ndjson": { language: "plaintext", extension: "ndjson" },
  "text/x-python": { language: "python", extension: "py" },
  "text/x-script.python": { language: "python", extension: "py" },
  "application/x-python-code": { language: "python", extension: "py" },
  // HTML is shown as source text, never rendered.
  "text/html": { language: "html", extension: "html" },
  "application/xhtml+xml": { language: "html", extension: "html" },
  "text/yaml": { language: "yaml", extension: "yaml" },
  "text/x-yaml": { language: "yaml", extension: "yaml" },
  "application/yaml": { language: "yaml", extension: "yaml" },
  "application/x-yaml": { language: "yaml", extension: "yaml" },
  "text/xml": { language: "xml", extension: "xml" },
  "application/xml": { language: "xml", extension: "xml" },
  // SVG is XML text here: the image preview would render it.
  "image/svg+xml": { language: "xml", extension: "svg.xml" },
  "text/javascript": { language: "javascript", extension: "js" },
  "application/javascript": { language: "javascript", extension: "js" },
  "application/x-javascript": { language: "javascript", extension: "js" },
  "text/typescript": { language: "typescript", extension: "ts" },
  "application/typescript": { language: "typescript", extension: "ts" },
  "application/x-typescript": { language: "typescript", extension: "ts" },
  "text/css": { language: "css", extension: "css" },
  "text/x-shellscript": { language: "shellscript", extension: "sh" },
  "text/x-sh": { language: "shellscript", extension: "sh" },
  "application/x-sh": { language: "shellscript", extension: "sh" },
  "application/x-shellscript": { language: "shellscript", extension: "sh" },
  "application/toml": { language: "toml", extension: "toml" },
  "text/x-toml": { language: "toml", extension: "toml" },
  "text/csv": { language: "plaintext", extension: "csv" },
  "text/x-rust": { language: "rust", extension: "rs" },
  "text/x-go": { language: "go", extension: "go" },
  "text/x-java": { language: "java", extension: "java" },
  "text/x-java-source": { language: "java", extension: "java" },
  "text/x-c": { language: "c", extension: "c" },
  "text/x-c++": { language: "cpp", extension: "cpp" },
  "application/sql": { language: "sql", extension: "sql" },
  "text/x-diff": { language: "diff", extension: "diff" },
  "text/x-patch": { language: "diff", extension: "diff" },
};

const EXTENSION_LANGUAGES: Record<string, string> = {
  txt: "plaintext",
  text: "plaintext",
  log: "log",
  md: "markdown",
  markdown: "markdown",
  json: "json",
  jsonc: "jsonc",
  py: "python",
  pyi: "python",
  html: "html",
  htm: "html",
  yaml: "yaml",
  yml: "yaml",
  xml: "xml",
  svg: "xml",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascriptreact",
  ts: "typescript",
  mts: "typescript",
  cts: "typescript",
  tsx: "typescriptreact",
  css: "css",
  scss: "scss",
  sh: "shellscript",
  bash: "shellscript",
  zsh: "shellscript",
  toml: "toml",
  rs: "rust",
  go: "go",
  java: "java",
  c: "c",
  h: "c",
  cpp: "cpp",
  hpp: "cpp",
  cs: "csharp",
  rb: "ruby",
  php: "php",
  sql: "sql",
  diff: "diff",
  patch: "diff",
  ini: "ini",
  csv: "plaintext",
};

/** The lower-case extension of the last segment of a name or path (`"a/b.tar.GZ"` → `"gz"`), if any. */
export function extensionOf(name: string | undefined): string | undefined {
  if (name === undefined) {
    return undefined;
  }
  const base = name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1);
  const dot = base.lastIndexOf(".");
  if (dot <= 0 || dot === base.length - 1) {
    return undefined;
  }
  return base.slice(dot + 1).toLowerCase();
}

function isTextMime(mime: string): boolean {
  return (
    mime in TEXT_MIMES ||
    mime.startsWith("text/") ||
    mime.endsWith("+json") ||
    mime.endsWith("+xml") ||
    mime.endsWith("+yaml")
  );
}

/**
 * The VS Code language id for a text resource: from the MIME type first, else from the file name's
 * extension, else `plaintext`.
 */
export function languageFor(mimeType: string | undefined, fileName?: string): string {
  const mime = normalizeMime(mimeType);
  const extension = extensionOf(fileName);
  const byExtension = extension !== undefined ? EXTENSION_LANGUAGES[extension] : undefined;
  if (mime !== undefined) {
    const known = TEXT_MIMES[mime];
    // `text/plain` is what many servers say of any text; a telling extension is the better guide then.
    if (known !== undefined && !(known.language === "plaintext" && byExtension !== undefined)) {
      return known.language;
    }
    if (mime.endsWith("+json")) {
      return "json";
    }
    if (mime.endsWith("+xml")) {
      return "xml";
    }
    if (mime.endsWith("+yaml")) {
      return "yaml";
    }
  }
  return byExtension ?? "plaintext";
}

/**
 * Whether a resource is shown as text, as an image, or offered as a binary file. `hasText` says the
 * server sent `text` (always shown as text); without it the MIME type decides, then the file extension.
 */
export function classify(mimeType: string | undefined, fileName?: string, hasText = false): ContentKind {
  if (hasText) {
    return "text";
  }
  const mime = normalizeMime(mimeType);
  if (mime !== undefined) {
    if (mime in IMAGE_MIMES) {
      return "image";
    }
    if (isTextMime(mime)) {
      return "text";
    }
    if (mime !== "application/octet-stream") {
      return "binary";
    }
  }
  const extension = extensionOf(fileName);
  if (extension !== undefined) {
    if (IMAGE_EXTENSIONS.has(extension)) {
      return "image";
    }
    if (extension in EXTENSION_LANGUAGES) {
      return "text";
    }
  }
  return "binary";
}

/** A file extension (without dot) matching a MIME type, for naming a resource's tab or a saved file. */
export function extensionForMime(mimeType: string | undefined): string | undefined {
  const mime = normalizeMime(mimeType);
  if (mime === undefined) {
    return undefined;
  }
  const image = IMAGE_MIMES[mime];
  if (image !== undefined) {
    return image;
  }
  const text = TEXT_MIMES[mime];
  if (text !== undefined) {
    return text.extension;
  }
  if (mime.endsWith("+json")) {
    return "json";
  }
  if (mime.endsWith("+xml")) {
    return "xml";
  }
  if (mime.startsWith("text/")) {
    return "txt";
  }
  const simple: Record<string, string> = {
    "application/pdf": "pdf",
    "application/zip": "zip",
    "application/gzip": "gz",
    "application/octet-stream": "bin",
    "audio/mpeg": "mp3",
    "audio/wav": "wav",
    "video/mp4": "mp4",
    "image/tiff": "tiff",
    "image/x-icon": "ico",
    "image/vnd.microsoft.icon": "ico",
    "image/avif": "avif",
  };
  return simple[mime];
}

/**
 * Whether a file name's extension already says what the MIME type says, so no extension needs to be
 * appended (`"notes.markdown"` fits `text/markdown`; `"report"` fits nothing).
 */
export function extensionFits(fileName: string, mimeType: string | undefined): boolean {
  const extension = extensionOf(fileName);
  if (extension === undefined) {
    return false;
  }
  const mime = normalizeMime(mimeType);
  if (mime === undefined) {
    return true;
  }
  if (mime === "image/svg+xml") {
    // An `.svg` tab could open in the image preview, which renders it; `.svg.xml` stays text.
    return extension === "xml";
  }
  const kind = classify(mime, undefined);
  if (kind === "image") {
    return IMAGE_EXTENSIONS.has(extension) && classify(undefined, fileName) === "image";
  }
  if (kind === "text") {
    const language = languageFor(mime);
    return (
      extension in EXTENSION_LANGUAGES && (language === "plaintext" || language === languageFor(undefined, fileName))
    );
  }
  // A binary type: an unknown extension (`.pdf`, `.zip`) is as good as any; a text or image one is not.
  return !(extension in EXTENSION_LANGUAGES) && !IMAGE_EXTENSIONS.has(extension);
}

/** A byte count for people: `"512 B"`, `"1.2 KB"`, `"3.4 MB"` (powers of 1024). */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) {
    return "unknown size";
  }
  if (bytes < 1024) {
    return `${Math.round(bytes)} B`;
  }
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  // 1023.95 KB would show as "1024 KB"; it is "1 MB".
  while (value >= 1023.95 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = value < 10 ? value.toFixed(1) : Math.round(value).toString();
  return `${shown.replace(/\.0$/, "")} ${units[unit]}`;
}
