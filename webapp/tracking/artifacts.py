"""Run artifacts through MLflow's artifact proxy API (mlflow-artifacts:), stored under the run's folder.

A run's artifact_uri is `mlflow-artifacts:/<experiment id>/<run id>/artifacts`; the client resolves it
against the tracking URI (its path prefix kept) and sends

- `PUT  …/api/2.0/mlflow-artifacts/artifacts/<exp>/<run>/artifacts/<path>` with the file as the body,
- `GET  …/api/2.0/mlflow-artifacts/artifacts/<exp>/<run>/artifacts/<path>` to download one,
- `GET  …/api/2.0/mlflow-artifacts/artifacts?path=<exp>/<run>/artifacts[/<dir>]` to list a folder,
- `DELETE …/<path>` to delete one (or a folder).

Files land in `<TIRLAB_RUNS_DIR>/<run id>/artifacts/<path>`. A path must stay inside the run's folder
(no '..', no absolute path, no empty or '.' segment). A file is at most ARTIFACT_MAX_BYTES and a run's
files RUN_ARTIFACTS_MAX_BYTES in all; larger ones are refused with INVALID_PARAMETER_VALUE, and what
was stored before stays. A file is written to a temporary name and renamed, so a reader never sees half
of one. Reading follows the runs' visibility (owner, staff); writing is for the owner of an MLflow run.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F

from webapp.runs.models import Run
from webapp.tracking.errors import invalid, not_found
from webapp.tracking.models import MlflowRun
from webapp.tracking.runs import readable_run, writable_run
from webapp.tracking.storage import artifact_root

CHUNK = 1 << 20


def _safe_relative(path: str) -> str:
    """`path` as a normalised relative POSIX path inside a run's folder ('' for the folder itself)."""
    if "\\" in path or "\0" in path:
        raise invalid(f"Invalid artifact path {path!r}.")
    path = path.strip("/")
    if not path:
        return ""
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise invalid(f"Invalid artifact path {path!r}: it must stay inside the run's artifacts.")
    return posixpath.join(*parts)


def split_path(path: str) -> tuple[str, str, str]:
    """('<experiment id>', '<run id>', '<path inside the run's artifacts>') of a proxied artifact path."""
    parts = path.strip("/").split("/", 3)
    if len(parts) < 3 or parts[2] != "artifacts":
        raise not_found(f"No artifact location {path!r}: paths are <experiment id>/<run id>/artifacts/<path>.")
    return parts[0], parts[1], _safe_relative(parts[3] if len(parts) == 4 else "")


def _file(run: Run, relative: str) -> Path:
    return artifact_root(run) / relative if relative else artifact_root(run)


def readable_artifact(user, path: str) -> tuple[Run, str, Path]:
    _, run_id, relative = split_path(path)
    run = readable_run(user, run_id)
    return run, relative, _file(run, relative)


def store_artifact(user, path: str, stream, length: int | None) -> tuple[Run, str]:
    """Write the body of a PUT as the artifact at `path`; returns the run and the relative path.

    The body is received into a temporary file first, outside any transaction, so that a long upload
    holds neither a database connection nor the run's lock (its trainer's metrics keep arriving)."""
    _, run_id, relative = split_path(path)
    if not relative:
        raise invalid("An artifact needs a file name after <experiment id>/<run id>/artifacts/.")
    limit = settings.ARTIFACT_MAX_BYTES
    if length is not None and length > limit:
        raise invalid(f"Artifact {relative!r} is {length} bytes; tirlab stores files of at most {limit} bytes.")
    with transaction.atomic():
        run = writable_run(user, run_id)  # refused before a byte is stored
    target = _file(run, relative)
    if target.is_dir():
        raise invalid(f"Artifact path {relative!r} is a folder.")
    target.parent.mkdir(parents=True, exist_ok=True)
    written, temporary = _receive(stream, target.parent, limit, relative)
    try:
        with transaction.atomic():
            run = writable_run(user, run_id)
            old_size = target.stat().st_size if target.exists() else 0
            row = MlflowRun.objects.select_for_update().get(run=run)
            total = row.artifact_bytes - old_size + written
            budget = settings.RUN_ARTIFACTS_MAX_BYTES
            if total > budget:
                raise invalid(
                    f"Run {run.pk}'s artifacts would take {total} bytes; tirlab keeps at most {budget} bytes per run."
                )
            MlflowRun.objects.filter(pk=row.pk).update(artifact_bytes=F("artifact_bytes") - old_size + written)
            os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return run, relative


def _receive(stream, folder: Path, limit: int, relative: str) -> tuple[int, Path]:
    handle = tempfile.NamedTemporaryFile(dir=folder, prefix=".upload-", delete=False)
    temporary, written = Path(handle.name), 0
    try:
        with handle:
            while chunk := stream.read(CHUNK):
                written += len(chunk)
                if written > limit:
                    raise invalid(f"Artifact {relative!r} is over {limit} bytes, the most tirlab stores per file.")
                handle.write(chunk)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return written, temporary


def list_artifacts(user, path: str) -> list[dict]:
    """The entries of a run's artifact folder, named relative to it, as MLflow lists them."""
    run, relative, folder = readable_artifact(user, path)
    if folder.is_file():
        return [{"path": posixpath.basename(relative), "is_dir": False, "file_size": folder.stat().st_size}]
    if not folder.is_dir():
        return []
    entries = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".upload-"):
            continue
        if entry.is_dir():
            entries.append({"path": entry.name, "is_dir": True})
        else:
            entries.append({"path": entry.name, "is_dir": False, "file_size": entry.stat().st_size})
    return entries


def delete_artifact(user, path: str) -> None:
    _, run_id, relative = split_path(path)
    with transaction.atomic():
        run = writable_run(user, run_id)
        target = _file(run, relative)
        if not target.exists():
            raise not_found(f"No artifact {relative!r} in run {run_id}.")
        freed = (
            sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
            if target.is_dir()
            else target.stat().st_size
        )
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
        MlflowRun.objects.filter(run=run).update(artifact_bytes=F("artifact_bytes") - freed)
