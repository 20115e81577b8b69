import { describe, expect, it } from "vitest";
import { CrashPolicy, LifecycleQueue, LineRing } from "../../../src/sidecar/crashPolicy";

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

describe("LifecycleQueue", () => {
  function gate(): { open: () => void; wait: Promise<void> } {
    let open!: () => void;
    const wait = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { open, wait };
  }

  it("folds a burst of restarts behind a running job into one restart", async () => {
    const queue = new LifecycleQueue();
    const log: string[] = [];
    const first = gate();
    const start = queue.run(async () => {
      log.push("start");
      await first.wait;
    });
    const restart = async () => {
      log.push("restart");
    };
    const a = queue.restart(restart);
    const b = queue.restart(restart);
    expect(b).toBe(a);
    first.open();
    await Promise.all([start, a, b]);
    expect(log).toEqual(["start", "restart"]);
  });

  it("always runs a stop queued behind a restart, after it", async () => {
    const queue = new LifecycleQueue();
    const log: string[] = [];
    const first = gate();
    void queue.run(async () => {
      log.push("start");
      await first.wait;
    });
    void queue.restart(async () => {
      log.push("restart");
    });
    const stop = queue.run(async () => {
      log.push("stop");
    });
    first.open();
    await stop;
    expect(log).toEqual(["start", "restart", "stop"]);
  });

  it("queues a new restart once the waiting one has begun", async () => {
    const queue = new LifecycleQueue();
    const log: string[] = [];
    const inside = gate();
    const release = gate();
    const first = queue.restart(async () => {
      log.push("restart 1");
      inside.open();
      await release.wait;
    });
    await inside.wait;
    const second = queue.restart(async () => {
      log.push("restart 2");
    });
    expect(second).not.toBe(first);
    release.open();
    await second;
    expect(log).toEqual(["restart 1", "restart 2"]);
  });

  it("runs the next job even when the previous one failed", async () => {
    const queue = new LifecycleQueue();
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
