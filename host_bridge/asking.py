"""Which folders a server must be asked about: the one rule every host asks by (the editor's prompts, the terminal's).

A candidate folder is asked about when the user has not decided about it for the server's identity (no saved
decision, none this session), it was not asked about already (the host says which were), and the server does not
see it anyway through a shared folder that contains it (those are listed as :class:`VisibleThrough`, so the host can
say why they are not asked about). Candidates are kept in the order given, so the host decides what comes first.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import ConsentPolicy
from host_bridge.roots import VisibleThrough, visible_through
from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Candidate


@dataclass(frozen=True)
class Question:
    """One folder to ask about."""

    candidate: Candidate
    """The candidate folder, as detected."""
    path: str
    """Its canonical path, the key of the decision."""


@dataclass(frozen=True)
class FoldersToAsk:
    """What to ask one server about now."""

    questions: tuple[Question, ...]
    """Undecided folders not asked about yet, in the candidates' order."""
    visible: tuple[VisibleThrough, ...]
    """Folders not asked about because the server sees them through a shared folder containing them."""


def folders_to_ask(
    policy: ConsentPolicy,
    identity: ServerIdentity,
    candidates: Sequence[Candidate],
    *,
    shared: Iterable[str] | None = None,
    asked: Container[str] = (),
) -> FoldersToAsk:
    """The folders of ``candidates`` to ask ``identity`` about now.

    ``shared`` are the folder URIs the server sees now (the editor passes its effective roots); by default, the
    candidates the policy allows it. ``asked`` holds canonical paths asked about already (answered or not), which are
    not asked again.
    """
    if shared is None:
        shared = [c.uri for c in candidates if _allowed(policy, identity, c.uri)]
    visible = visible_through(candidates, shared)
    seen = {item.uri for item in visible}
    questions: list[Question] = []
    for candidate in candidates:
        if candidate.uri in seen:
            continue
        try:
            path = parse_file_uri(candidate.uri)
        except UriError:
            continue
        if path in asked or policy.decision(identity, path) is not None:
            continue
        questions.append(Question(candidate, path))
    return FoldersToAsk(tuple(questions), visible)


def _allowed(policy: ConsentPolicy, identity: ServerIdentity, uri: str) -> bool:
    try:
        return policy.is_allowed(identity, parse_file_uri(uri))
    except UriError:
        return False
