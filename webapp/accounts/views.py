"""The API tokens page: create a personal token (its secret shown once) and revoke one."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from webapp.accounts.models import ApiToken
from webapp.accounts.services import api_token_create, api_token_revoke


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    new_secret = None
    if request.method == "POST":
        if "revoke" in request.POST:
            token = get_object_or_404(ApiToken, pk=request.POST["revoke"], user=request.user)
            api_token_revoke(token=token)
            messages.info(request, f"Token {token.name} revoked.")
            return redirect("tokens")
        name = request.POST.get("name", "").strip()
        if name:
            _, new_secret = api_token_create(user=request.user, name=name)
        else:
            messages.error(request, "Give the token a name.")
    return render(
        request,
        "tokens.html",
        {"tokens": ApiToken.objects.filter(user=request.user), "new_secret": new_secret},
    )
