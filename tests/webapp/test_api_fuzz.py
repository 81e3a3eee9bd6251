"""Schemathesis over every operation of the served OpenAPI schema, in-process, against realistic rows.

Fails on any 5xx, any undocumented status code, any response whose body or content type does not
match the schema, and any schema-violating request the API accepts. Deterministic (fixed seed,
derandomized, no example database, sequences reset), so a failure fails the same way on every run;
its report ends with a curl command. Each operation is a subtest: the failure report names it.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants
from schemathesis.core.failures import AcceptedNegativeData, Failure
from schemathesis.core.mutations import Mutation, OperatorKind
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.schemas import OpenApiSchema
from schemathesis.transport.serialization import Binary

from tests.webapp.test_ingest import batch
from webapp.accounts.services import api_token_create
from webapp.datasets.services import builtin_datasets_seed, dataset_create_from_upload
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Experiment
from webapp.runs.services import run_transition

# Sequences restart for this test, so the rows it fuzzes against have the same ids whatever ran before.
pytestmark = pytest.mark.django_db(transaction=True, reset_sequences=True)

# Examples per operation in the fuzzing phase; the coverage phase adds its boundary cases on top
# (about 950 requests in all).
MAX_EXAMPLES = 15
SEED = 12

DATASET_FILES = [
    b'{"question": "What is 2+3?", "answer": "5"}\n',
    b'{"question": "Tom has 3 apples and buys 2.", "answer": "3 + 2 = 5\\n#### 5"}\n',
]

FUZZ_CONFIG = {
    "seed": SEED,
    "generation": {
        "max-examples": MAX_EXAMPLES,
        "deterministic": True,
        "database": "none",
        # The test authenticates every request itself: a personal API token, or the run's ingest token.
        "with-security-parameters": False,
    },
    "phases": {
        # Boundary values of valid input (longest names, largest numbers, each enum value, only the
        # required fields); invalid input is left to the fuzzing phase, which mixes both modes.
        "coverage": {"generation": {"mode": "positive"}},
    },
    "checks": {
        # Not every refusal of a schema-valid request is a lie of the schema: the API validates what
        # OpenAPI cannot say (a run config against trainer.config, reward params per reward, a dataset
        # file's content, unique names, rows the user may not see, a run's state), and answers 400.
        "positive_data_acceptance": {"enabled": False},
        # It would send two more requests after every success; test_api_schema.py checks once per
        # operation that a request without credentials is refused.
        "ignored_auth": {"enabled": False},
    },
}


@dataclass
class World:
    """What the API is fuzzed against: rows of every kind, some the user's own, some not."""

    api_token: str
    run_tokens: dict[int, str]
    ids: dict[str, list[int]]


_SCALAR_TYPES = {"string", "integer", "number", "boolean"}


def _read_as_declared(mutation: Mutation, media_type: str | None) -> bool:
    """Whether the API reads a body value that breaks the schema as one that keeps it, by design.

    DRF reads `{"name": 12}` as the text "12" and `{"max_steps": "3"}` as 3, and trims the whitespace
    around a text before it checks its length; a multipart part is text whatever was generated for it
    (an object arrives as its JSON). Nothing else that breaks the schema is read.
    """
    if mutation.parameter_location != ParameterLocation.BODY:
        return False
    if mutation.keywords == ("maxLength",):
        return isinstance(mutation.new_value, str) and mutation.new_value != mutation.new_value.strip()
    if mutation.operator != OperatorKind.CHANGE_TYPE:
        return False
    if media_type == "multipart/form-data":
        return mutation.original_value == "string"
    # A type may be a list of types (["string", "null"]), which is not one scalar type.
    kinds = (mutation.original_value, mutation.new_value)
    return all(isinstance(kind, str) and kind in _SCALAR_TYPES for kind in kinds)


def filter_failure(
    context: schemathesis.HookContext, failure: Failure, case: schemathesis.Case, response: schemathesis.Response
) -> bool:
    """Keep every failure but an accepted body whose only flaws are values the API reads as declared."""
    if not isinstance(failure, AcceptedNegativeData) or case.meta is None:
        return True
    mutations = getattr(case.meta.phase.data, "mutations", ())
    return not mutations or not all(_read_as_declared(mutation, case.media_type) for mutation in mutations)


