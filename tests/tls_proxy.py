"""A TLS-terminating TCP proxy on 127.0.0.1 in front of a plaintext redis-server, for the TLS tests.

No redis-server with TLS built in installs from PyPI on the test machines (docs/reliability.md), so
the tests put this proxy in front of a real, plaintext redis-server: the client's side of TLS is
real (handshake, certificate and host name checks, client certificates), Redis's own TLS code is
not exercised. The server side is Python's `ssl` (OpenSSL) with a certificate from
tests/tls_certs.py; with `client_ca` it requires a client certificate signed by that CA (mutual
TLS). A refused handshake sends the TLS alert, as a TLS-enabled redis-server does.

One thread accepts; each connection gets a thread that does the handshake (blocking, so the alert
goes out) and then relays both ways with select() on the two sockets. `accepted` and `refused`
count handshakes, so a test can check that its traffic went through the proxy and that a refused
client reached nothing. `stop()` closes every socket and joins every thread.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading


def server_context(certfile: str, keyfile: str, client_ca: str | None = None) -> ssl.SSLContext:
    """The proxy's TLS settings: its certificate, and with `client_ca` a required client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile, keyfile)
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(client_ca)
    return ctx


class TLSProxy:
    def __init__(self, target_port: int, certfile: str, keyfile: str, client_ca: str | None = None) -> None:
        self.target = ("127.0.0.1", target_port)
        self.context = server_context(certfile, keyfile, client_ca)
        self.accepted = 0  # connections whose TLS handshake succeeded (and were relayed)
        self.refused = 0  # handshakes that failed (no or untrusted client certificate, ...)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)  # the accept loop checks for stop() this often
        self.port = int(self._listener.getsockname()[1])
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []

    def url(self, db: int = 0) -> str:
        return f"rediss://127.0.0.1:{self.port}/{db}"

    def start(self) -> TLSProxy:
        self._spawn(self._accept_loop)
        return self

    def _spawn(self, target: object, *args: object) -> None:
        t = threading.Thread(target=target, args=args, name="tls-proxy", daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(t)
        t.start()

    def _track(self, s: socket.socket) -> bool:
        with self._lock:
            if self._stopping.is_set():
                s.close()
                return False
            self._sockets.add(s)
            return True

    def _count(self, what: str) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener was closed by stop()
            if self._track(conn):
                self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        upstream: socket.socket | None = None
        tls: ssl.SSLSocket | None = None
        try:
            conn.settimeout(5)
            keep = conn.dup()  # the TCP connection outlives a failed handshake (wrap_socket closes its socket)
            try:
                tls = self.context.wrap_socket(conn, server_side=True)  # handshake; on failure the alert is sent
            except (ssl.SSLError, OSError):
                self._count("refused")
                self._linger(keep)
                return
            finally:
                keep.close()
            self._count("accepted")
            self._track(tls)
            upstream = socket.create_connection(self.target, timeout=5)
            if self._track(upstream):
                self._relay(tls, upstream)
        except OSError:
            pass
        finally:
            for s in (tls, upstream, conn):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()

    def _linger(self, sock: socket.socket) -> None:
        """Keep a refused connection open until the client closes it (at most 3 s), discarding what
        it sends: the client then reads the TLS alert every time, rather than sometimes a broken
        pipe when its first write races the close (the tests check the message it gets)."""
        sock.settimeout(0.2)
        for _ in range(15):
            if self._stopping.is_set():
                return
            try:
                if not sock.recv(65536):
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def _relay(self, tls: ssl.SSLSocket, upstream: socket.socket) -> None:
        other = {tls: upstream, upstream: tls}
        while not self._stopping.is_set():
            ready = [tls] if tls.pending() else select.select([tls, upstream], [], [], 0.2)[0]
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                other[s].sendall(data)

    def stop(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        for t in threads:
            t.join(5)

    def __enter__(self) -> TLSProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
