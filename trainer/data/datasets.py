"""Detection, validation, preview and reading of dataset files.

The dashboard validates uploads with this module and the trainer reads them
with it, so a file accepted at upload is exactly a file the trainer can train
on. Every failure is a DatasetError whose message points at the line (JSONL),
row (parquet) or column at fault.

Two kinds of file: problems for RL (data.train_dataset, data.val_dataset: every
format but one) and SFT traces for the cold start (sft.dataset: `sft_traces`,
whose rows trainer.data.sft_traces parses). Each is refused where the other belongs.

Function-calling problems come as JSONL with 'tools' or as the papers' own verl
parquet files, read as they are: ToolRL's rlla_4k (tools listed only in the
system message, ground truth in its <tool_call>/<response> text form, kept as
text) and Tool-N1's training parquet (a 'tools' column of JSON, tools also in
<tools> in the system message, ground truth a JSON list of {name, arguments},
read as that list). Either way an Example carries the tools and ground truth
the rewards and trainer.metrics.calls read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trainer.config import BUILTIN_SFT_TRACES, DATASET_REF_PREFIX
from trainer.data.arithmetic import DIFFICULTIES, arithmetic_examples
from trainer.data.function_calling import LEVELS as FC_LEVELS
from trainer.data.function_calling import function_calling_examples
from trainer.data.search_mini import LEVELS as SEARCH_MINI_LEVELS
from trainer.data.search_mini import search_mini_examples
from trainer.data.sft_traces import SFTDataError, SFTRow, parse_record
from trainer.data.swe_mini import swe_mini_examples
from trainer.data.swe_rows import SweRowError, parse_swe_row
from trainer.data.tool_chains import CHAIN_LEVELS, tool_chain_examples
from trainer.protocols import PROTOCOL_NAMES, Protocol, get_protocol
from trainer.protocols.calls import ground_truth_calls
from trainer.trajectory import Example

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class BuiltinDataset:
    """A dataset file shipped in the repository, known by its name."""

    name: str
    path: Path
    description: str


# One name, one file, everywhere: the trainer reads these paths, and the dashboard seeds its
# built-in dataset rows from this table, so `gsm8k` is the train file from the CLI and the browser.
BUILTIN_FILES: dict[str, BuiltinDataset] = {
    dataset.name: dataset
    for dataset in (
        BuiltinDataset(
            "gsm8k",
            REPO_ROOT / "data" / "gsm8k" / "train.jsonl",
            "GSM8K train split (7,473 grade-school math problems, MIT licence).",
        ),
        BuiltinDataset(
            "gsm8k-test",
            REPO_ROOT / "data" / "gsm8k" / "test.jsonl",
            "GSM8K test split (1,319 problems), for validation.",
        ),
        BuiltinDataset(
            "toolrl-test",
            REPO_ROOT / "data" / "toolrl" / "test.parquet",
            "ToolRL's test set (80 function-calling rows from ToolACE, Hammer and xLAM; "
            "Apache-2.0, attribution in data/toolrl/NOTICE), for validation.",
        ),
    )
}
# Files a name stands for that tirlab may not ship: the user puts them at the path, and loading the
# name says where to get them until then. ToRL's repository has no licence, so its data stays out.
USER_FILES: dict[str, BuiltinDataset] = {
    dataset.name: dataset
    for dataset in (
        BuiltinDataset(
            "torl-test",
            REPO_ROOT / "data" / "torl" / "test.parquet",
            "ToRL's test set (data/torl_data/test.parquet of GAIR-NLP/ToRL, 374 AIME24/25 and MATH500 "
            "problems), not shipped: ToRL's repository has no licence.",
        ),
    )
}
BUILTIN_DATASETS = (
    "arithmetic",
    "arithmetic:easy",
    "arithmetic:hard",
    "function-calling",
    "tool-chains",
    "swe-mini",
    "search-mini",
    *BUILTIN_FILES,
    *USER_FILES,
)
# Seeded generators, named with an optional ":<level>" (trainer.data.arithmetic, trainer.data.function_calling): their
# levels, what a level is called in an error, and how to make `size` examples of a level.
_Generate = Callable[[int | None, int, str, str], list[Example]]
GENERATORS: dict[str, tuple[tuple[str, ...], str, _Generate]] = {
    "arithmetic": (
        DIFFICULTIES,
        "difficulty",
        lambda size, seed, level, split: arithmetic_examples(size, seed=seed, difficulty=level, split=split),  # type: ignore[arg-type]
    ),
    "function-calling": (
        FC_LEVELS,
        "level",
        lambda size, seed, level, split: function_calling_examples(size, seed=seed, level=level, split=split),  # type: ignore[arg-type]
    ),
    "tool-chains": (
        CHAIN_LEVELS,
        "level",
        lambda size, seed, level, split: tool_chain_examples(size, seed=seed, level=level, split=split),  # type: ignore[arg-type]
    ),
    "swe-mini": (("mixed",), "level", lambda size, seed, level, split: swe_mini_examples(size, seed=seed, split=split)),
    "search-mini": (
        SEARCH_MINI_LEVELS,
        "level",
        lambda size, seed, level, split: search_mini_examples(size, seed=seed, split=split, level=level),
    ),
}
GENERATED = tuple(GENERATORS)

_PARQUET_MAGIC = b"PAR1"
# A row with either is a software-engineering row: {prompt, data_source, ability, instance}, or a bare instance.
_SWE_KEYS = {"instance", "FAIL_TO_PASS"}
_VERL_COLUMNS = ("prompt", "reward_model", "data_source")
# ToolRL's and Tool-N1's parquet files have no 'tools' column or may lack it: the tools are listed in the
# system message. ToolRL numbers them under this heading (its SYS prompt, benchmarks/BFCL/rlla_qwen.py:17-19
# @8cee13e, each tool as rlla_qwen.py:60 writes it; dataset/rlla_4k_raw/rlla.py:48,55 makes that text the
# system message), Tool-N1 puts one JSON line a tool in <tools> (verl_toolcall_preprocess.py:28-30,54-61 @f9b4849).
_TOOLRL_TOOLS_HEADING = "**Available Tools**\nIn your response, you can use the following tools:\n"
_TOOLRL_TOOL_START = re.compile(r"^(?=\d+\. Name: )", re.MULTILINE)
_TOOLRL_TOOL = re.compile(r"\d+\. Name: ([^\n]*)\nDescription: (.*)\nParameters: ([^\n]*)", re.DOTALL)
_TOOL_N1_TOOLS = re.compile(r"<tools>\n(.*?)\n</tools>", re.DOTALL)
# GSM8K final answers are plain decimals once thousands separators are gone.
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_BINARY = "binary file, expected JSONL or parquet"
_ACCEPTED = (
    "expected JSONL with 'question' and 'answer' (jsonl_qa, gsm8k), "
    "JSONL with 'tools' (function_calling), a verl parquet file (verl_parquet) "
    "or SFT traces: JSONL with 'messages', or 'prompt' and 'response' (sft_traces)"
)
# Fields of a dataset of problems, which a trace record never has.
_PROBLEM_FIELDS = ("question", "answer", "tools")


class DatasetFormat(str, Enum):
    JSONL_QA = "jsonl_qa"
    GSM8K = "gsm8k"
    VERL_PARQUET = "verl_parquet"
    FUNCTION_CALLING = "function_calling"
    SFT_TRACES = "sft_traces"
    # Software-engineering rows (trainer.data.swe_rows): SWE-Gym / SWE-bench / SWE-smith instances, JSONL or parquet.
    SWE = "swe"


class DatasetError(ValueError):
    """A file that is not a valid dataset; message names the line (1-based) or column.

    Parquet rows are named by their 0-based index (``row``), the same number
    their Example ids default to.
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        row: int | None = None,
        filename: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.field = field
        self.row = row
        self.filename = filename

    def __str__(self) -> str:
        prefix = f"{self.filename}: " if self.filename else ""
        if self.line is not None:
            prefix += f"line {self.line}: "
        elif self.row is not None:
            prefix += f"row {self.row}: "
        return prefix + self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling replays only args, which would drop the position
        # when the error crosses a process boundary (e.g. a Celery task result).
        rebuild = partial(
            type(self),
            self.message,
            line=self.line,
            field=self.field,
            row=self.row,
            filename=self.filename,
        )
        return rebuild, ()


