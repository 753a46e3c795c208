"""Test parts for signed policy bundles: keys written by ``openssl genpkey``, bundles built
and signed by the real ``policyd bundle`` command, and a real HTTPS server (a test CA from
``trustme``) that serves one bundle with an ETag, counts requests and can go down."""

from __future__ import annotations

import hashlib
import http.server
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trustme


def policyd(*args: str, env: Mapping[str, str] | None = None, check: bool = True,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "policyd", *args], capture_output=True, text=True,
                          env=dict(env) if env is not None else None, timeout=120, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"policyd {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def keypair(directory: Path, name: str) -> tuple[Path, Path]:
    """(private, public) PEM files, as ``openssl genpkey -algorithm ed25519`` writes them."""
    private, public = directory / f"{name}.pem", directory / f"{name}.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(private)], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(private), "-pubout", "-out", str(public)], check=True)
    return private, public


def edit_policy(decision: str, marker: str = "") -> str:
    """A policy whose only rule decides every ``edit`` (and every read) with ``decision``."""
    return (f'[policy]\nname = "org"\ndefault = "ask"\n\n'
            f'[[rule]]\nid = "org-{decision}"\nkinds = ["edit", "read"]\nwhen = \'true\'\n'
            f'decision = "{decision}"\nreason = "{marker or decision}"\n')


def make_bundle(tmp: Path, decision: str, revision: int, key: Path | None, *, expires: str | None = None,
                name: str | None = None, created_epoch: int | None = None) -> Path:
    """A bundle of one policy deciding ``decision``, built (and signed with ``key``) by the CLI."""
    src = tmp / f"src-{name or revision}-{decision}"
    src.mkdir(parents=True, exist_ok=True)
    (src / "org.toml").write_text(edit_policy(decision))
    out = tmp / f"{name or f'r{revision}-{decision}'}.bundle"
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(created_epoch)} if created_epoch is not None else None
    policyd("bundle", "build", str(src), "-o", str(out), "--revision", str(revision),
            *(["--expires", expires] if expires else []), env=env)
    if key is not None:
        policyd("bundle", "sign", str(out), "--key", str(key))
    return out


@dataclass
class Served:
    """What the HTTPS server serves and has seen."""

    body: bytes = b""
    down: bool = False  # answer 503
    requests: list[str | None] = field(default_factory=list)  # If-None-Match of each GET
    root: Path | None = None  # serve files under this directory instead of ``body``
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, path: Path) -> None:
        with self.lock:
            self.body = path.read_bytes()

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


@dataclass
class Https:
    url: str
    ca_file: Path
    served: Served
    server: http.server.ThreadingHTTPServer

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def https_server(tmp: Path, served: Served) -> Https:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_file = tmp / "test-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with served.lock:
                served.requests.append(self.headers.get("If-None-Match"))
                body, etag, down = served.body, served.etag, served.down
            if served.root is not None:
                path = (served.root / self.path.lstrip("/")).resolve()
                body = path.read_bytes() if path.is_file() and path.is_relative_to(served.root) else b""
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'

            if down or not body:
                self.send_response(503)
                self.end_headers()
                return
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return Https(f"https://127.0.0.1:{server.server_address[1]}/org.bundle", ca_file, served, server)


@pytest.fixture
def https(tmp_path: Path) -> Iterator[Https]:
    server = https_server(tmp_path, Served())
    yield server
    server.stop()


def bundles_config(path: Path, source: str, keys: list[Path], cache: Path, *, poll_s: float = 300,
                   on_failure: str = "keep-last", exclusive: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "[bundles]\n"
        f'source = "{source}"\n'
        f"public_keys = [{', '.join(repr(str(k)) for k in keys)}]\n"
        f"poll_s = {poll_s}\n"
        f'on_failure = "{on_failure}"\n'
        f'cache_dir = "{cache}"\n'
        f"exclusive = {'true' if exclusive else 'false'}\n"
        "timeout_s = 5\n")
    return path


REGISTRY = Path("/usr/bin/docker-registry")


@dataclass
class Registry:
    """Debian's ``docker-registry`` on a loopback port, TLS from a test CA."""

    host: str
    ca_file: Path
    config: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([str(REGISTRY), "serve", str(self.config)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                host, port = self.host.split(":")
                with socket.create_connection((host, int(port)), timeout=1) as raw, \
                        ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("docker-registry did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    if not REGISTRY.exists():
        pytest.skip("Debian's docker-registry is not installed (./dev test installs it)")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    d = tmp_path / "registry"
    d.mkdir()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    cert.cert_chain_pems[0].write_to_path(str(d / "cert.pem"))
    cert.private_key_pem.write_to_path(str(d / "key.pem"))
    port = _free_port()
    config = d / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {d / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n  tls:\n    certificate: {d / 'cert.pem'}\n    key: {d / 'key.pem'}\n")
    reg = Registry(f"127.0.0.1:{port}", d / "ca.pem", config)
    reg.start()
    yield reg
    reg.stop()
