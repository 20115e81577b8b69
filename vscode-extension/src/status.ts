import type { Sidecar } from "./client";
import type { Ctx } from "./ctx";

export function registerStatus(ctx: Ctx, sidecar: Sidecar): void {
  void ctx;
  void sidecar;
}
