// Turns a `hostBridge/readResource` answer into the bytes an editor shows, and decides how to show them.
import { classify, type ContentKind } from "./mime";
import type * as protocol from "../protocol";

/** A read resource as one file. */
export interface ResourceBytes {
  /** The bytes: UTF-8 of the text, or the decoded blob. */
  readonly bytes: Uint8Array;
  /** The MIME type of the (first) content item, if the server gave one. */
  readonly mimeType: string | undefined;
  /** Whether the server sent text (not a blob). */
  readonly isText: boolean;
}

const encoder = new TextEncoder();

/**
 * One file's bytes for a read. Several text items (some servers split a resource) are joined with a
 * newline; otherwise the first item is the resource. A blob is base64 (already validated by the sidecar).
 */
export function resourceBytes(result: protocol.ReadResult): ResourceBytes {
  const contents = result.contents;
  const first = contents[0];
  if (first === undefined) {
    return { bytes: new Uint8Array(), mimeType: undefined, isText: true };
  }
  if (contents.length > 1 && contents.every((content) => content.text !== undefined)) {
    const text = contents.map((content) => content.text ?? "").join("\n");
    return { bytes: encoder.encode(text), mimeType: first.mimeType, isText: true };
  }
  if (first.text !== undefined) {
    return { bytes: encoder.encode(first.text), mimeType: first.mimeType, isText: true };
  }
  const blob = first.blob ?? "";
  const buffer = Buffer.from(blob, "base64");
  return {
    bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength),
    mimeType: first.mimeType,
    isText: false,
  };
}

/** How to show a read resource: text, image or binary (see {@link classify}). */
export function kindOf(content: ResourceBytes, fileName?: string): ContentKind {
  return classify(content.mimeType, fileName, content.isText);
}
