import type { Ctx } from "./ctx";

export function registerTree(ctx: Ctx): void {
  void ctx;
}
