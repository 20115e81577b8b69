// Pure: when to restart a sidecar that went away, the order of its starts and stops, its last stderr lines.

/** Restarts allowed within {@link CrashPolicy.window}; one more crash stops the sidecar. */
export const MAX_CRASHES = 5;
/** The window, in milliseconds, over which crashes are counted (3 minutes). */
export const CRASH_WINDOW_MS = 3 * 60 * 1000;

/** Counts crashes in a sliding window: the 5th within 3 minutes means "stop and tell the user". */
export class CrashPolicy {
  private readonly crashes: number[] = [];

  constructor(
    private readonly max = MAX_CRASHES,
    private readonly window = CRASH_WINDOW_MS,
  ) {}

  /** Record a crash at `now`; true when the sidecar may be restarted once more. */
  crashed(now: number): boolean {
    this.crashes.push(now);
    while (this.crashes.length > 0 && (this.crashes[0] ?? now) <= now - this.window) {
      this.crashes.shift();
    }
    return this.crashes.length < this.max;
  }

  /** How many crashes are inside the window now. */
  get recent(): number {
    return this.crashes.length;
  }

  /** Forget past crashes (the user restarted by hand). */
  reset(): void {
    this.crashes.length = 0;
  }
}

/**
 * Runs the sidecar's start, restart and stop jobs one at a time, in order. A restart asked for while another
 * restart is queued and has not begun joins it, so a burst of restart requests gives exactly one more restart;
 * every other job always runs.
 */
export class LifecycleQueue {
  private tail: Promise<void> = Promise.resolve();
  private queuedRestart: Promise<void> | undefined;

  /** Run `job` after everything queued before it. */
  run(job: () => Promise<void>): Promise<void> {
    const next = this.tail.catch(() => undefined).then(job);
    this.tail = next;
    return next;
  }

  /** Run a restart after everything queued, or join the restart that is already waiting. */
  restart(job: () => Promise<void>): Promise<void> {
    if (this.queuedRestart !== undefined) {
      return this.queuedRestart;
    }
    const next = this.tail
      .catch(() => undefined)
      .then(() => {
        this.queuedRestart = undefined;
        return job();
      });
    this.queuedRestart = next;
    this.tail = next;
    return next;
  }
}

/** The last `size` lines written, for showing after a crash. */
export class LineRing {
  private readonly lines: string[] = [];

  constructor(private readonly size = 50) {}

  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.size) {
      this.lines.shift();
    }
  }

  /** Everything kept, oldest first; the ring is emptied. */
  drain(): string[] {
    return this.lines.splice(0);
  }
}
