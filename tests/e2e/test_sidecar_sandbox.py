"""The OS sandbox as an editor sees it: the default sandbox in status, and a refused path that becomes a consent
question naming it (docs/security.md H4). Real sidecar over stdio, real fixture server, real Landlock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.folders import folder_uri
from support.sandbox import landlock_reason
from support.servers import python_server, roots_recorder
from support.sidecar import BridgeClient, options

pytestmark = [pytest.mark.asyncio, pytest.mark.requirement("H4")]
LANDLOCK = pytest.mark.skipif(bool(landlock_reason()), reason=landlock_reason() or "Landlock")


def server_status(client: BridgeClient, server_id: str) -> dict[str, Any] | None:
    return next((s for s in reversed(client.statuses) if s["id"] == server_id), None)


@LANDLOCK
async def test_a_refused_path_in_an_undecided_folder_asks_about_that_folder_with_the_reason(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    alpha, beta = folders
    refused = beta / "pyproject.toml"
    probe = python_server("sandbox_probe", "--startup-read", str(refused))

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        # The first question: share alpha and say nothing about beta (it stays unshared and undecided).
        if len(client.asks) == 1:
            return {"decisions": [{"uri": folder_uri(alpha), "decision": "allow"}]}
        return {"decisions": [{"uri": r["uri"], "decision": "allow"} for r in params["roots"]]}

    client.answer_consent = answer
    await client.start_session([alpha, beta], options(tmp_path, {"probe": probe}, sandbox="enforce"), consent_ui=True)

    # Sharing alpha restarts the server in a wider sandbox; it is refused beta again, which brings the question.
    await client.until(lambda: any(ask.get("reason") for ask in client.asks[1:]))
    asked = next(ask for ask in client.asks[1:] if ask.get("reason"))
    assert [r["uri"] for r in asked["roots"]] == [folder_uri(beta)], "only the folder holding the refused path"
    assert str(refused) in asked["reason"] and "sandbox" in asked["reason"]

    # Shared now: the server restarts under a policy that includes beta.
    def shared_both() -> bool:
        status = server_status(client, "probe")
        return (
            status is not None
            and status["state"] == "running"
            and sorted(r["uri"] for r in status["sharedRoots"]) == sorted([folder_uri(alpha), folder_uri(beta)])
            and str(beta.resolve()) in status["sandbox"]["summary"]
        )

    await client.until(shared_both)
    status = next(s for s in (await client.status())["servers"] if s["id"] == "probe")
    assert status["sandbox"]["enforced"] is True and status["sandbox"]["mechanism"] == "landlock"
    assert "sandbox" in status["reach"]


async def test_a_server_that_never_asks_for_roots_is_not_reported_as_reached_by_them_without_the_sandbox(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    alpha, _ = folders
    client.answer_consent = lambda params: {"decisions": [{"uri": folder_uri(alpha), "decision": "allow"}]}
    probe = python_server("sandbox_probe")
    await client.start_session([alpha], options(tmp_path, {"probe": probe}, sandbox="off"), consent_ui=True)

    def offered() -> bool:
        status = server_status(client, "probe")
        return status is not None and status["state"] == "running" and bool(status["sharedRoots"])

    await client.until(offered)
    status = next(s for s in (await client.status())["servers"] if s["id"] == "probe")
    assert status.get("rootsAskedAt") is None, "the probe never asks for roots"
    assert status["reach"] == [], "offered folders that reach it in no way"
    assert status["sandbox"] == {
        "setting": "off",
        "enforced": False,
        "planned": False,
        "mechanism": "none",
        "summary": status["sandbox"]["summary"],
        "warnings": [],
        "network": "on",
        "unixSockets": False,
        "readOnly": [],
        "channels": [],
    }


async def test_a_server_that_asks_for_its_roots_is_reported_as_reached_by_them_with_the_time_it_asked(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    alpha, _ = folders
    client.answer_consent = lambda params: {"decisions": [{"uri": folder_uri(alpha), "decision": "allow"}]}
    recorder = roots_recorder(tmp_path / "roots.jsonl")
    await client.start_session([alpha], options(tmp_path, {"rec": recorder}), consent_ui=True)

    def reached() -> bool:
        status = server_status(client, "rec")
        return status is not None and "roots" in status["reach"]

    await client.until(reached)
    status = server_status(client, "rec")
    assert status is not None and status["rootsAskedAt"], "when it asked is said"
    assert [r["uri"] for r in status["sharedRoots"]] == [folder_uri(alpha)]


@LANDLOCK
@pytest.mark.requirement("I9")
async def test_a_folder_answered_read_only_is_shared_read_only_and_set_consent_can_make_it_writable(
    client: BridgeClient, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    alpha, _ = folders
    client.answer_consent = lambda params: {"decisions": [{"uri": folder_uri(alpha), "decision": "allowReadOnly"}]}
    probe = python_server("sandbox_probe")
    await client.start_session(
        [alpha], options(tmp_path, {"probe": probe}, sandbox="enforce", network="off"), consent_ui=True
    )

    def read_only() -> bool:
        status = server_status(client, "probe")
        return (
            status is not None
            and status["state"] == "running"
            and status["sandbox"]["readOnly"] == [str(alpha.resolve())]
        )

    await client.until(read_only)
    status = next(s for s in (await client.status())["servers"] if s["id"] == "probe")
    assert [r["uri"] for r in status["sharedRoots"]] == [folder_uri(alpha)]
    assert status["sandbox"]["network"] == "off"
    assert {c["name"]: c["state"] for c in status["sandbox"]["channels"]}["tcp"] in ("refused", "notConfined")

    result = await client.request(
        "hostBridge/setConsent", {"server": "probe", "uri": folder_uri(alpha), "decision": "allow"}
    )
    assert result["applied"] == "allow" and result["saved"] is True

    def writable() -> bool:
        status = server_status(client, "probe")
        return status is not None and status["state"] == "running" and status["sandbox"]["readOnly"] == []

    await client.until(writable)
