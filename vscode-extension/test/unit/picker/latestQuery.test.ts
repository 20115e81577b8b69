import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LatestQuery } from "../../../src/picker/latestQuery";

interface Pending {
  value: string;
  signal: AbortSignal;
  resolve: (values: string[]) => void;
  reject: (error: unknown) => void;
}

function setup() {
  const pending: Pending[] = [];
  const results: [string, string[]][] = [];
  const errors: [string, unknown][] = [];
  const query = new LatestQuery<string[]>(
    (value, signal) =>
      new Promise<string[]>((resolve, reject) => {
        pending.push({ value, signal, resolve, reject });
      }),
    (value, result) => results.push([value, result]),
    (value, error) => errors.push([value, error]),
    150,
  );
  return { query, pending, results, errors };
}

describe("LatestQuery", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("asks once, 150 ms after the last keystroke", () => {
    const { query, pending } = setup();
    query.update("a");
    vi.advanceTimersByTime(100);
    query.update("ab");
    vi.advanceTimersByTime(149);
    expect(pending).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(pending.map((p) => p.value)).toEqual(["ab"]);
  });

  it("passes on the answer for the latest value", async () => {
    const { query, pending, results } = setup();
    query.update("x");
    vi.advanceTimersByTime(150);
    pending[0]?.resolve(["x1", "x2"]);
    await vi.runAllTimersAsync();
    expect(results).toEqual([["x", ["x1", "x2"]]]);
  });

  it("drops a stale answer that arrives after a newer value was typed, and aborts its request", async () => {
    const { query, pending, results } = setup();
    query.update("a");
    vi.advanceTimersByTime(150);
    query.update("ab");
    expect(pending[0]?.signal.aborted).toBe(true);
    pending[0]?.resolve(["stale"]);
    await vi.runAllTimersAsync();
    expect(results).toEqual([]);
    pending[1]?.resolve(["fresh"]);
    await vi.runAllTimersAsync();
    expect(results).toEqual([["ab", ["fresh"]]]);
  });

  it("reports errors of the latest query only", async () => {
    const { query, pending, errors } = setup();
    query.update("a");
    vi.advanceTimersByTime(150);
    query.update("b");
    pending[0]?.reject(new Error("old"));
    vi.advanceTimersByTime(150);
    pending[1]?.reject(new Error("new"));
    await vi.runAllTimersAsync();
    expect(errors.map(([value]) => value)).toEqual(["b"]);
  });

  it("stays silent after dispose", async () => {
    const { query, pending, results } = setup();
    query.update("a");
    vi.advanceTimersByTime(150);
    query.dispose();
    pending[0]?.resolve(["late"]);
    query.update("b");
    await vi.runAllTimersAsync();
    expect(results).toEqual([]);
    expect(pending).toHaveLength(1);
  });
});
