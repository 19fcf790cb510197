"""Refuse the CLI commands that would make a Python folder itself a virtualenv here (bin/pulumi).

The Python language host built here is v3.68.0 (localcluster/pulumi/README.md). It learns
the virtualenv only from its command line (``-virtualenv``), which CLI v3.276 no longer
passes, so its InstallDependencies runs ``python -m venv <the folder it is given>`` and pip
into it (sdk/v3@v3.68.0 ``python/python.go`` InstallDependenciesWithWriters: an empty venv
path joined to the folder is the folder). CLI v3.276 asks for that on

- ``pulumi install``: the project itself and every package folder its ``packages:`` declares
  (pkg/v3 ``cmd/pulumi/packageinstallation``: a folder with a PulumiPlugin.yaml gets an
  install step, ``packageworkspace.InstallPluginAt``);
- ``pulumi package <command> <folder>`` (add, get-schema, gen-sdk, info, ...): the folder,
  the same way, and for ``add`` the project too (``packages.LinkPackages``, Install: true).

The engine itself (``pulumi up``/``preview``/``destroy``) installs nothing: it executes
``provider/pulumi-resource-eks-gpu``. Pass that file instead of the folder to the
``package`` commands (``ensureProjectDir`` runs an executable file as it is); the
environments are bin/setup's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

PROJECT_FILES = ("Pulumi.yaml", "PulumiPlugin.yaml", "PulumiPolicy.yaml")
VALUE_FLAGS = {"-C", "--cwd", "-s", "--stack", "--color", "--tracing", "--profiling", "--memprofilerate"}
"""Global and common flags that take the next argument as their value."""


def _runtime(folder: Path) -> str | None:
    """The runtime of the project, plugin or policy pack in ``folder``, or None."""
    for name in PROJECT_FILES:
        path = folder / name
        if path.is_file():
            runtime = (yaml.safe_load(path.read_text()) or {}).get("runtime")
            return runtime.get("name") if isinstance(runtime, dict) else runtime
    return None


def _package_folders(project: Path) -> list[Path]:
    """The local folders the project in ``project`` declares under ``packages:``."""
    path = project / "Pulumi.yaml"
    if not path.is_file():
        return []
    packages = (yaml.safe_load(path.read_text()) or {}).get("packages") or {}
    sources = [spec.get("source") if isinstance(spec, dict) else spec for spec in packages.values()]
    folders = [project / s for s in sources if isinstance(s, str) and s.startswith((".", "/"))]
    return [folder.resolve() for folder in folders if folder.is_dir()]


def _words(args: Sequence[str], cwd: Path) -> tuple[list[str], Path]:
    """The positional words of a command line and the folder it runs in (``-C``/``--cwd`` applied)."""
    words, rest = [], list(args)
    while rest:
        arg = rest.pop(0)
        flag, has_value, value = arg.partition("=")
        if flag in VALUE_FLAGS and not has_value:
            value = rest.pop(0) if rest else ""
        if flag in ("-C", "--cwd"):
            cwd = cwd / value
        elif not arg.startswith("-"):
            words.append(arg)
    return words, cwd


def folders_made_virtualenvs(args: Sequence[str], cwd: Path) -> list[Path]:
    """The Python folders ``pulumi <args>``, run in ``cwd``, would turn into virtualenvs here."""
    words, cwd = _words(args, cwd)
    if words[:1] == ["install"]:
        candidates = [cwd.resolve(), *_package_folders(cwd)]
    elif words[:1] == ["package"] and len(words) >= 3 and (cwd / words[2].split("@")[0]).is_dir():
        candidates = [
            (cwd / words[2].split("@")[0]).resolve(),
            *([cwd.resolve()] if words[1] == "add" else []),
        ]
    else:
        return []
    return [folder for folder in candidates if _runtime(folder) == "python"]


def refusal(args: Sequence[str], cwd: Path) -> str | None:
    """Why bin/pulumi refuses ``pulumi <args>`` in ``cwd``, or None."""
    folders = folders_made_virtualenvs(args, cwd)
    if not folders:
        return None
    return (
        f"bin/pulumi: refused `pulumi {' '.join(args)}`: it would make {', '.join(map(str, folders))} "
        "a virtualenv itself. The Python language host built here (v3.68.0) ignores the `virtualenv` "
        "option and installs into the folder it is given (localcluster/install_guard.py). Nothing "
        "needs it: bin/setup makes the environments, and the CLI executes a package's plugin file "
        "itself; give the package commands that file, e.g. "
        "`pulumi package get-schema provider/pulumi-resource-eks-gpu`."
    )


if __name__ == "__main__":
    message = refusal(sys.argv[1:], Path.cwd())
    if message:
        print(message, file=sys.stderr)
        sys.exit(2)
