"""The MLflow-compatible API, mounted under /mlflow/: a client with MLFLOW_TRACKING_URI=http://<tirlab>/mlflow
sends `/mlflow/api/2.0/mlflow/…` and `/mlflow/api/2.0/mlflow-artifacts/…` (it keeps the path prefix)."""

from django.urls import path, re_path

from webapp.tracking import views

urlpatterns = [
    path("api/2.0/mlflow-artifacts/artifacts", views.artifact, name="mlflow-artifacts-list"),
    re_path(r"^api/2\.0/mlflow-artifacts/artifacts/(?P<path>.+)$", views.artifact, name="mlflow-artifact"),
    re_path(r"^api/2\.0/mlflow/(?P<endpoint>.+)$", views.api, name="mlflow-api"),
    re_path(r"^api/3\.0/mlflow/(?P<endpoint>.+)$", views.api_v3, name="mlflow-api-v3"),
]