@dataclass(frozen=True)
class DatasetInfo:
    format: DatasetFormat
    row_count: int
    size_bytes: int
    checksum: str
    columns: list[str]
    preview: list[dict]
    # SFT traces only: the tool protocol they are written in; None for traces without a tool call
    # (usable with any protocol) and for problems.
    protocol: str | None = None
    # Problems only: rows per data source, in order of first appearance. An evaluation file mixing benchmarks
    # (ToRL's test parquet: aime24, math500, aime25) is split by it, as trainer.metrics.benchmarks names them.
    data_sources: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Where:
    """Where a record sits in its file, so each validation error can say so."""

    line: int | None = None
    row: int | None = None

    @property
    def noun(self) -> str:
        return "column" if self.row is not None else "field"

    @property
    def default_id(self) -> str:
        return str(self.line if self.line is not None else self.row)

    def error(self, message: str, field: str | None = None) -> DatasetError:
        return DatasetError(message, line=self.line, row=self.row, field=field)


def detect_format(path: Path) -> DatasetFormat:
    if _is_parquet(path):
        try:
            names = pq.ParquetFile(path).schema_arrow.names
        except (pa.ArrowException, OSError):
            names = []
        return DatasetFormat.SWE if _SWE_KEYS & set(names) else DatasetFormat.VERL_PARQUET
    with closing(_jsonl_records(path)) as records:
        where, record = next(records)
    if _SWE_KEYS & set(record):
        return DatasetFormat.SWE
    # A trace of a call carries its tools too ('prompt', 'tools', 'response': trainer.sft.traces.function_calling).
    is_pair = "prompt" in record and "response" in record
    if "tools" in record and not is_pair:
        return DatasetFormat.FUNCTION_CALLING
    if "question" in record and "answer" in record:
        answer = record["answer"]
        if isinstance(answer, str) and "####" in answer:
            return DatasetFormat.GSM8K
        return DatasetFormat.JSONL_QA
    is_trace = "messages" in record or is_pair
    if is_trace and not any(name in record for name in _PROBLEM_FIELDS if not (is_pair and name == "tools")):
        return DatasetFormat.SFT_TRACES
    missing = [name for name in ("question", "answer") if name not in record]
    fields = " and ".join(f"'{name}'" for name in missing)
    verb = "is" if len(missing) == 1 else "are"
    plural = "" if len(missing) == 1 else "s"
    raise where.error(f"field{plural} {fields} {verb} missing; {_ACCEPTED}", missing[0])


