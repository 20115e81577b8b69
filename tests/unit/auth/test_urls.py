"""OAuth addresses host_bridge opens or reaches are checked first (docs/security.md D2)."""

from __future__ import annotations

import pytest

from host_bridge.auth.urls import OAuthAddressError, check_browser_url, check_endpoint, host_reach

pytestmark = pytest.mark.requirement("D2")

SERVER = "https://mcp.example.com/mcp"
LOCAL_SERVER = "http://127.0.0.1:8000/mcp"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)//https://auth.example.com",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "vscode://ext/x",
        "http://auth.example.com/authorize",
        "https://user:pass@auth.example.com/authorize",
        "https://auth.example.com/author ize",
        "https://auth.example.com/\x1b[31m",
        "http://169.254.169.254/latest",
        "https://169.254.169.254/latest",
    ],
)
def test_a_sign_in_address_that_is_not_https_or_is_a_trick_is_never_opened(url: str) -> None:
    with pytest.raises(OAuthAddressError):
        check_browser_url(url)


@pytest.mark.parametrize(
    "url",
    ["https://auth.example.com/authorize?x=1", "http://127.0.0.1:9000/authorize", "http://localhost:3000/authorize"],
)
def test_an_https_sign_in_address_or_a_plain_one_on_this_machine_is_opened(url: str) -> None:
    assert check_browser_url(url) == url


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("http://169.254.169.254/latest/meta-data", SERVER),
        ("https://169.254.169.254/.well-known/oauth-authorization-server", SERVER),
        ("https://[fe80::1]/token", SERVER),
        ("https://10.0.0.5/token", SERVER),
        ("https://192.168.1.1/register", SERVER),
        ("https://127.0.0.1/token", SERVER),
        ("http://auth.example.com/token", SERVER),
        ("http://10.0.0.5/token", "http://10.0.0.4/mcp"),
        ("file:///etc/passwd", SERVER),
        ("https://127.0.0.1:9/token", "https://10.0.0.4/mcp"),
    ],
)
def test_an_oauth_request_to_a_metadata_service_or_another_network_is_refused(url: str, server: str) -> None:
    with pytest.raises(OAuthAddressError):
        check_endpoint(url, server)


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("https://auth.example.com/token", SERVER),
        ("http://127.0.0.1:9000/token", LOCAL_SERVER),
        ("http://localhost:9000/token", LOCAL_SERVER),
        ("https://10.0.0.5/token", "https://10.0.0.4/mcp"),
        ("https://auth.example.com/token", "https://10.0.0.4/mcp"),
    ],
)
def test_an_oauth_request_to_https_or_to_the_servers_own_network_is_sent(url: str, server: str) -> None:
    check_endpoint(url, server)


def test_hosts_are_sorted_by_the_network_they_name() -> None:
    assert [host_reach(h) for h in ("localhost", "[::1]", "169.254.1.1", "10.1.2.3", "8.8.8.8", "example.com")] == [
        "loopback",
        "loopback",
        "link-local",
        "private",
        "public",
        "name",
    ]
    assert host_reach("[::ffff:169.254.169.254]") == "link-local"
