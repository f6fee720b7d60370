"""The client and the server's API may not drift apart: checked against the OpenAPI
document the live server serves (the same as the committed ``openapi/openapi.json``).

Every model field is a property of its schema and every property a field; a property
the schema requires is a field that is never ``None``; the client's enums are the
schema's; every route the clients call is a path and method of the API (with query
parameters it takes), and every path and method of the API is called by both clients."""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest

import droidpilot
from droidpilot import _async_client, _client, _models, _routes

Spec = dict[str, Any]


@pytest.fixture(scope="module")
def spec(server_url: str) -> Spec:
    document: Spec = httpx.get(f"{server_url}/openapi.json", timeout=30).json()
    return document


def _schema(spec: Spec, name: str) -> Spec:
    s: Spec = spec["components"]["schemas"][name]
    return s


def _resolve(spec: Spec, s: Spec) -> Spec:
    ref = s.get("$ref")
    return _schema(spec, ref.rsplit("/", 1)[1]) if ref else s


def properties(spec: Spec, s: Spec) -> tuple[dict[str, Spec], set[str]]:
    """A schema's properties and required names, through ``$ref`` and ``allOf``."""
    s = _resolve(spec, s)
    props: dict[str, Spec] = dict(s.get("properties", {}))
    required = set(s.get("required", []))
    for part in s.get("allOf", []):
        p, r = properties(spec, part)
        props.update(p)
        required |= r
    variants = [properties(spec, v) for v in s.get("oneOf", [])]
    if variants:
        # A tagged union (an event): the properties every variant has.
        common = set.intersection(*(set(p) for p, _ in variants))
        props.update({k: variants[0][0][k] for k in common})
        required |= set.intersection(*(r for _, r in variants)) & common
    return props, required


def _event_payload(spec: Spec, event_type: str) -> Spec:
    for variant in _schema(spec, "TaskEvent")["oneOf"]:
        if variant["properties"]["type"]["enum"] == [event_type]:
            payload: Spec = variant["properties"]["payload"]
            return payload
    raise AssertionError(f"no event type {event_type}")


MODELS = [
    m
    for m in vars(_models).values()
    if inspect.isclass(m) and issubclass(m, _models.Model) and m is not _models.Model
]


def _fields(model: type) -> dict[str, Any]:
    hints = typing.get_type_hints(model)
    return {f.name: hints[f.name] for f in dataclasses.fields(model) if f.name != "raw_json"}


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _schema_of(spec: Spec, model: type) -> Spec:
    name: str = model.__schema__  # type: ignore[attr-defined]
    if name.startswith("TaskEvent:"):
        return _event_payload(spec, name.split(":", 1)[1])
    return _schema(spec, name)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_model_field_is_a_schema_property_and_back(spec: Spec, model: type) -> None:
    props, required = properties(spec, _schema_of(spec, model))
    fields = _fields(model)
    assert sorted(fields) == sorted(props), f"{model.__name__} and its schema differ"
    for name in required:
        assert not _optional(fields[name]), f"{model.__name__}.{name} is required by the schema"
    for name, tp in fields.items():
        if typing.get_origin(tp) is typing.Literal:
            enum = _resolve(spec, props[name]).get("enum")
            assert list(typing.get_args(tp)) == enum, f"{model.__name__}.{name}: values differ"
        if name not in required:
            field = next(f for f in dataclasses.fields(model) if f.name == name)
            has_default = (
                field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
            )
            assert has_default, f"{model.__name__}.{name} is optional in the schema: give it a default"


def test_the_coordinator_request_is_a_task_request(spec: Spec) -> None:
    props, _ = properties(spec, _schema(spec, "NewTask"))
    fields = {f.name for f in dataclasses.fields(droidpilot.MobileTaskRequest)}
    assert fields <= set(props), fields - set(props)
    assert {"task_id", "ai_prompt", "device_id", "session_id", "max_steps", "timeout_seconds"} <= fields


@pytest.mark.parametrize(
    ("alias", "schema"),
    [
        (_models.TaskStatus, "TaskStatus"),
        (_models.DeviceState, "DeviceState"),
        (_models.CoordinatorStatus, "CoordinatorStatus"),
        (_models.CompletionCode, "CompletionCode"),
        (_models.AgentKind, "AgentKind"),
        (_models.InterventionKind, "InterventionKind"),
        (_models.StepStatus, "StepStatus"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_client_enums_are_the_schemas(spec: Spec, alias: Any, schema: str) -> None:
    assert list(typing.get_args(alias)) == _schema(spec, schema)["enum"]


def test_the_event_types_are_the_schemas(spec: Spec) -> None:
    types_ = [v["properties"]["type"]["enum"][0] for v in _schema(spec, "TaskEvent")["oneOf"]]
    assert sorted(typing.get_args(_models.EventType)) == sorted(types_)


def test_ended_is_every_terminal_status(spec: Spec) -> None:
    statuses = set(_schema(spec, "TaskStatus")["enum"])
    live = {"queued", "running", "waiting_for_user", "paused"}
    assert droidpilot.ENDED == statuses - live


def test_every_route_is_in_the_api_and_every_api_route_is_called(spec: Spec) -> None:
    api = {(m.upper(), p): op for p, ops in spec["paths"].items() for m, op in ops.items()}
    ours = set(_routes.ROUTES)
    assert ours - set(api) == set(), "the client calls routes the API does not have"
    assert set(api) - ours == set(), "the API has routes the client does not call"
    for key, route in _routes.ROUTES.items():
        query = {p["name"] for p in api[key].get("parameters", []) if p["in"] == "query"}
        assert set(route.query) == query, f"{key}: query parameters differ"


def test_every_route_is_called_by_both_clients() -> None:
    names = [n for n, v in vars(_routes).items() if isinstance(v, _routes.Route)]
    assert len(names) == len(_routes.ROUTES)
    for module in (_client, _async_client):
        source = Path(inspect.getfile(module)).read_text()
        unused = [n for n in names if f"r.{n}(" not in source and n != "WS"]
        assert unused == [], f"{module.__name__} never calls {unused}"
        assert "ws_url(" in source


def test_both_clients_offer_the_same_calls() -> None:
    pairs = [
        (droidpilot.Client, droidpilot.AsyncClient),
        (_client.Scripts, _async_client.AsyncScripts),
        (_client.Devices, _async_client.AsyncDevices),
        (_client.Workspaces, _async_client.AsyncWorkspaces),
        (_client.FlowRuns, _async_client.AsyncFlowRuns),
    ]
    for sync, asyn in pairs:
        public = {n for n in vars(sync) if not n.startswith("_")}
        assert public - {"close"} == {n for n in vars(asyn) if not n.startswith("_")} - {"aclose"}
        for name in public - {"close"}:
            s, a = inspect.signature(getattr(sync, name)), inspect.signature(getattr(asyn, name))
            assert list(s.parameters) == list(a.parameters), name


def test_the_installed_package_is_this_checkouts() -> None:
    """The suite tests the package as installed (``pip install ./clients/python``); an
    installation older than the checkout's source would test stale code."""
    installed = Path(droidpilot.__file__).parent
    source = Path(__file__).resolve().parents[1] / "src/droidpilot"
    names = sorted(p.name for p in source.iterdir() if p.suffix in (".py", ".typed"))
    assert (installed / "py.typed").exists()
    stale = [n for n in names if (installed / n).read_bytes() != (source / n).read_bytes()]
    assert stale == [], f"reinstall: pip install ./clients/python (stale: {stale})"
