"""Keyed digests of what a caller asked: what traces keep instead of query text. Pure.

An unkeyed hash of a query confirms a guess: anyone who can read the traces can hash a
candidate question and look for it. A keyed hash (HMAC-SHA-256) cannot be recomputed without the
key, which is a per-deployment secret (``HYBRID_ES_TRACE_HASH_KEY``). Without one, each process
draws its own random key: equal queries still group within a process, and nothing is
guessable across them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

PROCESS_KEY = secrets.token_bytes(32)
"""This process's key when the deployment sets none."""


def keyed_digest(key: bytes, text: str | bytes, *, length: int = 32) -> str:
    """HMAC-SHA-256 of ``text`` (bytes as they are, text as UTF-8) under ``key``, as ``length``
    hex characters."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    return hmac.new(key, data, hashlib.sha256).hexdigest()[:length]
