import type { Ctx } from "./ctx";

export function registerDocuments(ctx: Ctx): void {
  void ctx;
}
