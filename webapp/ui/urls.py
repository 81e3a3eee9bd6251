"""Routes of the browser pages. Each page module adds its own block below."""

urlpatterns: list = []

# Rollouts of a run (webapp/ui/rollout_views.py).
from django.urls import path  # noqa: E402

from webapp.ui import rollout_views  # noqa: E402

urlpatterns += [
    path("runs/<int:run_id>/rollouts/", rollout_views.rollouts, name="run-rollouts"),
    path("runs/<int:run_id>/rollouts/latest", rollout_views.rollouts_latest, name="run-rollouts-latest"),
]

# Datasets and reward configs (webapp/ui/datasets_views.py, webapp/ui/rewards_views.py).
from webapp.ui import datasets_views, rewards_views  # noqa: E402

urlpatterns += [
    path("datasets/", datasets_views.dataset_list, name="datasets"),
    path("datasets/<int:pk>/", datasets_views.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/delete", datasets_views.dataset_remove, name="dataset-delete"),
    path("rewards/", rewards_views.reward_list, name="rewards"),
    path("rewards/<int:pk>/delete", rewards_views.reward_config_remove, name="reward-config-delete"),
]

# The runs page and the new-run form (webapp/ui/runs_views.py, webapp/ui/new_run_views.py).
from webapp.ui import new_run_views, runs_views  # noqa: E402

urlpatterns += [
    path("runs/", runs_views.runs_list, name="runs"),
    path("runs/bulk", runs_views.runs_bulk, name="runs-bulk"),
    path("runs/new/", new_run_views.run_new, name="run-new"),
]

# The run page and the compare page (webapp/ui/run_views.py, webapp/ui/compare_views.py).
from webapp.ui import compare_views, run_views  # noqa: E402

urlpatterns += [
    path("runs/<int:run_id>/", run_views.run_detail, name="run-detail"),
    path("runs/<int:run_id>/cancel", run_views.run_cancel_view, name="run-cancel"),
    path("runs/<int:run_id>/resume", run_views.run_resume_view, name="run-resume"),
    path("runs/<int:run_id>/fork", run_views.run_fork_view, name="run-fork"),
    path("runs/<int:run_id>/evaluate", run_views.run_evaluate_view, name="run-evaluate"),
    path("runs/<int:run_id>/verl-launch.sh", run_views.run_verl_script, name="run-verl-script"),
    path("compare/", compare_views.compare, name="compare"),
]

# The results page (webapp/ui/results_views.py).
from webapp.ui import results_views  # noqa: E402

urlpatterns += [path("results/", results_views.results, name="results")]
