from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from webapp.accounts.models import API_TOKEN_PREFIX, ApiToken
from webapp.core.tokens import hash_secret, new_secret


def api_token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """Create a token; the secret is returned here and never again."""
    secret = new_secret(API_TOKEN_PREFIX)
    token = ApiToken.objects.create(user=user, name=name, key_prefix=secret[:10], key_hash=hash_secret(secret))
    return token, secret


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_user(*, secret: str) -> tuple[AbstractBaseUser, ApiToken] | None:
    """The active user a token secret belongs to, or None."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=hash_secret(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    # Writing on every request would turn reads into writes; a minute's precision is enough.
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token
