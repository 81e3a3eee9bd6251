"""MLflow's search filters and orderings (search_runs, search_experiments), evaluated on tirlab's rows.

The grammar is MLflow's (mlflow/utils/search_utils.py), the part its users write: comparisons joined
by AND, each `<entity>.<key> <op> <value>`:

- entities: `attributes.` (also `attribute.`, `attr.`, `run.`), `metrics.` (`metric.`), `params.`
  (`param.`, `parameters.`), `tags.` (`tag.`); a bare name is an attribute; keys with dots or
  spaces in backquotes or double quotes (``tags.`mlflow.runName` ``);
- operators: =, !=, <, <=, >, >=, LIKE, ILIKE (% and _ wildcards), IN and NOT IN with a
  parenthesised list, IS NULL, IS NOT NULL;
- values: 'quoted' or "quoted" strings, numbers.

Anything else (OR, parentheses around comparisons, datasets.) is refused with INVALID_PARAMETER_VALUE
naming what could not be read: a filter tirlab cannot evaluate never silently matches everything.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from webapp.tracking.errors import invalid

_ENTITY = {
    "attributes": "attributes",
    "attribute": "attributes",
    "attr": "attributes",
    "run": "attributes",
    "metrics": "metrics",
    "metric": "metrics",
    "params": "params",
    "param": "params",
    "parameters": "params",
    "tags": "tags",
    "tag": "tags",
}
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<backquoted>`[^`]*`)
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<op><=|>=|!=|<>|=|<|>)
      | (?P<punct>[(),.])
      | (?P<word>[A-Za-z_][\w\-:]*)
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Comparison:
    entity: str  # attributes, metrics, params, tags
    key: str
    op: str  # =, !=, <, <=, >, >=, LIKE, ILIKE, IN, NOT IN, IS NULL, IS NOT NULL
    value: Any


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        if not text[position:].strip():
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise invalid(f"Invalid filter {text!r}: cannot read it from {text[position:].strip()[:30]!r}.")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1])


class _Reader:
    def __init__(self, text: str):
        self.text, self.tokens, self.i = text, _tokens(text), 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise invalid(f"Invalid filter {self.text!r}: it ends too early.")
        self.i += 1
        return token

    def word(self, *words: str) -> bool:
        token = self.peek()
        if token is not None and token[0] == "word" and token[1].upper() in words:
            self.i += 1
            return True
        return False

    def identifier(self, default_entity: str) -> tuple[str, str]:
        kind, text = self.take()
        if kind == "backquoted" or kind == "string":
            return default_entity, _unquote(text)
        if kind != "word":
            raise invalid(f"Invalid filter {self.text!r}: expected a name, got {text!r}.")
        next_token = self.peek()
        if next_token == ("punct", ".") and text.lower() in _ENTITY:
            self.take()
            kind, key = self.take()
            if kind in ("backquoted", "string"):
                return _ENTITY[text.lower()], _unquote(key)
            if kind != "word":
                raise invalid(f"Invalid filter {self.text!r}: expected a key after {text}.")
            # A dotted key without quotes (tags.mlflow.runName): the dots are part of it.
            while self.peek() == ("punct", "."):
                self.take()
                key += "." + self.take()[1]
            return _ENTITY[text.lower()], key
        if next_token == ("punct", "."):
            raise invalid(f"Invalid filter {self.text!r}: unknown entity {text!r} (attributes, metrics, params, tags).")
        return default_entity, text

    def value(self) -> Any:
        kind, text = self.take()
        if kind == "string":
            return _unquote(text)
        if kind == "number":
            return float(text)
        raise invalid(f"Invalid filter {self.text!r}: expected a quoted string or a number, got {text!r}.")


def parse_filter(text: str, *, default_entity: str = "attributes") -> list[Comparison]:
    """The comparisons of an MLflow filter string ('' -> none)."""
    if not text or not text.strip():
        return []
    reader, comparisons = _Reader(text), []
    while True:
        entity, key = reader.identifier(default_entity)
        if reader.word("IS"):
            negated = reader.word("NOT")
            if not reader.word("NULL"):
                raise invalid(f"Invalid filter {text!r}: IS must be followed by NULL or NOT NULL.")
            comparisons.append(Comparison(entity, key, "IS NOT NULL" if negated else "IS NULL", None))
        elif reader.word("NOT"):
            if not reader.word("IN"):
                raise invalid(f"Invalid filter {text!r}: NOT must be followed by IN.")
            comparisons.append(Comparison(entity, key, "NOT IN", _value_list(reader)))
        elif reader.word("IN"):
            comparisons.append(Comparison(entity, key, "IN", _value_list(reader)))
        elif reader.word("LIKE", "ILIKE"):
            op = reader.tokens[reader.i - 1][1].upper()
            comparisons.append(Comparison(entity, key, op, reader.value()))
        else:
            kind, op = reader.take()
            if kind != "op":
                raise invalid(f"Invalid filter {text!r}: expected a comparison after {key!r}, got {op!r}.")
            comparisons.append(Comparison(entity, key, "!=" if op == "<>" else op, reader.value()))
        if reader.peek() is None:
            return comparisons
        if not reader.word("AND"):
            raise invalid(f"Invalid filter {text!r}: comparisons are joined with AND; got {reader.peek()[1]!r}.")


def _value_list(reader: _Reader) -> list[Any]:
    if reader.take() != ("punct", "("):
        raise invalid(f"Invalid filter {reader.text!r}: IN takes a parenthesised list.")
    values = [reader.value()]
    while (token := reader.take()) == ("punct", ","):
        values.append(reader.value())
    if token != ("punct", ")"):
        raise invalid(f"Invalid filter {reader.text!r}: the IN list is not closed.")
    return values


def _like(pattern: str, value: str, *, case: bool) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case else re.IGNORECASE | re.DOTALL) is not None


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def matches(comparison: Comparison, actual: Any) -> bool:
    """Whether a row's value (None when it has none) satisfies one comparison."""
    op, wanted = comparison.op, comparison.value
    if op == "IS NULL":
        return actual is None
    if op == "IS NOT NULL":
        return actual is not None
    if actual is None:
        return False
    if op in ("IN", "NOT IN"):
        found = str(actual) in [str(v) for v in wanted]
        return found if op == "IN" else not found
    if op in ("LIKE", "ILIKE"):
        return _like(str(wanted), str(actual), case=op == "LIKE")
    if isinstance(wanted, float):
        number = _numeric(actual)
        if number is None:
            return False
        left, right = number, wanted
    else:
        left, right = str(actual), wanted
    return {
        "=": left == right,
        "!=": left != right,
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }[op]


