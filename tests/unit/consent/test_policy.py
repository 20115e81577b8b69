"""Consent decisions as host_bridge uses them, server identities and fingerprints (docs/security.md B7, G2, G4)."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest
from support.consent_store import lock_held

from host_bridge.consent.fingerprint import LaunchSpec, fingerprint
from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import ConsentPolicy, Decision, DecisionNotSaved
from host_bridge.consent.store import ConsentStore, ConsentStoreError

SPEC = LaunchSpec(
    transport="stdio",
    command="npx",
    args=("-y", "@modelcontextprotocol/server-filesystem"),
    env={"A": "1", "B": "2"},
    cwd="/home/u",
)
FINGERPRINT = fingerprint(SPEC)
SERVER = ServerIdentity(source="settings", server_id="files", fingerprint=FINGERPRINT)
OTHER = ServerIdentity(
    source="settings",
    server_id="web",
    fingerprint=fingerprint(LaunchSpec(transport="http", url="https://mcp.example.com/")),
)
PROJECT = "/home/u/proj"


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "state"


def policy_over(storage: Path, *, lock_timeout: float = 5.0) -> ConsentPolicy:
    store = ConsentStore(storage, lock_timeout=lock_timeout)
    store.load()
    return ConsentPolicy(store)


@pytest.fixture
def policy(storage: Path) -> ConsentPolicy:
    return policy_over(storage)


class Recorder:
    """Collects what change callbacks receive."""

    def __init__(self) -> None:
        self.calls: list[frozenset[str]] = []

    def __call__(self, servers: frozenset[str]) -> None:
        self.calls.append(servers)


@pytest.mark.requirement("B8")
def test_nothing_is_allowed_until_the_user_decides(policy: ConsentPolicy) -> None:
    assert policy.decision(SERVER, PROJECT) is None
    assert not policy.is_allowed(SERVER, PROJECT)
    assert policy.decisions_for(SERVER) == {}


@pytest.mark.parametrize(
    ("decision", "allowed"), [(Decision.ALLOW, True), (Decision.ALLOW_SESSION, True), (Decision.DENY, False)]
)
def test_every_decision_kind_round_trips(policy: ConsentPolicy, decision: Decision, allowed: bool) -> None:
    policy.set(SERVER, PROJECT, decision)

    assert policy.decision(SERVER, PROJECT) is decision
    assert policy.is_allowed(SERVER, PROJECT) is allowed
    assert policy.decisions_for(SERVER) == {PROJECT: decision}
    assert policy.decisions_for(OTHER) == {}


def test_allow_session_has_wire_value_allow_session() -> None:
    assert Decision.ALLOW_SESSION.value == "allowSession"


def test_a_decision_given_as_its_wire_string_means_the_same(policy: ConsentPolicy) -> None:
    policy.set(SERVER, PROJECT, "deny")  # pyright: ignore[reportArgumentType]

    assert policy.decision(SERVER, PROJECT) is Decision.DENY
    with pytest.raises(ValueError, match="forget"):
        policy.set(SERVER, PROJECT, "forget")  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("decision", [Decision.ALLOW, Decision.DENY])
def test_allow_and_deny_are_persisted_for_the_next_session(storage: Path, decision: Decision) -> None:
    policy_over(storage).set(SERVER, PROJECT, decision)

    assert policy_over(storage).decision(SERVER, PROJECT) is decision


def test_allow_session_is_never_written_to_disk(storage: Path, policy: ConsentPolicy) -> None:
    policy.set(OTHER, "/home/u/x", Decision.ALLOW)
    policy.set(SERVER, PROJECT, Decision.ALLOW_SESSION)

    assert PROJECT not in (storage / "consent.json").read_text()
    assert policy_over(storage).decision(SERVER, PROJECT) is None


def test_allow_replaces_a_session_decision(storage: Path, policy: ConsentPolicy) -> None:
    policy.set(SERVER, PROJECT, Decision.ALLOW_SESSION)
    policy.set(SERVER, PROJECT, Decision.ALLOW)
    policy.set(SERVER, PROJECT, Decision.DENY)

    assert policy.decision(SERVER, PROJECT) is Decision.DENY
    assert policy_over(storage).decision(SERVER, PROJECT) is Decision.DENY


def test_allow_session_removes_a_saved_allow_so_later_sessions_do_not_share(
    storage: Path, policy: ConsentPolicy
) -> None:
    policy.set(SERVER, PROJECT, Decision.ALLOW)

    policy.set(SERVER, PROJECT, Decision.ALLOW_SESSION)

    assert policy.decision(SERVER, PROJECT) is Decision.ALLOW_SESSION
    assert policy_over(storage).decision(SERVER, PROJECT) is None


def test_allow_session_never_erases_a_saved_deny(storage: Path, policy: ConsentPolicy) -> None:
    policy.set(SERVER, PROJECT, Decision.DENY)

    policy.set(SERVER, PROJECT, Decision.ALLOW_SESSION)

    assert policy.decision(SERVER, PROJECT) is Decision.ALLOW_SESSION
    assert policy_over(storage).decision(SERVER, PROJECT) is Decision.DENY


@pytest.mark.parametrize("decision", list(Decision))
def test_forget_removes_the_decision_everywhere(storage: Path, policy: ConsentPolicy, decision: Decision) -> None:
    policy.set(SERVER, PROJECT, decision)

    policy.forget(SERVER, PROJECT)

    assert policy.decision(SERVER, PROJECT) is None
    assert policy_over(storage).decision(SERVER, PROJECT) is None


def test_decisions_for_a_server_merge_persisted_and_session_ones(policy: ConsentPolicy) -> None:
    policy.set(SERVER, "/a", Decision.ALLOW)
    policy.set(SERVER, "/b", Decision.DENY)
    policy.set(SERVER, "/c", Decision.ALLOW_SESSION)
    policy.set(OTHER, "/d", Decision.ALLOW)

    assert policy.decisions_for(SERVER) == {
        "/a": Decision.ALLOW,
        "/b": Decision.DENY,
        "/c": Decision.ALLOW_SESSION,
    }


def test_a_trust_answer_is_persisted_and_can_be_forgotten(storage: Path, policy: ConsentPolicy) -> None:
    assert policy.trusted(SERVER) is None

    policy.set_trust(SERVER, False)
    assert policy_over(storage).trusted(SERVER) is False

    policy.set_trust(SERVER, None)
    assert policy_over(storage).trusted(SERVER) is None


def test_change_callbacks_receive_the_affected_servers(policy: ConsentPolicy) -> None:
    seen = Recorder()
    policy.on_change(seen)

    policy.set(SERVER, PROJECT, Decision.ALLOW)
    policy.set(SERVER, PROJECT, Decision.ALLOW)
    policy.set_trust(OTHER, True)
    policy.forget(SERVER, PROJECT)

    assert seen.calls == [frozenset({SERVER.key}), frozenset({OTHER.key}), frozenset({SERVER.key})]


@pytest.mark.requirement("G1")
def test_changes_by_another_process_reach_callbacks_on_reload(storage: Path, policy: ConsentPolicy) -> None:
    seen = Recorder()
    policy.on_change(seen)

    policy_over(storage).set(OTHER, PROJECT, Decision.ALLOW)

    assert policy.reload() == {OTHER.key}
    assert policy.is_allowed(OTHER, PROJECT)
    assert not policy.reload()
    assert seen.calls == [frozenset({OTHER.key})]


def test_an_unregistered_or_failing_callback_does_not_stop_the_others(policy: ConsentPolicy) -> None:
    def broken(servers: frozenset[str]) -> None:
        raise RuntimeError("boom")

    removed, seen = Recorder(), Recorder()
    policy.on_change(broken)
    unregister = policy.on_change(removed)
    policy.on_change(seen)
    unregister()

    policy.set(SERVER, PROJECT, Decision.ALLOW_SESSION)

    assert removed.calls == []
    assert seen.calls == [frozenset({SERVER.key})]


def blocked_policy(storage: Path) -> ConsentPolicy:
    storage.mkdir(mode=0o700)
    path = storage / "consent.json"
    record = {
        "source": SERVER.source,
        "serverId": SERVER.server_id,
        "fingerprint": SERVER.fingerprint,
        "path": PROJECT,
        "decision": "allow",
        "updated": "2025-01-01T00:00Z",
    }
    path.write_text(json.dumps({"version": 7, "roots": [record]}))
    path.chmod(0o600)
    store = ConsentStore(storage)
    with pytest.raises(ConsentStoreError):
        store.load()
    return ConsentPolicy(store)


@pytest.mark.requirement("B2", "G2")
def test_a_blocked_store_shares_only_session_decisions(storage: Path) -> None:
    policy = blocked_policy(storage)
    assert not policy.is_allowed(SERVER, PROJECT)

    policy.set(SERVER, "/home/u/other", Decision.ALLOW_SESSION)

    assert policy.is_allowed(SERVER, "/home/u/other")


@pytest.mark.requirement("B2", "G2")
def test_a_blocked_store_holds_an_allow_for_this_session_only_and_says_why(storage: Path) -> None:
    policy = blocked_policy(storage)

    with pytest.raises(DecisionNotSaved, match=r"for this session only.*newer host_bridge") as raised:
        policy.set(SERVER, PROJECT, Decision.ALLOW)

    assert raised.value.applied is Decision.ALLOW_SESSION
    assert policy.decision(SERVER, PROJECT) is Decision.ALLOW_SESSION
    assert isinstance(raised.value.cause, ConsentStoreError)


@pytest.mark.requirement("G2")
def test_a_trust_answer_that_cannot_be_saved_holds_for_the_session(storage: Path) -> None:
    policy = blocked_policy(storage)

    with pytest.raises(DecisionNotSaved, match="holds until host_bridge restarts"):
        policy.set_trust(SERVER, True)

    assert policy.trusted(SERVER) is True


@pytest.mark.requirement("G2")
def test_deny_withdraws_a_session_allow_even_when_it_cannot_be_saved(storage: Path) -> None:
    policy = blocked_policy(storage)
    seen = Recorder()
    policy.on_change(seen)
    policy.set(SERVER, PROJECT, Decision.ALLOW_SESSION)

    with pytest.raises(DecisionNotSaved) as raised:
        policy.set(SERVER, PROJECT, Decision.DENY)

    assert raised.value.applied is Decision.DENY
    assert not policy.is_allowed(SERVER, PROJECT)
    assert seen.calls == [frozenset({SERVER.key}), frozenset({SERVER.key})]


@pytest.mark.requirement("G2", "G5")
def test_a_deny_that_cannot_be_saved_still_withdraws_a_saved_allow(storage: Path) -> None:
    """G2: another process holds the lock past the timeout (a stuck window); the deny applies anyway."""
    policy = policy_over(storage, lock_timeout=0.2)
    policy.set(SERVER, PROJECT, Decision.ALLOW)

    with lock_held(storage), pytest.raises(DecisionNotSaved, match=r"not shared .* until host_bridge restarts"):
        policy.set(SERVER, PROJECT, Decision.DENY)

    assert not policy.is_allowed(SERVER, PROJECT)
    assert policy_over(storage).decision(SERVER, PROJECT) is Decision.ALLOW


@pytest.mark.requirement("G2", "G5")
def test_a_forget_that_cannot_be_saved_stops_sharing_in_this_process(storage: Path) -> None:
    policy = policy_over(storage, lock_timeout=0.2)
    policy.set(SERVER, PROJECT, Decision.ALLOW)

    with lock_held(storage), pytest.raises(DecisionNotSaved, match=r"held .*consent\.lock"):
        policy.forget(SERVER, PROJECT)

    assert policy.decision(SERVER, PROJECT) is None
    assert policy.decisions_for(SERVER) == {}


@pytest.mark.requirement("G2", "G5")
def test_an_allow_that_cannot_be_saved_is_shared_for_this_session_only(storage: Path) -> None:
    policy = policy_over(storage, lock_timeout=0.2)

    with lock_held(storage), pytest.raises(DecisionNotSaved, match="for this session only") as raised:
        policy.set(SERVER, PROJECT, Decision.ALLOW)

    assert raised.value.applied is Decision.ALLOW_SESSION
    assert policy.decision(SERVER, PROJECT) is Decision.ALLOW_SESSION
    assert policy_over(storage).decision(SERVER, PROJECT) is None


@pytest.mark.requirement("G5")
def test_a_reader_is_not_held_up_by_a_writer_waiting_for_the_lock(storage: Path) -> None:
    """G5: answering roots/list must not wait while another window holds the store's lock."""
    policy = policy_over(storage, lock_timeout=2.0)
    policy.set(SERVER, PROJECT, Decision.ALLOW)
    started = threading.Event()
    done = threading.Event()

    def write() -> None:
        started.set()
        with contextlib.suppress(DecisionNotSaved):
            policy.set(SERVER, "/home/u/other", Decision.ALLOW)
        done.set()

    with lock_held(storage):
        writer = threading.Thread(target=write)
        writer.start()
        assert started.wait(5)
        assert policy.is_allowed(SERVER, PROJECT)
        assert not done.is_set()
    writer.join(10)


