// A reporter that repeats, after everything else, each failed test's title, the step it failed at and the first
// lines of its error: CI keeps only the end of the output, where the list reporter leaves attachments' paths.
import type { FullResult, Reporter, TestCase, TestResult } from "@playwright/test/reporter";

const ERROR_LINES = 12;

function stripColours(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

export default class FailureTail implements Reporter {
  private readonly failures: string[] = [];

  onTestEnd(test: TestCase, result: TestResult): void {
    if (result.status === "passed" || result.status === "skipped") return;
    const where = `${test.location.file.split("/").slice(-2).join("/")}:${test.location.line}`;
    const lines = [`✘ ${test.titlePath().slice(-1)[0] ?? test.title} (${where}, ${result.status}, ${Math.round(result.duration / 1000)} s)`];
    for (const error of result.errors) {
      const text = stripColours(error.message ?? error.value ?? "no message").split("\n").slice(0, ERROR_LINES);
      lines.push(...text.map((line) => `    ${line}`));
      if (error.location) lines.push(`    at ${error.location.file.split("/").slice(-2).join("/")}:${error.location.line}`);
    }
    this.failures.push(lines.join("\n"));
  }

  onEnd(result: FullResult): void {
    if (this.failures.length === 0) return;
    process.stdout.write(`\n── ${this.failures.length} failed (${result.status}); first lines of each error ──\n`);
    process.stdout.write(`${this.failures.join("\n")}\n`);
  }

  printsToStdio(): boolean {
    return true;
  }
}
