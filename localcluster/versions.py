"""What the Go module proxy serves of the upstream modules localcluster/ pins: the next bump in one command.

``bin/probe-versions`` asks the proxy (the first URL of ``go env GOPROXY``) about each module of
``localcluster/release-tags.toml``: its ``@v/list`` and ``@latest``, then every release tag the
table holds, by tag and by the pseudo-versions Go would give that tag's commit (the proxy here
often serves a version only under its full pseudo-version). For ``github.com/pulumi/pulumi/sdk/v3``
it also finds the newest served version that still holds the Python language host as a package
(what ``localcluster/pulumi/language-hosts`` builds).

A pseudo-version needs the commit's hash and UTC commit time, which neither the proxy nor this
machine (no GitHub) can tell: the table keeps them per release tag, refreshed by whoever has a
clone with tags (``bin/probe-versions --tags-from <clone> <repo> <glob>`` prints the rows).
"""

from __future__ import annotations

import argparse
import datetime
import io
import re
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomllib

from infra.tooling import gomod

HERE = Path(__file__).resolve().parent
TABLE = HERE / "release-tags.toml"
SEMVER = re.compile(r"^v(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")
HOST_PACKAGE = "python/cmd/pulumi-language-python/main.go"
"""In sdk/v3's zip while the Python language host was a package of it (v3.68.0 and before)."""
TIMEOUT = 30


@dataclass(frozen=True)
class Release:
    tag: str
    version: str  # the tag as a semantic version, e.g. cluster-autoscaler-1.33.0 -> v1.33.0
    commit: str
    time: str  # the commit's committer time in UTC, yyyymmddhhmmss


@dataclass(frozen=True)
class Module:
    path: str
    what: str
    pins: str | None  # the folder of localcluster/ whose go.mod pins it
    releases: tuple[Release, ...]


def major(path: str) -> int:
    """The major version a module path allows: N for ``.../vN`` (N >= 2), else 0 (v0 and v1)."""
    found = re.search(r"/v(\d+)$", path)
    return int(found.group(1)) if found and int(found.group(1)) >= 2 else 0


def pseudo_version(path: str, commit: str, time: str, base: str | None = None) -> str:
    """Go's pseudo-version of ``commit`` (golang.org/x/mod/module/pseudo.go).

    No base tag: ``vN.0.0-<time>-<hash>``; after release ``vX.Y.Z``: ``vX.Y.(Z+1)-0.<time>-<hash>``;
    after pre-release ``vX.Y.Z-pre``: ``vX.Y.Z-pre.0.<time>-<hash>``.
    """
    if not re.fullmatch(r"\d{14}", time) or not re.fullmatch(r"[0-9a-f]{12,40}", commit):
        raise ValueError(f"not a UTC time yyyymmddhhmmss and a commit hash: {time!r}, {commit!r}")
    rev = f"{time}-{commit[:12]}"
    if base is None:
        return f"v{major(path)}.0.0-{rev}"
    x, y, z, pre = _parts(base)
    return f"{base}.0.{rev}" if pre else f"v{x}.{y}.{z + 1}-0.{rev}"


def _parts(version: str) -> tuple[int, int, int, str | None]:
    found = SEMVER.match(version)
    if not found:
        raise ValueError(f"not a semantic version: {version!r}")
    return int(found.group(1)), int(found.group(2)), int(found.group(3)), found.group(4)


def order(version: str) -> tuple[int, int, int, bool, str]:
    """Sort key: numbers, then a release after its pre-releases and pseudo-versions."""
    x, y, z, pre = _parts(version)
    return x, y, z, pre is None, pre or ""


def candidates(path: str, releases: Sequence[Release], index: int) -> list[str]:
    """Every name the proxy might serve release ``index`` under: its tag, and its commit's pseudo-versions
    with no base, based on the tag itself, and based on the release before it in the table."""
    release = releases[index]
    names = [release.version, pseudo_version(path, release.commit, release.time)]
    bases = [release.version] + ([releases[index - 1].version] if index else [])
    names += [pseudo_version(path, release.commit, release.time, b) for b in bases]
    return list(dict.fromkeys(names))