def inspect_dataset(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    preview_rows: int = 5,
    filename: str | None = None,
) -> DatasetInfo:
    try:
        size = path.stat().st_size
        # Checked before any read so an oversized upload costs nothing to reject.
        if size > max_bytes:
            raise DatasetError(f"file is {_size(size)}, over the limit of {_size(max_bytes)}")
        format = detect_format(path)
        if format is DatasetFormat.SFT_TRACES:
            return _inspect_traces(path, size=size, preview_rows=preview_rows)
        columns: dict[str, None] = {}
        preview: list[dict] = []
        data_sources: Counter[str] = Counter()
        row_count = 0
        for record, example in _rows(path, format):
            columns.update(dict.fromkeys(record))
            if row_count < preview_rows:
                preview.append(_preview(example))
            data_sources[example.data_source] += 1
            row_count += 1
    except DatasetError as err:
        if filename is None:
            raise
        raise DatasetError(err.message, line=err.line, field=err.field, row=err.row, filename=filename) from None
    return DatasetInfo(format, row_count, size, _sha256(path), list(columns), preview, data_sources=dict(data_sources))


def _inspect_traces(path: Path, *, size: int, preview_rows: int) -> DatasetInfo:
    """Validate every trace with trainer.data.sft_traces' parser and name the protocol the traces are written in.

    Whether a trace is valid can depend on the protocol (a "tool" message must follow a complete call
    in the protocol's syntax), and a run trains on traces only in its own tools.protocol, which the
    upload does not know. So each record is parsed under every protocol it still fits, and the
    traces' protocol is the one under which all records parse and the most tool outputs, then calls,
    are found: the dashboard shows it and refuses the traces for a run with another protocol. A bad
    record is reported as the best-fitting protocol's parser reports it (for structural errors every
    protocol says the same)."""
    fits = dict.fromkeys(PROTOCOL_NAMES, (0, 0))  # protocol -> (tool outputs, calls) so far
    columns: dict[str, None] = {}
    head: list[tuple[_Where, dict[str, Any]]] = []
    count = 0
    for where, record in _jsonl_records(path):
        count += 1
        columns.update(dict.fromkeys(record))
        if len(head) < preview_rows:
            head.append((where, record))
        still, errors = {}, {}
        for name, (outputs, calls) in fits.items():
            try:
                row = _trace(record, name, count, where)
            except DatasetError as exc:
                errors[name] = exc
                continue
            found = _tool_use(get_protocol(name), row)
            still[name] = (outputs + found[0], calls + found[1])
        if not still:
            raise errors[max(errors, key=lambda name: fits[name])]
        fits = still
    best = max(fits, key=lambda name: fits[name])
    protocol = best if fits[best] > (0, 0) else None
    preview = [_trace_preview(_trace(record, best, n, where)) for n, (where, record) in enumerate(head, 1)]
    return DatasetInfo(DatasetFormat.SFT_TRACES, count, size, _sha256(path), list(columns), preview, protocol=protocol)


