import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  BootstrapError,
  carries,
  findBundle,
  isSupported,
  laidOutCommand,
  moduleCommand,
  platformTarget,
  probe,
  type PythonInfo,
  venvPython,
} from "../../../src/sidecar/bootstrap";

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
function bundleDir(files: Record<string, string>, leave?: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "hb-bundle-"));
  for (const [name, body] of Object.entries(files)) {
    if (name !== leave) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), body);
    }
  }
  return dir;
}

const PYTHONS = ["3.11", "3.12", "3.13", "3.14"];
const UNIVERSAL = { target: "universal", pythons: [], pip: "pip-26.3-py3-none-any.whl" };
const LINUX = { target: "linux-x64", pythons: PYTHONS, launcher: "run_sidecar.py" };

/** The universal package's bundle: the sidecar's wheel, the pins and pip, for a private environment. */
function universalDir(leave?: string, manifest: object = UNIVERSAL): string {
  return bundleDir(
    {
      "host_bridge-0.1.0-py3-none-any.whl": "",
      "constraints.txt": "",
      "bundle.json": JSON.stringify(manifest),
      "wheels/pip-26.3-py3-none-any.whl": "",
    },
    leave,
  );
}

/** A platform package's bundle: the launcher and the libraries laid out for each Python. */
function platformDir(leave?: string, manifest: object = LINUX): string {
  return bundleDir(
    {
      "bundle.json": JSON.stringify(manifest),
      "run_sidecar.py": "",
      "lib/common/host_bridge/__init__.py": "",
      "lib/cp311/pydantic_core/__init__.py": "",
    },
    leave,
  );
}

function cpython(version: string, implementation = "cpython"): PythonInfo {
  return { executable: `/usr/bin/python${version}`, version, implementation, canCreateVenv: true };
}

describe("findBundle", () => {
  it("says the package is incomplete when a part is missing", async () => {
    await expect(findBundle(universalDir("constraints.txt"))).rejects.toThrow(/incomplete.*reinstall the extension/);
    await expect(findBundle(universalDir("bundle.json"))).rejects.toThrow(/bundle\.json is missing/);
    await expect(findBundle(universalDir("wheels/pip-26.3-py3-none-any.whl"))).rejects.toThrow(
      /wheels\/pip-26\.3-py3-none-any\.whl is missing/,
    );
    await expect(findBundle(universalDir(undefined, { target: "universal" }))).rejects.toThrow(
      /needs target and pythons/,
    );
    await expect(findBundle(platformDir("run_sidecar.py"))).rejects.toThrow(/needs the launcher/);
    await expect(findBundle(platformDir(undefined, { target: "linux-x64", pythons: PYTHONS }))).rejects.toThrow(
      /needs the launcher/,
    );
  });

  it("says the bundle is missing when the folder does not exist", async () => {
    await expect(findBundle("/nonexistent/hb-bundle")).rejects.toBeInstanceOf(BootstrapError);
  });

  it("finds the universal package's wheel, constraints and pip", async () => {
    const dir = universalDir();
    const bundle = await findBundle(dir);
    if (bundle.kind !== "pip") {
      throw new Error(`expected the universal package's bundle, found ${bundle.kind}`);
    }
    expect(path.basename(bundle.wheel)).toBe("host_bridge-0.1.0-py3-none-any.whl");
    expect(path.basename(bundle.constraints)).toBe("constraints.txt");
    expect(bundle.pip).toBe(path.join(dir, "wheels", "pip-26.3-py3-none-any.whl"));
    expect(bundle.wheelhouse).toBe(path.join(dir, "wheels"));
    expect(bundle.target).toBe("universal");
  });

  it("finds a platform package's launcher, target and Pythons", async () => {
    const dir = platformDir();
    expect(await findBundle(dir)).toEqual({
      kind: "laidOut",
      target: "linux-x64",
      pythons: PYTHONS,
      launcher: path.join(dir, "run_sidecar.py"),
    });
  });
});

describe("laidOutCommand", () => {
  it("runs the launcher isolated with a CPython the package carries the libraries of", async () => {
    const dir = platformDir();
    const bundle = await findBundle(dir);
    if (bundle.kind !== "laidOut") {
      throw new Error(`expected a platform package's bundle, found ${bundle.kind}`);
    }
    for (const version of ["3.11.7", "3.12.0", "3.14.1"]) {
      expect(carries(bundle, cpython(version)), version).toBe(true);
      expect(laidOutCommand(bundle, cpython(version))).toEqual({
        command: `/usr/bin/python${version}`,
        args: ["-I", "-S", path.join(dir, "run_sidecar.py")],
      });
    }
  });

  it("names the Pythons it carries, and the universal package, for any other interpreter", async () => {
    const bundle = await findBundle(platformDir());
    if (bundle.kind !== "laidOut") {
      throw new Error(`expected a platform package's bundle, found ${bundle.kind}`);
    }
    for (const python of [cpython("3.15.0"), cpython("3.10.2"), cpython("3.1.11"), cpython("3.11.9", "pypy")]) {
      expect(carries(bundle, python)).toBe(false);
      const message = (() => {
        try {
          laidOutCommand(bundle, python);
          return "";
        } catch (error) {
          expect(error).toBeInstanceOf(BootstrapError);
          return (error as Error).message;
        }
      })();
      expect(message).toContain(`CPython 3.11, 3.12, 3.13, 3.14 on linux-x64, and ${python.executable} is`);
      expect(message).toMatch(
        /set hostBridge\.python to one of those, or install the universal MCP Host Bridge package/i,
      );
      expect(message.length).toBeLessThan(300);
    }
  });
});

describe("moduleCommand", () => {
  it("runs host_bridge as a module of the interpreter that has it", () => {
    expect(moduleCommand("/e/bin/python")).toEqual({ command: "/e/bin/python", args: ["-m", "host_bridge"] });
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
    expect(info?.implementation).toBe("cpython");
    expect(typeof info?.canCreateVenv).toBe("boolean");
  });
});
