"""The suite's own rules: which tier a test is in (tests/tiers.py), and that the trainer's and the
sandbox's tests run without Django (tests/django_setup.py)."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.django_setup import RefuseDjango, runs_without_django

REPO = Path(__file__).resolve().parents[1]
FAST = "not e2e and not browser and not slow"


def pytest_in_subprocess(code: str) -> subprocess.CompletedProcess[str]:
    # Without the variables this session exported, as a fresh `pytest` starts.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE" and not k.startswith("PYTEST_XDIST")}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("args", "django_free"),
    [
        (["tests/trainer", "tests/sandbox"], True),
        (["tests/trainer/test_grpo.py::test_x", "tests/bench", "tests/test_tiers.py"], True),
        (["tests"], False),
        (["."], False),
        (["tests/trainer", "tests/webapp/test_ingest.py"], False),
        (["tests/e2e"], False),
    ],
)
def test_a_run_is_django_free_when_it_collects_only_from_django_free_directories(args, django_free):
    config = SimpleNamespace(args=args, invocation_params=SimpleNamespace(dir=REPO))
    assert runs_without_django(config) is django_free


def test_django_and_webapp_are_refused_with_a_reason_other_modules_are_not():
    finder = RefuseDjango()
    for name in ("django", "django.db", "webapp.settings"):
        with pytest.raises(ModuleNotFoundError, match="tests/webapp"):
            finder.find_spec(name, None)
    assert finder.find_spec("djangoish", None) is None and finder.find_spec("trainer", None) is None


@pytest.mark.slow  # collects the trainer's, sandbox's and bench's tests in a new interpreter
def test_the_trainer_sandbox_and_bench_tests_import_no_django():
    done = pytest_in_subprocess(
        "import sys, pytest\n"
        "code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider',"
        " 'tests/trainer', 'tests/sandbox', 'tests/bench'])\n"
        "print('imported:', sorted({m.split('.')[0] for m in sys.modules} & {'django', 'webapp'}))\n"
        "sys.exit(code)\n"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "imported: []" in done.stdout, done.stdout[-3000:]


@pytest.mark.slow  # collects five test files in a new interpreter
def test_a_test_is_fast_unless_its_directory_or_the_cold_started_model_or_its_mark_says_otherwise():
    files = [
        "tests/e2e/test_make_run.py",
        "tests/browser/test_dashboard.py",
        "tests/trainer/test_quickstart.py",  # the cold-started model, through its fixture
        "tests/trainer/test_stop_during_cold_start.py",  # marked slow
        "tests/trainer/test_grpo.py",
    ]
    done = pytest_in_subprocess(
        f"import pytest; pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '-m', {FAST!r}, *{files!r}])"
    )
    selected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    assert selected == {"tests/trainer/test_grpo.py"}, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow  # collects six test files in a new interpreter
def test_files_go_to_the_workers_longest_first_so_no_long_run_starts_last():
    files = [
        "tests/trainer/test_grpo.py",  # fast, pytest.ini's timeout
        "tests/browser/test_dashboard.py",  # browser, the same length
        "tests/e2e/test_make_run.py",  # e2e, every test marked 400 s
        "tests/trainer/test_quickstart_learns.py",  # a learning run, 1800 s
        "tests/e2e/test_run_lifecycle.py",  # 1500 s
        "tests/trainer/test_otc_mini_learns.py",  # the longest learning run, 2400 s
    ]
    done = pytest_in_subprocess(
        f"import pytest; pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *{files!r}])"
    )
    order = list(dict.fromkeys(line.split("::")[0] for line in done.stdout.splitlines() if "::" in line))
    assert order == [
        "tests/trainer/test_otc_mini_learns.py",
        "tests/trainer/test_quickstart_learns.py",
        "tests/e2e/test_run_lifecycle.py",
        "tests/browser/test_dashboard.py",
        "tests/trainer/test_grpo.py",
        "tests/e2e/test_make_run.py",
    ], done.stdout[-3000:] + done.stderr[-3000:]
