"""Writes to experiments and runs: creation, metadata, forks, resumes, cancel, archive, delete.

The pages, the API and the MLflow API call these with what the user sent; every rule about what may
be written (names, tags, presets, who may use which experiment, which runs may go) is here, once
(webapp.runs.external creates the runs other trainers report by the same rules). A refusal is a
ConfigError for a run (its field errors sit beside the config's), a ValidationError for an
experiment (a taken name has the code "unique"), or a Conflict (a run's state forbids it). Status
changes are webapp.runs.transitions'; the Ray side of a run is webapp.runs.tasks', queued after the
commit.
"""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from trainer.config import DATASET_REF_PREFIX, ConfigError, merge_overrides, validate_config
from trainer.data.datasets import dataset_misuse
from trainer.presets import PRESETS, preset_config
from webapp.core.errors import Conflict
from webapp.core.tokens import hash_secret, new_secret
from webapp.datasets.models import Dataset
from webapp.rewards.models import RewardConfig
from webapp.runs.events import publish_run_events
from webapp.runs.models import ACTIVE_STATUSES, RUN_TOKEN_PREFIX, Experiment, Run, RunStatus
from webapp.runs.tasks import launch_queued_runs, stop_run_job
from webapp.runs.transitions import run_log, run_transition
from webapp.runs.verl_runs import check_verl_config

NAME_MAX = Run._meta.get_field("name").max_length
TAG_MAX = Run._meta.get_field("tags").base_field.max_length


def _name_errors(name: str, *, missing: str) -> list[str]:
    if not name:
        return [missing]
    if len(name) > NAME_MAX:
        return [f"At most {NAME_MAX} characters."]
    return []


def _tags(tags: list[str] | None) -> list[str]:
    return [tag.strip() for tag in tags or [] if tag.strip()]


def _tag_errors(tags: list[str]) -> list[str]:
    return [f"Each tag has at most {TAG_MAX} characters."] if any(len(tag) > TAG_MAX for tag in tags) else []


def run_metadata_errors(
    *, name: str, tags: list[str] | None = None, preset: str = "", parent: Run | None = None
) -> dict[str, list[str]]:
    """What is wrong with a run's name, tags and preset, by field (empty when nothing is).

    A preset must be one of trainer.presets, except that a fork or a resume keeps its parent's."""
    errors = {
        "name": _name_errors(name.strip(), missing="Give the run a name."),
        "tags": _tag_errors(_tags(tags)),
    }
    if preset and preset not in PRESETS and (parent is None or preset != parent.preset):
        errors["preset"] = [f"Unknown preset {preset!r}; choose one of: {', '.join(PRESETS)}."]
    return {field: messages for field, messages in errors.items() if messages}


def _resolve_dataset(
    ref: str | None, *, user: AbstractBaseUser, field: str, sources: dict, traces_protocol: str | None = None
) -> str | None:
    """Replace a stored dataset's reference by its file path; the snapshot must not change under the run.

    SFT traces are refused where problems for RL are read and the other way round (trainer.data.datasets);
    `traces_protocol`, for sft.dataset when SFT runs, is the protocol stored traces must be written in
    (trainer.config checks the built-in trace sets' alike)."""
    if ref is None:
        return None
    if ref.startswith(DATASET_REF_PREFIX):
        key = ref.removeprefix(DATASET_REF_PREFIX)
        dataset = Dataset.objects.visible_to(user).filter(pk=int(key)).first() if key.isdigit() else None
        if dataset is None:
            raise ConfigError({field: [f"no dataset {ref!r} that you can use"]})
    else:
        dataset = Dataset.objects.filter(builtin=True, name=ref).first()
    if dataset is not None and dataset.is_corpus:
        raise ConfigError(
            {
                field: [
                    f"'{ref}' ({dataset.name}) is a retrieval corpus, not a dataset of problems; "
                    "name it as tools.search_corpus of a run with tools.environment 'search'"
                ]
            }
        )
    misuse = dataset_misuse(ref, sft=field == "sft.dataset", format=dataset.format if dataset else None)
    if misuse:
        raise ConfigError({field: [misuse]})
    if dataset is None:
        return ref
    if traces_protocol and dataset.protocol and dataset.protocol != traces_protocol:
        raise ConfigError(
            {
                field: [
                    f"'{ref}' ({dataset.name}) is written in the '{dataset.protocol}' protocol but tools.protocol "
                    f"is '{traces_protocol}': the model would learn calls the rollout does not run"
                ]
            }
        )
    sources[field] = _source(dataset)
    return dataset.file_path


