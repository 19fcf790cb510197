"""A real OCI registry on loopback for the image-architecture tests and the benchmark.

Starts Debian's ``docker-registry`` (the CNCF Distribution registry, 2.8) with
our own config on ``127.0.0.1:<free port>`` and storage in a temp dir (the
package's systemd service is never used), optionally a second instance with
Distribution's ``auth: token`` and a tiny token server on loopback that signs
RS256 JWTs with a self-signed certificate (the registry trusts it through
``rootcertbundle``), which is the flow Docker Hub, nvcr.io and ghcr.io use.

Images are pushed with plain HTTP requests of the OCI distribution API
(``POST /blobs/uploads/`` + ``PUT ?digest=``, then ``PUT /manifests/<ref>``):
small, but real OCI objects (gzip'd empty tar layers, image configs, manifests
and indexes), so the registry validates every reference.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localcluster.cluster import free_port

REGISTRY_BINARY = "/usr/bin/docker-registry"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
TIMEOUT = 10.0


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer:
    """Distribution's token service, minimal: anonymous pull tokens, RS256, ``x5c`` header.

    Repositories under ``private/`` get a token with no access, so the registry
    answers 401 again: what a private image looks like to an anonymous client.
    """

    def __init__(
        self, directory: Path, service: str = "loopback-registry", issuer: str = "loopback-token"
    ) -> None:
        from cryptography.hazmat.primitives import serialization

        from localcluster import pki

        self.service, self.issuer = service, issuer
        self.key, cert = pki.self_signed("loopback token signer")
        self.cert_der = cert.public_bytes(serialization.Encoding.DER)
        self.cert_path = directory / "token-signer.pem"
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self.requests: list[str] = []
        self.port = free_port()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                server.requests.append(self.path)
                body = json.dumps(server.issue(query.get("scope", []), query.get("service", [""])[0]))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def realm(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    def issue(self, scopes: list[str], service: str, *, robot: bool = False) -> dict[str, Any]:
        """A token for ``scopes``; anonymous callers get nothing under ``private/``, the pushing robot does."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            if kind == "repository" and (robot or not name.startswith("private/")):
                access.append({"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]})
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": "",
            "aud": service,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(self.cert_der).decode()]}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        token = f"{signing_input}.{_b64url(signature)}"
        return {"token": token, "access_token": token, "expires_in": 300}

    def start(self) -> TokenServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class LocalRegistry:
    """One ``docker-registry`` process on loopback; ``host`` is ``127.0.0.1:<port>``."""

    directory: Path
    token_server: TokenServer | None = None
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    _token: str | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> LocalRegistry:
        storage = self.directory / f"storage-{self.port}"
        storage.mkdir(parents=True, exist_ok=True)
        lines = [
            "version: 0.1",
            "log: {level: error, accesslog: {disabled: true}}",
            f"storage: {{filesystem: {{rootdirectory: {storage}}}, delete: {{enabled: true}}}}",
            f"http: {{addr: '127.0.0.1:{self.port}', secret: loopback-test-secret}}",
        ]
        if self.token_server is not None:
            ts = self.token_server
            lines.append(
                f"auth: {{token: {{realm: '{ts.realm}', service: {ts.service}, issuer: {ts.issuer}, "
                f"rootcertbundle: {ts.cert_path}}}}}"
            )
        config = self.directory / f"config-{self.port}.yml"
        config.write_text("\n".join(lines) + "\n")
        self.log = (self.directory / f"registry-{self.port}.log").open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
        self.process = subprocess.Popen(
            [REGISTRY_BINARY, "serve", str(config)], stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"docker-registry exited: {(self.directory / self.log.name).read_text()[-2000:]}"
                )
            try:
                status, _, _ = self.request("GET", "/v2/", auth=False)
                if status in (200, 401):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"docker-registry did not answer on {self.host} within 15 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None
        if getattr(self, "log", None):
            self.log.close()

    # -- the distribution API, for pushing ----------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        auth: bool = True,
    ) -> tuple[int, dict[str, str], bytes]:
        headers = dict(headers or {})
        if auth and self.token_server is not None:
            headers["Authorization"] = f"Bearer {self._push_token()}"
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request(method, path, body=body or None, headers=headers)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def _push_token(self) -> str:
        assert self.token_server is not None
        # One token for every repository the tests push to: scope "registry:catalog:*" is
        # not needed; wildcard repository access is what a CI robot account has.
        scopes = [f"repository:{repo}:pull,push" for repo in PUSH_REPOSITORIES]
        return self.token_server.issue(scopes, self.token_server.service, robot=True)["token"]

    def push_blob(self, repository: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        status, headers, _ = self.request("POST", f"/v2/{repository}/blobs/uploads/")
        assert status == 202, (status, headers)
        location = urllib.parse.urlsplit(headers["location"])
        query = location.query + ("&" if location.query else "") + urllib.parse.urlencode({"digest": digest})
        status, headers, body = self.request(
            "PUT",
            f"{location.path}?{query}",
            data,
            {"Content-Type": "application/octet-stream", "Content-Length": str(len(data))},
        )
        assert status == 201, (status, body)
        return digest

    def push_manifest(self, repository: str, reference: str, manifest: dict[str, Any]) -> tuple[str, int]:
        data = json.dumps(manifest, separators=(",", ":")).encode()
        status, _, body = self.request(
            "PUT", f"/v2/{repository}/manifests/{reference}", data, {"Content-Type": manifest["mediaType"]}
        )
        assert status == 201, (status, body)
        return "sha256:" + hashlib.sha256(data).hexdigest(), len(data)

    def push_image(
        self,
        repository: str,
        tag: str | None,
        architecture: str,
        variant: str | None = None,
        docker: bool = False,
    ) -> dict[str, Any]:
        """Push a one-platform image; return its descriptor (for an index)."""
        layer = _empty_layer(f"{architecture}{variant or ''}")
        layer_digest = self.push_blob(repository, layer)
        config = {
            "architecture": architecture,
            "os": "linux",
            **({"variant": variant} if variant else {}),
            "config": {"User": "1000"},
            "rootfs": {
                "type": "layers",
                "diff_ids": ["sha256:" + hashlib.sha256(gzip.decompress(layer)).hexdigest()],
            },
        }
        config_bytes = json.dumps(config).encode()
        config_digest = self.push_blob(repository, config_bytes)
        manifest_type = DOCKER_MANIFEST if docker else OCI_MANIFEST
        manifest = {
            "schemaVersion": 2,
            "mediaType": manifest_type,
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json"
                if docker
                else "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config_bytes),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip"
                    if docker
                    else "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest,
                    "size": len(layer),
                }
            ],
        }
        digest, size = self.push_manifest(repository, tag or f"sha256-{config_digest[7:19]}", manifest)
        platform = {"architecture": architecture, "os": "linux", **({"variant": variant} if variant else {})}
        return {"mediaType": manifest_type, "digest": digest, "size": size, "platform": platform}

    def push_index(
        self, repository: str, tag: str, platforms: list[tuple[str, str | None]], docker: bool = False
    ) -> str:
        """Push one image per platform, then an index (or Docker manifest list) of them; return its digest."""
        entries = [self.push_image(repository, None, arch, variant, docker) for arch, variant in platforms]
        return self.push_index_of(repository, tag, entries, docker)["digest"]

    def push_index_of(
        self, repository: str, tag: str, entries: list[dict[str, Any]], docker: bool = False
    ) -> dict[str, Any]:
        """Push an index of ``entries`` exactly as given (e.g. without ``platform``); return its descriptor."""
        media_type = DOCKER_LIST if docker else OCI_INDEX
        index = {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}
        digest, size = self.push_manifest(repository, tag, index)
        return {"mediaType": media_type, "digest": digest, "size": size}


