"""Secrets shown once and stored only as a hash (API tokens, run ingest tokens)."""

import hashlib
import secrets


def new_secret(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(32)}"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
