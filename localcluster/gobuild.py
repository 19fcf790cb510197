"""What ``localcluster/build`` builds, in what order, and how it knows a build is fresh.

Standard library only: the script runs before any virtualenv exists. Each target is one Go
invocation in one pinned module's folder (``localcluster/<module>``: go.mod + go.sum are the pins),
leaving named binaries in ``.cache/localcluster/bin``. A target is fresh when its stamp (a hash of
its folder's pins, Go files and build script, and of its command) matches and every binary is
there; the stamp is written only after every binary was moved into place whole
(``gobuild_run``), so an interrupted build is never taken for a finished one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
STRIP = "-ldflags=-s -w"  # no symbol table or DWARF: a shorter link, a smaller binary, same code


@dataclass(frozen=True)
class Target:
    """One Go invocation: ``packages`` built with ``go build`` in ``folder``, or a ``script``."""

    name: str
    folder: Path
    outputs: tuple[str, ...]
    packages: tuple[str, ...] = ()
    script: tuple[str, ...] = ()
    args: tuple[str, ...] = ()  # after the output folder, for a script
    env: dict[str, str] = field(default_factory=dict)

    def command(self, out: Path) -> list[str]:
        """The command that leaves ``outputs`` in ``out`` (run in ``folder``)."""
        if self.script:
            return [*self.script, str(out), *self.args]
        return ["go", "build", STRIP, "-o", f"{out}/", *self.packages]


TOOLS, PULUMI = HERE / "tools", HERE / "pulumi"
KUBE_VERSION = (  # bash: $x, the -X flags for k8s.io/kubernetes' version in go.mod (v1.35.4: 1, 35)
    'v=$(awk \'$1 == "k8s.io/kubernetes" {print $2}\' go.mod); IFS=. read -r major minor _ <<< "${v#v}"; '
    "p=k8s.io/component-base/version; "
    'x="-X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"'
)
TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "kube",
            HERE / "kube",
            ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"),
            # every `tool` go.mod declares, plus the module's own main package (etcd); the version the
            # binaries report (/version) set as Kubernetes' own release build sets it (hack/lib/version.sh):
            # left at v0.0.0-master, clients that parse it (Kueue's server version fetcher) refuse to start
            script=("bash", "-c", f'{KUBE_VERSION}; go build "{STRIP} $x" -o "$0/" tool ./etcd'),
        ),
        Target("kwok", TOOLS, ("kwok",), packages=("sigs.k8s.io/kwok/cmd/kwok",)),
        Target("helm", TOOLS, ("helm",), packages=("helm.sh/helm/v4/cmd/helm",)),
        Target(
            "charts",
            ROOT / "infra" / "tooling" / "chart-pins",
            (),
            script=("bash", "-c", "go mod download && go mod verify >/dev/null"),
        ),
        *(
            Target(
                f"pulumi-{part}", PULUMI / folder, outputs, script=(str(PULUMI / "build.sh"),), args=(part,)
            )
            for part, folder, outputs in (
                ("cli", "cli", ("pulumi", "pulumi-sdkgen", "pulumi-language-python-exec")),
                ("hosts", "language-hosts", ("pulumi-language-python", "pulumi-language-nodejs")),
                ("go", "language-host-go", ("pulumi-language-go",)),
                ("yaml", "yaml", ("pulumi-language-yaml",)),
                ("kubernetes", "kubernetes-provider", ("pulumi-resource-kubernetes",)),
            )
        ),
        Target(
            "karpenter",
            HERE / "karpenter",
            ("karpenter-kwok",),
            script=(str(HERE / "karpenter" / "build.sh"),),
            env={"GOTOOLCHAIN": "auto"},
        ),
        Target(
            "autoscaler",
            HERE / "autoscaler",
            ("cluster-autoscaler",),
            script=(str(HERE / "autoscaler" / "build.sh"),),
        ),
        Target("kueue", HERE / "kueue", ("kueue",), script=(str(HERE / "kueue" / "build.sh"),)),
        # The Go consumer's dependencies compiled into Go's build cache, as the Go host's own
        # `go build -o <tmp>` in the program folder compiles them (same flags, so the same cache keys):
        # its first preview/up otherwise compiles the Kubernetes Go SDK inside a test's timeout.
        Target(
            "go-consumer",
            ROOT / "stacks" / "inference-go",
            (),
            script=("bash", "-c", "go build -o /dev/null ."),
        ),
    )
}
# the names callers use for several targets
ALIASES = {
    "tools": ("kwok", "helm"),
    "pulumi": ("pulumi-cli", "pulumi-hosts", "pulumi-go", "pulumi-yaml", "pulumi-kubernetes"),
}
DEFAULT = ("kube", "tools", "charts", "pulumi", "karpenter", "autoscaler", "kueue", "go-consumer")


class BuildError(RuntimeError):
    """A build that could not be done; the message says which, why, and where its log is."""


def resolve(names: list[str]) -> list[Target]:
    """The targets ``names`` ask for (all by default), each once, aliases expanded."""
    wanted: list[str] = []
    for name in names or DEFAULT:
        for one in ALIASES.get(name, (name,)):
            if one not in TARGETS:
                known = sorted({*TARGETS, *ALIASES})
                raise BuildError(f"localcluster/build: no module {name} (have: {' '.join(known)})")
            if one not in wanted:
                wanted.append(one)
    return [TARGETS[n] for n in wanted]


def stamp(target: Target) -> str:
    """A hash of what the target's build depends on: its folder's pins, Go files, build script, command."""
    command = (arg.replace(str(ROOT), ".") for arg in target.command(Path("OUT")))  # checkouts share bin/
    digest = hashlib.sha256(" ".join(command).encode())
    digest.update(repr(sorted(target.env.items())).encode())
    if target.script and Path(target.script[0]).is_absolute():  # the build script, wherever it is
        digest.update(Path(target.script[0]).read_bytes())
    for path in sorted(target.folder.rglob("*")):
        if path.is_file() and (path.name in ("go.mod", "go.sum", "build.sh") or path.suffix == ".go"):
            digest.update(str(path.relative_to(target.folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fresh(target: Target, bin_dir: Path, stamps: Path) -> bool:
    """Built from these pins, every binary there (a stamp is written only after a whole build)."""
    have = stamps / target.name
    return (
        have.is_file()
        and have.read_text().strip() == stamp(target)
        and all(os.access(bin_dir / b, os.X_OK) for b in target.outputs)
    )


def cold_seconds(text: str | None = None) -> dict[str, int]:
    """Each build's cold figure on 2 cores, from the table in docs/benchmarks.md (rows ``| `name` | N s |``)."""
    if text is None:
        text = BENCHMARKS.read_text() if BENCHMARKS.is_file() else ""
    return {
        m[1]: int(m[2]) for m in re.finditer(r"^\| `localcluster/build ([\w-]+)` \| (\d+) s \|", text, re.M)
    }


