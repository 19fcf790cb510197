"""A small, read-only OCI distribution client: which platforms does an image have?"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import ssl
import time
import urllib.parse
from base64 import b64decode, b64encode
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
import requests.adapters

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_V1 = "application/vnd.docker.distribution.manifest.v1+prettyjws"  # legacy, has "architecture"
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})
MANIFEST_TYPES = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
IMAGE_CONFIG_TYPES = frozenset(
    {"application/vnd.oci.image.config.v1+json", "application/vnd.docker.container.image.v1+json"}
)
# One GET answers both "index" and "single manifest": the registry picks what it has.
ACCEPT = ", ".join([OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST])

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # Distribution's own limit for manifests
MAX_BLOB_BYTES = 16 * 1024 * 1024  # image configs are KiBs; anything this big is not one
MAX_REDIRECTS = 5
MAX_INDEX_DEPTH = 2
"""Index entries without a platform are followed at most this many levels below the top index."""
MAX_CHILD_LOOKUPS = 8
"""Child manifests fetched per image at most: a preview must not walk a 100-entry index."""
ARM64_PLATFORMS = frozenset({"linux/arm64", "linux/arm64/v8"})
"""What Graviton2 (g5g) runs: an index entry of one of these settles the question."""
USER_AGENT = "eks-gpu-infra-image-check/1"

# Used with fullmatch: a pattern's ``$`` also matches before a final newline (``v1\n`` as a tag).
_DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_REGISTRY_HOST = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$"
)
_REPO_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")


class ReferenceError(ValueError):
    """An image reference no container runtime would accept."""


class RegistryError(Exception):
    """The registry could not answer: ``kind`` says why, so callers can word a warning."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Reference:
    """A parsed image reference, normalised the way Docker does (``nginx`` -> ``docker.io/library/nginx:latest``)."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def host(self) -> str:
        """Where the API lives (``docker.io`` answers on ``registry-1.docker.io``)."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def reference(self) -> str:
        """What goes after ``/manifests/``: the digest if pinned (it wins over a tag), else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        tag, digest = f":{self.tag}" if self.tag else "", f"@{self.digest}" if self.digest else ""
        return f"{self.registry}/{self.repository}{tag}{digest}"


def parse_reference(image: str) -> Reference:
    """Parse ``image`` as a container runtime does; raise :class:`ReferenceError` if it cannot be pulled."""
    if not isinstance(image, str) or not image or image != image.strip():
        raise ReferenceError(f"image {image!r} is not a valid reference")
    rest, at, digest = image.partition("@")
    if at and not _DIGEST.fullmatch(digest):
        raise ReferenceError(f"image {image!r}: digest must be sha256:<64 hex digits>")
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        registry, path = first, remainder
    else:
        registry, path = DOCKER_HUB, rest
    tag = None
    if path.rfind(":") > path.rfind("/"):  # a colon after the last slash starts the tag
        path, _, tag = path.rpartition(":")
        if not _TAG.fullmatch(tag):
            raise ReferenceError(f"image {image!r}: tag {tag!r} is not valid")
    host = _REGISTRY_HOST.fullmatch(registry)  # Docker's grammar: domain[:port], port digits only
    if not host or int(host.group(1) or 0) > 65535:
        raise ReferenceError(f"image {image!r}: {registry!r} is not a registry host[:port] (port 0 to 65535)")
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not path or not all(_REPO_COMPONENT.fullmatch(part) for part in path.split("/")):
        raise ReferenceError(f"image {image!r}: repository {path!r} is not valid (lowercase, [a-z0-9._-])")
    return Reference(registry, path, tag=tag if tag or digest else "latest", digest=digest or None)


def is_loopback(host: str) -> bool:
    """True for registries on this machine: ``localhost``, 127.0.0.0/8, ``[::1]`` (with or without port)."""
    try:
        name = urllib.parse.urlsplit("//" + host).hostname or host  # a bare "::1" has no hostname
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class RoundTrip:
    """One HTTP exchange with a registry, token service or blob CDN."""

    url: str
    status: int
    purpose: str  # manifest | blob | token | redirect


@dataclass(frozen=True)
class Platforms:
    """What an image offers: its platforms (``linux/arm64``, ``linux/arm/v7``) and its manifest's digest."""

    platforms: tuple[str, ...]
    digest: str


Credentials = tuple[str, str]
CredentialsProvider = Callable[[str], "Credentials | None"]


