import { describe, expect, it } from "vitest";
import { OpenPickers } from "../../../src/ui/openPickers";

/** Whether `promise` has settled after the pending microtasks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe("open pickers", () => {
  it("let a prompt go at once when no picker is open", async () => {
    const pickers = new OpenPickers();
    expect(pickers.busy).toBe(false);
    expect(await settled(pickers.whenClosed())).toBe(true);
  });

  it("hold a prompt until every open picker has closed", async () => {
    const pickers = new OpenPickers();
    const closeFirst = pickers.opened();
    const closeSecond = pickers.opened();
    const waiting = pickers.whenClosed();
    closeFirst();
    expect(await settled(waiting)).toBe(false);
    closeSecond();
    expect(await settled(waiting)).toBe(true);
    expect(pickers.busy).toBe(false);
  });

  it("count a picker closed only once however often its close is called", async () => {
    const pickers = new OpenPickers();
    const closeFirst = pickers.opened();
    pickers.opened();
    closeFirst();
    closeFirst();
    expect(pickers.busy).toBe(true);
  });

  it("mark a flow of pickers open until it settles, also when it fails", async () => {
    const pickers = new OpenPickers();
    let finish = (): void => undefined;
    const flow = pickers.during(() => new Promise<void>((resolve) => (finish = resolve)));
    expect(pickers.busy).toBe(true);
    finish();
    await flow;
    expect(pickers.busy).toBe(false);
    await expect(pickers.during(async () => Promise.reject(new Error("picker failed")))).rejects.toThrow(
      "picker failed",
    );
    expect(pickers.busy).toBe(false);
  });
});