def _trace(record: dict[str, Any], protocol: str, number: int, where: _Where) -> SFTRow:
    """The `number`th trace of its file, read by trainer.data.sft_traces' parser; a DatasetError at its line."""
    prefix = f"line {where.line}"
    try:
        return parse_record(record, protocol=protocol, number=number, where=prefix)
    except SFTDataError as exc:
        raise where.error(str(exc).removeprefix(f"{prefix}: ")) from None


def _tool_use(tools: Protocol, row: SFTRow) -> tuple[int, int]:
    """(tool outputs, calls) that `tools` finds in a trace's response."""
    outputs = len(tools.tool_spans(row.response, tool_outputs=row.tool_outputs))
    model_text = tools.model_text(row.response, tool_outputs=row.tool_outputs)
    return outputs, sum(part.kind == "call" for part in tools.call_parts(model_text))


def _trace_preview(row: SFTRow) -> dict:
    return {
        "id": row.example.id,
        "prompt": row.example.prompt,
        "response": row.response,
        "tool_outputs": row.tool_outputs,
    }


def iter_traces(path: Path, protocol: str) -> Iterator[SFTRow]:
    """The SFT traces of a file `inspect_dataset` accepted as sft_traces, read as `protocol` writes them."""
    for number, (where, record) in enumerate(_jsonl_records(path), 1):
        yield _trace(record, protocol, number, where)


def dataset_misuse(ref: str, *, sft: bool, format: str | None = None) -> str | None:
    """Why dataset `ref` cannot be read where a run names it, or None: SFT traces named as problems
    for RL (data.train_dataset, data.val_dataset), or problems named as traces (sft.dataset, `sft`).
    `format` is the dataset's (a stored dataset's, or a file's); without it, tirlab's built-in names
    say what they hold, and any other name is left to the reader to judge."""
    if format is not None:
        traces, problems = format == DatasetFormat.SFT_TRACES.value, format != DatasetFormat.SFT_TRACES.value
    else:
        traces, problems = ref in BUILTIN_SFT_TRACES, ref in BUILTIN_DATASETS or ref.partition(":")[0] in GENERATED
    if sft and problems:
        return f"'{ref}' holds problems for RL, not SFT traces; use it as data.train_dataset or data.val_dataset"
    if not sft and traces:
        return _traces_as_problems(ref)
    return None


def _traces_as_problems(ref: str) -> str:
    return f"'{ref}' holds SFT traces; use it as sft.dataset"


def iter_examples(path: Path, format: DatasetFormat | None = None) -> Iterator[Example]:
    for _, example in _rows(path, format or detect_format(path)):
        yield example


def data_source_counts(path: Path, format: DatasetFormat | None = None) -> dict[str, int]:
    """Rows per data source of a file of problems, in order of first appearance, as `inspect_dataset` counts them."""
    return dict(Counter(example.data_source for example in iter_examples(path, format)))


def load_examples(path: Path, format: DatasetFormat | None = None) -> list[Example]:
    return list(iter_examples(path, format))


