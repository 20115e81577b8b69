"""Strict ``file://`` URIs and canonical paths.

Every root that host_bridge advertises passes through this module. Parsing is deliberately strict:
anything that could make two different spellings name one directory (traversal, encoded separators,
a remote host, ignored query or fragment parts, control characters, lossy decoding) is refused with a
:class:`UriError` whose :attr:`~UriError.reason` is a stable code and whose message says what to do.

The parsing functions are pure (no file-system access) and take a ``windows`` flag so the Windows path
rules can be tested on any platform; :func:`canonical_path` and :func:`canonical_uri` touch the disk.
"""

from __future__ import annotations

import os
import re
from enum import StrEnum
from pathlib import PurePosixPath, PureWindowsPath
from urllib.parse import quote, unquote_to_bytes

from host_bridge.system import IS_WINDOWS

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ENCODED_SEPARATOR = re.compile(r"%(2[Ff]|5[Cc])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_WINDOWS_DRIVE = re.compile(r"^/?([A-Za-z]):(/|$)")
_WINDOWS_DEVICE = re.compile(r"^(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|COM[0-9¹²³]|LPT[0-9¹²³])(\..*)?$", re.I)
# RFC 3986 pchar minus "%": what may stay literal inside one path segment.
_SEGMENT_SAFE = "-._~!$&'()*+,;=:@"


class UriRejection(StrEnum):
    """Why a URI or path was refused; values are stable and may be shown to users or logged."""

    EMPTY = "empty"
    NOT_FILE_SCHEME = "not-file-scheme"
    REMOTE_HOST = "remote-host"
    QUERY = "query"
    FRAGMENT = "fragment"
    MALFORMED_ESCAPE = "malformed-escape"
    ENCODED_SEPARATOR = "encoded-separator"
    BACKSLASH = "backslash"
    CONTROL_CHARACTER = "control-character"
    INVALID_UTF8 = "invalid-utf8"
    TRAVERSAL = "traversal"
    NOT_ABSOLUTE = "not-absolute"
    WINDOWS_RESERVED = "windows-reserved-name"


class UriError(ValueError):
    """A URI or path that cannot be used as a root.

    The message names the offending input and what to do about it; :attr:`reason` is machine-readable.
    """

    def __init__(self, uri: str, reason: UriRejection, detail: str) -> None:
        self.uri = uri
        """The input exactly as given."""
        self.reason = reason
        """Stable code for the kind of problem."""
        self.detail = detail
        """Human explanation of this particular problem."""
        super().__init__(f"refused {uri!r}: {detail}")


def _reject(uri: str, reason: UriRejection, detail: str) -> UriError:
    return UriError(uri, reason, detail)


def parse_file_uri(uri: str, *, windows: bool = IS_WINDOWS) -> str:
    """Turn a ``file://`` URI into an absolute native path string without touching the disk.

    ``FILE:`` is accepted in any case, as are ``file:///p``, ``file://localhost/p`` and ``file:/p``.
    Raises :class:`UriError` for anything else (see :class:`UriRejection`).
    """
    if not uri:
        raise _reject(uri, UriRejection.EMPTY, "the URI is empty")
    if _CONTROL.search(uri):
        raise _reject(uri, UriRejection.CONTROL_CHARACTER, "the URI contains a control character")
    match = _SCHEME.match(uri)
    if match is None or match.group(1).lower() != "file":
        scheme = match.group(1) if match else "(none)"
        raise _reject(
            uri,
            UriRejection.NOT_FILE_SCHEME,
            f"scheme {scheme!r} is not supported; only local folders (file:// URIs) can be shared",
        )
    rest = uri[match.end() :]
    if "#" in rest:
        raise _reject(uri, UriRejection.FRAGMENT, "a fragment ('#…') is not allowed; encode '#' in names as %23")
    if "?" in rest:
        raise _reject(uri, UriRejection.QUERY, "a query ('?…') is not allowed; encode '?' in names as %3F")
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        if authority and authority.lower() != "localhost":
            raise _reject(
                uri,
                UriRejection.REMOTE_HOST,
                f"host {authority!r} is remote; only folders on this machine can be shared",
            )
        path = slash + path
    else:
        path = rest
    if not path.startswith("/"):
        raise _reject(uri, UriRejection.NOT_ABSOLUTE, "the path is not absolute")
    if "\\" in path:
        raise _reject(uri, UriRejection.BACKSLASH, "a raw backslash is not allowed in a file URI")
    if _BAD_ESCAPE.search(path):
        raise _reject(uri, UriRejection.MALFORMED_ESCAPE, "a '%' is not followed by two hex digits")
    if _ENCODED_SEPARATOR.search(path):
        raise _reject(
            uri,
            UriRejection.ENCODED_SEPARATOR,
            "an encoded path separator (%2F or %5C) would change the folder structure after decoding",
        )
    try:
        decoded = unquote_to_bytes(path).decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise _reject(uri, UriRejection.INVALID_UTF8, "the percent-escapes are not valid UTF-8") from None
    if _CONTROL.search(decoded):
        raise _reject(uri, UriRejection.CONTROL_CHARACTER, "the decoded path contains a control character")
    segments = [s for s in decoded.split("/") if s]
    for segment in segments:
        if segment in (".", ".."):
            raise _reject(
                uri,
                UriRejection.TRAVERSAL,
                f"the path contains a {segment!r} segment; give the folder's direct path",
            )
    if windows:
        return _windows_path(uri, decoded, segments)
    return "/" + "/".join(segments)


def _windows_path(uri: str, decoded: str, segments: list[str]) -> str:
    drive = _WINDOWS_DRIVE.match(decoded)
    if drive is None:
        raise _reject(uri, UriRejection.NOT_ABSOLUTE, "a Windows file URI must start with a drive letter")
    rest = segments[1:]
    for segment in rest:
        _check_windows_segment(uri, segment)
    return drive.group(1).upper() + ":\\" + "\\".join(rest)


def _check_windows_segment(uri: str, segment: str) -> None:
    if ":" in segment:
        raise _reject(uri, UriRejection.WINDOWS_RESERVED, f"{segment!r} names an alternate data stream")
    if segment.endswith((".", " ")):
        raise _reject(uri, UriRejection.WINDOWS_RESERVED, f"{segment!r} ends in a dot or space")
    if _WINDOWS_DEVICE.match(segment):
        raise _reject(uri, UriRejection.WINDOWS_RESERVED, f"{segment!r} is a device name")
    if any(c in segment for c in '<>"|?*'):
        raise _reject(uri, UriRejection.WINDOWS_RESERVED, f"{segment!r} contains a character Windows forbids")


def path_to_uri(path: str | os.PathLike[str], *, windows: bool = IS_WINDOWS) -> str:
    """Spell an absolute path as a ``file://`` URI that :func:`parse_file_uri` maps back to it exactly.

    Raises :class:`UriError` for relative paths, traversal segments, control characters and names that
    are not valid UTF-8 (they cannot be shared as URIs).
    """
    text = os.fspath(path)
    if _CONTROL.search(text):
        raise _reject(text, UriRejection.CONTROL_CHARACTER, "the path contains a control character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _reject(text, UriRejection.INVALID_UTF8, "the path's name is not valid UTF-8") from None
    if windows:
        pure = PureWindowsPath(text)
        if not pure.drive or len(pure.drive) != 2 or not pure.root:
            raise _reject(text, UriRejection.NOT_ABSOLUTE, "only drive-letter paths (C:\\…) can be shared")
        for segment in pure.parts[1:]:
            _check_windows_segment(text, segment)
        head, segments = "/" + pure.drive.upper(), list(pure.parts[1:])
    else:
        if not text.startswith("/"):
            raise _reject(text, UriRejection.NOT_ABSOLUTE, "the path is not absolute")
        head, segments = "", [s for s in text.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise _reject(text, UriRejection.TRAVERSAL, "the path contains a '.' or '..' segment")
    return "file://" + head + "/" + "/".join(quote(s, safe=_SEGMENT_SAFE) for s in segments)


def canonical_path(path: str | os.PathLike[str]) -> str:
    """The real path of an existing file or folder: symlinks resolved, normalised, absolute.

    Raises :class:`OSError` (e.g. ``FileNotFoundError``) when it does not exist.
    """
    return os.path.realpath(os.fspath(path), strict=True)


def canonical_uri(uri: str) -> tuple[str, str]:
    """Parse ``uri``, resolve it on disk and return ``(canonical_uri, canonical_path)``.

    The canonical URI names the real directory, so a symlinked root is advertised as its target.
    Raises :class:`UriError` for a refused URI and :class:`OSError` when the target does not exist.
    """
    real = canonical_path(parse_file_uri(uri))
    return path_to_uri(real), real


def is_within(path: str, root: str, *, windows: bool = IS_WINDOWS) -> bool:
    """Whether ``path`` is ``root`` or lies below it, compared by whole path components.

    Both must be absolute and already canonical; ``/a/proj`` does not contain ``/a/proj2``.
    """
    pure = PureWindowsPath if windows else PurePosixPath
    parts, root_parts = pure(path).parts, pure(root).parts
    if windows:
        parts = tuple(p.casefold() for p in parts)
        root_parts = tuple(p.casefold() for p in root_parts)
    return len(parts) >= len(root_parts) and parts[: len(root_parts)] == root_parts


def display_name(path: str, *, windows: bool = IS_WINDOWS) -> str:
    """The last component of ``path`` (the drive or ``/`` for a filesystem root)."""
    pure = PureWindowsPath(path) if windows else PurePosixPath(path)
    return pure.name or str(pure)