# Repositories the fixtures push to (token registry grants push for these).
PUSH_REPOSITORIES = [
    "ml/multiarch",
    "ml/multiarch-docker",
    "ml/amd64-only",
    "ml/arm64-only",
    "ml/arm64-docker",
    "ml/no-arm64",
    "ml/pinned",
    "private/model",
    *[f"bench/image-{i}" for i in range(10)],
]


def _empty_layer(marker: str) -> bytes:
    """A gzip'd tar with one small file: a real layer, different per platform."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = f"built for {marker}\n".encode()
        info = tarfile.TarInfo("etc/platform")
        info.size, info.mtime = len(data), 0
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


@dataclass
class Registries:
    """The loopback registries the tests use and what was pushed to them."""

    open: LocalRegistry
    token: LocalRegistry
    token_server: TokenServer
    digests: dict[str, str]
    directory: Path

    def stop(self) -> None:
        self.open.stop()
        self.token.stop()
        self.token_server.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_registries() -> Registries:
    """Both registries, with the test images pushed: multi-arch, amd64-only, arm64-only, no-arm64, pinned."""
    directory = Path(tempfile.mkdtemp(prefix="oci-registry-"))
    token_server = TokenServer(directory).start()
    open_registry = token_registry = None
    try:
        open_registry = LocalRegistry(directory).start()
        token_registry = LocalRegistry(directory, token_server=token_server).start()
        digests: dict[str, str] = {}
        for registry in (open_registry, token_registry):
            digests["multiarch"] = registry.push_index(
                "ml/multiarch", "v1", [("amd64", None), ("arm64", "v8")]
            )
            registry.push_index("ml/multiarch-docker", "v1", [("arm64", None), ("amd64", None)], docker=True)
            registry.push_image("ml/amd64-only", "v1", "amd64")
            registry.push_image("ml/arm64-only", "v1", "arm64")
            registry.push_image("ml/arm64-docker", "v1", "arm64", docker=True)
            registry.push_index("ml/no-arm64", "v1", [("amd64", None), ("arm", "v7")])
            digests["pinned"] = registry.push_image("ml/pinned", "v1", "arm64")["digest"]
            digests["pinned-amd64"] = registry.push_image("ml/pinned", "amd64", "amd64")["digest"]
            registry.push_image("private/model", "v1", "arm64")
        return Registries(open_registry, token_registry, token_server, digests, directory)
    except BaseException:
        for registry in (open_registry, token_registry):
            if registry is not None:
                registry.stop()
        token_server.stop()
        shutil.rmtree(directory, ignore_errors=True)
        raise


def registry_available() -> bool:
    return os.access(REGISTRY_BINARY, os.X_OK)
