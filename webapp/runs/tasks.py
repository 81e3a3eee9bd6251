"""Celery tasks of the run lifecycle: thin wrappers over webapp.runs.lifecycle.

Every task is safe to run twice or late: launching takes a database lock and re-reads the queue,
stopping an ended job does nothing, and reconciling only compares states.
"""

from celery import shared_task

from webapp.runs import lifecycle
from webapp.runs.models import Run


@shared_task(ignore_result=True)
def launch_queued_runs() -> list[int]:
    return lifecycle.launch_queued()


@shared_task(ignore_result=True)
def stop_run_job(run_id: int) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        lifecycle.stop_job(run)
    # A slot may have freed up.
    lifecycle.launch_queued()


@shared_task(ignore_result=True)
def reconcile_runs() -> dict[str, int]:
    return lifecycle.reconcile()
