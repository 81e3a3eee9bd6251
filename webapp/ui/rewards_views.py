"""Reward configs page: the stored configs, the registered rewards with their parameters, a form
generated from a reward's schema to try it on a pasted completion or save it as a config."""

import dataclasses

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from trainer.rewards import (
    REWARD_DESCRIPTIONS,
    REWARD_NAMES,
    RewardParamsError,
    RewardState,
    reward_defaults,
    score_group,
    validate_reward_params,
)
from webapp.core.permissions import may_change
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import reward_config_create, reward_config_delete
from webapp.ui.reward_examples import reward_example
from webapp.ui.reward_forms import ParamField, attach_errors, param_fields, params_from_post

DEFAULT_REWARD = "torl"
# Scores are shown to this many decimals: sums of floats print as 1.7999999999999998 otherwise.
SHOWN_DECIMALS = 3


def _configs(user) -> list[RewardConfig]:
    configs = list(RewardConfig.objects.visible_to(user).select_related("owner").order_by("-builtin", "name"))
    for config in configs:
        config.may_delete = may_change(user, config)
    return configs


def _catalog() -> list[dict]:
    defaults = reward_defaults()
    return [
        {
            "name": name,
            "description": REWARD_DESCRIPTIONS[name],
            "fields": param_fields(name, defaults[name]),
        }
        for name in REWARD_NAMES
    ]


def _text(post, name: str) -> str:
    # Browsers send a textarea's line breaks as CRLF; completions are scored as the model wrote them.
    return post.get(name, "").replace("\r\n", "\n")


def _step(post, errors: list[str]) -> int:
    text = post.get("step", "").strip() or "0"
    if not text.isdigit():
        errors.append("The training step must be a whole number, 0 or more.")
        return 0
    return int(text)


def _rounded(value):
    """A result's numbers rounded for display (nested in lists and dicts too); everything else as it is."""
    if isinstance(value, float):
        return round(value, SHOWN_DECIMALS)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


def _shown(result):
    """A RewardResult (trainer.rewards' score) as the page shows it: total, components and details rounded."""
    if result is None:
        return None
    return dataclasses.replace(
        result,
        total=_rounded(result.total),
        components=_rounded(dict(result.components)),
        details=_rounded(result.details),
    )


def _try(reward: str, params: dict, completion: str, ground_truth: str, step: int, errors: list[str]):
    if not completion.strip():
        errors.append("Paste a completion to score.")
    if not ground_truth.strip():
        errors.append("Give the ground truth to score against.")
    if errors:
        return None
    try:
        # A state of its own: OTC-GRPO's global minimum must not carry over between tries.
        result = score_group(reward, [completion], ground_truth.strip(), params=params, step=step, state=RewardState())[
            0
        ]
    except ValueError as exc:  # a ground truth the reward cannot read, e.g. tool calls that are not JSON
        errors.append(f"Could not score: {exc}")
        return None
    return result


def _save(
    request: HttpRequest, reward: str, params: dict, fields: list[ParamField], errors: list[str]
) -> RewardConfig | None:
    try:
        return reward_config_create(
            user=request.user,
            name=request.POST.get("name", ""),
            reward=reward,
            params=params,
            description=request.POST.get("description", ""),
        )
    except ValidationError as exc:
        by_field = exc.message_dict
        errors.extend(by_field.pop("name", []))
        errors.extend(attach_errors(fields, by_field))
        return None


@login_required
def reward_list(request: HttpRequest) -> HttpResponse:
    source = request.POST if request.method == "POST" else request.GET
    reward = source.get("reward", DEFAULT_REWARD)
    if reward not in REWARD_NAMES:
        reward = DEFAULT_REWARD
    errors: list[str] = []
    result = None
    status = 200
    if request.method == "POST":
        params, fields = params_from_post(reward, request.POST)
        if not any(spec.errors for spec in fields):
            try:
                params = validate_reward_params(reward, params)
            except RewardParamsError as exc:
                errors.extend(attach_errors(fields, exc.errors))
        if any(spec.errors for spec in fields) or errors:
            errors.insert(0, "Some parameters are not valid; see the fields below.")
        elif request.POST.get("action") == "save":
            config = _save(request, reward, params, fields, errors)
            if config is not None:
                messages.success(request, f"Saved reward config {config.name}.")
                return redirect(f"{reward_url(reward)}#configs")
        else:
            completion, ground_truth = _text(request.POST, "completion"), _text(request.POST, "ground_truth")
            result = _try(reward, params, completion, ground_truth, _step(request.POST, errors), errors)
        status = 400 if errors else 200
    else:
        config = None
        if request.GET.get("config", "").isdigit():
            config = RewardConfig.objects.visible_to(request.user).filter(pk=int(request.GET["config"])).first()
        if config is not None and config.reward in REWARD_NAMES:
            reward = config.reward
        fields = param_fields(reward, config.params if config is not None else reward_defaults()[reward])
    example = reward_example(reward)
    form = request.POST
    if request.method == "GET" and example is not None and request.GET.get("example"):
        # "Fill in an example" (a link, so it works without JavaScript): the reward's worked example.
        form = {"completion": example.completion, "ground_truth": example.ground_truth}
    return render(
        request,
        "ui/rewards.html",
        {
            "configs": _configs(request.user),
            "catalog": _catalog(),
            "reward": reward,
            "reward_names": REWARD_NAMES,
            "description": REWARD_DESCRIPTIONS[reward],
            "fields": fields,
            "errors": errors,
            "result": _shown(result),
            "example": example,
            "form": form,
        },
        status=status,
    )


def reward_url(reward: str) -> str:
    return f"{reverse('rewards')}?reward={reward}"


@login_required
@require_POST
def reward_config_remove(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_object_or_404(RewardConfig.objects.visible_to(request.user), pk=pk)
    reward_config_delete(config=config, user=request.user)
    messages.success(request, f"Deleted reward config {config.name}.")
    return redirect(f"{reverse('rewards')}#configs")
