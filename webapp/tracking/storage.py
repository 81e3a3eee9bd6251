"""Where a run's artifacts live on disk: `<TIRLAB_RUNS_DIR>/<run id>/artifacts/`."""

from pathlib import Path

from django.conf import settings

from webapp.runs.models import Run


def artifact_root(run: Run) -> Path:
    return Path(settings.RUNS_DIR) / str(run.pk) / "artifacts"