def escape(path: str) -> str:
    """The proxy protocol's case encoding: an upper-case letter becomes ``!`` and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def load(table: Path = TABLE) -> list[Module]:
    data = tomllib.loads(table.read_text())
    repos = data["repos"]
    modules = []
    for m in data["modules"]:
        repo = repos[m["repo"]]
        prefix = repo.get("tag_prefix", "v")
        releases = tuple(
            Release(tag, "v" + tag.removeprefix(prefix).removeprefix("v"), commit, time)
            for tag, commit, time in repo["tags"]
        )
        modules.append(Module(m["path"], m["what"], m.get("pins"), releases))
    return modules


class Proxy:
    """The Go module proxy protocol (https://go.dev/ref/mod#goproxy-protocol), read-only."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _get(self, path: str, module: str) -> bytes | None:
        url = f"{self.url}/{escape(module)}/{path}"
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            if error.code in (403, 404, 410):  # "not found" / "not available" in the protocol
                return None
            raise

    def listed(self, module: str) -> list[str]:
        text = (self._get("@v/list", module) or b"").decode()
        return sorted((v for v in text.split() if SEMVER.match(v)), key=order)

    def latest(self, module: str) -> str | None:
        found = self._get("@latest", module)
        return None if found is None else re.search(rb'"Version"\s*:\s*"([^"]+)"', found).group(1).decode()

    def serves(self, module: str, version: str) -> bool:
        return self._get(f"@v/{version}.info", module) is not None

    def zip_holds(self, module: str, version: str, member: str) -> bool:
        """Does the module's zip at ``version`` hold ``<module>@<version>/<member>``? Reads only its
        directory (HTTP range requests), not the whole zip."""
        url = f"{self.url}/{escape(module)}/@v/{version}.zip"
        with zipfile.ZipFile(io.BufferedReader(_RemoteFile(url), buffer_size=1 << 16)) as archive:
            return f"{module}@{version}/{member}" in set(archive.namelist())


class _RemoteFile(io.RawIOBase):
    """A seekable read-only file over HTTP range requests, enough for zipfile to read a directory."""

    def __init__(self, url: str) -> None:
        request = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            self.url, self.size = response.url, int(response.headers["Content-Length"])
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        start = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, start + offset)
        return self.position

    def readinto(self, buffer) -> int:  # type: ignore[override]
        end = min(self.size, self.position + len(buffer)) - 1
        if end < self.position:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-{end}"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data = response.read()
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def newest_holding(holds: Callable[[str], bool], versions: Sequence[str]) -> str | None:
    """The newest of ``versions`` (sorted, oldest first) for which ``holds`` is true, assuming that
    once a version lacks it every later one does (a package moved out stays out)."""
    low, high, found = 0, len(versions) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if holds(versions[middle]):
            found, low = versions[middle], middle + 1
        else:
            high = middle - 1
    return found


def default_proxy() -> str:
    out = subprocess.run(["go", "env", "GOPROXY"], capture_output=True, text=True, check=True).stdout
    url = next((u for u in re.split(r"[,|]", out.strip()) if u.startswith("http")), None)
    if url is None:
        raise SystemExit(f"go env GOPROXY names no proxy URL ({out.strip()!r}): pass --proxy")
    return url


def _pin(module: Module) -> str | None:
    if module.pins is None:
        return None
    try:
        return gomod.pinned_version(HERE / module.pins, module.path)
    except (OSError, LookupError):
        return None


