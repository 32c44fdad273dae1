"""A routine's webhook secret: derived, never stored; and the signature a webhook carries.

The secret is an HMAC of the routine's id and its nonce (random, replaced at
each rotation) under the installation's ``routine_webhooks`` secret (shared
by every replica through the database, ``paperclip.common.server_secrets``).
So the routine's row holds no secret: showing it again means rotating it.
Like any HMAC key a server checks, a reader of the whole database could
derive it; the webhook moves nothing out of the company but its own issue.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import uuid

SERVER_SECRET = "routine_webhooks"
NONCE_BYTES = 16
PREFIX = "pcwh_"
SIGNATURE_HEADERS = ("x-paperclip-signature", "x-hub-signature-256")
"""Ours first; GitHub's has the same form, so a GitHub webhook can call a routine."""


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)


def webhook_secret(installation: bytes, routine_id: uuid.UUID, nonce: bytes) -> str:
    """The secret a sender signs with (shown at creation and at each rotation)."""
    digest = hmac.new(installation, b"routine-webhook\n" + routine_id.bytes + nonce, "sha256")
    return PREFIX + base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of the exact body bytes, keyed with the secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_matches(secret: str, body: bytes, header: str | None) -> bool:
    """Compared in constant time; a missing or malformed header never matches."""
    if not header:
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().lower().encode())
