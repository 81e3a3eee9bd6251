"""SFT datasets: the traces a run's SFT phase or a tiny model's cold start trains on, by name.

A reference is a built-in trace set tirlab generates itself (`BUILTIN_TRACES`: trainer.sft.traces) or a
JSONL file (the dashboard's uploads resolve to files), in the format trainer.data.sft_traces reads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.config import BUILTIN_SFT_TRACES
from trainer.data.sft_traces import SFTDataError, SFTRow, jsonl_records, parse_rows
from trainer.sft.traces.arithmetic import tiny_cold_start_traces, tool_use_traces
from trainer.sft.traces.artist import artist_traces
from trainer.sft.traces.function_calling import FC_MINI, TOOL_N1_MINI, TOOLRL_MINI, function_calling_traces
from trainer.sft.traces.tool_chains import ARTIST_FC_MINI, tool_chain_traces

# The 'retool-mini-sft' traces (trainer.sft.traces.arithmetic.tool_use_traces): the tiny model's cold-start mix
# in ReTool's syntax and tool text (its recipe's sandbox tool prints stdout + stderr), enough to move the
# cold-started policy to another protocol. 'tirlab/tiny-char-retool' (trainer.models.tiny.retool) is the
# cold start fine-tuned on them, and this mix is part of its fingerprint.
RETOOL_MINI: dict[str, Any] = {
    "size": 4000,
    "seed": 1,
    "tool_share": {"easy": 0.25, "hard": 0.9},
    "easy_share": 0.7,
    "content_weight": 8.0,
    "feedback": "retool",
}


def _tiny_cold_start(protocol: str) -> list[dict]:
    return tiny_cold_start_traces(protocol=protocol)


def _retool_mini(protocol: str) -> list[dict]:
    return tool_use_traces(**RETOOL_MINI, protocol="retool")


def _artist_mini(protocol: str) -> list[dict]:
    # One multiplication per <python> call, undecided about how many calls to make (artist-mini).
    return artist_traces()


def _fc_mini(protocol: str) -> list[dict]:
    # JSON calls in ToolRL's layout, with the tools each request offers (tirlab/tiny-char-fc).
    return function_calling_traces(**FC_MINI)


def _toolrl_mini(protocol: str) -> list[dict]:
    # ToolRL's layout, some traces wrong on purpose: format, Python calls, a call missing (tirlab/tiny-char-toolrl).
    return function_calling_traces(**TOOLRL_MINI)


def _tool_n1_mini(protocol: str) -> list[dict]:
    # The same in Tool-N1's layout, one JSON list of calls (tirlab/tiny-char-tool-n1).
    return function_calling_traces(**TOOL_N1_MINI)


def _artist_fc_mini(protocol: str) -> list[dict]:
    # Tool chains in ARTIST's syntax, some booked without the lookup on purpose (tirlab/tiny-char-artist-fc).
    return tool_chain_traces(**ARTIST_FC_MINI)


def _swe_mini(protocol: str) -> list[dict]:
    # codeact_mini's tools on swe-mini repositories, undecided about the fix and when to stop (tirlab/tiny-char-swe).
    from trainer.sft.traces.swe import swe_traces

    return swe_traces()


def _search_mini(protocol: str) -> list[dict]:
    # Search-R1's tags on search-mini, 0, 1 or 2 searches whatever the question needs (tirlab/tiny-char-search).
    from trainer.sft.traces.search import search_traces

    return search_traces()


def _search_copy(protocol: str) -> list[dict]:
    # 0-hop search-mini questions answered with the fact they state: copying, before the searches.
    from trainer.sft.traces.search import copy_traces

    return copy_traces()


def _search_read(protocol: str) -> list[dict]:
    # As many searches as the hops, every answer read from a passage: reading, before the undecided traces.
    from trainer.sft.traces.search import read_traces

    return read_traces()


# name -> (protocol the traces are written in, generator); the names and protocols are config's.
BUILTIN_TRACES: dict[str, tuple[str, Callable[[str], list[dict]]]] = {
    name: (BUILTIN_SFT_TRACES[name], generate)
    for name, generate in (
        ("tiny-cold-start", _tiny_cold_start),
        ("retool-mini-sft", _retool_mini),
        ("artist-mini-sft", _artist_mini),
        ("fc-mini-sft", _fc_mini),
        ("toolrl-mini-sft", _toolrl_mini),
        ("tool-n1-mini-sft", _tool_n1_mini),
        ("artist-fc-mini-sft", _artist_fc_mini),
        ("swe-mini-sft", _swe_mini),
        ("search-mini-copy", _search_copy),
        ("search-mini-read", _search_read),
        ("search-mini-sft", _search_mini),
    )
}


def builtin_trace_rows(name: str) -> list[dict]:
    """The JSON rows of built-in trace set `name` (for `python -m trainer sft-traces`)."""
    if name not in BUILTIN_TRACES:
        raise SFTDataError(f"unknown built-in SFT traces {name!r}; expected one of {', '.join(BUILTIN_TRACES)}")
    protocol, generate = BUILTIN_TRACES[name]
    return generate(protocol)


def load_sft_dataset(ref: str, *, protocol: str) -> list[SFTRow]:
    """The traces `ref` names (a built-in name or a JSONL file path), checked against `protocol`."""
    if ref in BUILTIN_TRACES:
        written_in, generate = BUILTIN_TRACES[ref]
        if written_in != protocol:
            raise SFTDataError(
                f"SFT traces {ref!r} are written in the {written_in!r} protocol, but the run's tools.protocol is "
                f"{protocol!r}: the model would learn a syntax the rollout does not execute"
            )
        return parse_rows(generate(protocol), protocol=protocol, source=ref)
    path = Path(ref)
    if not path.is_file():
        raise SFTDataError(
            f"SFT dataset {ref!r} is neither a built-in trace set ({', '.join(BUILTIN_TRACES)}) nor a file"
        )
    return parse_rows(jsonl_records(path), protocol=protocol, source=str(path))