def report(module: Module, proxy: Proxy) -> list[str]:
    """What the proxy serves of one module, as lines to print."""
    pin = _pin(module)
    names = [candidates(module.path, module.releases, i) for i in range(len(module.releases))]
    with ThreadPoolExecutor(max_workers=16) as pool:
        served = list(pool.map(lambda n: [v for v in n if proxy.serves(module.path, v)], names))
        listed, latest = pool.submit(proxy.listed, module.path), pool.submit(proxy.latest, module.path)
    lines = [f"== {module.what}: {module.path}"]
    where = f"localcluster/{module.pins}/go.mod" if module.pins else "no go.mod of localcluster/"
    lines.append(f"   pinned   {pin or 'nothing'} ({where})")
    lines.append(f"   @v/list  {' '.join(listed.result()) or '(empty)'}")
    lines.append(f"   @latest  {latest.result() or 'not served'}")
    at = _tag_order(module, pin) if pin else None
    newer = [v for v in listed.result() if at and _parts(v)[3] is None and order(v) > at]
    missing = []
    for release, versions in zip(module.releases, served, strict=True):
        if not versions:
            missing.append(release.tag)
            continue
        lines.append(
            f"   served   {release.tag} as {', '.join(versions)}{' (pinned)' if pin in versions else ''}"
        )
        if at and order(release.version) > at and release.version not in newer:
            newer.append(release.tag if versions[0] == release.tag else f"{release.tag} ({versions[0]})")
    if missing:
        lines.append(f"   absent   {' '.join(missing)} (by tag and every pseudo-version of its commit)")
    if module.releases:
        last = module.releases[-1]
        lines.append(f"   table    ends at {last.tag} ({last.time[:8]}); newer tags need a refresh")
    if pin:
        lines.append(f"   newer than the pin: {', '.join(newer) or 'none served'}")
    return lines


def _tag_order(module: Module, pin: str) -> tuple[int, int, int, bool, str]:
    """Where the pin stands among the table's releases: the release it is served as, else itself."""
    for i, release in enumerate(module.releases):
        if pin in candidates(module.path, module.releases, i):
            return order(release.version)
    return order(pin)


def host_report(proxy: Proxy, module: str = "github.com/pulumi/pulumi/sdk/v3") -> list[str]:
    """The newest served sdk/v3 that still holds the Python language host as a package."""
    versions = [v for v in proxy.listed(module) if _parts(v)[3] is None]
    found = newest_holding(lambda v: proxy.zip_holds(module, v, HOST_PACKAGE), versions)
    pin = gomod.pinned_version(HERE / "pulumi" / "language-hosts", module)
    return [
        f"== Python language host inside {module}",
        f"   pinned   {pin} (localcluster/pulumi/language-hosts/go.mod)",
        f"   newest served version holding {HOST_PACKAGE}: {found or 'none'} "
        f"(of {len(versions)} served releases, newest {versions[-1] if versions else 'none'})",
    ]


def tag_rows(clone: Path, pattern: str) -> list[str]:
    """Table rows ``["tag", "commit", "yyyymmddhhmmss"]`` for the clone's tags matching ``pattern``."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(clone), *args], capture_output=True, text=True, check=True
        ).stdout

    rows = []
    for tag in git("tag", "--list", pattern, "--sort=v:refname").split():
        commit, seconds = git("log", "-1", "--format=%H %ct", f"{tag}^{{commit}}").split()
        time = datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).strftime("%Y%m%d%H%M%S")
        rows.append(f'  ["{tag}", "{commit}", "{time}"],')
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/probe-versions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxy", help="the Go module proxy URL (default: from go env GOPROXY)")
    parser.add_argument("--module", action="append", help="only this module path (repeatable)")
    parser.add_argument(
        "--tags-from",
        nargs=2,
        metavar=("CLONE", "GLOB"),
        help="print table rows for the clone's tags matching GLOB (e.g. 'v4.*'), then stop",
    )
    args = parser.parse_args(argv)
    if args.tags_from:
        print("\n".join(tag_rows(Path(args.tags_from[0]), args.tags_from[1])))
        return 0
    proxy = Proxy(args.proxy or default_proxy())
    print(f"Go module proxy: {proxy.url}; release tags from {TABLE.name}")
    for module in load():
        if not args.module or module.path in args.module:
            print("\n".join(report(module, proxy)))
    if not args.module or "github.com/pulumi/pulumi/sdk/v3" in args.module:
        print("\n".join(host_report(proxy)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