def order(targets: list[Target], figures: dict[str, int]) -> list[Target]:
    """Longest build first (by its cold figure), so the short ones fill in beside it."""
    return sorted(targets, key=lambda t: -figures.get(t.name, 0))


def merged(targets: list[Target]) -> list[list[Target]]:
    """Jobs: package builds in the same module folder go together, as one Go invocation."""
    jobs: list[list[Target]] = []
    for target in targets:
        same = next(
            (j for j in jobs if target.packages and j[0].packages and j[0].folder == target.folder), None
        )
        if same is not None:
            same.append(target)
        else:
            jobs.append([target])
    return jobs


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


NO_SPACE = re.compile(r"(/[^\s\"':]+): no space left on device", re.I)


def full_disk(log: str, folders: list[Path]) -> str | None:
    """If ``log`` shows a full disk, the message naming the folder that could not be written."""
    found = NO_SPACE.search(log)
    if not found and "no space left on device" not in log.lower():
        return None
    path = Path(found[1]) if found else None
    folder = next((f for f in folders if path and _within(path, f)), None) or path
    where = folder or "one of " + ", ".join(map(str, folders))
    free = _free(folder) if folder else None
    return f"the disk is full: no space left to write in {where}" + (
        f" ({free} MiB free now)" if free is not None else ""
    )


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _free(folder: Path) -> int | None:
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return shutil.disk_usage(candidate).free // 2**20
    return None
