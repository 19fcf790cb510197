"""Refuse the CLI commands that would make a Python folder itself a virtualenv here (bin/pulumi).

The Python language host built here is v3.68.0 (localcluster/pulumi/README.md). It learns
the virtualenv only from its command line (``-virtualenv``), which CLI v3.276 no longer
passes, so its InstallDependencies runs ``python -m venv <the folder it is given>`` and pip
into it (sdk/v3@v3.68.0 ``python/python.go`` InstallDependenciesWithWriters: an empty venv
path joined to the folder is the folder). CLI v3.276 asks for that on

- ``pulumi install``: the project found by walking up from the working directory (after
  ``-C``/``--cwd``; localcluster/projects.py) and every package folder its ``packages:``
  declares (pkg/v3 ``cmd/pulumi/packageinstallation``: a folder with a PulumiPlugin.yaml gets
  an install step, ``packageworkspace.InstallPluginAt``), or the policy pack or plugin found
  the same way when it lies inside that project or no project lies above it;
- ``pulumi package <command> <folder>`` (add, get-schema, gen-sdk, info, ...): the folder,
  the same way, and for ``add`` the project found by walking up too (``packages.LinkPackages``, Install: true).

The engine itself (``pulumi up``/``preview``/``destroy``) installs nothing: it executes
``provider/pulumi-resource-eks-gpu``. Pass that file instead of the folder to the
``package`` commands (``ensureProjectDir`` runs an executable file as it is); the
environments are bin/setup's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from localcluster import projects
from localcluster.projects import PLUGIN, POLICY_PACK, PROJECT, find_upwards


def _runtime(folder: Path) -> str | None:
    """The runtime of the project, plugin or policy pack defined in ``folder``, or None."""
    found = (projects.definition_in(folder, base) for base in (PROJECT, PLUGIN, POLICY_PACK))
    return next((projects.runtime_of(path) for path in found if path), None)


def _package_folders(project: Path) -> list[Path]:
    """The local folders the project in ``project`` declares under ``packages:``."""
    path = projects.definition_in(project, PROJECT)
    packages = (projects.read(path).get("packages") or {}) if path else {}
    sources = [spec.get("source") if isinstance(spec, dict) else spec for spec in packages.values()]
    folders = [project / s for s in sources if isinstance(s, str) and s.startswith((".", "/"))]
    return [folder.resolve() for folder in folders if folder.is_dir()]


def _installed_by_install(cwd: Path) -> list[Path]:
    """What ``pulumi install`` in ``cwd`` installs into (pkg/v3 ``cmd/pulumi/install/install.go``).

    The nearest policy pack, else the nearest plugin, when no project lies above it or it lies
    inside the project (``shouldInstallPolicyPackDependencies``/``...PluginDependencies``:
    ``strings.Contains(<its folder>, <the project's folder>)``); else the nearest project
    (``ws.ReadProject``, walking up) and the local folders its ``packages:`` declares.
    """
    project = find_upwards(cwd, PROJECT)
    for base in (POLICY_PACK, PLUGIN):
        found = find_upwards(cwd, base)
        if found and (project is None or str(project.parent) in str(found.parent)):
            return [found.parent]
    return [project.parent, *_package_folders(project.parent)] if project else []


def folders_made_virtualenvs(args: Sequence[str], cwd: Path) -> list[Path]:
    """The Python folders ``pulumi <args>``, run in ``cwd``, would turn into virtualenvs here."""
    words, cwd = projects.command_line(args, cwd)
    if words[:1] == ["install"]:
        candidates = _installed_by_install(cwd)
    elif words[:1] == ["package"] and len(words) >= 3 and (cwd / words[2].split("@")[0]).is_dir():
        project = find_upwards(cwd, PROJECT) if words[1] == "add" else None
        candidates = [(cwd / words[2].split("@")[0]).resolve(), *([project.parent] if project else [])]
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
