// Which opened MCP resources want `hostBridge/subscribe`, by holder (an open text document, a file watch),
// which of them the current sidecar has actually subscribed, and what is remembered about resources while
// they are shown. Pure bookkeeping; the documents feature sends the requests.
import { addressKey, type ResourceAddress } from "./resourceUri";

interface Entry {
  readonly address: ResourceAddress;
  readonly holders: Set<string>;
  /** `hostBridge/subscribe` succeeded (or is in flight) with the current sidecar and server connection. */
  active: boolean;
}

/**
 * Holders and subscription state of opened resources. A holder is named by the caller (e.g. one per open
 * document URI, one per file watch): holding twice under the same name counts once, so an event seen twice
 * never leaves a subscription behind.
 */
export class SubscriptionBook {
  private readonly entries = new Map<string, Entry>();

  /** `holder` holds `address`; true when it is the first holder (time to subscribe). */
  hold(address: ResourceAddress, holder: string): boolean {
    const key = addressKey(address);
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      entry.holders.add(holder);
      return false;
    }
    this.entries.set(key, {
      address: { server: address.server, uri: address.uri },
      holders: new Set([holder]),
      active: false,
    });
    return true;
  }

  /**
   * `holder` lets go of `address`; true when it was the last holder and the resource was subscribed (time to
   * unsubscribe). Releasing what `holder` does not hold does nothing.
   */
  release(address: ResourceAddress, holder: string): boolean {
    const key = addressKey(address);
    const entry = this.entries.get(key);
    if (entry === undefined || !entry.holders.delete(holder) || entry.holders.size > 0) {
      return false;
    }
    this.entries.delete(key);
    return entry.active;
  }

  /** Whether anything holds `address`. */
  isHeld(address: ResourceAddress): boolean {
    return this.entries.has(addressKey(address));
  }

  /** Whether anything holds the address whose {@link addressKey} is `key`. */
  isHeldKey(key: string): boolean {
    return this.entries.has(key);
  }

  /** Claim `address` for subscribing: true when it is held and not yet subscribed (it is marked so now). */
  claim(address: ResourceAddress): boolean {
    const entry = this.entries.get(addressKey(address));
    if (entry === undefined || entry.active) {
      return false;
    }
    entry.active = true;
    return true;
  }

  /** The subscription of `address` failed or was lost: it may be claimed again later. */
  unclaim(address: ResourceAddress): void {
    const entry = this.entries.get(addressKey(address));
    if (entry !== undefined) {
      entry.active = false;
    }
  }

  /**
   * Forget which subscriptions exist (a new sidecar process has none), or only those of one server (its
   * connection was lost).
   */
  resetActive(server?: string): void {
    for (const entry of this.entries.values()) {
      if (server === undefined || entry.address.server === server) {
        entry.active = false;
      }
    }
  }

  /** Held addresses not subscribed now, optionally of one server. */
  unsubscribed(server?: string): ResourceAddress[] {
    return [...this.entries.values()]
      .filter((entry) => !entry.active && (server === undefined || entry.address.server === server))
      .map((entry) => entry.address);
  }
}

/**
 * Values kept per resource key while the resource is held, and for `ttlMs` after it was last touched when it
 * is not (a `stat` before a document opens, a one-off read): every touch forgets the others that are neither.
 */
export class ResourceMemo<T> {
  private readonly entries = new Map<string, { value: T; touched: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly isHeld: (key: string) => boolean,
  ) {}

  /** How many values are kept. */
  get size(): number {
    return this.entries.size;
  }

  /** The value of `key`, if kept. */
  get(key: string): T | undefined {
    return this.entries.get(key)?.value;
  }

  /** The value of `key`, made by `make` when not kept; marks it touched at `now` and forgets stale others. */
  touch(key: string, make: () => T, now: number = Date.now()): T {
    for (const [other, entry] of this.entries) {
      if (other !== key && now - entry.touched > this.ttlMs && !this.isHeld(other)) {
        this.entries.delete(other);
      }
    }
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { value: make(), touched: now };
      this.entries.set(key, entry);
    }
    entry.touched = now;
    return entry.value;
  }

  /** Forget `key`. */
  delete(key: string): void {
    this.entries.delete(key);
  }
}
