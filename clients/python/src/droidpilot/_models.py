"""Typed models of what the droidpilot API sends and takes.

Each response model is a frozen dataclass whose fields are exactly the properties of one
schema in the server's OpenAPI document (named by ``__schema__``); ``tests/test_spec.py``
fails when the two drift apart. ``from_dict`` converts nested models, lists and
timestamps and keeps the whole JSON object in ``raw_json``, so a field a newer server adds is
still reachable before this package models it.
"""

from __future__ import annotations

import dataclasses
import re
import types
from datetime import datetime
from typing import (
    Any,
    ClassVar,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

JSON = dict[str, Any]

TaskStatus = Literal[
    "queued",
    "running",
    "waiting_for_user",
    "paused",
    "succeeded",
    "failed",
    "incomplete",
    "timed_out",
    "cancelled",
    "interrupted",
]
"""A task's status (schema ``TaskStatus``)."""

ENDED: frozenset[str] = frozenset(
    {"succeeded", "failed", "incomplete", "timed_out", "cancelled", "interrupted"}
)
"""The statuses a task never leaves."""

DeviceState = Literal["available", "leased", "offline", "quarantined"]
CoordinatorStatus = Literal["success", "failed", "timeout", "error"]
CompletionCode = Literal[
    "completed",
    "agent_failed",
    "max_steps_exceeded",
    "timeout",
    "device_unreachable",
    "budget_exceeded",
    "cancelled",
    "interrupted",
]
AgentKind = Literal["navigator", "vision", "replay", "script", "planned", "chain", "flow", "split"]
InterventionKind = Literal["ask_user", "manual_action", "external_change"]
StepStatus = Literal["ok", "failed", "skipped", "rejected"]

EventType = Literal[
    "task.queued",
    "task.started",
    "task.resumed",
    "task.paused",
    "task.intervention",
    "task.suspended",
    "task.requeued",
    "task.cancel_requested",
    "task.device_lost",
    "task.device_back",
    "task.ask_user",
    "task.answered",
    "task.answer_timeout",
    "task.question_closed",
    "task.finished",
    "script.saved",
    "task.recording",
    "step.observed",
    "step.decided",
    "step.executed",
    "step.annotated",
    "agent.grounding_fallback",
    "step.stuck",
    "model.retry",
    "action.retry",
    "device.online",
    "device.offline",
    "device.quarantined",
    "device.removed",
    "flow_run.started",
    "flow_run.flow_finished",
    "flow_run.finished",
]
"""Every event type the server publishes (schema ``TaskEvent``). A newer server may add
types: ``Event.type`` is a plain string, so skip the ones you do not know.

The other ``Literal`` types name every value the server sends today; at run time a field
holds whatever string the server sent, so a value a newer server adds still arrives."""

M = TypeVar("M", bound="Model")

_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp as an aware datetime (Python 3.10's ``fromisoformat``
    takes neither ``Z`` nor more than six fractional digits)."""
    return datetime.fromisoformat(_FRACTION.sub(r"\1", text.replace("Z", "+00:00")))


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(tp) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin is list:
        (item,) = get_args(tp)
        return [_convert(item, v) for v in value]
    if tp is datetime:
        return parse_time(value)
    if tp is float and isinstance(value, int):
        return float(value)
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_dict(value)
    return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Model:
    """Base of every model: ``from_dict`` and the raw JSON."""

    __schema__: ClassVar[str] = ""
    raw_json: JSON = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls: type[M], data: JSON) -> M:
        hints = get_type_hints(cls)
        kwargs = {
            f.name: _convert(hints[f.name], data[f.name])
            for f in dataclasses.fields(cls)
            if f.name != "raw_json" and f.name in data
        }
        return cls(raw_json=dict(data), **kwargs)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Health(Model):
    __schema__ = "Health"
    status: str
    version: str
    uptime_seconds: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Task(Model):
    """A task as stored: its request as sent, status, step count, tokens, cost, reason."""

    __schema__ = "Task"
    id: str
    status: TaskStatus
    instruction: str
    priority: int
    max_steps: int
    timeout_seconds: int
    created_at: datetime
    steps: int
    tokens_in: int
    tokens_cached: int = 0
    tokens_out: int
    cost_usd: float
    cancel_requested: bool
    agent: JSON | None = None
    device: JSON | None = None
    device_id: str | None = None
    external_id: str | None = None
    session_id: str | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    metadata: JSON | None = None
    record: bool = False
    record_video: bool = False
    recording: list[JSON] | None = None
    webhook_url: str | None = None
    answer: str | None = None
    assigned_device: str | None = None
    model_calls: int = 0
    reason: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def ended(self) -> bool:
        """Whether the task has ended (it will not change any more)."""
        return self.status in ENDED


@dataclasses.dataclass(frozen=True, kw_only=True)
class AgentSummary(Model):
    __schema__ = "AgentSummary"
    kind: str
    actions: int | None = None
    model: str | None = None
    provider: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskSummary(Model):
    """A task as the list shows it (no action list, metadata or webhook URL)."""

    __schema__ = "TaskSummary"
    id: str
    status: TaskStatus
    instruction: str
    priority: int
    agent: AgentSummary
    created_at: datetime
    steps: int
    max_steps: int
    tokens_in: int
    tokens_cached: int
    tokens_out: int
    cost_usd: float
    cancel_requested: bool
    assigned_device: str | None = None
    device_id: str | None = None
    external_id: str | None = None
    session_id: str | None = None
    reason: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskPage(Model):
    """One page of tasks, newest first; pass ``next_cursor`` for the next."""

    __schema__ = "TaskSummaryPage"
    tasks: list[TaskSummary]
    next_cursor: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class CancelResult(Model):
    """``outcome`` is ``cancelled`` (done at once) or ``cancelling`` (a running task)."""

    __schema__ = "CancelResponse"
    outcome: str
    task: Task


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepOutcome(Model):
    __schema__ = "StepOutcome"
    status: StepStatus
    error: str | None = None
    screen_changed: bool | None = None
    detail: JSON | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepTimings(Model):
    __schema__ = "StepTimings"
    screenshot_ms: int
    hierarchy_ms: int
    inference_ms: int
    action_ms: int
    settle_ms: int
    overhead_ms: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelCall(Model):
    __schema__ = "ModelCall"
    role: str
    model: str
    tokens_in: int
    tokens_cached: int = 0
    tokens_out: int
    latency_ms: int
    cost_usd: float | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepScreen(Model):
    __schema__ = "StepScreen"
    summary: str | None = None
    app: str | None = None
    activity: str | None = None
    has_modal: bool | None = None
    sensitive: bool | None = None
    layout_hash: str | None = None
    hierarchy: str | None = None
    size: list[int] | None = None
    elements: list[JSON] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Step(Model):
    """One recorded step: the screen it acted on, the action as it ran, its outcome."""

    __schema__ = "Step"
    task_id: str
    n: int
    started_at: datetime
    outcome: StepOutcome
    timings: StepTimings
    tokens_in: int
    tokens_cached: int = 0
    tokens_out: int
    cost_usd: float
    action: JSON | None = None
    annotations: list[JSON] | None = None
    by: str | None = None
    calls: list[ModelCall] | None = None
    model_calls: int | None = None
    raw: str | None = None
    rejected: JSON | None = None
    replay: JSON | None = None
    screen: StepScreen | None = None
    screenshot: str | None = None
    thinking: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class RoleUsage(Model):
    __schema__ = "RoleUsage"
    role: str
    calls: int
    tokens_in: int
    tokens_cached: int = 0
    tokens_out: int
    cost_usd: float
    latency_ms: int
    errors: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhaseStats(Model):
    __schema__ = "PhaseStats"
    sum_ms: float
    mean_ms: float
    max_ms: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Estimate(Model):
    """The time a task has left: ``step_ms`` (median) × ``remaining_steps``."""

    __schema__ = "Estimate"
    remaining_ms: int
    remaining_steps: int
    step_ms: int
    basis: Literal["planned", "so_far"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskEstimate(Model):
    """``GET /v1/tasks/{id}/estimate``."""

    __schema__ = "TaskEstimate"
    task_id: str
    status: TaskStatus
    on_hold: bool
    estimate: Estimate | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhaseSummary(Model):
    """Where a task's time went, per phase (``GET /v1/tasks/{id}/metrics``)."""

    __schema__ = "PhaseSummary"
    steps: int
    screen: PhaseStats
    model: PhaseStats
    action: PhaseStats
    settle: PhaseStats
    overhead: PhaseStats


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrajectoryStep(Model):
    __schema__ = "TrajectoryStep"
    n: int
    started_at: datetime
    outcome: StepOutcome
    timings: StepTimings
    tokens_in: int
    tokens_cached: int = 0
    tokens_out: int
    cost_usd: float
    action: JSON | None = None
    annotations: list[JSON] | None = None
    by: str | None = None
    calls: list[ModelCall] | None = None
    raw: str | None = None
    rejected: JSON | None = None
    screen: StepScreen | None = None
    screenshot: str | None = None
    screenshot_sha256: str | None = None
    thinking: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Intervention(Model):
    """A question and its answer, a person's action during a take-over, or an outside
    change. For a question, ``id`` is the prompt id an answer names."""

    __schema__ = "Intervention"
    id: str
    task_id: str
    kind: InterventionKind
    created_at: datetime
    action: JSON | None = None
    answer: str | None = None
    answered_at: datetime | None = None
    answered_by: str | None = None
    by: str | None = None
    detail: JSON | None = None
    options: list[str] | None = None
    question: str | None = None
    step: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class MobileTaskResult(Model):
    """The coordinator's view of an ended task (``GET /v1/tasks/{id}/result``): the
    ``MobileTaskResult`` a coordinator reads, plus droidpilot's own id and counts."""

    __schema__ = "CoordinatorResult"
    task_id: str
    status: CoordinatorStatus
    steps_taken: int
    actions_executed: list[JSON]
    actions_executed_count: int
    completion_reason: str
    reason: CompletionCode
    id: str
    task_status: TaskStatus
    tokens_in: int
    tokens_out: int
    cost_usd: float
    tokens_cached: int = 0
    answer: str | None = None
    device_id: str | None = None
    session_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def success(self) -> bool:
        return self.status == "success"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Trajectory(Model):
    """A task and every recorded step (``format`` is ``droidpilot.trajectory``)."""

    __schema__ = "Trajectory"
    format: str
    version: int
    task: Task
    steps: list[TrajectoryStep]
    interventions: list[Intervention] | None = None
    result: MobileTaskResult | None = None
    roles: list[RoleUsage] | None = None
    phases: PhaseSummary | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Event(Model):
    """One stored event of a task (or of the device pool): ``seq`` is gapless per
    ``stream``, ``type`` one of ``EventType`` (or a newer one), ``payload`` its data."""

    __schema__ = "StoredEvent"
    stream: str
    seq: int
    type: str
    payload: JSON
    created_at: datetime

    @property
    def task_id(self) -> str:
        """The task the event belongs to (the stream's name)."""
        return self.stream

    def question(self) -> Question | None:
        """The agent's question, when this is a ``task.ask_user`` event."""
        return Question.from_dict(self.payload) if self.type == "task.ask_user" else None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Question(Model):
    """An open question of the agent (the payload of ``task.ask_user``)."""

    __schema__ = "TaskEvent:task.ask_user"
    task_id: str
    prompt_id: str
    question: str
    timeout_secs: int
    """Seconds the question stays open before it is closed unanswered."""
    options: list[str] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Script(Model):
    """A script document: what ``scripts.create`` and ``scripts.update`` take."""

    __schema__ = "Script"
    name: str
    goal: str
    steps: list[JSON]
    app: str | None = None
    fuzzy: bool | None = None
    inputs: JSON | None = None
    maestro: str | None = None
    max_recovery_attempts: int | None = None
    outputs: list[str] | None = None
    summary: str | None = None

    def to_dict(self) -> JSON:
        """The document as the API takes it (absent fields left out)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(Script)
            if f.name != "raw_json" and getattr(self, f.name) is not None
        }
        return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptRecord(Model):
    """A stored script version: the document plus ``id``, ``version``, ``source``."""

    __schema__ = "ScriptRecord"
    id: str
    version: int
    created_at: datetime
    source: JSON
    name: str
    goal: str
    steps: list[JSON]
    app: str | None = None
    fuzzy: bool | None = None
    inputs: JSON | None = None
    maestro: str | None = None
    max_recovery_attempts: int | None = None
    outputs: list[str] | None = None
    summary: str | None = None

    def document(self) -> Script:
        """The script document of this version, to edit and store as the next."""
        return Script.from_dict(
            {k: v for k, v in self.raw_json.items() if k not in ("id", "version", "created_at", "source")}
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptPage(Model):
    __schema__ = "ScriptPage"
    scripts: list[ScriptRecord]
    next_cursor: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlowAttempt(Model):
    """One try at a flow: the task that ran it."""

    __schema__ = "FlowAttempt"
    task_id: str
    status: str
    duration_ms: int
    device: str | None = None
    reason: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlowFailure(Model):
    """Why a flow failed: the failing command with its file and line, its step and
    screenshot link."""

    __schema__ = "FlowFailure"
    message: str
    step: int | None = None
    screenshot: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlowResult(Model):
    """One flow of a flow run."""

    __schema__ = "FlowResult"
    path: str
    name: str
    status: str
    tags: list[str] = dataclasses.field(default_factory=list)
    ordered: bool = False
    device: str | None = None
    attempts: list[FlowAttempt] = dataclasses.field(default_factory=list)
    failure: FlowFailure | None = None
    duration_ms: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspaceRef(Model):
    """The stored workspace and version a flow run ran."""

    __schema__ = "WorkspaceRef"
    id: str
    version: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspaceFile(Model):
    __schema__ = "WorkspaceFile"
    path: str
    bytes: int
    flow: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspaceFlow(Model):
    __schema__ = "WorkspaceFlow"
    path: str
    name: str
    tags: list[str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspaceSummary(Model):
    """What a stored workspace's config.yaml selects, read at upload with no tags given."""

    __schema__ = "WorkspaceSummary"
    flows: list[WorkspaceFlow]
    tags: list[str]
    globs: list[str]
    include_tags: list[str]
    exclude_tags: list[str]
    flows_order: list[str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspaceVersion(Model):
    """One version of a stored workspace: its files (no text) and its summary."""

    __schema__ = "WorkspaceVersion"
    id: str
    version: int
    name: str
    source: JSON
    created_at: datetime
    files: list[WorkspaceFile]
    config: WorkspaceSummary


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspaceContents(Model):
    """One version of a stored workspace with its files' text (``contents``: path → text)."""

    __schema__ = "WorkspaceContents"
    id: str
    version: int
    name: str
    source: JSON
    created_at: datetime
    files: list[WorkspaceFile]
    config: WorkspaceSummary
    contents: dict[str, str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkspacePage(Model):
    __schema__ = "WorkspacePage"
    workspaces: list[WorkspaceVersion]
    next_cursor: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlowRun(Model):
    """A Maestro workspace run across the pool: options, status and each flow's result."""

    __schema__ = "FlowRun"
    id: str
    status: str
    shards: int
    retries: int
    continue_on_failure: bool
    flows: list[FlowResult]
    created_at: datetime
    reason: str | None = None
    devices: list[str] = dataclasses.field(default_factory=list)
    include_tags: list[str] = dataclasses.field(default_factory=list)
    exclude_tags: list[str] = dataclasses.field(default_factory=list)
    env: list[str] = dataclasses.field(default_factory=list)
    finished_at: datetime | None = None
    duration_ms: int | None = None
    workspace: WorkspaceRef | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlowRunPage(Model):
    __schema__ = "FlowRunPage"
    runs: list[FlowRun]
    next_cursor: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScreenSize(Model):
    __schema__ = "ScreenSize"
    width: int
    height: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Device(Model):
    """A device of the pool."""

    __schema__ = "DeviceSummary"
    id: str
    backend: str
    model: str
    state: DeviceState
    consecutive_failures: int
    instance: str | None = None
    last_error: str | None = None
    lease_owner: str | None = None
    local: bool | None = None
    screen: ScreenSize | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Bounds(Model):
    __schema__ = "Bounds"
    left: int
    top: int
    right: int
    bottom: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Element(Model):
    """An actionable element on a screen, with the selector that finds it."""

    __schema__ = "ActionableElement"
    element_id: int
    selector: str
    alternative_selectors: list[str]
    type: str
    text: str
    actions: list[str]
    bounds: Bounds
    source: str = "tree"
    """``tree`` (the UI dump), ``ocr`` (read off the screenshot only) or ``merged``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Screen(Model):
    """What an agent sees of a device's screen."""

    __schema__ = "ScreenDocument"
    screen_id: str
    device_id: str
    app_name: str | None = None
    summary: str
    elements: str
    has_modal: bool
    actionable_elements: list[Element]
    activity: str | None = None
    app_package: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class DescribedApp(Model):
    """An installed app with what it can do (``description_source``: model or label)."""

    __schema__ = "DescribedApp"
    package: str
    label: str | None = None
    version: str | None = None
    description: str
    description_source: Literal["model", "label"]


AppInfo = DescribedApp


@dataclasses.dataclass(frozen=True, kw_only=True)
class AppStrings(Model):
    """An installed app's string resources: locale (``""`` for the default values) →
    resource key → value."""

    __schema__ = "AppStrings"
    package: str
    version_code: str | None = None
    locales: dict[str, dict[str, str]]
"""The former name of ``DescribedApp``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ActiveWindow(Model):
    """A visible window: its package, title, Android window type, bounds, focus."""

    __schema__ = "ActiveWindow"
    package: str
    title: str
    type: str
    bounds: list[int] | None = None
    focused: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhoneContext(Model):
    """Where a phone is and what it shows besides the tree (``GET …/context``)."""

    __schema__ = "PhoneContext"
    locale: str | None = None
    language: str | None = None
    country: str | None = None
    timezone: str | None = None
    keyboard_visible: bool | None = None
    windows: list[ActiveWindow]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ActionResult(Model):
    """What one action on a device did."""

    __schema__ = "ActionResult"
    action: JSON
    detail: JSON
    duration_ms: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ManualActionResult(Model):
    """A person's action on a paused task's phone, and how it was recorded."""

    __schema__ = "ManualActionResult"
    action: JSON
    detail: JSON
    duration_ms: int
    intervention: Intervention


@dataclasses.dataclass(frozen=True, kw_only=True)
class Presets(Model):
    __schema__ = "Presets"
    agent_kinds: list[str]
    models: list[JSON]
    defaults: JSON


@dataclasses.dataclass(frozen=True, kw_only=True)
class MobileTaskRequest:
    """A coordinator's sub-task, by its own field names (``ai_prompt``, ``task_id``).
    ``agent`` picks who decides (``{"kind": "replay", "actions": [...]}``, a model…);
    absent, the server's configured agent runs it."""

    __schema__: ClassVar[str] = "NewTask"
    ai_prompt: str
    task_id: str | None = None
    device_id: str | None = None
    session_id: str | None = None
    max_steps: int | None = None
    timeout_seconds: int | None = None
    agent: JSON | None = None
    metadata: JSON | None = None
    priority: int | None = None
    webhook_url: str | None = None

    def to_dict(self) -> JSON:
        """The request body (absent fields left out)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }
