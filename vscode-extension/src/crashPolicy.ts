// Pure: when to restart a sidecar that went away, and a serial queue for (re)starts.

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
 * Runs jobs one at a time; while one runs, at most one more waits. Asking again while a job waits joins
 * the waiting one, so a burst of restart requests gives exactly one more restart.
 */
export class SerialQueue {
  private running: Promise<void> | undefined;
  private waiting: Promise<void> | undefined;

  /** Run `job` after the running one; callers during the wait share the same queued run. */
  run(job: () => Promise<void>): Promise<void> {
    if (this.waiting !== undefined) {
      return this.waiting;
    }
    if (this.running === undefined) {
      this.running = this.start(job);
      return this.running;
    }
    const previous = this.running;
    const queued = previous
      .catch(() => undefined)
      .then(() => {
        this.waiting = undefined;
        this.running = this.start(job);
        return this.running;
      });
    this.waiting = queued;
    return queued;
  }

  private async start(job: () => Promise<void>): Promise<void> {
    try {
      await job();
    } finally {
      if (this.waiting === undefined) {
        this.running = undefined;
      }
    }
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
