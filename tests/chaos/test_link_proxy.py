"""The chaos link proxy over real loopback sockets: it passes bytes, stalls them, and cuts links."""

from __future__ import annotations

import socket
import socketserver
import threading
import time

import pytest

from paperclip.chaos.cluster import free_port
from paperclip.chaos.proxy import LinkProxy


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(1024):
            self.request.sendall(data)


@pytest.fixture
def proxy():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    link = LinkProxy(server.server_address[1], free_port()).start()
    yield link
    link.close()
    server.shutdown()
    server.server_close()


def dial(link: LinkProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", link.port), timeout=5)
    sock.sendall(b"hello")
    assert sock.recv(1024) == b"hello"
    return sock


def test_it_passes_bytes_both_ways(proxy):
    with dial(proxy) as sock:
        sock.sendall(b"again")
        assert sock.recv(1024) == b"again"
    assert proxy.connections == 1


def test_a_stall_holds_every_byte_back_until_it_ends(proxy):
    with dial(proxy) as sock:
        proxy.stall(1.0)
        time.sleep(0.1)
        started = time.monotonic()
        sock.sendall(b"late")
        assert sock.recv(1024) == b"late"
        assert time.monotonic() - started >= 0.7


def test_a_cut_resets_every_open_link(proxy):
    first, second = dial(proxy), dial(proxy)
    proxy.cut()
    for sock in (first, second):
        with sock:
            try:
                data = sock.recv(1024)
            except ConnectionResetError:
                data = b""
            assert data == b""  # reset or closed: the link is gone
    with dial(proxy):  # a new link goes through again
        pass


def test_with_the_upstream_down_a_dial_is_closed_at_once():
    link = LinkProxy(free_port(), free_port()).start()
    try:
        with socket.create_connection(("127.0.0.1", link.port), timeout=5) as sock:
            assert sock.recv(1024) == b""
    finally:
        link.close()


class Stamping(socketserver.BaseRequestHandler):
    """Echoes, and notes when each chunk arrived."""

    arrived: list[float] = []

    def handle(self) -> None:
        while data := self.request.recv(1024):
            Stamping.arrived.append(time.monotonic())
            self.request.sendall(data)


def test_a_one_way_stall_holds_only_what_the_control_plane_sends():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Stamping)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    link = LinkProxy(server.server_address[1], free_port()).start()
    try:
        with dial(link) as sock:
            link.stall(1.0, down_only=True)
            time.sleep(0.1)
            Stamping.arrived.clear()
            started = time.monotonic()
            sock.sendall(b"up")
            assert sock.recv(1024) == b"up"
            assert Stamping.arrived and Stamping.arrived[0] - started < 0.5  # it went up at once
            assert time.monotonic() - started >= 0.7  # the answer waited for the stall
    finally:
        link.close()
        server.shutdown()
        server.server_close()


class Collect(socketserver.BaseRequestHandler):
    """Sends a word its client leaves unread (so the client's close is a reset), then keeps
    what arrives."""

    received: list[bytes] = []

    def handle(self) -> None:
        self.request.sendall(b"unread")
        try:
            while data := self.request.recv(1024):
                Collect.received.append(data)
        except ConnectionResetError:
            pass


def test_what_a_process_sent_before_it_died_is_passed_on():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Collect)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    link = LinkProxy(server.server_address[1], free_port()).start()
    Collect.received.clear()
    try:
        sock = socket.create_connection(("127.0.0.1", link.port), timeout=5)
        assert sock.recv(16, socket.MSG_PEEK) == b"unread"  # arrived, and left unread
        link.stall(1.0)  # the proxy holds the first bytes; the last ones wait in its reader
        time.sleep(0.1)
        sock.sendall(b"first ")
        time.sleep(0.2)
        sock.sendall(b"last")
        time.sleep(0.2)
        sock.close()  # with bytes unread: a reset, as when a runner is SIGKILLed
        deadline = time.monotonic() + 5
        while b"".join(Collect.received) != b"first last" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b"".join(Collect.received) == b"first last"
    finally:
        link.close()
        server.shutdown()
        server.server_close()
