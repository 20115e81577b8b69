"""editors/emacs/host-bridge.el in a real Emacs with its eglot (Debian bookworm: Emacs 28, eglot 1.9 from elpa-eglot),
driving the real sidecar: RET on every question shares and trusts nothing, the status, pick and shared-folder commands
work, and eglot's shutdown (1.5 s time-out) completes.

Each test runs ``emacs --batch -l editors/emacs/host-bridge.el -l <check.el>``; the check writes a JSON verdict that
the test reads. eglot asks ``window/showMessageRequest`` with ``completing-read``, the first action filled in as the
initial input, so RET in the minibuffer answers exactly that input: the check stands in for the keyboard by answering
every ``completing-read`` with its initial input (RET) or, where a test says so, with the action a user would type.
Skipped when ``emacs`` or eglot is missing (``make tools`` installs them from Debian).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO, SERVERS
from support.processes import until_gone
from support.records import records

PACKAGE = REPO / "editors" / "emacs" / "host-bridge.el"
RESOURCES_SERVER = SERVERS / "resources_server.py"
TIMEOUT = 180.0

PRELUDE = r"""
(require 'json)
(defvar hb-questions '() "Every completing-read: (prompt initial-input answer).")
(defvar hb-type nil "A function of (prompt collection initial) returning what the user types, or nil for RET.")
(advice-add 'completing-read :around
  (lambda (_orig prompt collection &optional _pred _require initial &rest _)
    (let* ((typed (and hb-type (funcall hb-type prompt collection initial)))
           (answer (or typed (if (stringp initial) initial ""))))
      (push (list prompt initial answer) hb-questions)
      answer)))
(defun hb-wait (condition seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall condition)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall condition)))
(defun hb-state (id) (plist-get (gethash id host-bridge-states) :state))
(defun hb-shared (id) (mapcar (lambda (r) (plist-get r :uri)) (plist-get (gethash id host-bridge-states) :sharedRoots)))
(defun hb-shutdown (server)
  (condition-case err (progn (eglot-shutdown server) "completed") (error (format "%S" err))))
(let ((config (json-parse-string (getenv "HB_CONFIG") :object-type 'plist :array-type 'array)))
  (setq host-bridge-command (append (plist-get config :command) nil)
        host-bridge-storage-dir (plist-get config :storage)
        host-bridge-servers (plist-get config :servers)))
(let ((verdict (condition-case err
                   (list :ok t :result (progn BODY))
                 (error (list :ok :json-false :error (format "%S" err))))))
  (with-temp-file (getenv "HB_OUT") (insert (json-encode verdict))))
"""


@pytest.fixture
def emacs() -> str:
    found = shutil.which("emacs")
    if found is None:
        pytest.skip("emacs is not on PATH (Debian: apt-get install emacs-nox elpa-eglot; make tools)")
    probe = subprocess.run([found, "--batch", "--eval", "(require 'eglot)"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip("eglot is not installed (Debian: apt-get install elpa-eglot; make tools)")
    return found


def run_emacs(emacs: str, tmp_path: Path, servers: dict[str, Any], body: str) -> Any:
    """Load the package with ``servers``, evaluate the Lisp ``body`` (its value is the result), return the result."""
    script = tmp_path / "check.el"
    script.write_text(PRELUDE.replace("BODY", body))
    out = tmp_path / "verdict.json"
    config = {
        "command": [sys.executable, "-m", "host_bridge", "serve"],
        "storage": str(tmp_path / "storage"),
        "servers": servers,
    }
    env = {**os.environ, "HB_CONFIG": json.dumps(config), "HB_OUT": str(out), "HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [emacs, "--batch", "-l", str(PACKAGE), "-l", str(script)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    context = f"emacs exited {done.returncode}\nstdout: {done.stdout[-4000:]}\nstderr: {done.stderr[-6000:]}"
    assert out.exists(), context
    verdict = json.loads(out.read_text())
    assert verdict["ok"] is True, f"{verdict.get('error')}\n{context}"
    return verdict["result"]


def saved_decisions(tmp_path: Path) -> list[Any]:
    path = tmp_path / "storage" / "consent.json"
    return json.loads(path.read_text()).get("roots", []) if path.exists() else []


@pytest.mark.requirement("G6")
def test_ret_on_every_question_shares_nothing_and_trusts_nothing_and_shutdown_completes(
    emacs: str, tmp_path: Path
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    repo = {"command": sys.executable, "args": [str(RESOURCES_SERVER)]}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": repo}}))
    servers = {"res": {"type": "stdio", "command": sys.executable, "args": [str(RESOURCES_SERVER)]}}
    result = run_emacs(
        emacs,
        tmp_path,
        servers,
        f"""
  (let ((server (host-bridge-start {json.dumps(str(folder))})))
    (hb-wait (lambda () (and (equal (hb-state "repo") "stopped") (equal (hb-state "res") "running")
                             (>= (length hb-questions) 2)))
             60)
    (list :questions (vconcat (mapcar (lambda (q) (list :prompt (substring-no-properties (nth 0 q)) :initial (nth 1 q)
                                               :answer (nth 2 q)))
                             (reverse hb-questions)))
          :repo (hb-state "repo") :res (hb-state "res") :shared (vconcat (hb-shared "res"))
          :status (with-current-buffer (host-bridge-status) (buffer-string))
          :shutdown (hb-shutdown server)))
