"""A loopback TCP proxy in front of the test server that breaks connections the way a
network does, so reconnects and retries run against the real server: ``cut_after_data``
forwards the first ``cuts`` responses only until ``n`` SSE ``data:`` lines have passed
(cutting the next event in half), ``cut_after_bytes`` the first ``cuts`` connections
after that many bytes from the server (a WebSocket mid-frame), ``drop_first`` closes the
first ``n`` connections before they are read, ``silent`` reads requests and never
answers."""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class Proxy:
    def __init__(
        self,
        upstream_port: int,
        *,
        cut_after_data: int = 0,
        cut_after_bytes: int = 0,
        cuts: int = 0,
        drop_first: int = 0,
        silent: bool = False,
    ):
        self.silent = silent
        self._held: list[socket.socket] = []
        self.upstream = ("127.0.0.1", upstream_port)
        self.cut_after_data = cut_after_data
        self.cut_after_bytes = cut_after_bytes
        self.cuts_left = cuts
        self.drops_left = drop_first
        self.connections = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop = True
        self._listener.close()
        for conn in self._held:
            conn.close()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                drop = self.drops_left > 0
                self.drops_left -= drop
                cut = self.cut_after_data if self.cuts_left > 0 else 0
                cut_bytes = self.cut_after_bytes if self.cuts_left > 0 else 0
            if drop:
                conn.close()
                continue
            if self.silent:
                self._held.append(conn)
                continue
            threading.Thread(target=self._serve, args=(conn, cut, cut_bytes), daemon=True).start()

    def _serve(self, client: socket.socket, cut: int, cut_bytes: int = 0) -> None:
        upstream = socket.create_connection(self.upstream)
        threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
        seen = 0
        sent = 0
        try:
            while True:
                chunk = upstream.recv(65536)
                if not chunk:
                    break
                if cut_bytes and sent + len(chunk) > cut_bytes and self._take_cut():
                    client.sendall(chunk[: cut_bytes - sent])
                    break
                sent += len(chunk)
                if cut:
                    at = _nth_data_end(chunk, cut - seen)
                    seen += chunk.count(b"data:")
                    if at is not None and self._take_cut():
                        client.sendall(chunk[:at])
                        break
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _take_cut(self) -> bool:
        with self._lock:
            if self.cuts_left <= 0:
                return False
            self.cuts_left -= 1
            return True


def _nth_data_end(chunk: bytes, n: int) -> int | None:
    """Where to cut ``chunk`` so that the ``n``-th ``data:`` in it is half sent."""
    if n <= 0:
        return 0
    at = -1
    for _ in range(n):
        at = chunk.find(b"data:", at + 1)
        if at < 0:
            return None
    return at + len(b"data:") + 3


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