def load_dataset(
    ref: str,
    *,
    split: str = "train",
    seed: int = 0,
    size: int | None = None,
) -> list[Example]:
    """The examples a run config's dataset reference names.

    - ``arithmetic`` (or ``arithmetic:<level>``, a level of trainer.data.arithmetic.DIFFICULTIES: ``easy``,
      ``hard``, ``chain``, ``mixed``, ``multi``): the seeded synthetic generator;
      ``seed`` and ``size`` shape it, and ``split`` gives the validation split its own problems.
    - ``function-calling`` (or ``function-calling:<level>``: ``easy``, ``hard``, ``mixed``): the seeded
      function-calling generator (trainer.data.function_calling), shaped the same way.
    - ``tool-chains`` (or ``tool-chains:<level>``: ``one``, ``chain``, ``mixed``): multi-turn tasks whose
      second call needs the first call's result (trainer.data.tool_chains).
    - a name in `BUILTIN_FILES` (``gsm8k``, ``gsm8k-test``, ``toolrl-test``): that file, whatever
      ``split`` says, as on the dashboard.
    - a name in `USER_FILES` (``torl-test``): the file the user put at its path; an error says where
      to get it while it is missing.
    - anything else: a dataset file, in any format `detect_format` recognises but SFT traces.

    SFT traces (a built-in trace set's name or a traces file) are refused: they are sft.dataset's.
    ``size`` keeps the first ``size`` examples of a file. ``dataset:<id>`` references name a
    dashboard upload, which only the dashboard can resolve; it passes the stored file's path instead.
    """
    if size is not None and size < 0:
        raise DatasetError(f"size must be >= 0, got {size}")
    if misuse := dataset_misuse(ref, sft=False):
        raise DatasetError(misuse)
    name, _, variant = ref.partition(":")
    if name in GENERATORS:
        levels, noun, generate = GENERATORS[name]
        if variant not in ("", *levels):
            raise DatasetError(f"unknown {name} {noun} '{variant}'; expected one of {', '.join(levels)}")
        return generate(size, seed, variant or "mixed", split)
    if ref in BUILTIN_FILES:
        path = BUILTIN_FILES[ref].path
    elif ref in USER_FILES:
        path = USER_FILES[ref].path
        if not path.is_file():
            raise DatasetError(
                f"no file for '{ref}': {USER_FILES[ref].description} Download it to {path} "
                f"(see {path.parent / 'README.md'})."
            )
    elif ref.startswith(DATASET_REF_PREFIX):
        raise DatasetError(f"'{ref}' names a dashboard upload; resolve it to the uploaded file's path before loading")
    else:
        path = Path(ref).expanduser()
        if not path.is_file():
            # A preset's paper data (data/toolrl/train.parquet, data/tool_n1/...) is the user's to fetch;
            # the folder's README says from where.
            readme = path.parent / "README.md"
            fetch = f"; {readme} says where to get it" if readme.is_file() else ""
            raise DatasetError(
                f"no dataset '{ref}': expected a built-in name ({', '.join(BUILTIN_DATASETS)}) "
                f"or the path of a dataset file{fetch}"
            )
    examples = iter_examples(path)
    if size is None:
        return list(examples)
    return [example for _, example in zip(range(size), examples, strict=False)]


def _rows(path: Path, format: DatasetFormat) -> Iterator[tuple[dict[str, Any], Example]]:
    """Yield each raw record with its validated Example."""
    is_parquet = _is_parquet(path)
    if format is DatasetFormat.SWE:
        for where, record in _swe_records(path) if is_parquet else _jsonl_records(path):
            try:
                yield record, parse_swe_row(record, where=f"row {where.default_id}")
            except SweRowError as exc:
                raise where.error(f"{exc.field}: {exc.detail}", exc.field) from None
        return
    if format is DatasetFormat.VERL_PARQUET:
        if not is_parquet:
            raise DatasetError("expected a verl parquet file, but the file is not parquet")
        for where, record in _parquet_records(path):
            yield record, _verl_example(record, where)
        return
    if is_parquet:
        raise DatasetError(f"expected {format.value} JSONL, but the file is parquet")
    if format is DatasetFormat.SFT_TRACES:
        raise DatasetError(_traces_as_problems(path.name))
    for where, record in _jsonl_records(path):
        if format is DatasetFormat.FUNCTION_CALLING:
            yield record, _function_calling_example(record, where)
        else:
            yield record, _qa_example(record, where, format)


def _swe_records(path: Path) -> Iterator[tuple[_Where, dict[str, Any]]]:
    """A parquet file of software-engineering rows, row by row (SkyRL-v0's SWE-Gym parquet has no reward_model)."""
    try:
        parquet = pq.ParquetFile(path)
        for batch_start, batch in _batches(parquet):
            for offset, record in enumerate(batch.to_pylist()):
                yield _Where(row=batch_start + offset), record
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"cannot read parquet file ({_one_line(exc)})") from None


def _batches(parquet: pq.ParquetFile) -> Iterator[tuple[int, pa.RecordBatch]]:
    start = 0
    for batch in parquet.iter_batches(batch_size=256):
        yield start, batch
        start += batch.num_rows


def _is_parquet(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(len(_PARQUET_MAGIC)) == _PARQUET_MAGIC


def _jsonl_records(path: Path) -> Iterator[tuple[_Where, dict[str, Any]]]:
    seen = False
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            where = _Where(line=number)
            # NUL is valid UTF-8 but never appears in JSON text outside an escape.
            if b"\0" in raw:
                raise where.error(_BINARY)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise where.error(_BINARY) from None
            if number == 1:
                text = text.removeprefix("\ufeff")  # editors on Windows add a BOM
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise where.error(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(record, dict):
                raise where.error(f"expected a JSON object, got {_type_name(record)}")
            seen = True
            yield where, record
    if not seen:
        raise DatasetError("the file is empty")


def _parquet_records(path: Path) -> Iterator[tuple[_Where, dict[str, Any]]]:
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"cannot read parquet file ({_one_line(exc)})") from None
    names = parquet.schema_arrow.names
    for column in _VERL_COLUMNS:
        if column not in names:
            raise DatasetError(
                f"column '{column}' is missing; a verl parquet file needs columns "
                "'prompt', 'reward_model' and 'data_source'",
                field=column,
            )
    if parquet.metadata.num_rows == 0:
        raise DatasetError("the file is empty")
    row = 0
    batches = parquet.iter_batches()
    while True:
        # Corrupt pages only surface while decoding, so reading is guarded too.
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"cannot read parquet file ({_one_line(exc)})") from None
        if batch is None:
            return
        for record in batch.to_pylist():
            yield _Where(row=row), record
            row += 1


