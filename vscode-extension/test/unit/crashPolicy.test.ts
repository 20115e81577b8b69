import { describe, expect, it } from "vitest";
import { CrashPolicy, LineRing, SerialQueue } from "../../src/crashPolicy";

describe("CrashPolicy", () => {
  it("allows four restarts and refuses the fifth crash within three minutes", () => {
    const policy = new CrashPolicy(5, 180_000);
    const answers = [0, 10, 20, 30, 40].map((t) => policy.crashed(t * 1000));
    expect(answers).toEqual([true, true, true, true, false]);
  });

  it("forgets crashes older than the window", () => {
    const policy = new CrashPolicy(5, 180_000);
    for (const t of [0, 1, 2, 3]) {
      policy.crashed(t * 1000);
    }
    expect(policy.crashed(200_000)).toBe(true);
    expect(policy.recent).toBe(1);
  });

  it("starts counting again after a reset", () => {
    const policy = new CrashPolicy(2, 180_000);
    policy.crashed(0);
    policy.reset();
    expect(policy.crashed(1)).toBe(true);
  });
});

describe("SerialQueue", () => {
  it("runs jobs one at a time and folds a burst of requests into one queued run", async () => {
    const queue = new SerialQueue();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    const job = async () => {
      runs += 1;
      const n = runs;
      log.push(`start ${n}`);
      if (n === 1) {
        await gate;
      }
      log.push(`end ${n}`);
    };
    const first = queue.run(job);
    const second = queue.run(job);
    const third = queue.run(job);
    expect(second).toBe(third);
    release();
    await Promise.all([first, second, third]);
    expect(log).toEqual(["start 1", "end 1", "start 2", "end 2"]);
  });

  it("runs the queued job even when the running one fails", async () => {
    const queue = new SerialQueue();
    const failing = queue.run(async () => {
      throw new Error("boom");
    });
    let ran = false;
    const next = queue.run(async () => {
      ran = true;
    });
    await expect(failing).rejects.toThrow("boom");
    await next;
    expect(ran).toBe(true);
  });
});

describe("LineRing", () => {
  it("keeps only the last lines and empties on drain", () => {
    const ring = new LineRing(2);
    for (const line of ["a", "b", "c"]) {
      ring.push(line);
    }
    expect(ring.drain()).toEqual(["b", "c"]);
    expect(ring.drain()).toEqual([]);
  });
});
