import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { BootstrapError, findBundle, isSupported, probe, venvPython } from "../../src/bootstrap";

describe("isSupported", () => {
  it("accepts 3.11 and newer and refuses older or unparsable versions", () => {
    expect(["3.11.0", "3.12.4", "3.14.0", "4.0.0"].map(isSupported)).toEqual([true, true, true, true]);
    expect(["3.10.12", "2.7.18", "", "x.y"].map(isSupported)).toEqual([false, false, false, false]);
  });
});

describe("venvPython", () => {
  it("points into bin on POSIX and Scripts on Windows", () => {
    expect(venvPython("/e", "linux")).toBe(path.join("/e", "bin", "python"));
    expect(venvPython("C:\\e", "win32")).toBe(path.join("C:\\e", "Scripts", "python.exe"));
  });
});

describe("findBundle", () => {
  it("says the package is incomplete when the constraints file is missing", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hb-bundle-"));
    writeFileSync(path.join(dir, "host_bridge-0.1.0-py3-none-any.whl"), "");
    await expect(findBundle(dir)).rejects.toThrow(/incomplete.*reinstall the extension/);
  });

  it("says the bundle is missing when the folder does not exist", async () => {
    await expect(findBundle("/nonexistent/hb-bundle")).rejects.toBeInstanceOf(BootstrapError);
  });

  it("finds the wheel and the constraints", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hb-bundle-"));
    writeFileSync(path.join(dir, "host_bridge-0.1.0-py3-none-any.whl"), "");
    writeFileSync(path.join(dir, "constraints.txt"), "");
    const bundle = await findBundle(dir);
    expect(path.basename(bundle.wheel)).toBe("host_bridge-0.1.0-py3-none-any.whl");
    expect(path.basename(bundle.constraints)).toBe("constraints.txt");
  });
});

describe("probe", () => {
  it("returns nothing for a command that does not exist", async () => {
    expect(await probe("/nonexistent/python3")).toBeUndefined();
  });

  it("reports the version and venv support of a real interpreter", async () => {
    const info = await probe("python3");
    expect(info).toBeDefined();
    expect(info?.version).toMatch(/^3\.\d+\.\d+$/);
    expect(typeof info?.canCreateVenv).toBe("boolean");
  });
});
