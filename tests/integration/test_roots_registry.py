"""The roots registry on real folders (docs/security.md A8, A9, A11, A15–A17, B8)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from host_bridge.consent.identity import SETTINGS_SOURCE, ServerIdentity
from host_bridge.roots import Access, AccessNotice, Root, RootsRegistry, check_access
from host_bridge.uris import canonical_path, path_to_uri
from host_bridge.workspace.models import Candidate

pytestmark = pytest.mark.anyio

SERVER_A, SERVER_B = "fs-a", "fs-b"
FP_A = ServerIdentity(source=SETTINGS_SOURCE, server_id=SERVER_A, fingerprint="sha256:aaaa")
FP_B = ServerIdentity(source=SETTINGS_SOURCE, server_id=SERVER_B, fingerprint="sha256:bbbb")
WAIT = 10.0


class Grants:
    """A plain in-memory consent book with the registry's lookup interface."""

    def __init__(self) -> None:
        self.allowed: set[tuple[ServerIdentity, str]] = set()

    def is_allowed(self, identity: ServerIdentity, path: str, /) -> bool:
        return (identity, path) in self.allowed

    def allow(self, identity: ServerIdentity, folder: Path) -> None:
        self.allowed.add((identity, canonical_path(folder)))

    def revoke(self, identity: ServerIdentity, folder: Path) -> None:
        self.allowed.discard((identity, canonical_path(folder)))


class Recorder:
    """Collects registry events and lets a test wait for the next one matching a condition."""

    def __init__(self, registry: RootsRegistry) -> None:
        self.changes: list[tuple[str, tuple[Root, ...]]] = []
        self.notices: list[AccessNotice] = []
        self._arrived = anyio.Event()
        registry.subscribe(self._on_change)
        registry.subscribe_notices(self._on_notice)

    def _on_change(self, server: str, roots: tuple[Root, ...]) -> None:
        self.changes.append((server, roots))
        self._arrived.set()

    def _on_notice(self, notice: AccessNotice) -> None:
        self.notices.append(notice)
        self._arrived.set()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not condition():
                self._arrived = anyio.Event()
                await self._arrived.wait()


def candidate(folder: Path, *, declared: Path | None = None, name: str | None = None) -> Candidate:
    real = canonical_path(declared or folder)
    return Candidate(
        uri=path_to_uri(real),
        name=name or folder.name,
        kinds=("workspaceFolder",),
        declared_uri=path_to_uri(declared) if declared else None,
    )


def uris(roots: tuple[Root, ...]) -> list[str]:
    return [r.uri for r in roots]


async def share(registry: RootsRegistry, recorder: Recorder, grants: Grants, *folders: Path) -> None:
    """Allow ``folders`` for server A, make them the candidates, and wait until A has them all."""
    for folder in folders:
        grants.allow(FP_A, folder)
    registry.set_candidates([candidate(f) for f in folders])
    registry.set_server(SERVER_A, FP_A)
    await recorder.wait_for(lambda: len(registry.roots_for(SERVER_A)) == len(folders))


@pytest.fixture
def grants() -> Grants:
    return Grants()


@pytest.fixture
async def running(grants: Grants) -> AsyncIterator[tuple[RootsRegistry, Recorder]]:
    registry = RootsRegistry(grants, debounce=0.02, poll_interval=None)
    recorder = Recorder(registry)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(registry.run)
        yield registry, recorder
        tasks.cancel_scope.cancel()


@pytest.mark.requirement("B8")
async def test_a_folder_allowed_for_one_server_is_not_advertised_to_another(tmp_path: Path, grants: Grants) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    registry = RootsRegistry(grants, poll_interval=None)
    registry.set_candidates([candidate(proj)])
    registry.set_server(SERVER_A, FP_A)
    registry.set_server(SERVER_B, FP_B)
    grants.allow(FP_A, proj)
    assert await registry.refresh() == {SERVER_A}
    assert uris(registry.roots_for(SERVER_A)) == [path_to_uri(canonical_path(proj))]
    assert registry.roots_for(SERVER_B) == ()
    assert registry.roots_for("unknown") == ()


@pytest.mark.requirement("B6")
async def test_a_revoked_folder_is_no_longer_answered_even_before_recomputation(tmp_path: Path, grants: Grants) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    registry = RootsRegistry(grants, poll_interval=None)
    registry.set_candidates([candidate(proj)])
    registry.set_server(SERVER_A, FP_A)
    grants.allow(FP_A, proj)
    await registry.refresh()
    grants.revoke(FP_A, proj)
    assert registry.roots_for(SERVER_A) == ()
    assert await registry.refresh() == {SERVER_A}


