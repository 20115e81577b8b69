// The two-folder workspace every scenario opens: fresh per test, outside any git repository and outside home.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { deflateSync } from "node:zlib";

/** The folders of one test's workspace (real paths). */
export interface Folders {
  /** The temporary folder holding everything below. */
  readonly root: string;
  /** The first workspace folder: a README, a PNG, a binary file and `notes/plan.txt`. */
  readonly alpha: string;
  /** The second workspace folder: a README. */
  readonly beta: string;
  /** The `.code-workspace` file naming alpha and beta. */
  readonly workspaceFile: string;
}

/** The text of alpha's README, which the tests look for in editors. */
export const ALPHA_README = "# Alpha\n\nThe first folder of the editor tests' workspace.\n";

/** Size and bytes of alpha's `data.bin`, which has no text form. */
export const DATA_BIN = Buffer.from(Array.from({ length: 3000 }, (_, index) => (index * 7) % 256));

/** Width and height of alpha's `logo.png`. */
export const LOGO_SIZE = { width: 64, height: 48 } as const;

/** Create the workspace under the system's temporary folder. */
export function makeFolders(): Folders {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), "hb-editor-")));
  const alpha = path.join(root, "alpha");
  const beta = path.join(root, "beta");
  mkdirSync(path.join(alpha, "notes"), { recursive: true });
  mkdirSync(beta);
  writeFileSync(path.join(alpha, "README.md"), ALPHA_README);
  writeFileSync(path.join(alpha, "notes", "plan.txt"), "Plan: prove it in a real VS Code.\n");
  writeFileSync(path.join(alpha, "logo.png"), png(LOGO_SIZE.width, LOGO_SIZE.height));
  writeFileSync(path.join(alpha, "data.bin"), DATA_BIN);
  writeFileSync(path.join(beta, "README.md"), "# Beta\n");
  const workspaceFile = path.join(root, "two-folders.code-workspace");
  writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: alpha }, { path: beta }] }, null, 2));
  return { root, alpha, beta, workspaceFile };
}

/** Write `.vscode/mcp.json` into `folder` with `servers`. */
export function writeWorkspaceServers(folder: string, servers: Record<string, unknown>): string {
  mkdirSync(path.join(folder, ".vscode"), { recursive: true });
  const file = path.join(folder, ".vscode", "mcp.json");
  writeFileSync(file, JSON.stringify({ servers }, null, 2));
  return file;
}

/** A small RGB PNG with a diagonal gradient, so the image preview has something to show. */
function png(width: number, height: number): Buffer {
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3); // Filter byte 0, then RGB.
    for (let x = 0; x < width; x++) {
      row[1 + x * 3] = 40 + Math.round((180 * x) / width);
      row[2 + x * 3] = 90 + Math.round((120 * y) / height);
      row[3 + x * 3] = 200;
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // Bit depth.
  header[9] = 2; // Colour type RGB.
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) {
    c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const byte of bytes) {
    c = (CRC_TABLE[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}
