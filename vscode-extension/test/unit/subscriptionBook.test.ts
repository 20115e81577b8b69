import { describe, expect, it } from "vitest";
import { SubscriptionBook } from "../../src/subscriptionBook";

const a = { server: "s", uri: "x://a" };
const b = { server: "t", uri: "x://b" };

describe("SubscriptionBook", () => {
  it("asks to subscribe on the first holder only", () => {
    const book = new SubscriptionBook();
    expect(book.hold(a)).toBe(true);
    expect(book.hold(a)).toBe(false);
  });

  it("asks to unsubscribe when the last holder goes, if it was subscribed", () => {
    const book = new SubscriptionBook();
    book.hold(a);
    book.hold(a);
    expect(book.claim(a)).toBe(true);
    expect(book.release(a)).toBe(false);
    expect(book.release(a)).toBe(true);
    expect(book.isHeld(a)).toBe(false);
  });

  it("does not ask to unsubscribe what was never subscribed", () => {
    const book = new SubscriptionBook();
    book.hold(a);
    expect(book.release(a)).toBe(false);
    expect(book.release(a)).toBe(false);
  });

  it("lets a resource be claimed once until the claim is given up", () => {
    const book = new SubscriptionBook();
    book.hold(a);
    expect(book.claim(a)).toBe(true);
    expect(book.claim(a)).toBe(false);
    book.unclaim(a);
    expect(book.claim(a)).toBe(true);
    expect(book.claim(b)).toBe(false);
  });

  it("forgets every subscription for a new sidecar, or one server's when it stops", () => {
    const book = new SubscriptionBook();
    book.hold(a);
    book.hold(b);
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
