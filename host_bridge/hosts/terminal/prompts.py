"""Consent asked on the terminal: each server described once, then one short question per undecided folder.

The answers: ``y`` share (remembered), ``s`` share this session only, ``n`` not now, ``d`` never (remembered),
``a`` share this folder and every other one still to be asked about for this server, ``N`` (or ``x``) none of the
rest for this server, ``q`` quit (answers given so far are kept, nothing starts), ``?`` help. The folders the user
named are asked about first, before the repositories that enclose them; a folder inside one already shared with
the server is skipped with a note, since the server sees it anyway.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Sequence

from host_bridge.asking import folders_to_ask
from host_bridge.consent.policy import ConsentPolicy, Decision, DecisionNotSaved
from host_bridge.hosts.terminal.options import BROAD_FLAG, TRUST_FLAG, UsageError
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.describe import PRODUCT, defined_in, launch_lines, server_name
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Candidate

Ask = Callable[[str], str]
"""Shows a question and returns the answer line; raises ``EOFError`` when there is no more input."""

NO_TERMINAL = (
    "no terminal to ask for consent; pass --allow PATH for each folder to share "
    "(add --allow-session to not remember it)"
)
CHOICES = "[y,s,r,n,d,a,N,q,?]"
HELP = (
    "y share it to read and write (remembered), s share it this session only, r share it read only (remembered; "
    "its sandbox refuses every write there), n not now, d never share it (remembered), "
    "a share it and every other folder still to be asked about for this server, N or x none of the rest for this "
    "server, q quit (nothing is started), ? this help"
)


class Answer(enum.Enum):
    """What one answer to a folder question means."""

    ALLOW = "allow"
    SESSION = "session"
    READ_ONLY = "read only"
    NOT_NOW = "not now"
    DENY = "deny"
    ALL = "all"
    NONE = "none"
    QUIT = "quit"
    HELP = "help"


_WORDS: dict[str, Answer] = {
    "y": Answer.ALLOW,
    "yes": Answer.ALLOW,
    "s": Answer.SESSION,
    "session": Answer.SESSION,
    "r": Answer.READ_ONLY,
    "read": Answer.READ_ONLY,
    "read only": Answer.READ_ONLY,
    "n": Answer.NOT_NOW,
    "no": Answer.NOT_NOW,
    "d": Answer.DENY,
    "deny": Answer.DENY,
    "never": Answer.DENY,
    "a": Answer.ALL,
    "all": Answer.ALL,
    "x": Answer.NONE,
    "none": Answer.NONE,
    "q": Answer.QUIT,
    "quit": Answer.QUIT,
    "?": Answer.HELP,
    "h": Answer.HELP,
    "help": Answer.HELP,
}
_DECISIONS = {
    Answer.ALLOW: Decision.ALLOW,
    Answer.SESSION: Decision.ALLOW_SESSION,
    Answer.READ_ONLY: Decision.ALLOW_READ_ONLY,
    Answer.DENY: Decision.DENY,
}


def terminal_ask(terminal: Terminal) -> Ask:
    """Questions on stderr, answers from stdin (so stdout carries only results)."""

    def ask(question: str) -> str:
        terminal.ask(question)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    return ask


class Quit(Exception):
    """The user answered ``q``: stop, start nothing."""


def parse_answer(text: str) -> Answer | None:
    """The meaning of an answer line (``N`` is none of the rest, ``n`` not now); ``None`` when it means nothing."""
    text = text.strip()
    if text == "N":
        return Answer.NONE
    return _WORDS.get(text.lower())


def asking_order(candidates: Sequence[Candidate], named: Sequence[str]) -> list[Candidate]:
    """``candidates`` with the folders the user named (URIs, in the order given) first, then the others in
    detection order: the folder the user pointed at is asked about before the repository that holds it."""
    first = [c for uri in named for c in candidates if c.uri == uri]
    return [*dict.fromkeys(first), *(c for c in candidates if c not in first)]


def needs_trust(policy: ConsentPolicy, server: ServerConfig) -> bool:
    """Whether ``server`` is defined by a workspace file and not trusted yet (so it does not start)."""
    return server.workspace_defined and policy.trusted(server.identity) is not True


def ask_trust(policy: ConsentPolicy, servers: Sequence[ServerConfig], terminal: Terminal, ask: Ask) -> None:
    """Ask, once per config file, whether to trust the untrusted workspace-defined ``servers`` it defines."""
    files: dict[str, list[ServerConfig]] = {}
    for server in servers:
        if needs_trust(policy, server):
            files.setdefault(server.origin, []).append(server)
    for group in files.values():
        names = ", ".join(server_name(s.ref()) for s in group)
        terminal.warn(
            f"{PRODUCT}: {defined_in(group[0].ref())}, in a folder you named, defines the MCP server(s) {names}. "
            "They start only if you trust them."
        )
        for server in group:
            terminal.warn(f"  {server_name(server.ref())}:")
            terminal.warn("\n".join(f"    {line}" for line in launch_lines(server.ref())[1:]))
        while True:
            answer = ask("  Trust and start them? [y]es / [n]o: ").strip().lower()
            if answer in ("y", "yes", "n", "no"):
                break
            terminal.warn("please answer y (trust them, remembered) or n (do not start them now)")
        if answer.startswith("y"):
            for server in group:
                trust(policy, server, terminal)
        else:
            terminal.warn(f"not started: {names} (you did not trust them)")


def trust(policy: ConsentPolicy, server: ServerConfig, terminal: Terminal) -> None:
    """Record that the user trusts ``server``; when that cannot be saved it holds for this run."""
    try:
        policy.set_trust(server.identity, True)
    except DecisionNotSaved as error:
        terminal.warn(f"warning: {error}")


def untrusted_note(policy: ConsentPolicy, servers: Sequence[ServerConfig], terminal: Terminal) -> None:
    """Say, without a terminal to ask on, which workspace-defined servers do not start and how to trust them."""
    waiting = [s for s in servers if needs_trust(policy, s)]
    for origin in dict.fromkeys(s.origin for s in waiting):
        group = [s for s in waiting if s.origin == origin]
        names = ", ".join(server_name(s.ref()) for s in group)
        terminal.warn(
            f"{defined_in(group[0].ref())} defines {names}; a server defined in a folder starts only once you trust "
            f"it: run connect on a terminal to be asked, or add {TRUST_FLAG} to trust the servers of the folders "
            "you name"
        )


def report_remembered(
    policy: ConsentPolicy, servers: Sequence[ServerConfig], candidates: Sequence[Candidate], terminal: Terminal
) -> None:
    """Say which saved decisions apply to ``candidates``, per server, before anything is asked or shared."""
    said = False
    for server in servers:
        for candidate in candidates:
            try:
                folder = parse_file_uri(candidate.uri)
            except UriError:
                continue
            decision = policy.decision(server.identity, folder)
            if decision is None:
                continue
            meaning = {
                Decision.ALLOW: "shared (you allowed it before)",
                Decision.ALLOW_SESSION: "shared this session",
                Decision.ALLOW_READ_ONLY: "shared read only (you allowed it before)",
                Decision.ALLOW_SESSION_READ_ONLY: "shared read only this session",
                Decision.DENY: "not shared (you denied it before)",
                Decision.LET_READ: "not shared; its sandbox may read it (you allowed that before)",
            }[decision]
            terminal.warn(f"[{server.id}] remembered: {visible(folder)} {meaning}")
            said = True
    if said:
        terminal.warn("  (change these with: host-bridge consent allow|deny|forget PATH)")


def ask_all(
    policy: ConsentPolicy,
    servers: Sequence[ServerConfig],
    candidates: Sequence[Candidate],
    terminal: Terminal,
    ask: Ask,
) -> None:
    """Ask about every undecided (server, folder) pair, in the order of ``candidates``; end of input leaves the rest
    unshared. Servers waiting for trust are not asked about. Raises :class:`Quit` when the user answers ``q``."""
    try:
        for server in servers:
            if not needs_trust(policy, server):
                _ask_server(policy, server, candidates, terminal, ask)
    except EOFError:
        terminal.warn("\nno more answers; the folders not answered are not shared")


def _ask_server(
    policy: ConsentPolicy, server: ServerConfig, candidates: Sequence[Candidate], terminal: Terminal, ask: Ask
) -> None:
    """Ask about the folders the core says must be asked about (:func:`host_bridge.asking.folders_to_ask`), one at a
    time, in the order of ``candidates``: each answer may make the next folders visible through a shared one."""
    introduced = False
    rest: Answer | None = None
    handled: set[str] = set()
    noted: set[str] = set()
    while True:
        pending = folders_to_ask(policy, server.identity, candidates, asked=handled)
        for seen in pending.visible:
            if seen.uri not in noted:
                noted.add(seen.uri)
                terminal.warn(
                    f"  note: {_path(seen.uri)} is visible to {server.id} through {_path(seen.through)}, which is "
                    "shared with it; not asked"
                )
        if not pending.questions:
            return
        question = pending.questions[0]
        folder = question.path
        handled.add(folder)
        if rest is Answer.ALL:
            record(policy, server, folder, Decision.ALLOW, terminal)
            terminal.warn(f"  {visible(folder)}: shared (a)")
            continue
        if rest is Answer.NONE:
            terminal.warn(f"  {visible(folder)}: not shared (N)")
            continue
        if not introduced:
            terminal.warn(_introduction(server))
            introduced = True
        answer = _answer(f"  Share {visible(folder)} ({visible(question.candidate.name)})? {CHOICES} ", terminal, ask)
        if answer is Answer.QUIT:
            raise Quit
        if answer in (Answer.ALL, Answer.NONE):
            rest = answer
        decision = Decision.ALLOW if answer is Answer.ALL else _DECISIONS.get(answer)
        if decision is not None:
            record(policy, server, folder, decision, terminal)


def _introduction(server: ServerConfig) -> str:
    ref = server.ref()
    lines = [
        f"{PRODUCT}: the MCP server {server_name(ref)} would see the folders you share with it.",
        *(f"  {line}" for line in launch_lines(ref)),
        f"  Answers: {HELP}",
    ]
    return "\n".join(lines)


def _path(uri: str) -> str:
    try:
        return visible(parse_file_uri(uri))
    except UriError:
        return visible(uri)


def _answer(question: str, terminal: Terminal, ask: Ask) -> Answer:
    while True:
        answer = parse_answer(ask(question))
        if answer is not None and answer is not Answer.HELP:
            return answer
        terminal.warn(f"  {HELP}")


def confirm_broad(folder: str, what: str, terminal: Terminal, ask: Ask | None, *, action: str) -> None:
    """Ask before ``action`` (``--allow /``) shares ``/`` or the home folder (``what`` says which); a
    :class:`UsageError` when the user does not type yes, or when there is no terminal to ask on."""
    if ask is None:
        raise UsageError(
            f"{action} would share {what} with every server; confirm it on a terminal, or add {BROAD_FLAG} "
            "if you mean it"
        )
    terminal.warn(f"{visible(action)} would share {what} ({visible(folder)}) with every server.")
    try:
        answer = ask("  Type yes to share it: ")
    except EOFError:
        answer = ""
    if answer.strip().lower() != "yes":
        raise UsageError(f"{action} was not confirmed; nothing was shared")


def record(policy: ConsentPolicy, server: ServerConfig, folder: str, decision: Decision, terminal: Terminal) -> None:
    """Record ``decision``; when it cannot be saved it still holds for this run (an allow for this run only), and
    the user is told."""
    try:
        policy.set(server.identity, folder, decision)
    except DecisionNotSaved as error:
        terminal.warn(f"warning: {error}")