@pytest.mark.requirement("G4")
def test_two_servers_with_the_same_launch_config_never_share_an_answer(storage: Path, policy: ConsentPolicy) -> None:
    """G4: consent belongs to (where defined, id, fingerprint), not to the command line alone."""
    a = ServerIdentity(source="settings", server_id="a", fingerprint=FINGERPRINT)
    b = ServerIdentity(source="settings", server_id="b", fingerprint=FINGERPRINT)
    repo = ServerIdentity(source="/repo/.mcp.json", server_id="a", fingerprint=FINGERPRINT)

    policy.set(a, PROJECT, Decision.DENY)
    policy.set(b, PROJECT, Decision.ALLOW)

    assert not policy.is_allowed(a, PROJECT)
    assert policy.is_allowed(b, PROJECT)
    assert policy.decision(repo, PROJECT) is None
    reopened = policy_over(storage)
    assert (reopened.decision(a, PROJECT), reopened.decision(b, PROJECT)) == (Decision.DENY, Decision.ALLOW)


@pytest.mark.requirement("B3")
def test_grants_from_many_threads_are_all_saved(storage: Path, policy: ConsentPolicy) -> None:
    def grant(worker: int) -> None:
        for i in range(20):
            policy.set(SERVER, f"/w{worker}/p{i}", Decision.ALLOW)

    threads = [threading.Thread(target=grant, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(policy_over(storage).decisions_for(SERVER)) == 80


def test_the_fingerprint_is_a_sha256_digest() -> None:
    assert FINGERPRINT.startswith("sha256:")
    assert len(FINGERPRINT) == len("sha256:") + 64


@pytest.mark.parametrize(
    "changed",
    [
        {"command": "uvx"},
        {"args": ("-y", "@modelcontextprotocol/server-filesystem", "/")},
        {"args": ("@modelcontextprotocol/server-filesystem", "-y")},
        {"env": {"A": "1", "B": "3"}},
        {"env": {"A": "1", "B": "2", "NODE_OPTIONS": "--require=/tmp/x.js"}},
        {"cwd": "/tmp"},
        {"url": "https://evil.example.com/"},
        {"headers": {"X-Tenant": "other"}},
        {"transport": "http"},
    ],
)
@pytest.mark.requirement("B7")
def test_any_change_of_the_launch_config_changes_the_fingerprint(changed: dict[str, object]) -> None:
    assert fingerprint(SPEC.model_copy(update=changed)) != FINGERPRINT


def test_the_fingerprint_ignores_env_order_and_header_name_case() -> None:
    reordered = SPEC.model_copy(update={"env": {"B": "2", "A": "1"}})
    assert fingerprint(reordered) == FINGERPRINT
    http = LaunchSpec(transport="http", url="https://x/", headers={"Authorization": "t", "X-A": "1"})
    same = LaunchSpec(transport="http", url="https://x/", headers={"x-a": "1", "authorization": "t"})
    assert fingerprint(http) == fingerprint(same)


@pytest.mark.requirement("B7")
def test_consent_given_before_a_config_change_does_not_carry_over(policy: ConsentPolicy) -> None:
    policy.set(SERVER, PROJECT, Decision.ALLOW)

    edited = SERVER.model_copy(update={"fingerprint": fingerprint(SPEC.model_copy(update={"args": (*SPEC.args, "/")}))})

    assert not policy.is_allowed(edited, PROJECT)
    assert policy.decision(edited, PROJECT) is None


def test_a_launch_spec_reads_its_camel_case_wire_form() -> None:
    spec = LaunchSpec.model_validate({"transport": "stdio", "command": "srv", "env": {"K": "v"}})

    assert spec.to_wire() == {
        "transport": "stdio",
        "command": "srv",
        "args": [],
        "env": {"K": "v"},
        "headers": {},
    }
