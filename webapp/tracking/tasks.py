"""Celery task of the MLflow API: runs whose trainer fell silent become `lost`.

A process that is killed never calls end_run, so an MLflow run that has not been written to for
EXTERNAL_HEARTBEAT_TIMEOUT_S is marked lost (its trainer logs every step or every few, the default
allows for long evaluations between them). It runs again when its trainer writes again.
"""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from webapp.runs.models import Run, RunStatus
from webapp.runs.transitions import IllegalTransition, run_transition


def lose_silent_runs() -> list[int]:
    """Mark lost every running MLflow run silent for longer than the timeout; returns their ids."""
    timeout = settings.EXTERNAL_HEARTBEAT_TIMEOUT_S
    cutoff = timezone.now() - timedelta(seconds=timeout)
    silent = Run.objects.filter(source="mlflow", status=RunStatus.RUNNING, heartbeat_at__lt=cutoff)
    lost = []
    for run in silent:
        try:
            run_transition(run=run, status=RunStatus.LOST, reason=f"its trainer logged nothing for {timeout} s")
        except IllegalTransition:
            continue  # it ended or reported meanwhile
        lost.append(run.pk)
    return lost


@shared_task(ignore_result=True)
def lose_silent_mlflow_runs() -> list[int]:
    return lose_silent_runs()