def _qa_example(record: dict[str, Any], where: _Where, format: DatasetFormat) -> Example:
    question = _text(record, "question", where)
    answer = _required(record, "answer", where)
    if format is DatasetFormat.GSM8K:
        if not isinstance(answer, str):
            raise _type_error("answer", "a string", answer, where)
        ground_truth = _gsm8k_ground_truth(answer, where)
    else:
        ground_truth = _qa_ground_truth(answer, where)
    return Example(
        id=_example_id(record, where),
        prompt=[{"role": "user", "content": question}],
        ground_truth=ground_truth,
        data_source=_data_source(record, where, format),
        extra_info=_extra_info(record, where),
    )


def _gsm8k_ground_truth(answer: str, where: _Where) -> str:
    _, marker, tail = answer.rpartition("####")
    if not marker:
        raise where.error("field 'answer' has no final '#### <number>'", "answer")
    number = tail.strip().replace(",", "")
    if not _NUMBER.fullmatch(number):
        raise where.error(
            f"field 'answer' must end with '#### <number>', got '#### {tail.strip()}'",
            "answer",
        )
    return number


def _qa_ground_truth(answer: Any, where: _Where) -> str:
    if isinstance(answer, bool) or not isinstance(answer, str | int | float):
        raise _type_error("answer", "a string or a number", answer, where)
    if isinstance(answer, float) and answer.is_integer():
        # JSON writers often emit 3.0 for an integer answer; the truth is "3".
        return str(int(answer))
    text = str(answer).strip()
    if not text:
        raise where.error("field 'answer' is empty", "answer")
    return text


def _function_calling_example(record: dict[str, Any], where: _Where) -> Example:
    if "messages" in record:
        prompt = _chat_messages(record["messages"], "messages", where)
    else:
        key = "query" if "query" in record and "question" not in record else "question"
        if key not in record:
            raise where.error("field 'question', 'query' or 'messages' is missing", "question")
        prompt = [{"role": "user", "content": _text(record, key, where)}]

    tools = _json_or_value(record, "tools", where)
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise _type_error("tools", "a list of objects", tools, where)
    tool_names = {_tool_name(tool, index, where) for index, tool in enumerate(tools, start=1)}

    # xLAM ships its calls as "answers"; our own files use "ground_truth".
    key = "answers" if "answers" in record and "ground_truth" not in record else "ground_truth"
    calls = _json_or_value(record, key, where)
    if not isinstance(calls, list):
        raise _type_error(key, "a list of calls", calls, where)
    ground_truth = [_call(call, index, key, tool_names, where) for index, call in enumerate(calls, 1)]

    return Example(
        id=_example_id(record, where),
        prompt=prompt,
        ground_truth=ground_truth,
        data_source=_data_source(record, where, DatasetFormat.FUNCTION_CALLING),
        tools=tools,
        extra_info=_extra_info(record, where),
    )


def _tool_name(tool: dict[str, Any], index: int, where: _Where) -> str:
    # OpenAI-style tools nest the schema under "function"; chat templates take both.
    spec = tool["function"] if isinstance(tool.get("function"), dict) else tool
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise where.error(f"field 'tools': tool {index} has no string 'name'", "tools")
    return name


def _call(
    call: Any, index: int, key: str, tool_names: set[str], where: _Where, *, label: str | None = None
) -> dict[str, Any]:
    label = label or f"field '{key}'"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise where.error(f"{label}: call {index} must be an object with a string 'name'", key)
    name = call["name"]
    if name not in tool_names:
        raise where.error(f"{label}: call {index} names tool '{name}', which is not in 'tools'", key)
    # ToolRL writes "parameters"; a call without either takes no arguments.
    arguments = call.get("arguments", call.get("parameters", {}))
    if isinstance(arguments, str):
        arguments = _decode(arguments, f"{label}: call {index} arguments", key, where)
    if not isinstance(arguments, dict):
        got = _type_name(arguments)
        raise where.error(f"{label}: call {index} arguments must be an object, got {got}", key)
    return {"name": name, "arguments": arguments}