@pytest.mark.requirement("B8")
async def test_nothing_is_shared_by_default(tmp_path: Path, grants: Grants) -> None:
    registry = RootsRegistry(grants, poll_interval=None)
    registry.set_candidates([candidate(tmp_path)])
    registry.set_server(SERVER_A, FP_A)
    await registry.refresh()
    assert registry.roots_for(SERVER_A) == ()


@pytest.mark.requirement("A11")
async def test_allowing_a_parent_does_not_share_a_nested_candidate_and_revoking_it_shares_neither(
    tmp_path: Path, grants: Grants
) -> None:
    outer, inner = tmp_path / "a", tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    registry = RootsRegistry(grants, poll_interval=None)
    registry.set_candidates([candidate(outer), candidate(inner), candidate(outer)])
    registry.set_server(SERVER_A, FP_A)
    grants.allow(FP_A, outer)
    await registry.refresh()
    assert uris(registry.roots_for(SERVER_A)) == [path_to_uri(canonical_path(outer))]
    grants.revoke(FP_A, outer)
    await registry.refresh()
    assert registry.roots_for(SERVER_A) == ()


@pytest.mark.requirement("A8")
async def test_a_symlinked_folder_is_advertised_as_its_real_path(tmp_path: Path, grants: Grants) -> None:
    target = tmp_path / "real"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    registry = RootsRegistry(grants, poll_interval=None)
    registry.set_candidates([candidate(link, declared=link)])
    registry.set_server(SERVER_A, FP_A)
    grants.allow(FP_A, target)
    await registry.refresh()
    assert uris(registry.roots_for(SERVER_A)) == [path_to_uri(canonical_path(target))]


async def test_recomputing_without_a_change_announces_nothing(tmp_path: Path, grants: Grants) -> None:
    registry = RootsRegistry(grants, poll_interval=None)
    recorder = Recorder(registry)
    registry.set_candidates([candidate(tmp_path)])
    registry.set_server(SERVER_A, FP_A)
    grants.allow(FP_A, tmp_path)
    await registry.refresh()
    await registry.refresh()
    assert len(recorder.changes) == 1


@pytest.mark.requirement("A15")
async def test_a_deleted_root_is_withdrawn_with_one_change_and_a_notice(
    tmp_path: Path, grants: Grants, running: tuple[RootsRegistry, Recorder]
) -> None:
    registry, recorder = running
    keep, gone = tmp_path / "keep", tmp_path / "gone"
    keep.mkdir()
    (gone / "deep").mkdir(parents=True)
    await share(registry, recorder, grants, keep, gone)
    gone_uri = path_to_uri(canonical_path(gone))
    changes_before = len(recorder.changes)

    shutil.rmtree(gone)

    await recorder.wait_for(lambda: any(n.access is Access.MISSING for n in recorder.notices))
    await recorder.wait_for(lambda: len(recorder.changes) > changes_before)
    assert uris(registry.roots_for(SERVER_A)) == [path_to_uri(canonical_path(keep))]
    assert [n.uri for n in recorder.notices] == [gone_uri]
    assert "no longer exists" in recorder.notices[0].message
    assert grants.is_allowed(FP_A, str(tmp_path.resolve() / "gone")), "consent is kept while the folder is gone"


@pytest.mark.requirement("A15")
async def test_a_renamed_root_is_withdrawn(
    tmp_path: Path, grants: Grants, running: tuple[RootsRegistry, Recorder]
) -> None:
    registry, recorder = running
    proj = tmp_path / "proj"
    proj.mkdir()
    await share(registry, recorder, grants, proj)

    proj.rename(tmp_path / "renamed")

    await recorder.wait_for(lambda: registry.roots_for(SERVER_A) == ())


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
@pytest.mark.requirement("A17")
async def test_a_root_whose_permissions_are_removed_is_withdrawn_and_comes_back_when_restored(
    tmp_path: Path, grants: Grants, running: tuple[RootsRegistry, Recorder]
) -> None:
    registry, recorder = running
    proj = tmp_path / "proj"
    proj.mkdir()
    await share(registry, recorder, grants, proj)
    try:
        proj.chmod(0)
        await recorder.wait_for(lambda: registry.roots_for(SERVER_A) == ())
        assert recorder.notices[-1].access is Access.UNREADABLE
        assert "permissions" in recorder.notices[-1].message
    finally:
        proj.chmod(0o755)
    await recorder.wait_for(lambda: len(registry.roots_for(SERVER_A)) == 1)
    assert recorder.notices[-1].access is Access.OK


