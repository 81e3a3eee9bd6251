"""retrieval/ is standalone like sandbox/: it knows nothing of Django, the webapp or the trainer."""

from tests.test_layout import REPO, imported_modules


def test_the_retrieval_package_imports_no_django_webapp_or_trainer():
    offending = [
        f"{path.relative_to(REPO)}: {module}"
        for path, module in imported_modules(REPO / "retrieval")
        if module.split(".")[0] in {"django", "rest_framework", "channels", "celery", "webapp", "trainer"}
    ]
    assert not offending, offending
