// Debounced queries whose stale answers are dropped: the template-argument picker asks the sidecar for
// completions as the user types, and only the answer to the latest value may reach the list.

/** Schedules and cancels timers; the real ones by default, fakes in tests. */
export interface Timers {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Runs `fetch` for the latest value given to {@link update}, `delayMs` after the user stopped typing.
 * An answer is passed to `onResult` only when no newer value was given meanwhile; the older query's
 * `AbortSignal` is aborted so its request can be cancelled.
 */
export class LatestQuery<T> {
  private timer: unknown;
  private generation = 0;
  private controller: AbortController | undefined;
  private disposed = false;

  constructor(
    private readonly fetch: (value: string, signal: AbortSignal) => Promise<T>,
    private readonly onResult: (value: string, result: T) => void,
    private readonly onError: (value: string, error: unknown) => void,
    private readonly delayMs = 150,
    private readonly timers: Timers = realTimers,
  ) {}

  /** The user typed `value`: restart the delay, forget any answer still coming for an older value. */
  update(value: string): void {
    if (this.disposed) {
      return;
    }
    this.generation += 1;
    const generation = this.generation;
    this.controller?.abort();
    this.controller = undefined;
    if (this.timer !== undefined) {
      this.timers.clear(this.timer);
    }
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      void this.run(value, generation);
    }, this.delayMs);
  }

  /** Stop: no further fetches, no further callbacks. */
  dispose(): void {
    this.disposed = true;
    this.generation += 1;
    this.controller?.abort();
    if (this.timer !== undefined) {
      this.timers.clear(this.timer);
      this.timer = undefined;
    }
  }

  private async run(value: string, generation: number): Promise<void> {
    const controller = new AbortController();
    this.controller = controller;
    try {
      const result = await this.fetch(value, controller.signal);
      if (generation === this.generation) {
        this.onResult(value, result);
      }
    } catch (error) {
      if (generation === this.generation) {
        this.onError(value, error);
      }
    } finally {
      if (this.controller === controller) {
        this.controller = undefined;
      }
    }
  }
}
