#!/bin/sh
# Package one .vsix into dist/: the sidecar bundle for TARGET (bundle_python.py), then `vsce package`.
# TARGET is a vsce target (linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64), whose package carries
# the sidecar and its dependencies laid out ready to import for CPython 3.11–3.14, or `universal`, whose package
# installs the dependencies from the package index.
# PYTHON: the interpreter with the project's dev dependencies (default: python3).
set -eu
target=${1:?usage: package.sh TARGET}
python=${PYTHON:-python3}
extension=$(cd "$(dirname "$0")/.." && pwd)
"$python" "$extension/scripts/bundle_python.py" --target "$target"
cd "$extension"
if [ "$target" = universal ]; then
  npx vsce package --no-dependencies --out dist/
else
  npx vsce package --no-dependencies --target "$target" --out dist/
fi
