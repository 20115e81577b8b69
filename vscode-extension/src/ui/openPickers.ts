// Which of the extension's pickers are open, so that a consent prompt waits for them to close instead of
// taking their place (a modal or a new quick pick would close the picker the user is working in).

/** Counts open pickers and lets a prompt wait until none is open. */
export class OpenPickers {
  private open = 0;
  private waiters: (() => void)[] = [];

  /** Whether a picker is open now. */
  get busy(): boolean {
    return this.open > 0;
  }

  /** Mark a picker (or a flow of pickers) open; the returned function marks it closed (only its first call counts). */
  opened(): () => void {
    this.open += 1;
    let closed = false;
    return () => {
      if (closed) {
        return;
      }
      closed = true;
      this.open -= 1;
      if (this.open === 0) {
        for (const wake of this.waiters.splice(0)) {
          wake();
        }
      }
    };
  }

  /** Run `flow` (which shows pickers) marked open until it settles. */
  async during<T>(flow: () => Promise<T>): Promise<T> {
    const close = this.opened();
    try {
      return await flow();
    } finally {
      close();
    }
  }

  /** Resolves once no picker is open: at once when none is. */
  whenClosed(): Promise<void> {
    if (this.open === 0) {
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}
