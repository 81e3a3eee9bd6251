import base64

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from webapp.accounts.models import API_TOKEN_PREFIX
from webapp.accounts.services import api_token_user
from webapp.core.tokens import bearer_token


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer tlp_…` personal API tokens."""

    def authenticate(self, request: Request):
        secret = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if secret is None or not secret.startswith(f"{API_TOKEN_PREFIX}_"):
            return None
        found = api_token_user(secret=secret)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        return found

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiTokenBasicAuthentication(authentication.BaseAuthentication):
    """HTTP Basic auth whose password is a personal API token (the login is not checked): what `requests` sends
    from a ~/.netrc entry, so request code that sets no header of its own (verl's and SkyRL-gym's search clients)
    can reach an endpoint that offers it. Only the corpus /retrieve endpoint does (docs/retrieval.md)."""

    def authenticate(self, request: Request):
        scheme, _, encoded = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "basic" or not encoded.strip():
            return None
        try:
            _, _, secret = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            raise exceptions.AuthenticationFailed("Malformed Basic credentials.") from None
        if not secret.startswith(f"{API_TOKEN_PREFIX}_"):
            raise exceptions.AuthenticationFailed("The Basic password must be an API token.")
        found = api_token_user(secret=secret)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        return found

    def authenticate_header(self, request: Request) -> str:
        return 'Basic realm="api"'
