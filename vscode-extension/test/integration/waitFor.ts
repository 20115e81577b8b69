// Bounded waiting for the integration tests: every wait names what it waits for and fails after a time-out,
// so a missing event fails the test with a sentence instead of hanging it.

/** Something that calls back whenever it may have changed (an event); returns how to stop listening. */
export type Wake = (listener: () => void) => () => void;

/** How often a condition without a `wake` event is checked again. */
const POLL_MS = 25;

/**
 * Resolves with the first truthy value of `check`, re-checking whenever `wake` fires (or every 25 ms
 * without it, for conditions outside this process such as a fixture's record file); rejects after `timeoutMs`
 * with a message naming `what` (a function is called then, so it can describe what was seen instead).
 */
export function waitFor<T>(
  check: () => T | undefined | null | false,
  timeoutMs: number,
  what: string | (() => string),
  wake?: Wake,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let stopWake: (() => void) | undefined;
    let poll: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      if (poll !== undefined) clearInterval(poll);
      stopWake?.();
    };
    const attempt = (): boolean => {
      let value: T | undefined | null | false;
      try {
        value = check();
      } catch (error) {
        finish();
        reject(error instanceof Error ? error : new Error(String(error)));
        return true;
      }
      if (value === undefined || value === null || value === false) return false;
      finish();
      resolve(value);
      return true;
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "string" ? what : what()}`));
    }, timeoutMs);
    if (attempt()) return;
    if (wake !== undefined) stopWake = wake(() => void attempt());
    else poll = setInterval(() => void attempt(), POLL_MS);
  });
}

/** `promise`, or a rejection naming `what` once `timeoutMs` passed. */
export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