@dataclass(frozen=True)
class Ordering:
    entity: str
    key: str
    descending: bool


def parse_order_by(clauses: Sequence[str], *, default_entity: str = "attributes") -> list[Ordering]:
    orderings = []
    for clause in clauses:
        reader = _Reader(clause)
        entity, key = reader.identifier(default_entity)
        descending = False
        if reader.word("DESC"):
            descending = True
        else:
            reader.word("ASC")
        if reader.peek() is not None:
            raise invalid(f"Invalid order_by clause {clause!r}: '<name> [ASC|DESC]'.")
        orderings.append(Ordering(entity, key, descending))
    return orderings


def sort_rows(rows: list[Any], orderings: list[Ordering], value: Callable[[Any, str, str], Any]) -> list[Any]:
    """Rows sorted by each ordering in turn (the last given sorts least); missing values last, as MLflow."""
    for ordering in reversed(orderings):
        present = [r for r in rows if value(r, ordering.entity, ordering.key) is not None]
        absent = [r for r in rows if value(r, ordering.entity, ordering.key) is None]

        def key(row: Any, ordering: Ordering = ordering) -> Any:
            v = value(row, ordering.entity, ordering.key)
            number = _numeric(v)
            return (0, number, "") if number is not None else (1, 0.0, str(v))

        rows = sorted(present, key=key, reverse=ordering.descending) + absent
    return rows


def page(rows: list[Any], *, max_results: int, token: str) -> tuple[list[Any], str]:
    """One page of `rows` from the offset `token` holds, and the token of the next ('' at the end)."""
    offset = 0
    if token:
        try:
            offset = int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
        except (ValueError, KeyError, TypeError, binascii.Error, json.JSONDecodeError):
            raise invalid(f"Invalid page_token {token!r}.") from None
    chunk = rows[offset : offset + max_results]
    more = offset + max_results < len(rows)
    next_token = (
        base64.urlsafe_b64encode(json.dumps({"offset": offset + max_results}).encode()).decode() if more else ""
    )
    return chunk, next_token