@dataclass
class _Challenge:
    scheme: str
    params: dict[str, str] = field(default_factory=dict)


def parse_challenge(header: str) -> _Challenge:
    """``Bearer realm="https://auth",service="reg",scope="repository:x:pull"`` -> scheme and params."""
    scheme, _, rest = header.strip().partition(" ")
    params = requests.utils.parse_dict_header(rest)
    return _Challenge(scheme=scheme.lower(), params={k.lower(): v or "" for k, v in params.items()})


class RegistryClient:
    """Read-only registry access with bounded time: see the module docstring for the rules it keeps."""

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        deadline: float = 30.0,
        credentials: CredentialsProvider | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self.credentials = credentials
        self.ssl_context = ssl_context or ssl.create_default_context()
        self.round_trips: list[RoundTrip] = []
        self._challenges: dict[str, _Challenge] = {}  # per registry host
        self._auth: dict[tuple[str, str], str] = {}  # (host, repository) -> Authorization value
        self.session = requests.Session()  # HTTPS_PROXY/NO_PROXY as requests reads them
        self.session.headers["User-Agent"] = USER_AGENT
        self.session.max_redirects = MAX_REDIRECTS
        for scheme in ("http://", "https://"):
            self.session.mount(scheme, _Adapter(self.ssl_context))

    # -- public API -------------------------------------------------------------------------

    def platforms(self, ref: Reference) -> Platforms:
        """The platforms ``ref`` offers: from the index if it is one, else from the config blob."""
        stop = time.monotonic() + self.deadline
        media_type, body, digest = self.manifest(ref, stop)
        document = _json(body, f"manifest of {ref}")
        if media_type in INDEX_TYPES:
            found: list[str] = []
            unresolved: list[RegistryError] = []
            self._index_platforms(ref, document, stop, 1, [MAX_CHILD_LOOKUPS], found, unresolved)
            if unresolved and not any(p in ARM64_PLATFORMS for p in found):
                first = unresolved[0]
                kind = first.kind if first.kind in ("unreachable", "rate-limited") else "protocol"
                raise RegistryError(
                    kind,
                    f"{ref}: {len(unresolved)} index entr{'y' if len(unresolved) == 1 else 'ies'} "
                    f"without a platform could not be resolved ({first})"
                    + (f"; the others offer {', '.join(found)}" if found else ""),
                )
            if not found:
                raise RegistryError("protocol", f"{ref}: the index names no platform")
            return Platforms(tuple(found), digest)
        if media_type in MANIFEST_TYPES:
            config = self._config_platform(ref, document, stop)
            if config is None:
                config_type = (document.get("config") or {}).get("mediaType")
                raise RegistryError(
                    "protocol", f"{ref} is not a container image (config media type {config_type!r})"
                )
            return Platforms((config,), digest)
        if media_type == DOCKER_MANIFEST_V1:
            return Platforms((format_platform({"os": "linux", **document}),), digest)
        raise RegistryError("protocol", f"{ref}: unexpected manifest media type {media_type!r}")

    def _index_platforms(
        self,
        ref: Reference,
        index: dict[str, Any],
        stop: float,
        depth: int,
        budget: list[int],
        found: list[str],
        unresolved: list[RegistryError],
    ) -> None:
        """Add the platforms of ``index``'s entries to ``found``; entries that could not be learned to ``unresolved``."""
        entries = index.get("manifests")
        if not isinstance(entries, list):
            raise RegistryError("protocol", f"{ref}: index has no manifests list")
        for entry in entries:
            if not isinstance(entry, dict):
                raise RegistryError("protocol", f"{ref}: index entry {entry!r} is not an object")
            platform = entry.get("platform")
            if isinstance(platform, dict) and platform:
                _add(found, format_platform(platform))
                continue
            child_digest = entry.get("digest")
            try:  # whatever keeps this entry's platform from being learned goes to unresolved
                if not isinstance(child_digest, str) or not _DIGEST.fullmatch(child_digest):
                    raise RegistryError("protocol", f"entry has no sha256 digest: {child_digest!r}")
                if depth > MAX_INDEX_DEPTH or budget[0] <= 0:
                    raise RegistryError(
                        "protocol", f"{child_digest}: more nesting or entries than are followed"
                    )
                budget[0] -= 1
                child = Reference(ref.registry, ref.repository, digest=child_digest)
                child_type, child_body, _ = self.manifest(child, stop)
                child_doc = _json(child_body, f"manifest {child_digest} of {ref}")
                if child_type in INDEX_TYPES:
                    self._index_platforms(ref, child_doc, stop, depth + 1, budget, found, unresolved)
                elif child_type in MANIFEST_TYPES:
                    # None: an artifact (signature, SBOM), not a platform
                    _add(found, self._config_platform(child, child_doc, stop))
                else:
                    raise RegistryError("protocol", f"{child_digest}: unexpected media type {child_type!r}")
            except RegistryError as error:
                unresolved.append(error)

    def _config_platform(self, ref: Reference, manifest: dict[str, Any], stop: float) -> str | None:
        """The platform in a single manifest's config blob; None when the config is not an image config."""
        config = manifest.get("config") or {}
        config_type, config_digest = config.get("mediaType"), config.get("digest")
        if config_type not in IMAGE_CONFIG_TYPES:
            return None
        if not isinstance(config_digest, str) or not _DIGEST.fullmatch(config_digest):
            raise RegistryError("protocol", f"{ref}: manifest has no sha256 config digest")
        blob = _json(self.blob(ref, config_digest, stop), f"config of {ref}")
        return format_platform(blob)

    def manifest(self, ref: Reference, stop: float) -> tuple[str, bytes, str]:
        """GET the manifest with every media type accepted; return (media type, body, digest)."""
        path = f"/v2/{ref.repository}/manifests/{ref.reference}"
        status, headers, body = self._get(ref, path, {"Accept": ACCEPT}, "manifest", MAX_MANIFEST_BYTES, stop)
        if status == 404:
            raise RegistryError("not-found", f"{ref} not found in its registry (HTTP 404)")
        if status != 200:
            raise RegistryError("protocol", f"{ref}: manifest request answered HTTP {status}")
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if ref.digest and digest != ref.digest:
            raise RegistryError("protocol", f"{ref}: registry returned content with digest {digest}")
        announced = headers.get("docker-content-digest")
        if announced and announced.startswith("sha256:") and announced != digest:
            raise RegistryError(
                "protocol", f"{ref}: content does not match Docker-Content-Digest {announced}"
            )
        media_type = headers.get("content-type", "").split(";")[0].strip()
        if media_type not in INDEX_TYPES | MANIFEST_TYPES | {DOCKER_MANIFEST_V1}:
            media_type = _json(body, f"manifest of {ref}").get("mediaType") or media_type
        return media_type, body, digest

    def blob(self, ref: Reference, digest: str, stop: float) -> bytes:
        """GET a blob of ``ref``'s repository, checked against ``digest``."""
        path = f"/v2/{ref.repository}/blobs/{digest}"
        status, _, body = self._get(ref, path, {}, "blob", MAX_BLOB_BYTES, stop)
        if status == 404:
            raise RegistryError("not-found", f"{ref}: config blob {digest} not found (HTTP 404)")
        if status != 200:
            raise RegistryError("protocol", f"{ref}: blob request answered HTTP {status}")
        if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            raise RegistryError("protocol", f"{ref}: blob content does not match {digest}")
        return body

    # -- HTTP and auth --------------------------------------------------------------------------

    def _base(self, host: str) -> str:
        return ("http" if is_loopback(host) else "https") + "://" + host

    def _get(
        self, ref: Reference, path: str, headers: dict[str, str], purpose: str, limit: int, stop: float
    ) -> tuple[int, Mapping[str, str], bytes]:
        key = (ref.host, ref.repository)
        fresh = False
        if key not in self._auth:
            self._authorize_ahead(ref, stop)
            fresh = key in self._auth
        url = self._base(ref.host) + path
        sent = self._auth.get(key)
        status, answer, body = self._request(url, headers, sent, purpose, limit, stop)
        # No credentials yet: answer the challenge. A token cached by an earlier request
        # may have expired (Docker Hub's last 5 minutes): drop it and ask once more. A
        # token got for this very request and refused stays refused (a private image).
        if status == 401 and (sent is None or not fresh):
            self._auth.pop(key, None)
            header = answer.get("www-authenticate", "")
            known_challenge = self._challenges.get(ref.host)
            challenge = parse_challenge(header) if header or known_challenge is None else known_challenge
            self._challenges[ref.host] = challenge
            self._auth[key] = self._authorize(ref, challenge, stop)
            status, answer, body = self._request(url, headers, self._auth[key], purpose, limit, stop)
        if status in (401, 403):
            raise RegistryError(
                "unauthorized", f"{ref}: the registry refused access (HTTP {status}); private image?"
            )
        if status == 429:
            retry = answer.get("retry-after")
            raise RegistryError(
                "rate-limited",
                f"{ref}: rate limited (HTTP 429{', retry after ' + retry + ' s' if retry else ''})",
            )
        if status >= 500:
            raise RegistryError("unreachable", f"{ref}: registry error HTTP {status}")
        return status, answer, body

    def _authorize_ahead(self, ref: Reference, stop: float) -> None:
        """Skip the ``401`` when this registry's challenge or credentials are already known."""
        challenge = self._challenges.get(ref.host)
        if challenge is not None:
            self._auth[(ref.host, ref.repository)] = self._authorize(ref, challenge, stop)
            return
        creds = self.credentials(ref.host) if self.credentials else None
        if creds is not None:  # Amazon ECR: Basic, known up front
            self._auth[(ref.host, ref.repository)] = _basic(creds)

    def _authorize(self, ref: Reference, challenge: _Challenge, stop: float) -> str:
        creds = self.credentials(ref.host) if self.credentials else None
        if challenge.scheme == "basic":
            if creds is None:
                raise RegistryError(
                    "unauthorized",
                    f"{ref}: the registry wants credentials (Basic auth) and none are configured",
                )
            return _basic(creds)
        if challenge.scheme != "bearer" or "realm" not in challenge.params:
            raise RegistryError("protocol", f"{ref}: unsupported auth challenge {challenge.scheme!r}")
        realm = challenge.params["realm"]
        query = {"scope": f"repository:{ref.repository}:pull"}
        if "service" in challenge.params:
            query["service"] = challenge.params["service"]
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(query)  # _request checks it
        status, _, body = self._request(
            url, {"Accept": "application/json"}, _basic(creds) if creds else None, "token", 1 << 20, stop
        )
        if status in (401, 403):
            raise RegistryError(
                "unauthorized", f"{ref}: the token service refused a pull token (HTTP {status})"
            )
        if status == 429:
            raise RegistryError("rate-limited", f"{ref}: the token service rate limited us (HTTP 429)")
        if status != 200:
            raise RegistryError("unreachable", f"{ref}: the token service answered HTTP {status}")
        token = _json(body, "token response")
        value = token.get("token") or token.get("access_token")
        if not isinstance(value, str) or not value:
            raise RegistryError("protocol", f"{ref}: the token service returned no token")
        return f"Bearer {value}"

    def _request(
        self,
        url: str,
        headers: dict[str, str],
        authorization: str | None,
        purpose: str,
        limit: int,
        stop: float,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """One GET through the session (proxies, TLS, redirects, which drop ``Authorization`` on
        another host); each hop checked by :meth:`_check` before it is made; the body size-capped."""
        netloc = urllib.parse.urlsplit(url).netloc

        def next_hop(response: requests.Response, **_: Any) -> None:
            if response.is_redirect:
                self._check(urllib.parse.urljoin(response.url, response.headers["location"]), stop)

        auth = {"Authorization": authorization} if authorization else {}
        try:
            with self.session.get(
                url,
                headers={**headers, **auth},
                timeout=self._check(url, stop),
                hooks={"response": next_hop},
                stream=True,
            ) as response:
                length = response.headers.get("content-length")
                if length and length.isdigit() and int(length) > limit:
                    raise RegistryError("protocol", f"{netloc}: answer of {length} bytes exceeds {limit}")
                body = b""
                for chunk in response.iter_content(1 << 16):
                    body += chunk
                    if len(body) > limit:
                        raise RegistryError("protocol", f"{netloc}: answer exceeds {limit} bytes")
        except requests.TooManyRedirects:
            raise RegistryError("protocol", f"{netloc}: more than {MAX_REDIRECTS} redirects") from None
        except requests.RequestException as error:  # DNS, connect, TLS, proxy, timeout
            # the reason, not the URL: it may be signed
            reason = getattr(error.args[0], "reason", error) if error.args else error
            raise RegistryError("unreachable", f"{netloc}: {type(reason).__name__}: {reason}") from None
        for hop in [*response.history, response]:
            trip = purpose if hop is (response.history or [response])[0] else "redirect"
            self.round_trips.append(RoundTrip(_redact(hop.url), hop.status_code, trip))
        return response.status_code, response.headers, body

    def _check(self, url: str, stop: float) -> float:
        """Refuse a hop the rules forbid (plain HTTP off loopback, past the deadline); else its socket timeout."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "http" and not is_loopback(parts.netloc):
            raise RegistryError(
                "insecure", f"refusing plain HTTP to {parts.netloc} (only loopback may use it)"
            )
        if parts.scheme not in ("http", "https"):
            raise RegistryError("protocol", f"refusing to follow {_redact(url)!r}")
        remaining = stop - time.monotonic()
        if remaining <= 0:
            raise RegistryError("unreachable", f"{parts.netloc}: no answer within {self.deadline:g} s")
        return min(self.timeout, remaining)


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' transport with the system's trust store (``ssl_context``, where a corporate proxy's
    CA is installed; requests alone reads certifi's) and loopback never through a proxy."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self.ssl_context = ssl_context
        super().__init__()

    def build_connection_pool_key_attributes(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        host, pool = super().build_connection_pool_key_attributes(*args, **kwargs)  # direct and proxied
        return host, {**pool, "ssl_context": self.ssl_context}

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if is_loopback(urllib.parse.urlsplit(request.url).netloc):
            kwargs["proxies"] = {}  # as Go's net/http, which Docker and the Pulumi CLI use
        return super().send(request, **kwargs)


def format_platform(platform: dict[str, Any]) -> str:
    """``{"os": "linux", "architecture": "arm", "variant": "v7"}`` -> ``linux/arm/v7``."""
    parts = [str(platform.get("os") or "unknown"), str(platform.get("architecture") or "unknown")]
    if platform.get("variant"):
        parts.append(str(platform["variant"]))
    return "/".join(parts)


def _add(found: list[str], platform: str | None) -> None:
    # unknown/unknown is buildx's attestation manifest: not a runnable image.
    if platform is not None and platform != "unknown/unknown" and platform not in found:
        found.append(platform)


def _basic(creds: Credentials) -> str:
    return "Basic " + b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()


def _json(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        raise RegistryError("protocol", f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise RegistryError("protocol", f"{what} is not a JSON object")
    return value


def _redact(url: str) -> str:
    """Signed CDN URLs carry credentials in their query: keep them out of logs."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(query="…" if parts.query else ""))


_ECR_HOST = re.compile(r"^(\d{12})\.dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")


def ecr_registry(host: str) -> tuple[str, str] | None:
    """``123456789012.dkr.ecr.us-west-2.amazonaws.com`` -> (account, region); None for other hosts."""
    match = _ECR_HOST.fullmatch(host.lower())
    return (match.group(1), match.group(2)) if match else None


class EcrCredentials:
    """Private Amazon ECR: ``GetAuthorizationToken`` with the stack's AWS credentials (botocore's chain,
    ``profile`` = ``aws:profile``), one token per registry per process (they last 12 h).
    botocore is imported lazily: without it ECR images are "not checked", saying why."""

    def __init__(self, profile: str | None = None, timeout: float = 10.0) -> None:
        self.profile = profile
        self.timeout = timeout
        self._cache: dict[str, Credentials | RegistryError] = {}

    def __call__(self, host: str) -> Credentials | None:
        found = ecr_registry(host)
        if found is None:
            return None
        if host not in self._cache:
            try:
                self._cache[host] = self._fetch(*found)
            except RegistryError as error:
                self._cache[host] = error
        value = self._cache[host]
        if isinstance(value, RegistryError):
            raise value
        return value

    def _fetch(self, account: str, region: str) -> Credentials:
        try:
            client = self._client(region)
        except ImportError:
            raise RegistryError(
                "credentials",
                "private Amazon ECR needs boto3 or botocore to get a registry token, and neither is "
                "importable here (pip install boto3)",
            ) from None
        try:
            answer = client.get_authorization_token(registryIds=[account])
            token = answer["authorizationData"][0]["authorizationToken"]
            user, _, password = b64decode(token).decode().partition(":")
        except Exception as error:  # botocore's errors: no credentials, denied, endpoint unreachable
            raise RegistryError(
                "credentials", f"ECR GetAuthorizationToken for {account} in {region} failed: {error}"
            ) from None
        return user, password

    def _client(self, region: str) -> Any:
        import botocore.session  # boto3's sessions are botocore's: same credential chain
        from botocore.config import Config

        config = Config(connect_timeout=self.timeout, read_timeout=self.timeout, retries={"max_attempts": 2})
        return botocore.session.Session(profile=self.profile).create_client(
            "ecr", region_name=region, config=config
        )
