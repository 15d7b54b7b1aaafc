"""Debian's nginx in front of the app, as a deployment puts it (docs/deploy.md): TLS with a self-signed
certificate, HTTP basic auth and a path prefix, on loopback. nginx runs as the test's own subprocess with its
config, logs and temp folders in a folder of the test's (never the system service). It connects to the app
from 127.0.0.2, so the app tells the proxy (SEARCHBOX_TRUSTED_PROXIES=127.0.0.2) from the browser (127.0.0.1).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testkit.app_server import free_port, stop_process

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
OPENSSL = shutil.which("openssl")
INSTALL = "apt-get install nginx-light"
PROXY_ADDRESS = "127.0.0.2"  # the address nginx connects to the app from

# The site's config, as docs/deploy.md gives it, with this test's paths and ports. One process, the test's own
# user's: nginx started by root would read the password file as `nobody`, which cannot see the test's folder.
CONFIG = """\
daemon off;
master_process off;
pid {home}/nginx.pid;
error_log {home}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {home}/access.log;
    client_body_temp_path {home}/body;
    proxy_temp_path {home}/proxy;
    fastcgi_temp_path {home}/fastcgi;
    uwsgi_temp_path {home}/uwsgi;
    scgi_temp_path {home}/scgi;
    map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {home}/cert.pem;
        ssl_certificate_key {home}/key.pem;
        client_max_body_size 250m;
        location = {prefix} {{ return 301 {prefix}/; }}
        # Gradio's page names no icon, so a browser asks the origin's own /favicon.ico: the app's, here.
        location = /favicon.ico {{ proxy_pass http://127.0.0.1:{app_port}/favicon.ico; }}
        location {prefix}/ {{
            auth_basic "searchbox";
            auth_basic_user_file {home}/htpasswd;
            proxy_pass http://127.0.0.1:{app_port}/;
            proxy_bind {proxy_address};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-Host $host:$server_port;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_read_timeout 3600s;
        }}
    }}
}}
"""


@dataclass(frozen=True)
class Proxy:
    url: str  # https://127.0.0.1:PORT/PREFIX/
    cert: Path  # the self-signed certificate, for a client that checks it
    spki: str  # base64 SHA-256 of its public key, which Chromium is told to accept and nothing else
    home: Path  # its config and logs


@contextmanager
def nginx_in_front(app_port: int, home: Path, *, prefix: str, user: str, password: str) -> Iterator[Proxy]:
    """nginx serving the app at 127.0.0.1:app_port under https://127.0.0.1:PORT{prefix}/ to `user`:`password`."""
    assert NGINX and OPENSSL, f"nginx and openssl are needed: {INSTALL}"
    home.mkdir(parents=True, exist_ok=True)
    cert, key = home / "cert.pem", home / "key.pem"
    _run(OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert))
    hashed = _run(OPENSSL, "passwd", "-apr1", password).strip()
    (home / "htpasswd").write_text(f"{user}:{hashed}\n")
    port = free_port()
    (home / "nginx.conf").write_text(CONFIG.format(home=home, port=port, prefix=prefix, app_port=app_port,
                                                   proxy_address=PROXY_ADDRESS))
    log = (home / "nginx.out").open("a")
    proc = subprocess.Popen([NGINX, "-p", str(home), "-e", str(home / "error.log"), "-c", str(home / "nginx.conf")],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(port, proc, home)
        yield Proxy(f"https://127.0.0.1:{port}{prefix}/", cert, _spki(cert), home)
    finally:
        stop_process(proc)
        log.close()


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout


def _spki(cert: Path) -> str:
    """The certificate's public key as Chromium's --ignore-certificate-errors-spki-list takes it."""
    der = subprocess.run([OPENSSL, "x509", "-in", str(cert), "-noout", "-pubkey"], check=True, capture_output=True,
                         timeout=60).stdout
    der = subprocess.run([OPENSSL, "pkey", "-pubin", "-outform", "der"], input=der, check=True, capture_output=True,
                         timeout=60).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def _wait_for(port: int, proc: subprocess.Popen, home: Path) -> None:
    deadline = time.time() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                errors = (home / "error.log").read_text() if (home / "error.log").exists() else ""
                raise RuntimeError(f"nginx did not start:\n{errors[-3000:]}") from None
            time.sleep(0.2)