def _verl_example(record: dict[str, Any], where: _Where) -> Example:
    prompt = _chat_messages(record["prompt"], "prompt", where)
    reward_model = record["reward_model"]
    if not isinstance(reward_model, dict):
        raise _type_error("reward_model", "a struct with 'ground_truth'", reward_model, where)
    ground_truth = reward_model.get("ground_truth")
    if ground_truth is None:
        raise where.error("column 'reward_model' has no 'ground_truth'", "reward_model")
    tools = _verl_tools(record, where)
    if tools is None:
        tools = _system_tools(prompt, where)
    return Example(
        id=_example_id(record, where),
        prompt=prompt,
        ground_truth=_verl_ground_truth(ground_truth, tools, where),
        data_source=_text(record, "data_source", where),
        tools=tools,
        extra_info=_extra_info(record, where),
    )


def _verl_tools(record: dict[str, Any], where: _Where) -> list[dict] | None:
    """An optional 'tools' column: function-calling data in verl parquet keeps its tool schemas
    there, as objects or as a JSON string (Tool-N1's train.parquet keeps the JSON string its
    preprocessing started from, verl_toolcall_preprocess.py:42,98,122 @f9b4849), so a prompt
    template can list them."""
    if record.get("tools") is None:
        return None
    tools = _json_or_value(record, "tools", where)
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise _type_error("tools", "a list of objects", tools, where)
    for index, tool in enumerate(tools, start=1):
        _tool_name(tool, index, where)
    return tools


def _system_tools(prompt: list[dict[str, str]], where: _Where) -> list[dict] | None:
    """The tools a row without a 'tools' column lists in its system message, in ToolRL's or
    Tool-N1's layout; None when it lists none that way."""
    for message in prompt:
        if message["role"] != "system":
            continue
        text = message["content"]
        if _TOOLRL_TOOLS_HEADING in text:
            return _toolrl_listed_tools(text, where)
        if listing := _TOOL_N1_TOOLS.search(text):
            return _tool_n1_listed_tools(listing.group(1), where)
    return None


def _toolrl_listed_tools(text: str, where: _Where) -> list[dict]:
    """ToolRL's numbered list, up to the blank line that ends it: {name, description, parameters}
    per tool, the parameters a JSON object (name -> spec, as rlla_rl.json writes them)."""
    start = text.index(_TOOLRL_TOOLS_HEADING) + len(_TOOLRL_TOOLS_HEADING)
    end = text.find("\n\n", start)
    listing = text[start : end if end >= 0 else len(text)]
    tools = []
    for index, entry in enumerate(filter(None, _TOOLRL_TOOL_START.split(listing)), start=1):
        match = _TOOLRL_TOOL.fullmatch(entry.removesuffix("\n"))
        if match is None:
            raise where.error(
                f"column 'prompt': tool {index} of the system message's tool list is not "
                "'<n>. Name: ...\\nDescription: ...\\nParameters: {...}' (ToolRL's layout)",
                "prompt",
            )
        name, description, parameters = match.group(1, 2, 3)
        label = f"column 'prompt': the Parameters of tool {index} ({name}) in the system message"
        parameters = _decode(parameters, label, "prompt", where, problem="are not valid JSON")
        if not isinstance(parameters, dict):
            raise where.error(f"{label} must be a JSON object, got {_type_name(parameters)}", "prompt")
        tools.append({"name": name, "description": description, "parameters": parameters})
    return tools


def _tool_n1_listed_tools(listing: str, where: _Where) -> list[dict]:
    """Tool-N1's <tools> block: one {"type": "function", "function": tool} a line, read back as the tool."""
    tools = []
    for index, line in enumerate(listing.split("\n"), start=1):
        label = f"column 'prompt': line {index} of the system message's <tools> block"
        tool = _decode(line, label, "prompt", where, problem="is not valid JSON")
        if not isinstance(tool, dict):
            raise where.error(f"{label} must be a JSON object, got {_type_name(tool)}", "prompt")
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            tool = tool["function"]
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise where.error(f"{label} has no string 'name'", "prompt")
        tools.append(tool)
    return tools