@pytest.fixture
def world(owner, stranger, make_run, settings, tmp_path) -> World:
    settings.MEDIA_ROOT = tmp_path / "media"
    # ~950 requests in seconds with one token: rate limits would answer some of them 429 (documented, so
    # not a failure) depending on the machine's speed; off, every request exercises its operation.
    settings.API_RATE_LIMIT = settings.INGEST_RATE_LIMIT = (0, 1)
    token, secret = api_token_create(user=owner, name="fuzz")
    experiment = Experiment.objects.create(name="tool use", owner=owner, tags=["math"])
    theirs = Experiment.objects.create(name="tool use", owner=stranger)
    run, run_token = make_run(experiment=experiment)
    run_transition(run=run, status="starting")
    ingest_batch(run_id=run.pk, token=run_token, payload=batch())
    finished, finished_token = make_run(name="finished")
    run_transition(run=finished, status="starting")
    ingest_batch(
        run_id=finished.pk,
        token=finished_token,
        payload={**batch(), "status": {"status": "succeeded", "checkpoint": "/tmp/checkpoint"}},
    )
    their_run, _ = make_run(user=stranger, name="theirs")
    reward_config = RewardConfig.objects.create(name="mine", owner=owner, reward="torl", params={})
    dataset = dataset_create_from_upload(
        user=owner, upload=SimpleUploadedFile("qa.jsonl", b'{"question": "1+1?", "answer": "2"}\n')
    )
    return World(
        api_token=secret,
        run_tokens={run.pk: run_token, finished.pk: finished_token},
        ids={
            "tokens": [token.pk, api_token_create(user=stranger, name="theirs")[0].pk],
            "experiments": [experiment.pk, theirs.pk],
            "runs": [run.pk, finished.pk, their_run.pk],
            "reward-configs": [reward_config.pk, builtin_reward_configs_seed()[0].pk],
            "datasets": [dataset.pk, builtin_datasets_seed()[0].pk],
        },
    )


@pytest.fixture
def api_schema(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenApiSchema]:
    # Hypothesis mixes in constants from the project's modules imported so far, which depend on what
    # else this process ran: without them the same seed makes the same requests alone or in the suite.
    monkeypatch.setattr(providers, "_get_local_constants", Constants)
    providers.CONSTANTS_CACHE.cache.clear()
    loaded = schemathesis.openapi.from_wsgi(
        "/api/schema/", get_wsgi_application(), config=schemathesis.Config.from_dict(FUZZ_CONFIG)
    )

    @loaded.hook
    def flatmap_path_parameters(
        context: schemathesis.HookContext, path_parameters: dict[str, Any]
    ) -> st.SearchStrategy[dict[str, Any]]:
        # Generated ids hardly ever exist: as often as not, name a row that does (its owner's or not).
        # An id that is not an integer is a negative case and stays as generated.
        generated = (path_parameters or {}).get("id")
        if not isinstance(generated, int) or isinstance(generated, bool):
            return st.just(path_parameters)
        ids = world.ids[context.operation.path.split("/")[3]]
        return st.one_of(st.just(path_parameters), st.sampled_from(ids).map(lambda pk: {**path_parameters, "id": pk}))

    @loaded.hook
    def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
        # An upload's file is random bytes, which no dataset format reads: as often as not, send a
        # dataset, so names and descriptions are fuzzed through a successful upload too.
        upload = context.operation.label == "POST /api/v1/datasets/" and isinstance(body, dict)
        if not upload or not isinstance(body.get("file"), Binary):
            return st.just(body)
        return st.one_of(st.just(body), st.sampled_from(DATASET_FILES).map(lambda data: {**body, "file": Binary(data)}))

    loaded.hook(filter_failure)
    # As Django's test client does: a request must not close the connection that holds its example's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield loaded
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
def test_api_conforms_to_its_schema(case: schemathesis.Case, world: World) -> None:
    token = world.api_token
    if case.path.endswith("/ingest"):
        # A run's ingest takes that run's own token; any other run gets the first run's, which it refuses.
        run_id = case.path_parameters.get("id")
        first = next(iter(world.run_tokens.values()))
        token = world.run_tokens.get(run_id, first) if isinstance(run_id, int) else first
    # Each example starts from the same rows: what it wrote is rolled back.
    with transaction.atomic():
        case.call_and_validate(headers={"Authorization": f"Bearer {token}"})
        transaction.set_rollback(True)
