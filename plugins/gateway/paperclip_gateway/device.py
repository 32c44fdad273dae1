"""The device identity a gateway client signs its ``connect`` with (Ed25519, payload v3).

OpenClaw (seen with 2026.9.6) requires every connection to sign the server's
``connect.challenge`` nonce: ``device.id`` is the SHA-256 (hex) of the raw
public key, ``publicKey`` the raw key in base64url, ``signature`` the
base64url Ed25519 signature of::

    v3|<device id>|<client id>|<client mode>|<role>|<scopes,...>|<signedAt ms>|<token>|<nonce>|<platform>|<device family>

with ``signedAt`` the challenge's ``ts``. A new device is paired automatically
on a loopback connection; elsewhere the gateway's operator approves it once,
so a runner that talks to a remote gateway keeps its key in a file
(``--device-key`` of the launch profile).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DeviceIdentity:
    """An Ed25519 key and the device id derived from it."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self.public_key = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.device_id = hashlib.sha256(self.public_key).hexdigest()

    @classmethod
    def ephemeral(cls) -> DeviceIdentity:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_file(cls, path: Path) -> DeviceIdentity:
        """The key in ``path`` (PEM), made there (mode 0600) on first use."""
        if path.exists():
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError(f"{path} does not hold an Ed25519 private key")
            return cls(key)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        return cls(key)

    def sign_connect(
        self,
        *,
        client_id: str,
        client_mode: str,
        role: str,
        scopes: Sequence[str],
        token: str,
        nonce: str,
        signed_at: int,
        platform: str,
        device_family: str = "",
    ) -> dict[str, Any]:
        """``connect.params.device`` for this challenge."""
        payload = "|".join(
            [
                "v3",
                self.device_id,
                client_id,
                client_mode,
                role,
                ",".join(scopes),
                str(signed_at),
                token,
                nonce,
                platform.strip().lower(),
                device_family.strip().lower(),
            ]
        )
        return {
            "id": self.device_id,
            "publicKey": _b64url(self.public_key),
            "signature": _b64url(self._key.sign(payload.encode())),
            "signedAt": signed_at,
            "nonce": nonce,
        }