def _source(dataset: Dataset) -> dict:
    """What a run records of a stored dataset it names (its `sources`)."""
    return {
        "id": dataset.pk,
        "name": dataset.name,
        "format": dataset.format,
        "checksum": dataset.checksum,
        "row_count": dataset.row_count,
    }


def _resolve_corpus(ref: str | None, *, user: AbstractBaseUser, sources: dict) -> str | None:
    """Replace a stored corpus's reference (tools.search_corpus `dataset:<id>`) by its file path; a built-in
    corpus name or a file path is the trainer's to read (trainer.data.corpora)."""
    field = "tools.search_corpus"
    if ref is None or not ref.startswith(DATASET_REF_PREFIX):
        return ref
    key = ref.removeprefix(DATASET_REF_PREFIX)
    dataset = Dataset.objects.visible_to(user).filter(pk=int(key)).first() if key.isdigit() else None
    if dataset is None:
        raise ConfigError({field: [f"no corpus {ref!r} that you can use"]})
    if not dataset.is_corpus:
        raise ConfigError(
            {
                field: [
                    f"'{ref}' ({dataset.name}) is a {dataset.get_format_display()} dataset, not a retrieval corpus; "
                    'upload a Search-R1 jsonl corpus ({"id", "contents"} a line) to search it'
                ]
            }
        )
    sources[field] = _source(dataset)
    return dataset.file_path


