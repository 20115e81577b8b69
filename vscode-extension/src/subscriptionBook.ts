// Which opened MCP resources want `hostBridge/subscribe`, counted per holder (an open text document, a
// file watch), and which of them the current sidecar has actually subscribed. Pure bookkeeping; the
// documents feature sends the requests.
import { addressKey, type ResourceAddress } from "./resourceUri";

interface Entry {
  readonly address: ResourceAddress;
  holders: number;
  /** `hostBridge/subscribe` succeeded (or is in flight) with the current sidecar and server connection. */
  active: boolean;
}

/** Reference counts and subscription state of opened resources. */
export class SubscriptionBook {
  private readonly entries = new Map<string, Entry>();

  /** One more holder of `address`; true when it is the first (time to subscribe). */
  hold(address: ResourceAddress): boolean {
    const key = addressKey(address);
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      entry.holders += 1;
      return false;
    }
    this.entries.set(key, { address: { server: address.server, uri: address.uri }, holders: 1, active: false });
    return true;
  }

  /**
   * One holder fewer; true when it was the last and the resource was subscribed (time to unsubscribe).
   * Releasing an address that is not held does nothing.
   */
  release(address: ResourceAddress): boolean {
    const key = addressKey(address);
    const entry = this.entries.get(key);
    if (entry === undefined) {
      return false;
    }
    entry.holders -= 1;
    if (entry.holders > 0) {
      return false;
    }
    this.entries.delete(key);
    return entry.active;
  }

  /** Whether anything holds `address`. */
  isHeld(address: ResourceAddress): boolean {
    return this.entries.has(addressKey(address));
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
