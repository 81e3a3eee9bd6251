import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from trainer.cli import main

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m trainer ARGS`, in this process: what trainer/__main__.py calls (the last test runs the
    module itself), without a new interpreter importing the rewards for every case."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.StringIO(stdin or ""))
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's usage errors
            code = exit.code
    return subprocess.CompletedProcess(["python", "-m", "trainer", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def right(tmp_path: Path) -> Path:
    path = tmp_path / "right.txt"
    path.write_text("```python\nprint(6 * 7)\n```\n```output\n42\n```\nThe answer is \\boxed{42}.", encoding="utf-8")
    return path


def scored(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_prints_total_and_components_as_json(right: Path) -> None:
    report = scored(run("rewards", "torl", "--completion", str(right), "--ground-truth", "42"))
    assert report["reward"] == "torl"
    assert report["total"] == 1.0
    assert report["correct"] is True
    assert isinstance(report["components"], dict)


def test_wrong_answer(right: Path) -> None:
    report = scored(run("rewards", "torl", "--completion", str(right), "--ground-truth", "41"))
    assert report["total"] == -1.0
    assert report["correct"] is False


def test_completion_from_stdin_and_params() -> None:
    text = "<code>\n```python\nprint(1)\n```\n</code>\n<interpreter>1</interpreter>\n<answer>\\boxed{7}</answer>"
    result = run(
        "rewards", "retool", "--completion", "-", "--ground-truth", "8",
        "--protocol", "retool", "--params", '{"turn_shaping": true}',
        stdin=text,
    )
    # A wrong answer after one tool call: min(-0.6, -1 + 0.1 * 1) = -0.9 (verl ReTool recipe).
    assert scored(result)["total"] == pytest.approx(-0.9)
    # Without --protocol, text is read with the reward's own protocol (retool's tags here).
    result = run("rewards", "retool", "--completion", "-", "--ground-truth", "7", stdin=text)
    assert scored(result)["total"] == 1.0


def test_structured_completion_carries_tool_statuses(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    text = "```python\n1/0\n```\n```output\nZeroDivisionError: division by zero\n```\n\\boxed{3}"
    path.write_text(
        json.dumps(
            {
                "text": text,
                "executions": [
                    {"call": "1/0", "status": "error", "output": "ZeroDivisionError", "stderr": "ZeroDivisionError"}
                ],
            }
        ),
        encoding="utf-8",
    )
    args = ("rewards", "torl", "--completion", str(path), "--ground-truth", "3")
    assert scored(run(*args))["total"] == 1.0
    # ToRL's option: 0.5 off when the last executed call failed.
    assert scored(run(*args, "--params", '{"exec_error_penalty": 0.5}'))["total"] == pytest.approx(0.5)


def test_tool_call_ground_truth_as_json_list(tmp_path: Path) -> None:
    path = tmp_path / "calls.txt"
    path.write_text(
        '<think>weather</think>\n<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>',
        encoding="utf-8",
    )
    truth = json.dumps([{"name": "get_weather", "arguments": {"city": "Paris"}}])
    args = ("rewards", "tool_n1", "--completion", str(path), "--protocol", "tool_call_json")
    assert scored(run(*args, "--ground-truth", truth))["total"] == 1.0
    other = json.dumps([{"name": "get_weather", "arguments": {"city": "Rome"}}])
    assert scored(run(*args, "--ground-truth", other))["total"] == 0.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("rewards", "nope"), "unknown reward 'nope'"),
        (("rewards", "torl", "--params", '{"exec_error_penalty": -1}'), "params.exec_error_penalty"),
        (("rewards", "torl", "--params", '{"nope": 1}'), "params.nope"),
        (("rewards", "torl", "--params", "{"), "--params is not valid JSON"),
        (("rewards", "torl", "--params", "[1]"), "--params must be a JSON object"),
        (("rewards", "torl", "--step", "x"), "invalid int value"),
    ],
)
def test_usage_errors_exit_2_with_a_message(right: Path, extra: tuple[str, ...], message: str) -> None:
    command, name, *rest = extra
    result = run(command, name, "--completion", str(right), "--ground-truth", "42", *rest)
    assert result.returncode == 2
    assert message in result.stderr
    assert "usage: python -m trainer rewards" in result.stderr
    assert result.stdout == ""


def test_missing_completion_file_exits_2(tmp_path: Path) -> None:
    result = run("rewards", "torl", "--completion", str(tmp_path / "none.txt"), "--ground-truth", "1")
    assert result.returncode == 2
    assert "cannot read --completion" in result.stderr


def test_python_m_trainer_without_a_command_exits_2_and_says_one_is_required() -> None:
    result = subprocess.run([sys.executable, "-m", "trainer"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "required: command" in result.stderr


def test_progress_line_shows_tool_use_per_difficulty_when_the_step_has_it() -> None:
    from types import SimpleNamespace

    from trainer.cli import _progress_line

    metrics = {"accuracy": 0.5, "tool_call_ratio": 0.4, "timing_s/step": 2.0}
    split = {**metrics, "train/hard/tool_call_ratio": 0.9, "train/easy/tool_call_ratio": 0.1, "train/easy/accuracy": 1}
    line = _progress_line(SimpleNamespace(step=3, metrics=split), 8.0, 20, 0)
    assert line == "step 4/20  accuracy 0.500  tool-call ratio 0.400 (easy 0.10, hard 0.90)  2.0 s/step  ETA 32 s"
    plain = _progress_line(SimpleNamespace(step=3, metrics=metrics), 8.0, 20, 0)
    assert plain == "step 4/20  accuracy 0.500  tool-call ratio 0.400  2.0 s/step  ETA 32 s"


def test_cold_start_trains_saves_and_reports_the_tiny_model(tmp_path: Path, monkeypatch, capsys) -> None:
    from trainer.cli import main
    from trainer.models.tiny import cold_start as tiny_cold_start

    # A two-step budget stands in for the real four-minute cold start.
    monkeypatch.setattr(tiny_cold_start, "TINY_SFT", tiny_cold_start.SFTBudget(traces=32, batch_size=16))
    assert main(["cold-start", "--eval-size", "4", "--out", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert set(report) == {"eval_size", "greedy", "sampled_t1", "sft_s", "eval_s"}
    assert report["greedy"]["all"]["n"] == report["sampled_t1"]["all"]["n"] == 4
    assert (tmp_path / "config.json").is_file() and (tmp_path / "tokenizer_config.json").is_file()


def test_cold_start_ship_replaces_the_shipped_model_and_its_report(tmp_path: Path, monkeypatch, capsys) -> None:
    from trainer.cli import main
    from trainer.models.tiny import cold_start as tiny_cold_start

    monkeypatch.setattr(tiny_cold_start, "TINY_SFT", tiny_cold_start.SFTBudget(traces=32, batch_size=16))
    monkeypatch.setattr(tiny_cold_start, "SHIPPED_DIR", tmp_path)
    (tmp_path / "tiny-char-0123456789ab").mkdir()  # an older recipe's
    assert tiny_cold_start.shipped_checkpoint() is None
    assert main(["cold-start", "--ship", "--eval-size", "4"]) == 0
    shipped = tiny_cold_start.shipped_checkpoint()
    assert shipped is not None and [p.name for p in tmp_path.iterdir()] == [shipped.name]
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report == json.loads((shipped / "report.json").read_text())
    assert report["eval_size"] == 4 and report["built_with"]["command"] == "python -m trainer cold-start --ship"
    # What a run of the tiny model now loads, without training.
    assert tiny_cold_start.tiny_checkpoint(tmp_path / "cache", log=pytest.fail) == shipped


def test_shipping_the_base_model_replaces_only_older_base_models(tmp_path: Path, monkeypatch, capsys) -> None:
    from trainer.cli import main
    from trainer.models.tiny import base as tiny_base
    from trainer.models.tiny import cold_start as tiny_cold_start
    from trainer.models.tiny.base_corpus import BaseCorpus

    monkeypatch.setattr(tiny_base, "TINY_BASE", BaseCorpus(traces=32, batch_size=16))
    monkeypatch.setattr(tiny_cold_start, "SHIPPED_DIR", tmp_path)
    (tmp_path / "tiny-char-0123456789ab").mkdir()  # the cold start: another model, kept
    (tmp_path / "tiny-char-base-0123456789ab").mkdir()  # an older base recipe's, replaced
    assert tiny_base.shipped_base() is None
    assert main(["cold-start", "--model", "tirlab/tiny-char-base", "--ship", "--eval-size", "4"]) == 0
    shipped = tiny_base.shipped_base()
    assert shipped is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["tiny-char-0123456789ab", shipped.name])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["built_with"]["command"] == "python -m trainer cold-start --model tirlab/tiny-char-base --ship"
    # What a run of the base model now loads, without training.
    assert tiny_base.base_checkpoint(tmp_path / "cache", log=pytest.fail) == shipped


def test_the_artist_format_model_is_built_only_by_ship_or_into_out(tmp_path: Path, capsys) -> None:
    from trainer.cli import main

    assert main(["cold-start", "--model", "tirlab/tiny-char-artist"]) == 2
    assert main(["cold-start", "--model", "tirlab/tiny-char-artist", "--ship", "--out", str(tmp_path)]) == 2
    assert "--ship or into --out" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_cold_start_ship_takes_neither_out_nor_seed(tmp_path: Path, capsys) -> None:
    from trainer.cli import main

    assert main(["cold-start", "--ship", "--out", str(tmp_path)]) == 2
    assert "--ship" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
