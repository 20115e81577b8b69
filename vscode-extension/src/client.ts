// Starts, restarts and stops the sidecar (being written; the public API below is fixed).
import type * as vscode from "vscode";
import type { Ctx } from "./ctx";

export class Sidecar implements vscode.Disposable {
  constructor(private readonly ctx: Ctx) {}

  /** Start the sidecar (finding Python, bootstrapping its environment on first use). */
  async start(): Promise<void> {
    void this.ctx;
  }

  /** Restart it; restarts are serialized and at most one waits behind the running one. */
  async restart(): Promise<void> {}

  /** The sidecar's process id while it runs. */
  get pid(): number | undefined {
    return undefined;
  }

  dispose(): void {}
}