def _verl_ground_truth(value: Any, tools: list[dict] | None, where: _Where) -> Any:
    """reward_model.ground_truth as the rewards read it. ToolRL's text form (a <tool_call> block of
    one JSON call a line, or a <response>) stays text: its reward reads the reply's expected shape
    from it; its calls must parse. Tool-N1's JSON list of {name, arguments} (json.dumps of the
    answer, verl_toolcall_preprocess.py:45,104-111 @f9b4849) becomes that list of calls, checked
    against the row's tools as its preprocessing guarantees (raw_data_process.py:85-88 @f9b4849)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # math rewards compare strings
    if not isinstance(value, str):
        return value
    if "<tool_call>" in value:
        if ground_truth_calls(value) is None:
            raise where.error(
                "column 'reward_model': the ground truth's <tool_call> block must hold one JSON call a line, "
                'each {"name": ..., "parameters": {...}} (ToolRL\'s form)',
                "reward_model",
            )
        return value
    if tools is None or not value.lstrip().startswith(("[", "{")):
        return value
    label = "column 'reward_model': the ground truth"
    problem = "starts like a JSON list of calls but is not valid JSON"
    calls = _decode(value, label, "reward_model", where, problem=problem)
    if not isinstance(calls, list):
        raise where.error(f"{label} must be a JSON list of calls, got {_type_name(calls)}", "reward_model")
    names = {_tool_name(tool, index, where) for index, tool in enumerate(tools, start=1)}
    return [_call(call, index, "reward_model", names, where, label=label) for index, call in enumerate(calls, 1)]


def _chat_messages(value: Any, name: str, where: _Where) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise _type_error(name, "a non-empty list of chat messages {role, content}", value, where)
    for index, message in enumerate(value, start=1):
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise where.error(
                f"{where.noun} '{name}': message {index} must have a string 'role' and 'content'",
                name,
            )
    return value


def _example_id(record: dict[str, Any], where: _Where) -> str:
    value = record.get("id")
    if value is None and isinstance(record.get("extra_info"), dict):
        value = record["extra_info"].get("index")
    if value is None:
        return where.default_id
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _type_error("id", "a string or an integer", value, where)
    return str(value)


def _data_source(record: dict[str, Any], where: _Where, format: DatasetFormat) -> str:
    """A JSONL row's optional 'data_source' (its benchmark, as in verl parquet), else the format's name."""
    if record.get("data_source") is None:
        return format.value
    return _text(record, "data_source", where)


def _extra_info(record: dict[str, Any], where: _Where) -> dict | None:
    value = record.get("extra_info")
    if value is not None and not isinstance(value, dict):
        raise _type_error("extra_info", "an object", value, where)
    return value


def _required(record: dict[str, Any], name: str, where: _Where) -> Any:
    if name not in record:
        raise where.error(f"{where.noun} '{name}' is missing", name)
    return record[name]


def _text(record: dict[str, Any], name: str, where: _Where) -> str:
    value = _required(record, name, where)
    if not isinstance(value, str):
        raise _type_error(name, "a string", value, where)
    if not value.strip():
        raise where.error(f"{where.noun} '{name}' is empty", name)
    return value


def _json_or_value(record: dict[str, Any], name: str, where: _Where) -> Any:
    """A field that may hold a value or, as xLAM ships it, that value JSON-encoded."""
    value = _required(record, name, where)
    return _decode(value, f"field '{name}'", name, where) if isinstance(value, str) else value


def _decode(text: str, label: str, name: str, where: _Where, *, problem: str = "is a string but not valid JSON") -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"{exc.msg} at column {exc.colno}"
        raise where.error(f"{label} {problem} ({reason})", name) from None


def _type_error(name: str, expected: str, value: Any, where: _Where) -> DatasetError:
    return where.error(f"{where.noun} '{name}' must be {expected}, got {_type_name(value)}", name)


def _type_name(value: Any) -> str:
    names = {
        dict: "object",
        list: "list",
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def _preview(example: Example) -> dict:
    row = {
        "id": example.id,
        "prompt": example.prompt,
        "ground_truth": example.ground_truth,
        "data_source": example.data_source,
        "tools": example.tools,
    }
    if instance := (example.extra_info or {}).get("instance"):
        # A software-engineering row (trainer.data.swe_rows): which repository, and its issue.
        row["instance"] = {key: instance.get(key) for key in ("instance_id", "repo", "problem_statement")}
    # Parquet can hold values JSON cannot (bytes, dates); the preview goes to a browser.
    return json.loads(json.dumps(row, default=str))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _size(num_bytes: int) -> str:
    if num_bytes >= 1024 * 1024:
        return f"{num_bytes / (1024 * 1024):.1f}".removesuffix(".0") + " MB"
    if num_bytes >= 1024:
        return f"{num_bytes / 1024:.1f}".removesuffix(".0") + " KB"
    return f"{num_bytes} bytes"


def _one_line(exc: BaseException) -> str:
    # Arrow's messages span lines; ours are shown as a single sentence.
    return " ".join(str(exc).split())
