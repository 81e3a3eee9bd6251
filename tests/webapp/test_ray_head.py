"""The embedded Ray head's command line: nothing in it can be raced by another program on the machine."""

import os
import subprocess
import sys
from pathlib import Path

from ray._common.utils import load_class
from ray._private.parameter import RayParams

from webapp.devstack.ray_head import head_command, head_env


def test_every_port_of_the_head_is_chosen_by_ray() -> None:
    # A number picked here (bind to 0, close, hand it over) could be taken before Ray binds it, even by
    # another of the numbers picked: CI once saw two of Ray's components given the same one.
    argv = head_command(Path("/tmp/tirlab-var"), 2)
    ports = {option: argv[i + 1] for i, option in enumerate(argv) if option.endswith("-port")}
    assert "--port" in ports and "--dashboard-port" in ports and "--min-worker-port" in ports
    assert set(ports.values()) == {"0"}, ports


def test_the_head_starts_no_ray_client_server(monkeypatch) -> None:
    # `ray start` gives Ray Client's server a fixed port (10001) unless given one, and refuses 0.
    env = head_env({})
    monkeypatch.syspath_prepend(env["PYTHONPATH"])
    params = RayParams(ray_client_server_port=10001)
    load_class(env["RAY_START_HOOK"])(params, True)
    assert params.ray_client_server_port is None


def test_the_hook_loads_in_the_heads_environment_without_the_web_stack() -> None:
    # What `ray start` does with RAY_START_HOOK, in the environment the head gets: importing webapp
    # would bring Celery and DJANGO_SETTINGS_MODULE into every Ray process and trainer job.
    env = {**head_env(dict(os.environ)), "TIRLAB_VAR_DIR": "/tmp/tirlab-var"}
    module, _, function = env["RAY_START_HOOK"].rpartition(".")
    code = (
        f"import importlib, sys; hook = getattr(importlib.import_module({module!r}), {function!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('webapp', 'django', 'celery')))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