@pytest.mark.requirement("A9")
async def test_a_retargeted_symlink_withdraws_the_root_until_the_new_target_is_consented(
    tmp_path: Path, grants: Grants, running: tuple[RootsRegistry, Recorder]
) -> None:
    registry, recorder = running
    safe, secret = tmp_path / "safe", tmp_path / "secret"
    safe.mkdir()
    secret.mkdir()
    link = tmp_path / "ws" / "proj"
    link.parent.mkdir()
    link.symlink_to(safe)
    grants.allow(FP_A, safe)
    registry.set_candidates([candidate(link, declared=link)])
    registry.set_server(SERVER_A, FP_A)
    await recorder.wait_for(lambda: len(registry.roots_for(SERVER_A)) == 1)

    swapped = tmp_path / "ws" / "tmp-link"
    swapped.symlink_to(secret)
    swapped.replace(link)

    await recorder.wait_for(lambda: registry.roots_for(SERVER_A) == ())
    assert recorder.notices[-1].access is Access.MOVED
    assert "offered for you to decide" in recorder.notices[-1].message
    assert all(path_to_uri(canonical_path(secret)) not in uris(roots) for _, roots in recorder.changes)


@pytest.mark.requirement("A15")
async def test_a_root_turned_into_a_file_is_withdrawn(tmp_path: Path, grants: Grants) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    made = candidate(proj)
    proj.rmdir()
    proj.write_text("now a file")
    assert check_access(made) is Access.NOT_DIRECTORY


@pytest.mark.requirement("E7")
async def test_a_burst_of_invalidations_gives_one_change_per_server(
    tmp_path: Path, grants: Grants, running: tuple[RootsRegistry, Recorder]
) -> None:
    registry, recorder = running
    folders = [tmp_path / f"p{i}" for i in range(20)]
    for folder in folders:
        folder.mkdir()
        grants.allow(FP_A, folder)
        grants.allow(FP_B, folder)
    registry.set_server(SERVER_A, FP_A)
    registry.set_server(SERVER_B, FP_B)
    for i in range(1, len(folders) + 1):
        registry.set_candidates([candidate(f) for f in folders[:i]])
    await recorder.wait_for(lambda: len(registry.roots_for(SERVER_A)) == 20 and len(registry.roots_for(SERVER_B)) == 20)
    assert sorted(server for server, _ in recorder.changes) == [SERVER_A, SERVER_B]


async def test_invalidating_from_another_thread_triggers_a_recomputation(
    tmp_path: Path, grants: Grants, running: tuple[RootsRegistry, Recorder]
) -> None:
    registry, recorder = running
    registry.set_candidates([candidate(tmp_path)])
    registry.set_server(SERVER_A, FP_A)
    grants.allow(FP_A, tmp_path)
    await recorder.wait_for(lambda: len(recorder.changes) == 1)
    grants.revoke(FP_A, tmp_path)
    await anyio.to_thread.run_sync(registry.invalidate)
    await recorder.wait_for(lambda: len(recorder.changes) == 2)
    assert recorder.changes[-1] == (SERVER_A, ())


@pytest.mark.requirement("A16")
async def test_a_folder_that_hangs_on_stat_is_marked_unavailable_and_answers_keep_coming(
    tmp_path: Path, grants: Grants
) -> None:
    fast, hung = tmp_path / "fast", tmp_path / "hung"
    fast.mkdir()
    hung.mkdir()
    release = threading.Event()
    hung_uri = path_to_uri(canonical_path(hung))

    def slow_mount_checker(c: Candidate) -> Access:
        if c.uri == hung_uri:
            release.wait(WAIT)
        return check_access(c)

    registry = RootsRegistry(grants, poll_interval=None, check_timeout=0.2, checker=slow_mount_checker)
    recorder = Recorder(registry)
    registry.set_candidates([candidate(fast), candidate(hung)])
    registry.set_server(SERVER_A, FP_A)
    grants.allow(FP_A, fast)
    grants.allow(FP_A, hung)
    try:
        with anyio.fail_after(WAIT):
            await registry.refresh()
    finally:
        release.set()
    assert uris(registry.roots_for(SERVER_A)) == [path_to_uri(canonical_path(fast))]
    assert registry.access(hung_uri) is Access.UNAVAILABLE
    assert "did not answer in time" in recorder.notices[0].message
