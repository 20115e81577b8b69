"""The one rule of which folders a server is asked about, as the editor and the terminal both use it."""

from __future__ import annotations

from pathlib import Path

from host_bridge.asking import folders_to_ask
from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import ConsentPolicy, Decision
from host_bridge.consent.store import ConsentStore
from host_bridge.workspace.models import Candidate

SERVER = ServerIdentity(source="settings", server_id="fs", fingerprint="sha256:" + "0" * 64)
OTHER = ServerIdentity(source="settings", server_id="web", fingerprint="sha256:" + "1" * 64)


def policy_in(tmp_path: Path) -> ConsentPolicy:
    store = ConsentStore(tmp_path / "storage")
    store.load()
    return ConsentPolicy(store)


def candidate(path: Path) -> Candidate:
    path.mkdir(parents=True, exist_ok=True)
    return Candidate(uri=path.as_uri(), name=path.name, kinds=("workspaceFolder",))


def test_undecided_folders_are_asked_in_the_order_given_and_decided_ones_are_not(tmp_path: Path) -> None:
    policy = policy_in(tmp_path)
    a, b, c = (candidate(tmp_path / name) for name in ("a", "b", "c"))
    policy.set(SERVER, str(tmp_path / "b"), Decision.DENY)
    policy.set(OTHER, str(tmp_path / "c"), Decision.ALLOW)
    found = folders_to_ask(policy, SERVER, [c, b, a])
    assert [q.candidate for q in found.questions] == [c, a]
    assert [q.path for q in found.questions] == [str(tmp_path / "c"), str(tmp_path / "a")]
    assert found.visible == ()


def test_folders_asked_already_are_not_asked_again(tmp_path: Path) -> None:
    policy = policy_in(tmp_path)
    a, b = candidate(tmp_path / "a"), candidate(tmp_path / "b")
    found = folders_to_ask(policy, SERVER, [a, b], asked={str(tmp_path / "a")})
    assert [q.candidate for q in found.questions] == [b]


def test_a_folder_inside_a_shared_one_is_not_asked_and_is_said_to_be_visible_through_it(tmp_path: Path) -> None:
    policy = policy_in(tmp_path)
    repo, member = candidate(tmp_path / "repo"), candidate(tmp_path / "repo" / "pkg")
    policy.set(SERVER, str(tmp_path / "repo"), Decision.ALLOW)
    found = folders_to_ask(policy, SERVER, [repo, member])
    assert found.questions == ()
    assert [(v.uri, v.through) for v in found.visible] == [(member.uri, repo.uri)]


def test_what_the_server_sees_can_be_given_instead_of_what_the_policy_allows(tmp_path: Path) -> None:
    policy = policy_in(tmp_path)
    repo, member = candidate(tmp_path / "repo"), candidate(tmp_path / "repo" / "pkg")
    found = folders_to_ask(policy, SERVER, [repo, member], shared=[repo.uri])
    assert [q.candidate for q in found.questions] == [repo]
    assert [v.uri for v in found.visible] == [member.uri]
