from django.urls import path
from rest_framework.routers import DefaultRouter

from webapp.accounts.api.views import ApiTokenViewSet
from webapp.datasets.api.views import CorpusRetrieveView, DatasetViewSet
from webapp.rewards.api.views import RewardCatalogView, RewardConfigViewSet
from webapp.runs.api.ingest_views import RunIngestView
from webapp.runs.api.results import ResultsView
from webapp.runs.api.views import ExperimentViewSet, RunConfigSchemaView, RunViewSet


class OptionalSlashRouter(DefaultRouter):
    """Both `/runs/1/metrics` (as documented) and `/runs/1/metrics/` resolve."""

    def __init__(self) -> None:
        super().__init__()
        self.trailing_slash = "/?"


router = OptionalSlashRouter()
router.register("experiments", ExperimentViewSet, basename="experiment")
router.register("datasets", DatasetViewSet, basename="dataset")
router.register("reward-configs", RewardConfigViewSet, basename="rewardconfig")
router.register("runs", RunViewSet, basename="run")
router.register("tokens", ApiTokenViewSet, basename="apitoken")

urlpatterns = [
    path("runs/<int:pk>/ingest", RunIngestView.as_view(), name="run-ingest"),
    path("datasets/<int:pk>/retrieve", CorpusRetrieveView.as_view(), name="dataset-retrieve"),
    path("rewards/", RewardCatalogView.as_view(), name="reward-catalog"),
    path("run-config/schema/", RunConfigSchemaView.as_view(), name="run-config-schema"),
    path("results/", ResultsView.as_view(), name="api-results"),
    *router.urls,
]
