"""Images without linux/arm64 are refused before a GPU node is paid for; what cannot be judged only warns.

Against a real OCI registry (Distribution, Debian's ``docker-registry``) started on
loopback, one open and one behind Distribution's bearer-token auth
(``tests/workloads/registry.py``). No test reaches any address but loopback: every
connection attempt is recorded, and one to another host fails the test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from typing import Any

import pulumi
import pytest

from infra.workloads import images, oci
from infra.workloads.images import (
    ARM64,
    NO_ARM64,
    NOT_CHECKED,
    PENDING,
    ImageArchitectureError,
    ImageChecker,
    check_pod_images,
    image_check_status,
)
from infra.workloads.oci import RegistryClient, RegistryError, is_loopback, parse_challenge, parse_reference
from tests.workloads import registry as fixture_registry

pytestmark = pytest.mark.usefixtures("loopback_only")


def _image(reg: fixture_registry.LocalRegistry, name: str) -> str:
    return f"{reg.host}/{name}"


# -- references -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "registry", "repository", "reference"),
    [
        ("nginx", "docker.io", "library/nginx", "latest"),
        ("nginx:1.27", "docker.io", "library/nginx", "1.27"),
        ("docker.io/nginx", "docker.io", "library/nginx", "latest"),
        ("index.docker.io/pytorch/pytorch:2.4.0", "docker.io", "pytorch/pytorch", "2.4.0"),
        ("nvcr.io/nvidia/tritonserver:24.08-py3", "nvcr.io", "nvidia/tritonserver", "24.08-py3"),
        ("ghcr.io/org/model:v1", "ghcr.io", "org/model", "v1"),
        ("public.ecr.aws/lambda/python:3.12", "public.ecr.aws", "lambda/python", "3.12"),
        ("localhost:5000/ml/x", "localhost:5000", "ml/x", "latest"),
        ("[::1]:5000/x:y", "[::1]:5000", "x", "y"),
        (f"ghcr.io/o/r:v1@sha256:{'a' * 64}", "ghcr.io", "o/r", f"sha256:{'a' * 64}"),
    ],
)
def test_references_are_normalised_as_container_runtimes_do(
    image: str, registry: str, repository: str, reference: str
) -> None:
    ref = parse_reference(image)
    assert (ref.registry, ref.repository, ref.reference) == (registry, repository, reference)


def test_docker_hub_is_asked_on_its_api_host() -> None:
    assert parse_reference("nginx").host == "registry-1.docker.io"
    assert str(parse_reference("nginx")) == "docker.io/library/nginx:latest"


NEWLINE_INSIDE = [f"nginx:v1\n@sha256:{'a' * 64}", f"nginx\n@sha256:{'a' * 64}", "ghcr.io\n/o/r:v1"]


@pytest.mark.parametrize("image", ["", "Nginx", "nginx@sha256:abc", "a/b:bad tag", " nginx", *NEWLINE_INSIDE])
def test_references_no_runtime_accepts_are_refused(image: str) -> None:
    with pytest.raises(oci.ReferenceError):
        parse_reference(image)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost:5000", True),
        ("127.0.0.1:5000", True),
        ("127.8.9.10", True),
        ("[::1]:5000", True),
        ("nvcr.io", False),
        ("10.0.0.1:5000", False),
        ("localhost.example.com", False),
    ],
)
def test_only_loopback_registries_may_be_spoken_to_in_plain_http(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_the_bearer_challenge_is_parsed() -> None:
    challenge = parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/nginx:pull"'
    )
    assert challenge.scheme == "bearer"
    assert challenge.params == {
        "realm": "https://auth.docker.io/token",
        "service": "registry.docker.io",
        "scope": "repository:library/nginx:pull",
    }


# -- against the real registry ----------------------------------------------------------------------


@pytest.mark.parametrize("which", ["open", "token"])
@pytest.mark.parametrize(
    ("name", "status", "platforms"),
    [
        ("ml/multiarch:v1", ARM64, ("linux/amd64", "linux/arm64/v8")),  # OCI index
        ("ml/multiarch-docker:v1", ARM64, ("linux/arm64", "linux/amd64")),  # Docker manifest list
        ("ml/arm64-only:v1", ARM64, ("linux/arm64",)),  # OCI manifest -> config blob
        ("ml/arm64-docker:v1", ARM64, ("linux/arm64",)),  # Docker manifest -> config blob
        ("ml/amd64-only:v1", NO_ARM64, ("linux/amd64",)),
        ("ml/no-arm64:v1", NO_ARM64, ("linux/amd64", "linux/arm/v7")),
    ],
)
def test_images_are_judged_by_what_the_registry_says(
    registries: fixture_registry.Registries,
    checker: ImageChecker,
    which: str,
    name: str,
    status: str,
    platforms: tuple[str, ...],
) -> None:
    verdict = checker.check(_image(getattr(registries, which), name), "server")
    assert (verdict.status, verdict.platforms) == (status, platforms)


def test_an_amd64_only_image_is_refused_with_the_fix(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    image = _image(registries.open, "ml/amd64-only:v1")
    message = checker.check(image, "server").message()
    assert f"container 'server' image '{image}' has no linux/arm64 build (it offers: linux/amd64)" in message
    assert "exec format error" in message
    assert "docker buildx build --platform linux/arm64,linux/amd64" in message
    assert "or pick an arm64 tag" in message


def test_a_digest_pinned_image_is_checked_by_its_digest(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    arm = checker.check(_image(registries.token, f"ml/pinned@{registries.digests['pinned']}"))
    amd = checker.check(_image(registries.token, f"ml/pinned:v1@{registries.digests['pinned-amd64']}"))
    assert (arm.status, arm.digest) == (ARM64, registries.digests["pinned"])
    assert (amd.status, amd.digest) == (
        NO_ARM64,
        registries.digests["pinned-amd64"],
    )  # the digest wins over :v1
    urls = [t.url for t in checker.client.round_trips if t.purpose == "manifest"]
    assert any(url.endswith(f"/manifests/{registries.digests['pinned-amd64']}") for url in urls)


def test_a_missing_tag_is_not_checked_rather_than_refused(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    verdict = checker.check(_image(registries.open, "ml/multiarch:not-pushed-yet"))
    assert verdict.status == NOT_CHECKED
    assert verdict.reason.startswith("not found in the registry")


def test_a_private_image_without_credentials_is_not_checked(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    verdict = checker.check(_image(registries.token, "private/model:v1"), "server")
    assert verdict.status == NOT_CHECKED
    assert verdict.reason.startswith("unauthorized")
    assert "was NOT checked for linux/arm64: unauthorized" in verdict.message()


def test_the_token_flow_costs_one_challenge_per_registry_and_one_token_per_repository(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    checker.check(_image(registries.token, "ml/multiarch:v1"))
    checker.check(_image(registries.token, "ml/multiarch-docker:v1"))
    trips = [(t.purpose, t.status) for t in checker.client.round_trips]
    assert trips == [
        ("manifest", 401),  # the challenge: realm, service
        ("token", 200),
        ("manifest", 200),
        ("token", 200),  # next repository: token straight away, no second 401
        ("manifest", 200),
    ]
    token_urls = [t for t in registries.token_server.requests if "ml%2Fmultiarch-docker" in t]
    assert token_urls and "service=loopback-registry" in token_urls[-1]


def test_each_image_is_looked_up_once(registries: fixture_registry.Registries, checker: ImageChecker) -> None:
    image = _image(registries.open, "ml/amd64-only:v1")
    first = checker.check(image, "a")
    trips = len(checker.client.round_trips)
    second = checker.check(image, "b")
    assert len(checker.client.round_trips) == trips == 2  # manifest + config blob, once
    assert (first.status, second.status, second.container) == (NO_ARM64, NO_ARM64, "b")


def _without_platform(descriptor: dict[str, Any]) -> dict[str, Any]:
    """An index entry as some builders write it: ``platform`` is OPTIONAL in the OCI image index."""
    return {k: v for k, v in descriptor.items() if k != "platform"}


def test_index_entries_without_a_platform_are_judged_by_their_config(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    reg = registries.open
    arm = reg.push_image("ml/bare-index", None, "arm64")
    amd = reg.push_image("ml/bare-index", None, "amd64")
    reg.push_index_of("ml/bare-index", "arm64", [_without_platform(arm)])
    reg.push_index_of("ml/bare-index", "amd64", [_without_platform(amd)])
    accepted = checker.check(_image(reg, "ml/bare-index:arm64"))
    refused = checker.check(_image(reg, "ml/bare-index:amd64"))
    assert (accepted.status, accepted.platforms) == (ARM64, ("linux/arm64",))
    assert (refused.status, refused.platforms) == (NO_ARM64, ("linux/amd64",))


def test_a_nested_index_is_followed(registries: fixture_registry.Registries, checker: ImageChecker) -> None:
    reg = registries.open
    inner = reg.push_index_of(
        "ml/nested", "inner", [reg.push_image("ml/nested", None, "arm64", "v8")]
    )  # the inner index names its platforms; the outer one names none
    amd = reg.push_image("ml/nested", None, "amd64")
    reg.push_index_of("ml/nested", "v1", [_without_platform(amd), inner])
    verdict = checker.check(_image(reg, "ml/nested:v1"))
    assert (verdict.status, verdict.platforms) == (ARM64, ("linux/amd64", "linux/arm64/v8"))


def _index(entries: list[dict[str, Any]]) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": oci.OCI_INDEX, "manifests": entries}).encode()


def test_an_entry_that_cannot_be_resolved_makes_the_image_not_checked_never_refused(
    fake: Any, checker: ImageChecker
) -> None:
    missing = {"mediaType": oci.OCI_MANIFEST, "digest": "sha256:" + "1" * 64, "size": 10}
    amd = {**missing, "digest": "sha256:" + "2" * 64, "platform": {"os": "linux", "architecture": "amd64"}}
    server = fake(
        {
            "/v2/ml/x/manifests/v1": (200, {"Content-Type": oci.OCI_INDEX}, _index([amd, missing])),
            "/v2/ml/x/manifests/v2": (200, {"Content-Type": oci.OCI_INDEX}, _index([])),
        }
    )
    verdict = checker.check(f"{server.host}/ml/x:v1")  # amd64 known, the other entry 404s
    assert verdict.status == NOT_CHECKED
    assert "could not be resolved" in verdict.reason and "linux/amd64" in verdict.reason
    empty = checker.check(f"{server.host}/ml/x:v2")  # an index naming nothing
    assert empty.status == NOT_CHECKED and "names no platform" in empty.reason


def test_nesting_is_bounded(fake: Any, checker: ImageChecker) -> None:
    # An index whose only entry is itself, by digest, forever: followed a bounded number of times.
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
    body = _index([])
    for _level in range(6):  # each level points at the previous one
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        routes[f"/v2/ml/x/manifests/{digest}"] = (200, {"Content-Type": oci.OCI_INDEX}, body)
        body = _index([{"mediaType": oci.OCI_INDEX, "digest": digest, "size": len(body)}])
    routes["/v2/ml/x/manifests/v1"] = (200, {"Content-Type": oci.OCI_INDEX}, body)
    server = fake(routes)
    verdict = checker.check(f"{server.host}/ml/x:v1")
    assert verdict.status == NOT_CHECKED and "more nesting" in verdict.reason
    fetched = [t for t in checker.client.round_trips if t.purpose == "manifest"]
    assert len(fetched) == 1 + oci.MAX_INDEX_DEPTH


# -- what cannot be judged --------------------------------------------------------------------------


def test_a_rate_limited_registry_gives_not_checked(fake: Any, checker: ImageChecker) -> None:
    server = fake({"/v2/ml/x/manifests/v1": (429, {"Retry-After": "60"}, b"")})
    verdict = checker.check(f"{server.host}/ml/x:v1")
    assert verdict.status == NOT_CHECKED
    assert verdict.reason.startswith("rate limited") and "retry after 60 s" in verdict.reason


def test_an_unreachable_registry_is_tried_once_per_run(checker: ImageChecker) -> None:
    port = fixture_registry.free_port()  # nothing listens there
    first = checker.check(f"127.0.0.1:{port}/ml/a:v1")
    second = checker.check(f"127.0.0.1:{port}/ml/b:v1")
    assert first.status == second.status == NOT_CHECKED
    assert first.reason.startswith("registry unreachable")
    assert "unreachable earlier in this run" in second.reason
    assert len(checker.client.round_trips) == 0  # no HTTP exchange completed, and only one connect tried


def test_a_token_realm_in_plain_http_on_a_remote_host_is_refused_without_contacting_it(
    fake: Any, checker: ImageChecker
) -> None:
    challenge = 'Bearer realm="http://auth.example.com/token",service="x"'
    server = fake({"/v2/ml/x/manifests/v1": (401, {"WWW-Authenticate": challenge}, b"")})
    verdict = checker.check(f"{server.host}/ml/x:v1")
    assert verdict.status == NOT_CHECKED and "plain HTTP" in verdict.reason


def _arm64_single_manifest() -> tuple[bytes, str, bytes]:
    """An OCI image manifest whose config blob says linux/arm64: (config, its digest, manifest)."""
    config = b'{"architecture": "arm64", "os": "linux"}'
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": oci.OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": [],
        }
    ).encode()
    return config, config_digest, manifest


def test_credentials_never_follow_a_redirect_to_another_host(fake: Any) -> None:
    config, config_digest, manifest = _arm64_single_manifest()
    cdn = fake({"/blob": (200, {}, config)}, host="127.0.0.2")
    registry = fake(
        {
            "/v2/ml/x/manifests/v1": (200, {"Content-Type": oci.OCI_MANIFEST}, manifest),
            f"/v2/ml/x/blobs/{config_digest}": (307, {"Location": f"http://{cdn.host}/blob?sig=secret"}, b""),
        }
    )
    client = RegistryClient(
        timeout=5, credentials=lambda host: ("AWS", "pw") if host == registry.host else None
    )
    platforms = client.platforms(parse_reference(f"{registry.host}/ml/x:v1"))
    assert platforms.platforms == ("linux/arm64",)
    assert all(headers.get("Authorization", "").startswith("Basic ") for _, headers in registry.seen)
    assert [("Authorization" in headers) for _, headers in cdn.seen] == [False]
    assert [t.purpose for t in client.round_trips] == ["manifest", "blob", "redirect"]
    assert all("secret" not in t.url for t in client.round_trips)


def test_plain_http_is_never_used_for_a_remote_registry(checker: ImageChecker) -> None:
    client = RegistryClient(timeout=1)
    with pytest.raises(RegistryError) as raised:
        client._request("http://registry.example.com/v2/", {}, None, "manifest", 100, float("inf"))
    assert raised.value.kind == "insecure"
    assert client._base("registry.example.com") == "https://registry.example.com"


# -- Amazon ECR -------------------------------------------------------------------------------------


def test_ecr_hosts_are_recognised() -> None:
    assert oci.ecr_registry("123456789012.dkr.ecr.us-west-2.amazonaws.com") == ("123456789012", "us-west-2")
    assert oci.ecr_registry("public.ecr.aws") is None


def test_private_ecr_without_boto3_or_botocore_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("boto3", "botocore", "botocore.session", "botocore.config"):
        monkeypatch.setitem(sys.modules, module, None)
    checker = ImageChecker(RegistryClient(timeout=1, credentials=oci.EcrCredentials()), online=True)
    verdict = checker.check("123456789012.dkr.ecr.us-west-2.amazonaws.com/ml/model:v1", "server")
    assert verdict.status == NOT_CHECKED
    assert "boto3 or botocore" in verdict.reason and "pip install boto3" in verdict.reason


def test_private_ecr_uses_get_authorization_token(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class FakeEcr:
        def get_authorization_token(self, **kwargs: Any) -> dict[str, Any]:
            calls.append(kwargs)
            return {"authorizationData": [{"authorizationToken": "QVdTOnNlY3JldA=="}]}  # AWS:secret

    credentials = oci.EcrCredentials(profile="dev")
    monkeypatch.setattr(credentials, "_client", lambda region: FakeEcr())
    host = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
    assert credentials(host) == ("AWS", "secret")
    assert credentials(host) == ("AWS", "secret")
    assert calls == [{"registryIds": ["123456789012"]}]  # once per process
    assert credentials("nvcr.io") is None


# -- the pure API and the preview's status -----------------------------------------------------------


def test_check_pod_images_judges_init_containers_too(
    registries: fixture_registry.Registries, checker: ImageChecker
) -> None:
    pod = {
        "initContainers": [{"name": "fetch", "image": _image(registries.open, "ml/amd64-only:v1")}],
        "containers": [
            {"name": "server", "image": _image(registries.open, "ml/multiarch:v1")},
            {"name": "sidecar", "image": pulumi.Output.from_input("x")},
        ],
    }
    verdicts = check_pod_images(pod, checker)
    assert [(v.container, v.status) for v in verdicts] == [
        ("fetch (init)", NO_ARM64),
        ("server", ARM64),
        ("sidecar", PENDING),
    ]


def test_offline_images_are_not_checked_and_nothing_is_contacted() -> None:
    assert image_check_status("nvcr.io/nvidia/tritonserver:24.08-py3") == "not checked (offline)"


def test_the_preview_status_names_what_was_found(
    registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(images.ENV_VAR, "warn")  # explicit: loopback registries may be asked
    assert image_check_status(_image(registries.open, "ml/multiarch:v1")) == "arm64 ok"
    assert image_check_status(_image(registries.open, "ml/amd64-only:v1")) == "amd64 only"
    assert image_check_status(_image(registries.open, "ml/no-arm64:v1")) == "amd64, arm/v7 only"
    assert (
        image_check_status(_image(registries.open, "ml/nope:v1")) == "not checked (not found in the registry)"
    )
    assert image_check_status("nvcr.io/nvidia/tritonserver:24.08-py3") == "not checked (offline)"
    monkeypatch.setenv(images.ENV_VAR, "off")
    assert image_check_status(_image(registries.open, "ml/amd64-only:v1")) == "check off"


def test_the_mode_is_one_of_three(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(images.ENV_VAR, "STRICT")
    assert images.image_check_mode() == ("strict", True)
    monkeypatch.setenv(images.ENV_VAR, "loud")
    with pytest.raises(ImageArchitectureError, match="EKS_GPU_IMAGE_CHECK must be one of strict, warn, off"):
        images.image_check_mode()
    monkeypatch.delenv(images.ENV_VAR)
    assert images.image_check_mode() == ("warn", False)


def test_only_the_real_engines_monitor_counts_as_online(monkeypatch: pytest.MonkeyPatch) -> None:
    import grpc
    from pulumi.runtime import settings
    from pulumi.runtime.proto import resource_pb2_grpc

    assert images.real_engine() is False  # no engine, or the mock engine of another test
    stub = resource_pb2_grpc.ResourceMonitorStub(grpc.insecure_channel("127.0.0.1:1"))  # lazy: never connects
    monkeypatch.setattr(settings, "get_monitor", lambda: stub)
    assert images.real_engine() is True


# -- robustness: unexpected failures, bad references, proxies, expired tokens -------------------------


def test_an_unexpected_exception_in_a_lookup_is_not_checked_never_a_crash() -> None:
    class Broken(RegistryClient):
        def platforms(self, ref: oci.Reference) -> oci.Platforms:
            raise KeyError("manifests")

    checker = ImageChecker(Broken(), online=True)
    verdict = checker.check("ghcr.io/org/model:v1", "server")
    assert verdict.status == NOT_CHECKED
    assert verdict.reason.startswith("unexpected registry answer") and "KeyError" in verdict.reason


@pytest.mark.parametrize("image", ["reg:abc/img", "reg:99999/img:v1", "reg:/img", "[::1]:x/img"])
def test_a_registry_with_a_port_that_is_not_a_number_is_not_checked(
    image: str, checker: ImageChecker
) -> None:
    with pytest.raises(oci.ReferenceError, match="image"):
        parse_reference(image)
    verdict = checker.check(image, "server")
    assert verdict.status == NOT_CHECKED and "is not" in verdict.reason
    assert checker.client.round_trips == []


def _tls_server(hostname: str, routes: dict[str, tuple[int, dict[str, str], bytes]]) -> tuple[Any, bytes]:
    """An HTTPS server on loopback with a self-signed certificate for ``hostname``; (server, PEM)."""
    import http.server
    import shutil
    import ssl
    import tempfile
    import threading
    from pathlib import Path

    from cryptography.hazmat.primitives import serialization

    from localcluster import pki

    key, cert = pki.self_signed(hostname, dns_names=[hostname])
    pem = cert.public_bytes(serialization.Encoding.PEM)
    directory = Path(tempfile.mkdtemp(prefix="tls-"))
    (directory / "cert.pem").write_bytes(pem)
    pki.write_key(key, directory / "key.pem")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = routes.get(self.path.split("?")[0], (404, {}, b""))
            self.send_response(status)
            for header, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(header, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    shutil.rmtree(directory)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, pem


class _ConnectProxy:
    """A forward proxy on loopback that answers CONNECT by tunnelling to one local port, whatever the target."""

    def __init__(self, upstream_port: int) -> None:
        import select
        import socket
        import socketserver
        import threading

        self.requests: list[tuple[str, dict[str, str]]] = []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                head = data.split(b"\r\n\r\n", 1)[0].decode()
                line, *header_lines = head.split("\r\n")
                headers = dict(h.split(": ", 1) for h in header_lines if ": " in h)
                proxy.requests.append((line, headers))
                upstream = socket.create_connection(("127.0.0.1", upstream_port), timeout=5)
                self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                sockets = [self.request, upstream]
                try:
                    while True:
                        ready, _, _ = select.select(sockets, [], [], 5)
                        if not ready:
                            return
                        for sock in ready:
                            chunk = sock.recv(65536)
                            if not chunk:
                                return
                            (upstream if sock is self.request else self.request).sendall(chunk)
                finally:
                    upstream.close()

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://robot:s%40cret@127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_https_registries_are_reached_through_https_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    import ssl

    config, config_digest, manifest = _arm64_single_manifest()
    registry, pem = _tls_server(
        "registry.test",
        {
            "/v2/ml/x/manifests/v1": (200, {"Content-Type": oci.OCI_MANIFEST}, manifest),
            f"/v2/ml/x/blobs/{config_digest}": (200, {}, config),
        },
    )
    proxy = _ConnectProxy(registry.server_address[1])
    try:
        _clear_proxy_environment(monkeypatch)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "internal.example")
        client = RegistryClient(timeout=5, ssl_context=ssl.create_default_context(cadata=pem.decode()))
        # registry.test resolves nowhere: only the proxy can reach it, and the client never
        # looks it up (the loopback guard would record that).
        platforms = client.platforms(parse_reference("registry.test/ml/x:v1"))
    finally:
        proxy.close()
        registry.shutdown()
        registry.server_close()
    assert platforms.platforms == ("linux/arm64",)
    assert {line.rsplit(" ", 1)[0] for line, _ in proxy.requests} == {"CONNECT registry.test:443"}
    assert (
        proxy.requests[0][1]["Proxy-Authorization"] == "Basic " + base64.b64encode(b"robot:s@cret").decode()
    )


def _clear_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


def test_loopback_registries_never_go_through_a_proxy(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    config, config_digest, manifest = _arm64_single_manifest()
    registry = fake(
        {
            "/v2/ml/x/manifests/v1": (200, {"Content-Type": oci.OCI_MANIFEST}, manifest),
            f"/v2/ml/x/blobs/{config_digest}": (200, {}, config),
        }
    )
    _clear_proxy_environment(monkeypatch)
    dead = f"http://127.0.0.1:{fixture_registry.free_port()}"  # a proxy nobody answers on
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead)
    client = RegistryClient(timeout=5)
    assert client.platforms(parse_reference(f"{registry.host}/ml/x:v1")).platforms == ("linux/arm64",)
    assert [path for path, _ in registry.seen] == ["/v2/ml/x/manifests/v1", f"/v2/ml/x/blobs/{config_digest}"]


def test_an_expired_cached_token_is_dropped_and_a_new_one_asked_for_once() -> None:
    import http.server
    import threading

    state = {"tokens": 0, "valid": "token-1"}
    config, config_digest, manifest = _arm64_single_manifest()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/token":
                state["tokens"] += 1
                body = json.dumps({"token": f"token-{state['tokens']}"}).encode()
                status, headers = 200, {"Content-Type": "application/json"}
            elif self.headers.get("Authorization") != f"Bearer {state['valid']}":
                challenge = f'Bearer realm="http://127.0.0.1:{port}/token",service="fake"'
                body, status, headers = b"", 401, {"WWW-Authenticate": challenge}
            elif path.startswith("/v2/ml/x/manifests/"):
                body, status, headers = manifest, 200, {"Content-Type": oci.OCI_MANIFEST}
            elif path == f"/v2/ml/x/blobs/{config_digest}":
                body, status, headers = config, 200, {}
            else:
                body, status, headers = b"", 404, {}
            self.send_response(status)
            for header, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(header, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = RegistryClient(timeout=5)
        assert client.platforms(parse_reference(f"127.0.0.1:{port}/ml/x:v1")).platforms == ("linux/arm64",)
        state["valid"] = "token-2"  # token-1 expired
        assert client.platforms(parse_reference(f"127.0.0.1:{port}/ml/x:v2")).platforms == ("linux/arm64",)
        state["valid"] = "token-never"  # a fresh token that is refused stays refused: no loop
        with pytest.raises(RegistryError) as raised:
            client.platforms(parse_reference(f"127.0.0.1:{port}/ml/x:v3"))
    finally:
        server.shutdown()
        server.server_close()
    assert raised.value.kind == "unauthorized"
    assert state["tokens"] == 3  # one per 401 answered, never two for one request