""",
    )
    questions = result["questions"]
    assert len(questions) == 2, questions
    by_kind = {("trust" if "Trust it" in q["prompt"] else "folder"): q for q in questions}
    assert by_kind["trust"]["answer"] == "Don't trust"
    assert by_kind["folder"]["answer"] == "Not now"
    assert "MCP Host Bridge: share with the MCP server 'res' the folder" in by_kind["folder"]["prompt"]
    assert result["repo"] == "stopped" and result["res"] == "running"
    assert result["shared"] == []
    assert "res  running" in result["status"] and "shared: nothing" in result["status"]
    assert saved_decisions(tmp_path) == []
    assert result["shutdown"] == "completed"


@pytest.mark.slow
def test_status_pick_and_revoke_commands_work_and_shutdown_completes(emacs: str, tmp_path: Path) -> None:
    """With a server that takes seconds to stop (it ignores SIGTERM), eglot's shutdown (1.5 s) still completes."""
    folder = tmp_path / "ws"
    folder.mkdir()
    stubborn = [str(RESOURCES_SERVER), "--fault", "stubborn", "--record", str(tmp_path / "stubborn.jsonl")]
    servers = {
        "res": {"type": "stdio", "command": sys.executable, "args": [str(RESOURCES_SERVER)]},
        "slow": {"type": "stdio", "command": sys.executable, "args": stubborn, "sandbox": "off"},
    }
    result = run_emacs(
        emacs,
        tmp_path,
        servers,
        f"""
  (setq hb-type (lambda (prompt collection _initial)
                  (cond ((string-match-p "share with the MCP server" prompt) "Allow")
                        ((string-prefix-p "MCP resource" prompt)
                         (seq-find (lambda (c) (string-suffix-p "test://res/12" c)) (mapcar #'car collection))))))
  (let ((server (host-bridge-start {json.dumps(str(folder))})))
    (hb-wait (lambda () (and (hb-shared "res") (equal (hb-state "res") "running") (hb-shared "slow"))) 60)
    (let* ((shared (vconcat (hb-shared "res")))
           (status (with-current-buffer (host-bridge-status) (buffer-string)))
           (buffer (progn (host-bridge-pick-resource "res")
                          (get-buffer "mcp-resource://res/test://res/12")))
           (revoked (host-bridge-shared-folders "res" {json.dumps(str(folder))} "deny")))
      (hb-wait (lambda () (null (hb-shared "res"))) 30)
      (list :shared shared :status status
            :text (and buffer (with-current-buffer buffer (buffer-string)))
            :read-only (and buffer (with-current-buffer buffer buffer-read-only))
            :applied (plist-get revoked :applied)
            :shared-after (vconcat (hb-shared "res"))
            :shutdown (hb-shutdown server))))
""",
    )
    uri = folder.resolve().as_uri()
    assert result["shared"] == [uri]
    assert "res  running" in result["status"] and f"shared: {folder.resolve()}" in result["status"]
    assert result["text"] == "content of res 12\n"
    assert result["read-only"] is True
    assert result["applied"] == "deny"
    assert result["shared-after"] == []
    assert sorted((r["serverId"], r["decision"]) for r in saved_decisions(tmp_path)) == [
        ("res", "deny"),
        ("slow", "allow"),
    ]
    assert result["shutdown"] == "completed"
    # eglot kills the sidecar right after `exit`; its reaper still ends the stubborn server and its grandchild.
    pids = [
        entry[key] for entry in records(tmp_path / "stubborn.jsonl") for key in ("server", "grandchild") if key in entry
    ]
    try:
        assert pids and not asyncio.run(until_gone(pids, 15.0))
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
