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