def resolve_config(
    *, config: dict[str, Any], user: AbstractBaseUser, reward_config: RewardConfig | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate a run config and resolve its references: (self-contained snapshot, where they came from)."""
    data = dict(config)
    if reward_config is not None:
        data["reward"] = {"name": reward_config.reward, "params": reward_config.params}
    sources: dict[str, Any] = {}
    try:
        resolved = validate_config(data).model_dump(mode="json")
        for key in ("train_dataset", "val_dataset"):
            resolved["data"][key] = _resolve_dataset(
                resolved["data"][key], user=user, field=f"data.{key}", sources=sources
            )
        resolved["data"]["extra_val_datasets"] = [
            _resolve_dataset(ref, user=user, field=f"data.extra_val_datasets.{number}", sources=sources)
            for number, ref in enumerate(resolved["data"]["extra_val_datasets"])
        ]
        resolved["tools"]["search_corpus"] = _resolve_corpus(
            resolved["tools"].get("search_corpus"), user=user, sources=sources
        )
        if resolved["sft"].get("dataset"):
            resolved["sft"]["dataset"] = _resolve_dataset(
                resolved["sft"]["dataset"],
                user=user,
                field="sft.dataset",
                sources=sources,
                traces_protocol=resolved["tools"]["protocol"] if resolved["sft"]["enabled"] else None,
            )
    except ConfigError as exc:
        # Callers send the config under "config"; name the fields the way they sent them.
        raise ConfigError({f"config.{path}": messages for path, messages in exc.errors.items()}) from None
    if reward_config is not None:
        sources["reward"] = {"id": reward_config.pk, "name": reward_config.name}
    return resolved, sources


def experiment_errors_for_run(experiment: Experiment | None, user: AbstractBaseUser) -> dict[str, list[str]]:
    """A run may go into an experiment its user may see (their own; any, for staff)."""
    if experiment is not None and not Experiment.objects.visible_to(user).filter(pk=experiment.pk).exists():
        return {"experiment": ["no such experiment"]}
    return {}


@transaction.atomic
def run_create(
    *,
    user: AbstractBaseUser,
    name: str,
    config: dict[str, Any],
    experiment: Experiment | None = None,
    reward_config: RewardConfig | None = None,
    description: str = "",
    tags: list[str] | None = None,
    preset: str = "",
    parent: Run | None = None,
    parent_relation: str = "",
    managed: bool = True,
    resume_from: str = "",
    evaluated_step: int | None = None,
    evaluated_checkpoint: str = "",
) -> tuple[Run, str]:
    """Create a queued run from a config; returns the run and its ingest token.

    A managed run is launched by tirlab as a Ray job once it commits and capacity allows (its
    launcher mints the token the trainer uses, so the token returned here is "" ). An unmanaged run
    is for a trainer you start yourself: the token returned (shown once) is the one it reports with.
    Every problem with the metadata and the config is reported at once, as one ConfigError.
    """
    errors = run_metadata_errors(name=name, tags=tags, preset=preset, parent=parent)
    errors.update(experiment_errors_for_run(experiment, user))
    try:
        snapshot, sources = resolve_config(config=config, user=user, reward_config=reward_config)
    except ConfigError as exc:
        raise ConfigError(errors | exc.errors) from None
    if errors:
        raise ConfigError(errors)
    if snapshot["engine"] == "verl":
        # Refused now, by field, rather than as a failed job: tirlab's translation, the cluster's GPUs, verl's check.
        check_verl_config(snapshot, managed=managed)
    token = "" if managed else new_secret(RUN_TOKEN_PREFIX)
    run = Run.objects.create(
        name=name.strip(),
        description=description,
        tags=_tags(tags),
        experiment=experiment,
        owner=user,
        preset=preset,
        config=snapshot,
        sources=sources,
        token_hash=hash_secret(token) if token else "",
        parent=parent,
        parent_relation=parent_relation,
        managed=managed,
        resume_from=resume_from,
        evaluated_step=evaluated_step,
        evaluated_checkpoint=evaluated_checkpoint,
    )
    run_log(run=run, message=f"run created ({'from ' + preset if preset else 'custom config'})")
    publish_run_events(run, [], list_event="run.created")
    if managed:
        transaction.on_commit(_queue_launch)
    return run, token


def _queue_launch() -> None:
    launch_queued_runs.delay()


def config_with_overrides(config: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` deep-merged over a whole `config`; a reward of another name replaces the reward section
    (another reward's parameters mean nothing to the new one)."""
    merged = merge_overrides(config, overrides)
    reward = overrides.get("reward")
    if isinstance(reward, dict) and reward.get("name") not in (None, config["reward"]["name"]):
        merged["reward"] = {"name": reward["name"], "params": reward.get("params", {})}
    return merged


def preset_run_config(preset: str, config: dict[str, Any]) -> dict[str, Any]:
    """A run's config from a preset: the preset's config with `config` deep-merged over it, as the new-run
    page starts its form from the preset. An unknown preset leaves `config` as it is (run_create refuses
    the preset by name)."""
    if preset not in PRESETS:
        return config
    return config_with_overrides(preset_config(preset).model_dump(mode="json"), config)


def run_fork(
    *, run: Run, user: AbstractBaseUser, overrides: dict[str, Any] | None = None, name: str | None = None
) -> tuple[Run, str]:
    """A new queued run with the parent's config and `overrides` deep-merged over it."""
    return run_create(
        user=user,
        name=name or f"{run.name} (fork)",
        config=config_with_overrides(run.config, overrides or {}),
        experiment=run.experiment,
        description=run.description,
        tags=list(run.tags),
        preset=run.preset,
        parent=run,
        parent_relation="fork",
    )


def run_cancel(*, run: Run) -> Run:
    """Cancel a run that has not finished; a managed run's Ray job is stopped once that commits.

    A queued run is never launched afterwards: the launcher only takes runs still queued."""
    run = run_transition(run=run, status=RunStatus.CANCELLED, reason="cancelled by user")
    if run.managed and run.ray_job_id:
        transaction.on_commit(lambda: _queue_stop(run.pk))
    return run


def _queue_stop(run_id: int) -> None:
    stop_run_job.delay(run_id)


def run_resume(*, run: Run, user: AbstractBaseUser, max_steps: int | None = None) -> tuple[Run, str]:
    """A new run that continues `run` from its last checkpoint: same config, its steps continue."""
    if run.status in ACTIVE_STATUSES:
        raise ConfigError({"non_field_errors": [f"run {run.pk} is {run.status}; resume it once it has ended"]})
    if not run.checkpoint_path:
        raise ConfigError({"non_field_errors": [f"run {run.pk} has no checkpoint to resume from"]})
    config = run.config if max_steps is None else merge_overrides(run.config, {"schedule": {"max_steps": max_steps}})
    return run_create(
        user=user,
        name=f"{run.name} (resumed)",
        config=config,
        experiment=run.experiment,
        description=run.description,
        tags=list(run.tags),
        preset=run.preset,
        parent=run,
        parent_relation="resume",
        resume_from=run.checkpoint_path,
    )


def runs_set_archived(*, runs: list[Run], archived: bool) -> int:
    """Archive runs (hidden from the runs list unless asked for) or bring them back; returns how many changed."""
    changed = 0
    with transaction.atomic():
        for run in runs:
            if run.archived != archived:
                run.archived = archived
                run.save(update_fields=["archived"])
                publish_run_events(run, [], list_event="run.updated")
                changed += 1
    return changed


def run_update(
    *,
    run: Run,
    name: str | None = None,
    description: str | None = None,
    tags: list[str] | None = None,
    archived: bool | None = None,
) -> Run:
    """Change a run's name, description, tags or archived flag (its config and status never change here)."""
    errors = run_metadata_errors(name=run.name if name is None else name, tags=tags)
    if errors:
        raise ConfigError(errors)
    if name is not None:
        run.name = name.strip()
    if description is not None:
        run.description = description
    if tags is not None:
        run.tags = _tags(tags)
    if archived is not None:
        run.archived = archived
    with transaction.atomic():
        run.save(update_fields=["name", "description", "tags", "archived"])
        publish_run_events(run, [], list_event="run.updated")
    return run


def run_delete(*, run: Run) -> None:
    """Delete a finished run with its metrics, trajectories and logs; an active one must be cancelled first."""
    if not run.is_finished:
        raise Conflict(f"run is {run.status}; cancel it first")
    run.delete()


def _name_taken(name: str) -> ValidationError:
    return ValidationError(
        "There is already an experiment named %(name)r; choose it from the list.", code="unique", params={"name": name}
    )


def _experiment_errors(
    *, owner: AbstractBaseUser, name: str, tags: list[str], experiment: Experiment | None = None
) -> dict[str, list]:
    errors: dict[str, list] = {
        "name": _name_errors(name, missing="Give the experiment a name."),
        "tags": _tag_errors(tags),
    }
    clash = Experiment.objects.filter(owner=owner, name=name)
    if experiment is not None:
        clash = clash.exclude(pk=experiment.pk)
    if not errors["name"] and clash.exists():
        errors["name"] = [_name_taken(name)]
    return {field: messages for field, messages in errors.items() if messages}


def _saved_unless_taken(experiment: Experiment, *, create: bool) -> Experiment:
    """Save, refusing as the check does when another request took the name since it looked
    (two processes of one training job calling MLflow's set_experiment at once, say): the
    owner-and-name constraint catches it, in a savepoint so the caller's transaction goes on."""
    try:
        with transaction.atomic():
            experiment.save(force_insert=create)
    except IntegrityError:
        raise ValidationError({"name": [_name_taken(experiment.name)]}) from None
    return experiment


def experiment_create(
    *, user: AbstractBaseUser, name: str, description: str = "", tags: list[str] | None = None
) -> Experiment:
    """A new experiment of `user`'s; names are unique per owner."""
    name, tags = name.strip(), _tags(tags)
    errors = _experiment_errors(owner=user, name=name, tags=tags)
    if errors:
        raise ValidationError(errors)
    experiment = Experiment(owner=user, name=name, description=description, tags=tags)
    return _saved_unless_taken(experiment, create=True)


def experiment_update(
    *, experiment: Experiment, name: str | None = None, description: str | None = None, tags: list[str] | None = None
) -> Experiment:
    """Change the given fields; the name stays unique among its owner's experiments."""
    name = experiment.name if name is None else name.strip()
    tags = experiment.tags if tags is None else _tags(tags)
    errors = _experiment_errors(owner=experiment.owner, name=name, tags=tags, experiment=experiment)
    if errors:
        raise ValidationError(errors)
    experiment.name, experiment.tags = name, tags
    if description is not None:
        experiment.description = description
    return _saved_unless_taken(experiment, create=False)


def experiment_delete(*, experiment: Experiment) -> None:
    """Delete an experiment and its runs, once none of them is active (as `run_delete` asks of one run)."""
    active = list(experiment.runs.filter(status__in=ACTIVE_STATUSES).values_list("pk", flat=True))
    if active:
        raise Conflict(f"runs {', '.join(f'#{pk}' for pk in active)} of this experiment are active; cancel them first")
    experiment.delete()
