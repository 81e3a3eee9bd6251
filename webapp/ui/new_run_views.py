"""The new-run page (/runs/new/): pick a preset, edit any field of the generated config form, launch."""

import functools
import importlib.util
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from trainer.config import (
    BUILTIN_CORPORA,
    BUILTIN_SFT_TRACES,
    DATASET_REF_PREFIX,
    ConfigError,
    config_json_schema,
    default_config,
)
from trainer.data.arithmetic import DIFFICULTIES
from trainer.data.datasets import GENERATORS, DatasetFormat
from trainer.data.function_calling import LEVELS as FC_LEVELS
from trainer.presets import PRESET_DESCRIPTIONS, PRESETS, PRESETS_REGISTRY, preset_config
from webapp.datasets.models import Dataset
from webapp.rewards.models import RewardConfig
from webapp.runs.models import Experiment, Run
from webapp.runs.services import experiment_create, run_create, run_metadata_errors
from webapp.ui.config_form import ConfigSection, all_fields, attach_errors, config_sections, parse_config


def _preset_configs() -> dict[str, dict[str, Any]]:
    """Every preset's full config (and the defaults), for the page's script to fill the form with."""
    configs = {name: preset_config(name).model_dump(mode="json") for name in PRESETS}
    return {"__defaults__": default_config(), **configs}


@functools.cache
def gpu_engine_missing() -> str:
    """What this machine lacks for the presets that need a GPU (Preset.needs_gpu: engine 'vllm'), in the
    words of the trainer's check that refuses such a run as it starts (trainer.loop.setup's
    check_vllm_available, which the webapp may not import: tests/webapp/test_ui_new_run_gpu.py holds the
    two to the same answer); '' when it lacks nothing. Asked once per process, and torch is imported
    only where vllm is installed."""
    if importlib.util.find_spec("vllm") is None:
        return "the vllm package is not installed (make gpu-deps)"
    import torch

    return "" if torch.cuda.is_available() else "no CUDA GPU is visible"


def _preset_groups() -> list[dict[str, Any]]:
    """The preset menu's groups: the presets that run on a CPU, then those that need a GPU and vLLM
    (trainer.presets' own `needs_gpu`), each in the registry's order."""
    missing = gpu_engine_missing()
    groups = [
        {"label": "Runs on a CPU (this machine)", "gpu": False, "presets": []},
        {
            "label": "Needs a GPU and vLLM" + (" (not on this machine)" if missing else ""),
            "gpu": True,
            "presets": [],
        },
    ]
    for name, preset in PRESETS_REGISTRY.items():
        groups[1 if preset.needs_gpu else 0]["presets"].append(
            {"name": name, "description": PRESET_DESCRIPTIONS.get(name, ""), "gpu": preset.needs_gpu}
        )
    return [group for group in groups if group["presets"]]


def _default_names(user) -> dict[str, str]:
    """A name for a run of each preset ('' for the defaults): '<preset>-<YYYY-MM-DD-HHMM>', with '-2', '-3'
    ... where the user already has a run of that name, so that Launch works as soon as a preset is chosen."""
    stamp = timezone.localtime().strftime("%Y-%m-%d-%H%M")
    taken = set(Run.objects.filter(owner=user, name__contains=stamp).values_list("name", flat=True))
    names = {}
    for preset in ("", *PRESETS):
        base = f"{preset or 'run'}-{stamp}"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        names[preset] = name
    return names


def dataset_choices(user) -> tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]:
    """What the dataset fields offer: (problems for data.train_dataset and data.val_dataset, SFT traces
    for sft.dataset, retrieval corpora for tools.search_corpus). The arithmetic generator's levels, stored
    built-ins by name, the user's uploads as dataset:<id>, the trace sets tirlab generates by name, each with
    the protocol its traces are written in, and the corpora tirlab generates by name."""
    # The seeded arithmetic generator (trainer.data.arithmetic), one entry per level, 'arithmetic' itself the easy/hard
    # mix.
    problems = (
        [
            {
                "value": "arithmetic" if level == "mixed" else f"arithmetic:{level}",
                "label": f"{level} arithmetic, seeded",
            }
            for level in DIFFICULTIES
        ]
        + [
            # The seeded function-calling generator (trainer.data.function_calling): JSON calls for tool_call_json runs.
            {
                "value": "function-calling" if level == "mixed" else f"function-calling:{level}",
                "label": f"{level} function calling, seeded",
            }
            for level in FC_LEVELS
        ]
        + [
            # The other seeded generators (tool chains, swe-mini's repositories, search-mini's questions), by level.
            {"value": name if level == "mixed" else f"{name}:{level}", "label": f"{level} {name}, seeded"}
            for name, (levels, _, _) in GENERATORS.items()
            if name not in ("arithmetic", "function-calling")
            for level in levels
        ]
    )
    traces = [
        {"value": name, "label": f"{name} · {protocol} · built-in"} for name, protocol in BUILTIN_SFT_TRACES.items()
    ]
    corpora = [{"value": name, "label": f"{name} · generated corpus · built-in"} for name in BUILTIN_CORPORA]
    for dataset in Dataset.objects.visible_to(user).order_by("-builtin", "name"):
        value = dataset.name if dataset.builtin else f"{DATASET_REF_PREFIX}{dataset.pk}"
        if dataset.is_corpus:
            # Documents to search, neither problems nor traces.
            corpora.append({"value": value, "label": f"{dataset.name} · {dataset.row_count} documents (uploaded)"})
            continue
        if dataset.format == DatasetFormat.SFT_TRACES.value:
            protocol = dataset.protocol or "no tool calls"
            label = f"{dataset.name} · {protocol} · {dataset.row_count} traces"
            traces.append({"value": value, "label": label + (" · built-in" if dataset.builtin else " (uploaded)")})
        else:
            label = f"{dataset.name} · {dataset.get_format_display()} · {dataset.row_count} rows"
            problems.append({"value": value, "label": label if dataset.builtin else f"{label} (uploaded)"})
    return problems, traces, corpora


