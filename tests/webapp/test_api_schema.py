"""The served OpenAPI schema says what the API answers and accepts.

Each case here was found by the API fuzz (test_api_fuzz.py), which checks every response against this
schema; these tests pin each fix down without it.
"""

from typing import Any

import pytest
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from webapp.datasets.services import builtin_datasets_seed
from webapp.rewards.services import builtin_reward_configs_seed

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]


def component(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return schema["components"]["schemas"][name]


def allows_null(prop: dict[str, Any]) -> bool:
    """OpenAPI 3.1 spells a nullable property as a type list with "null", or a "null" alternative."""
    types = prop.get("type", [])
    alternatives = prop.get("oneOf", []) + prop.get("anyOf", [])
    return "null" in (types if isinstance(types, list) else [types]) or any(allows_null(a) for a in alternatives)


def test_the_schema_is_valid_openapi(schema):
    # The ingest models come from pydantic, whose optional fields have a {"type": "null"} alternative:
    # valid in OpenAPI 3.1, not in 3.0, so client generators refused the schema when it said 3.0.
    assert schema["openapi"].startswith("3.1")
    validate_schema(schema)


def test_every_operation_documents_the_errors_it_can_answer(schema):
    for method, path, operation in operations(schema):
        codes = set(operation["responses"])
        label = f"{method} {path}"
        if "{id}" in path or method == "GET" and "results" in str(operation["responses"]["200"]):
            assert "404" in codes, label
        if "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", [])):
            assert "400" in codes, label
        if "requestBody" in operation:
            assert "415" in codes, label
        if not path.endswith("/ingest"):
            assert {"401", "403"} <= codes, label


def test_state_conflicts_and_a_missing_run_token_are_documented(schema):
    assert "409" in schema["paths"]["/api/v1/runs/{id}/"]["delete"]["responses"]
    assert "409" in schema["paths"]["/api/v1/runs/{id}/cancel/"]["post"]["responses"]
    ingest = schema["paths"]["/api/v1/runs/{id}/ingest"]["post"]
    assert {"200", "400", "401", "403", "409", "413"} <= set(ingest["responses"])
    assert ingest["security"] == [{"runToken": []}]


def test_a_field_error_may_be_a_list_of_messages(api, schema):
    # DRF answers a bare list when the message belongs to no field, e.g. a search for a NUL character.
    response = api.get("/api/v1/experiments/?search=a%00b")
    assert response.status_code == 400 and isinstance(response.json(), list)
    bad_request = schema["paths"]["/api/v1/experiments/"]["get"]["responses"]["400"]
    assert {"type": "array", "items": {"type": "string"}} in bad_request["content"]["application/json"]["schema"][
        "oneOf"
    ]


def test_built_in_rows_have_no_owner_and_the_schema_says_so(api, schema):
    builtin_datasets_seed()
    builtin_reward_configs_seed()
    assert api.get("/api/v1/datasets/").json()["results"][0]["owner"] is None
    assert api.get("/api/v1/reward-configs/").json()["results"][0]["owner"] is None
    assert allows_null(component(schema, "Dataset")["properties"]["owner"])
    assert allows_null(component(schema, "RewardConfig")["properties"]["owner"])


def test_a_run_without_parent_or_place_in_line_matches_the_schema(api, make_run, schema):
    run, _ = make_run()
    body = api.get(f"/api/v1/runs/{run.pk}/").json()
    assert (body["parent_relation"], body["queue_position"]) == ("", None)
    run_schema = component(schema, "Run")["properties"]
    assert allows_null(run_schema["queue_position"])
    relation = run_schema["parent_relation"]["oneOf"]
    assert {"$ref": "#/components/schemas/BlankEnum"} in relation


def test_integer_query_parameters_state_the_range_the_api_accepts(schema):
    def parameter(path: str, name: str) -> dict[str, Any]:
        return next(p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == name)["schema"]

    assert parameter("/api/v1/runs/{id}/metrics/", "max_points") == {"type": "integer", "minimum": 1, "maximum": 10000}
    assert parameter("/api/v1/runs/{id}/logs/", "after") == {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
    assert parameter("/api/v1/runs/{id}/trajectories/", "step")["minimum"] == 0
    assert parameter("/api/v1/runs/", "page_size")["minimum"] == 1


def test_an_empty_query_parameter_is_documented_as_not_given(schema):
    for method, path, operation in operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                assert parameter.get("allowEmptyValue") is True, f"{method} {path} {parameter['name']}"


def test_bodies_are_json_but_for_a_dataset_upload(schema):
    for method, path, operation in operations(schema):
        if "requestBody" in operation:
            expected = (
                ["multipart/form-data"] if (method, path) == ("POST", "/api/v1/datasets/") else ["application/json"]
            )
            assert list(operation["requestBody"]["content"]) == expected, f"{method} {path}"


def test_every_operation_refuses_a_request_without_credentials(schema, run_and_token):
    # Cheaper here than by the fuzz's own probes (two more requests after every success).
    run, _ = run_and_token
    client = APIClient()
    for method, path, _ in operations(schema):
        response = client.generic(method, path.replace("{id}", str(run.pk)), b"{}", content_type="application/json")
        assert response.status_code == 401, f"{method} {path}"
