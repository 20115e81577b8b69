// The editor tests: one worker (each test runs its own code-server, sidecar and MCP servers on a small machine),
// no retries (a flaky scenario is a bug to fix), generous step timeouts instead of fixed waits.
import { defineConfig } from "@playwright/test";
import { CHROMIUM, SLOWDOWN } from "./support/paths";

export default defineConfig({
  testDir: "specs",
  globalSetup: "./support/global-setup.ts",
  outputDir: "test-results",
  workers: 1,
  fullyParallel: false,
  retries: 0,
  forbidOnly: true,
  timeout: 240_000 * SLOWDOWN,
  expect: { timeout: 45_000 * SLOWDOWN },
  reporter: [["list"], ["./support/failureTail.ts"]],
  use: {
    browserName: "chromium",
    viewport: { width: 1280, height: 960 },
    actionTimeout: 45_000 * SLOWDOWN,
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
});
