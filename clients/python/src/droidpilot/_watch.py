"""The bookkeeping of a WebSocket watch, shared by the sync and async clients: which
tasks are still to finish, the last ``seq`` seen of each stream (to drop a repeat and to
resume after a reconnect), and the server's replies."""

from __future__ import annotations

import json
from typing import Any

from ._models import Event


class WatchState:
    def __init__(self, tasks: list[str], *, all: bool, since: dict[str, int], devices: bool) -> None:
        self.all = all
        self.devices = devices
        self.pending: set[str] = set(tasks)
        self.last_seq: dict[str, int] = dict(since)
        self.replies: list[dict[str, Any]] = []
        """The server's replies (``subscribed``, ``answered``, ``cancelled``, ``pong``)."""
        self.finished_at_subscribe: set[str] = set()

    def add(self, tasks: list[str], since: dict[str, int]) -> None:
        self.pending.update(tasks)
        for k, v in since.items():
            self.last_seq[k] = max(self.last_seq.get(k, 0), v)

    def subscription(self) -> dict[str, Any]:
        """What to subscribe to (again, after a reconnect): the tasks still to finish,
        from the last event seen of each."""
        tasks = sorted(self.pending)
        since = {t: self.last_seq[t] for t in tasks if t in self.last_seq}
        if self.devices and "devices" in self.last_seq:
            since["devices"] = self.last_seq["devices"]
        return {"tasks": tasks, "since": since, "all": self.all, "devices": self.devices}

    def done(self) -> bool:
        """Every task watched by id has finished (never, when watching all)."""
        return not self.all and not self.devices and not self.pending

    def take(self, frame: dict[str, Any]) -> Event | None:
        """The event a frame carries, or ``None`` (a reply, a ``lagged`` notice, a
        repeat)."""
        kind = frame.get("type")
        if kind != "event":
            if kind == "subscribed":
                self.finished_at_subscribe.update(frame.get("finished") or [])
            if kind != "lagged":
                self.replies.append(frame)
            return None
        event = Event.from_dict(frame["event"])
        if event.seq <= self.last_seq.get(event.stream, 0):
            return None
        self.last_seq[event.stream] = event.seq
        if event.type == "task.finished":
            self.pending.discard(event.stream)
        return event


def subscribe_message(subscription: dict[str, Any]) -> str:
    message = {"type": "subscribe", **{k: v for k, v in subscription.items() if v}}
    return json.dumps(message)
