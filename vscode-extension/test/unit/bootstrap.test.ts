import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  BootstrapError,
  findBundle,
  installsOffline,
  isSupported,
  platformTarget,
  probe,
  venvPython,
} from "../../src/bootstrap";

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

/** A bundle folder as scripts/bundle_python.py writes it; `leave` names a file not to write. */
function bundleDir(manifest: object, leave?: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "hb-bundle-"));
  mkdirSync(path.join(dir, "wheels"));
  const files: Record<string, string> = {
    "host_bridge-0.1.0-py3-none-any.whl": "",
    "constraints.txt": "",
    "bundle.json": JSON.stringify(manifest),
    "wheels/pip-26.3-py3-none-any.whl": "",
  };
  for (const [name, body] of Object.entries(files)) {
    if (name !== leave) {
      writeFileSync(path.join(dir, name), body);
    }
  }
  return dir;
}

const LINUX = { target: "linux-x64", pythons: ["3.11", "3.12", "3.13", "3.14"], pip: "pip-26.3-py3-none-any.whl" };

describe("findBundle", () => {
  it("says the package is incomplete when a part is missing", async () => {
    await expect(findBundle(bundleDir(LINUX, "constraints.txt"))).rejects.toThrow(
      /incomplete.*reinstall the extension/,
    );
    await expect(findBundle(bundleDir(LINUX, "bundle.json"))).rejects.toThrow(/bundle\.json are needed/);
    await expect(findBundle(bundleDir(LINUX, "wheels/pip-26.3-py3-none-any.whl"))).rejects.toThrow(
      /wheels\/pip-26\.3-py3-none-any\.whl is missing/,
    );
    await expect(findBundle(bundleDir({ target: "linux-x64", pip: LINUX.pip }))).rejects.toThrow(
      /needs target, pythons and pip/,
    );
  });

  it("says the bundle is missing when the folder does not exist", async () => {
    await expect(findBundle("/nonexistent/hb-bundle")).rejects.toBeInstanceOf(BootstrapError);
  });

  it("finds the wheel, the constraints, pip and the wheels' target", async () => {
    const dir = bundleDir(LINUX);
    const bundle = await findBundle(dir);
    expect(path.basename(bundle.wheel)).toBe("host_bridge-0.1.0-py3-none-any.whl");
    expect(path.basename(bundle.constraints)).toBe("constraints.txt");
    expect(bundle.pip).toBe(path.join(dir, "wheels", "pip-26.3-py3-none-any.whl"));
    expect(bundle.wheelhouse).toBe(path.join(dir, "wheels"));
    expect([bundle.target, bundle.pythons]).toEqual(["linux-x64", LINUX.pythons]);
  });
});

describe("installsOffline", () => {
  it("is true for a platform package and a Python it carries wheels for", async () => {
    const bundle = await findBundle(bundleDir(LINUX));
    expect(["3.11.7", "3.12.0", "3.14.1"].map((v) => installsOffline(bundle, v))).toEqual([true, true, true]);
    expect(["3.15.0", "3.10.2", "3.1.11"].map((v) => installsOffline(bundle, v))).toEqual([false, false, false]);
  });

  it("is false for the universal package", async () => {
    const bundle = await findBundle(bundleDir({ target: "universal", pythons: [], pip: LINUX.pip }));
    expect(installsOffline(bundle, "3.12.1")).toBe(false);
  });
});

describe("platformTarget", () => {
  it("names the platform packages that are built, and nothing for others", () => {
    expect(platformTarget("linux", "x64")).toBe("linux-x64");
    expect(platformTarget("darwin", "arm64")).toBe("darwin-arm64");
    expect(platformTarget("win32", "x64")).toBe("win32-x64");
    expect(platformTarget("linux", "ppc64")).toBeUndefined();
    expect(platformTarget("win32", "arm64")).toBeUndefined();
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
