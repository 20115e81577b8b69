import type { Ctx } from "./ctx";

export function registerConsent(ctx: Ctx): void {
  void ctx;
}
