import { describe, expect, it } from "vitest";
import { ResourceMemo, SubscriptionBook } from "../../../src/resources/subscriptionBook";

const a = { server: "s", uri: "x://a" };
const b = { server: "t", uri: "x://b" };

describe("SubscriptionBook", () => {
  it("asks to subscribe on the first holder only", () => {
    const book = new SubscriptionBook();
    expect(book.hold(a, "document 1")).toBe(true);
    expect(book.hold(a, "watch 1")).toBe(false);
  });

  it("asks to unsubscribe when the last holder goes, if it was subscribed", () => {
    const book = new SubscriptionBook();
    book.hold(a, "document 1");
    book.hold(a, "watch 1");
    expect(book.claim(a)).toBe(true);
    expect(book.release(a, "watch 1")).toBe(false);
    expect(book.release(a, "document 1")).toBe(true);
    expect(book.isHeld(a)).toBe(false);
  });

  it("counts a holder seen twice once, so one release lets go", () => {
    const book = new SubscriptionBook();
    book.hold(a, "document 1");
    book.hold(a, "document 1");
    book.claim(a);
    expect(book.release(a, "document 1")).toBe(true);
    expect(book.isHeld(a)).toBe(false);
  });

  it("ignores a release by something that does not hold the resource", () => {
    const book = new SubscriptionBook();
    book.hold(a, "document 1");
    book.claim(a);
    expect(book.release(a, "watch 9")).toBe(false);
    expect(book.isHeld(a)).toBe(true);
  });

  it("does not ask to unsubscribe what was never subscribed", () => {
    const book = new SubscriptionBook();
    book.hold(a, "h");
    expect(book.release(a, "h")).toBe(false);
    expect(book.release(a, "h")).toBe(false);
  });

  it("lets a resource be claimed once until the claim is given up", () => {
    const book = new SubscriptionBook();
    book.hold(a, "h");
    expect(book.claim(a)).toBe(true);
    expect(book.claim(a)).toBe(false);
    book.unclaim(a);
    expect(book.claim(a)).toBe(true);
    expect(book.claim(b)).toBe(false);
  });

  it("forgets every subscription for a new sidecar, or one server's when it stops", () => {
    const book = new SubscriptionBook();
    book.hold(a, "h");
    book.hold(b, "h");
    book.claim(a);
    book.claim(b);
    expect(book.unsubscribed()).toEqual([]);
    book.resetActive("t");
    expect(book.unsubscribed()).toEqual([b]);
    book.resetActive();
    expect(book.unsubscribed("s")).toEqual([a]);
    expect(book.unsubscribed()).toHaveLength(2);
  });
});

describe("ResourceMemo", () => {
  it("keeps a value and gives the same one back", () => {
    const memo = new ResourceMemo<{ n: number }>(1000, () => false);
    const first = memo.touch("a", () => ({ n: 1 }), 0);
    expect(memo.touch("a", () => ({ n: 2 }), 10)).toBe(first);
    expect(memo.get("a")).toBe(first);
  });

  it("forgets resources nobody holds once they were not touched for a while", () => {
    const memo = new ResourceMemo<number>(1000, () => false);
    memo.touch("a", () => 1, 0);
    memo.touch("b", () => 2, 500);
    memo.touch("c", () => 3, 1200);
    expect(memo.get("a")).toBeUndefined();
    expect(memo.get("b")).toBe(2);
    expect(memo.size).toBe(2);
  });

  it("keeps held resources however old", () => {
    const memo = new ResourceMemo<number>(1000, (key) => key === "a");
    memo.touch("a", () => 1, 0);
    memo.touch("b", () => 2, 5000);
    expect(memo.get("a")).toBe(1);
  });
});
