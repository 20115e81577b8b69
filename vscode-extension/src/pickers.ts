import type { Ctx } from "./ctx";

export function registerPickers(ctx: Ctx): void {
  void ctx;
}
