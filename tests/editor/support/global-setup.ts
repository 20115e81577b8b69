// Once per run: check the cached tools are there, then install the packaged extension into a fresh
// extensions folder that every test's code-server shares.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { installExtension } from "./codeServer";
import { EXTENSIONS_DIR } from "./fixtures";
import { checkPrepared, vsixPath } from "./paths";

/** Check the tools, then install the .vsix into the shared extensions folder. */
export default function globalSetup(): void {
  checkPrepared();
  rmSync(EXTENSIONS_DIR, { recursive: true, force: true });
  const scratch = mkdtempSync(path.join(tmpdir(), "hb-editor-install-"));
  try {
    installExtension(vsixPath(), scratch, EXTENSIONS_DIR);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
