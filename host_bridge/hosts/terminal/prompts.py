"""Consent asked on the terminal: each server described once, then one question per undecided folder."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import ConsentPolicy, Decision, DecisionNotSaved
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.describe import PRODUCT, launch_lines, server_name
from host_bridge.roots import containing
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Candidate

NO_TERMINAL = (
    "no terminal to ask for consent; pass --allow PATH for each folder to share "
    "(add --allow-session to not remember it)"
)
_ANSWERS: dict[str, Decision | None] = {
    "y": Decision.ALLOW,
    "yes": Decision.ALLOW,
    "s": Decision.ALLOW_SESSION,
    "session": Decision.ALLOW_SESSION,
    "n": None,
    "no": None,
    "d": Decision.DENY,
    "deny": Decision.DENY,
}
"""What each answer to the consent question records (``None``: nothing, ask again next time)."""


def ask_all(
    policy: ConsentPolicy,
    servers: Sequence[ServerConfig],
    candidates: Sequence[Candidate],
    terminal: Terminal,
    ask: Callable[[str], str],
) -> None:
    """Ask about every undecided (server, folder) pair; end of input leaves the rest unshared.

    Each server is described once (what runs, where it is defined); a folder inside one already shared with it is
    not asked about, since the server sees it anyway.
    """
    try:
        for server in servers:
            introduced = False
            identity = server.identity
            for candidate in candidates:
                try:
                    folder = parse_file_uri(candidate.uri)
                except UriError:
                    continue
                shared = [c.uri for c in candidates if _allowed(policy, identity, c.uri)]
                through = containing(candidate.uri, shared)
                if through is not None and candidate.uri not in shared:
                    terminal.warn(
                        f"note: {visible(folder)} is visible to {server.id} through {_path(through)}, "
                        "which is shared with it; not asked"
                    )
                    continue
                if policy.decision(identity, folder) is not None:
                    continue
                if not introduced:
                    terminal.warn(_introduction(server))
                    introduced = True
                kinds = ", ".join(candidate.kinds)
                question = (
                    f"  Share {visible(folder)} ({visible(candidate.name)}, {kinds}) with {server.id}? "
                    "[y]es / [s]ession / [n]o / [d]eny always: "
                )
                decision = _answer(question, terminal, ask)
                if decision is not None:
                    record(policy, server, folder, decision, terminal)
    except EOFError:
        terminal.warn("\nno more answers; the folders not answered are not shared")


def _introduction(server: ServerConfig) -> str:
    ref = server.ref()
    lines = [
        f"{PRODUCT}: the MCP server {server_name(ref)} would see the folders you share with it.",
        *(f"  {line}" for line in launch_lines(ref)),
    ]
    return "\n".join(lines)


def _allowed(policy: ConsentPolicy, identity: ServerIdentity, uri: str) -> bool:
    try:
        return policy.is_allowed(identity, parse_file_uri(uri))
    except UriError:
        return False


def _path(uri: str) -> str:
    try:
        return visible(parse_file_uri(uri))
    except UriError:
        return visible(uri)


def _answer(question: str, terminal: Terminal, ask: Callable[[str], str]) -> Decision | None:
    while True:
        answer = ask(question).strip().lower()
        if answer in _ANSWERS:
            return _ANSWERS[answer]
        terminal.say("please answer y (share, remember), s (share this time), n (not now) or d (never)")


def record(policy: ConsentPolicy, server: ServerConfig, folder: str, decision: Decision, terminal: Terminal) -> None:
    """Record ``decision``; when it cannot be saved it still holds for this run (an allow for this run only), and
    the user is told."""
    try:
        policy.set(server.identity, folder, decision)
    except DecisionNotSaved as error:
        terminal.warn(f"warning: {error}")
