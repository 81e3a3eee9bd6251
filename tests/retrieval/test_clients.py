"""The service under the request code of the frameworks that call it, unchanged: SkyRL-gym's SearchEnv (the
`skyrl-gym` package, in-process) and verl's search helper (in verl's own python)."""

import base64
import hashlib
import json
from pathlib import Path

import pytest
from skyrl_gym.envs.search.env import SearchEnv, SearchEnvConfig

from tests.verl_env import run_in_verl

# verl/tools/search_tool.py's SearchTool.execute_search calls this module's perform_single_search_batch
# (verl v0.7.1, search_tool.py:219). verl 0.9.1, the version .venv-verl holds, no longer ships SearchTool or this
# module (verl-project/verl#7731), so the suite keeps v0.7.1's file byte for byte, checked against the hash its
# wheel's RECORD gives it; it needs only `requests`, which verl's environment has.
VERL_SEARCH_UTILS = Path(__file__).parent / "upstream" / "verl-0.7.1-search_r1_like_utils.py.txt"
VERL_RECORD_SHA256 = "EFvDGidIUqtD8RjTBrhZJRaH8-Vad_hkBBaJyR1ZE3Q"  # verl-0.7.1.dist-info/RECORD
ZORBLAT = "Zorblat is a harbour city founded by Quenby Marsh in 1802."
MARSH = "Quenby Marsh was an explorer born in Velloria.\nShe founded a city."


def test_skyrl_gyms_search_env_reads_the_passages(endpoint):
    env = SearchEnv(
        SearchEnvConfig(search_url=f"{endpoint}/retrieve", topk=2, timeout=10),
        extras={"reward_spec": {"ground_truth": {"target": ["Quenby Marsh"]}}, "max_turns": 3},
    )
    step = env.step("<think>I need the founder.</think><search> who founded the harbour city Zorblat </search>")
    assert not step["done"] and step["metadata"]["tool_input"] == [" who founded the harbour city Zorblat "]
    # skyrl_gym/envs/search/env.py:71 wraps the tool's JSON text; tools/search.py:132-137 renders each passage.
    expected = json.dumps({"result": f'Doc 1: "Zorblat"\n{ZORBLAT}\nDoc 2: "Quenby Marsh"\n{MARSH}\n'})
    assert step["observations"] == [{"role": "user", "content": f"\n<information>{expected}</information>\n"}]
    final = env.step("<answer>Quenby Marsh</answer>")
    assert final["done"] and final["reward"] == 1.0


def test_the_kept_verl_module_is_verl_v0_7_1s_file_unchanged():
    digest = hashlib.sha256(VERL_SEARCH_UTILS.read_bytes()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == VERL_RECORD_SHA256


VERL_CALL = """
import importlib.machinery, importlib.util, json, sys
loader = importlib.machinery.SourceFileLoader("search_r1_like_utils", sys.argv[1])
utils = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(utils)
text, metadata = utils.perform_single_search_batch(sys.argv[2], json.loads(sys.argv[3]), topk=2, timeout=10)
print(json.dumps({"text": text, "status": metadata["status"], "total": metadata["total_results"]}))
"""


@pytest.mark.slow  # runs in verl's own python (tests/verl_env.py), which make test-fast (dev-deps) does not build
def test_verls_search_request_code_gets_search_r1_passages(endpoint):
    queries = ["who founded the harbour city Zorblat", "city of bridges"]
    done = run_in_verl(["-c", VERL_CALL, str(VERL_SEARCH_UTILS), f"{endpoint}/retrieve", json.dumps(queries)],
                       timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["status"] == "success" and answer["total"] == 4
    # search_r1_like_utils.py:130-138 renders a query's passages; :222 joins the queries with "\n---\n".
    first = f'Doc 1 (Title: "Zorblat")\n{ZORBLAT}\n\nDoc 2 (Title: "Quenby Marsh")\n{MARSH}'
    velloria = 'Velloria is a city of bridges.'
    second = f'Doc 1 (Title: "Velloria")\n{velloria}\n\nDoc 2 (Title: "Velloria")\n{velloria}'
    assert json.loads(answer["text"]) == {"result": f"{first}\n---\n{second}"}