def _meta_from(data) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Name, description, experiment, tags, reward config and preset from the submitted form, and
    what run_create will refuse in them (asked now, to show with the config's errors)."""
    meta = {
        "name": data.get("name", "").strip(),
        "description": data.get("description", "").strip(),
        "experiment": data.get("experiment", ""),
        "new_experiment": data.get("new_experiment", "").strip(),
        "tags": data.get("tags", ""),
        "reward_config": data.get("reward_config", ""),
        "preset": data.get("preset", ""),
    }
    meta["tag_list"] = meta["tags"].split(",")
    return meta, run_metadata_errors(name=meta["name"], tags=meta["tag_list"], preset=meta["preset"])


def _lookup(model_objects, value: str, user, field: str, errors: dict[str, list[str]]):
    if not value:
        return None
    found = model_objects.visible_to(user).filter(pk=int(value)).first() if value.isdigit() else None
    if found is None:
        errors[field] = ["Choose one from the list."]
    return found


def _launch(request: HttpRequest, meta: dict[str, Any], config: dict, errors: dict[str, list[str]]):
    """Create the run (managed: queued for launch as a Ray job once this commits); None on errors."""
    user = request.user
    experiment = _lookup(Experiment.objects, meta["experiment"], user, "experiment", errors)
    reward_config = _lookup(RewardConfig.objects, meta["reward_config"], user, "reward_config", errors)
    if errors:
        return None
    try:
        with transaction.atomic():
            if meta["new_experiment"]:
                experiment = experiment_create(user=user, name=meta["new_experiment"])
            run, _ = run_create(
                user=user,
                name=meta["name"],
                config=config,
                experiment=experiment,
                reward_config=reward_config,
                description=meta["description"],
                tags=meta["tag_list"],
                preset=meta["preset"],
                managed=True,
            )
    except ValidationError as exc:  # the new experiment's
        errors["new_experiment"] = exc.message_dict.get("name", exc.messages)
        return None
    except ConfigError as exc:
        errors.update(exc.errors)
        return None
    return run


def _engine(sections: list[ConfigSection]) -> str:
    """The engine the form shows."""
    return next((str(field.value) for field in all_fields(sections) if field.path == "engine"), "")


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    schema = config_json_schema()
    errors: dict[str, list[str]] = {}
    default_names = _default_names(request.user)
    if request.method == "POST":
        meta, errors = _meta_from(request.POST)
        sections = config_sections(schema, default_config())
        config, config_errors = parse_config(sections, request.POST)
        if meta["reward_config"]:
            # A stored reward config replaces the reward section: its fields are not used.
            config.pop("reward", None)
            config_errors = {path: m for path, m in config_errors.items() if not path.startswith("reward.")}
        errors.update({f"config.{path}": messages for path, messages in config_errors.items()})
        run = None if errors else _launch(request, meta, config, errors)
        if run is not None:
            return redirect(f"/runs/{run.pk}/")
        status = 400
    else:
        preset = request.GET.get("preset", "")
        chosen = preset if preset in PRESETS else ""
        # A name from the start: choosing a preset and pressing Launch is enough.
        meta = {"preset": chosen, "name": default_names[chosen], "tags": "", "description": ""}
        if preset and preset not in PRESETS:
            errors["preset"] = [f"Unknown preset {preset!r}; showing the defaults."]
        values = preset_config(preset).model_dump(mode="json") if meta["preset"] else default_config()
        sections = config_sections(schema, values)
        status = 200
    problems, traces, corpora = dataset_choices(request.user)
    config_field_errors = {path.removeprefix("config."): m for path, m in errors.items() if path.startswith("config.")}
    unplaced = attach_errors(sections, config_field_errors)
    form_errors = {key: m for key, m in errors.items() if not key.startswith("config.")}
    unplaced += form_errors.pop("non_field_errors", [])
    context = {
        "meta": meta,
        "sections": sections,
        "form_errors": form_errors,
        "unplaced_errors": unplaced,
        "has_errors": bool(errors),
        "preset_groups": _preset_groups(),
        "preset_description": PRESET_DESCRIPTIONS.get(meta["preset"], ""),
        # Engine 'verl' trains on the Ray cluster's GPUs, which are checked at launch instead.
        "preset_needs_gpu": meta["preset"] in PRESETS
        and PRESETS_REGISTRY.get(meta["preset"]).needs_gpu
        and _engine(sections) != "verl",
        "gpu_missing": gpu_engine_missing(),
        "default_names": default_names,
        "preset_configs": _preset_configs(),
        "datasets": problems,
        "traces": traces,
        "corpora": corpora,
        "reward_configs": RewardConfig.objects.visible_to(request.user).order_by("-builtin", "name"),
        "experiments": Experiment.objects.visible_to(request.user).order_by("name"),
    }
    return render(request, "ui/new_run.html", context, status=status)
