"""The real MLflow client (mlflow-skinny) pointed at a live tirlab, as a researcher points theirs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from webapp.accounts.services import api_token_create


def api_token(user) -> str:
    return api_token_create(user=user, name="mlflow")[1]


@contextmanager
def mlflow_client_env(
    monkeypatch: pytest.MonkeyPatch, server_url: str, *, token: str = "", basic: tuple[str, str] | None = None
) -> Iterator[str]:
    """MLFLOW_TRACKING_URI at tirlab's /mlflow prefix, with a token or a login; no retries, so a wrong
    answer fails the test at once instead of being retried for minutes. Yields the tracking URI."""
    import mlflow

    uri = f"{server_url}/mlflow"
    for name in (
        "MLFLOW_TRACKING_TOKEN",
        "MLFLOW_TRACKING_USERNAME",
        "MLFLOW_TRACKING_PASSWORD",
        "MLFLOW_RUN_ID",
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_EXPERIMENT_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    if token:
        monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", token)
    if basic:
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", basic[0])
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", basic[1])
    # set_experiment keeps the experiment in a global and in os.environ; a test starts without one.
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", "")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID")
    mlflow.set_tracking_uri(uri)
    try:
        yield uri
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(None)
