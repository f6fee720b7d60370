"""One live ``droidpilot serve`` for the whole test session: the debug binary cargo
built (``DROIDPILOT_BIN``, set by ``tests/python_client.rs``; else
``target/debug/droidpilot`` of this checkout), a fresh data directory, a free loopback
port, the virtual phone ``sim-1`` made instant, no adb, no model key, and a bearer token
so that sending it is part of every test."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import droidpilot

REPO = Path(__file__).resolve().parents[3]
TOKEN = "pyclient-test-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _binary() -> Path:
    path = Path(os.environ.get("DROIDPILOT_BIN") or REPO / "target/debug/droidpilot")
    if not path.exists():
        pytest.exit(f"no droidpilot binary at {path}: run `cargo build` or set DROIDPILOT_BIN", 2)
    return path


@contextlib.contextmanager
def serve(data: Path, **settings: str) -> Iterator[str]:
    """``droidpilot serve`` on a fresh data directory; ``settings`` are extra
    ``DROIDPILOT_*`` variables. Yields its URL once ``/healthz`` answers."""
    port = _free_port()
    (data / "config").mkdir(parents=True)
    (data / "config/local.toml").write_text(
        f'[server]\nbind = "127.0.0.1:{port}"\n[devices.adb]\nenabled = false\n'
    )
    env = {
        **os.environ,
        "DROIDPILOT_DEVICES__SIM_LATENCY_PROFILE": "fast",
        "DROIDPILOT_SERVER__TOKENS": TOKEN,
        "RUST_LOG": "warn",
        **settings,
    }
    for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DROIDPILOT_TOKEN", "DROIDPILOT_URL"):
        env.pop(k, None)
    proc = subprocess.Popen([str(_binary()), "serve"], cwd=data, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                if proc.poll() is not None:
                    pytest.exit(f"droidpilot serve exited with {proc.returncode}", 2)
                time.sleep(0.05)
        else:
            pytest.exit("droidpilot serve did not come up", 2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("droidpilot")) as url:
        yield url


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests say their URL and token; one from the developer's shell must not leak in."""
    monkeypatch.delenv("DROIDPILOT_TOKEN", raising=False)
    monkeypatch.delenv("DROIDPILOT_URL", raising=False)


@pytest.fixture
def client(server_url: str) -> Iterator[droidpilot.Client]:
    with droidpilot.Client(server_url, token=TOKEN) as c:
        yield c


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def aclient(server_url: str) -> AsyncIterator[droidpilot.AsyncClient]:
    async with droidpilot.AsyncClient(server_url, token=TOKEN) as c:
        yield c


def replay(*actions: dict[str, Any]) -> dict[str, Any]:
    """A replay agent: runs the given actions, no model."""
    return {"kind": "replay", "actions": list(actions)}


def waits(n: int, ms: int = 100) -> list[dict[str, Any]]:
    return [{"action": "wait", "ms": ms} for _ in range(n)]
