"""Which project, plugin or policy pack a ``pulumi`` command line means, found the CLI's way.

CLI v3.276 first applies the global ``-C``/``--cwd`` flag (pkg/v3 ``cmd/pulumi/pulumi.go``:
``os.Chdir(cwd)`` in the root command's PersistentPreRunE, so a relative value is taken from
the working directory), then walks up from there to the nearest ``Pulumi.<ext>``,
``PulumiPlugin.<ext>`` or ``PulumiPolicy.<ext>`` (sdk/v3 ``go/common/workspace/paths.go``
DetectProjectPathFrom, DetectPluginPathFrom, DetectPolicyPackPathFrom: ``fsutil.WalkUpDirs``
over ``encoding.Exts``). ``bin/pulumi`` uses this to judge a command before the CLI runs it
(localcluster/install_guard.py) and to know which program it runs (localcluster/pulumi_cli.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

PROJECT, PLUGIN, POLICY_PACK = "Pulumi", "PulumiPlugin", "PulumiPolicy"
EXTENSIONS = (".json", ".yaml", ".yml")
"""sdk/v3 ``go/common/encoding`` Exts: the spellings every one of those files may have."""
VALUE_FLAGS = {"-C", "--cwd", "-s", "--stack", "--color", "--tracing", "--profiling", "--memprofilerate"}
"""Global and common flags that take the next argument as their value."""


def definition_in(folder: Path, base: str) -> Path | None:
    """``folder``'s ``<base>.<ext>`` file (``Pulumi.yaml``, ``PulumiPlugin.yaml``, ...), or None."""
    return next((p for p in (folder / f"{base}{ext}" for ext in EXTENSIONS) if p.is_file()), None)


def find_upwards(start: Path, base: str) -> Path | None:
    """The nearest ``<base>.<ext>`` in ``start`` or a folder above it, as the CLI's walk up finds it."""
    start = Path(os.path.abspath(start))  # filepath.Abs: absolute, symlinks kept
    return next((f for f in (definition_in(d, base) for d in (start, *start.parents)) if f), None)


def read(path: Path) -> dict[str, Any]:
    """A project, plugin or policy pack definition (JSON is YAML too); {} when empty."""
    loaded = yaml.safe_load(path.read_text())
    return loaded if isinstance(loaded, dict) else {}


def runtime_of(path: Path) -> str | None:
    """The runtime a definition file names: ``runtime: python`` or ``runtime: {name: python}``."""
    runtime = read(path).get("runtime")
    return runtime.get("name") if isinstance(runtime, dict) else runtime


def command_line(args: Sequence[str], cwd: Path) -> tuple[list[str], Path]:
    """The positional words of ``pulumi <args>`` and the folder the CLI runs in (``-C``/``--cwd``)."""
    words, rest = [], list(args)
    while rest:
        arg = rest.pop(0)
        flag, has_value, value = arg.partition("=")
        if flag.startswith("-C") and len(flag) > 2 and not has_value:  # pflag's -Cdir
            flag, has_value, value = "-C", True, flag[2:]
        if flag in VALUE_FLAGS and not has_value:
            value = rest.pop(0) if rest else ""
        if flag in ("-C", "--cwd"):
            cwd = cwd / value
        elif not arg.startswith("-"):
            words.append(arg)
    return words, cwd


def project_of(args: Sequence[str], cwd: Path) -> Path | None:
    """The folder of the project ``pulumi <args>``, started in ``cwd``, runs (None: no project)."""
    _, folder = command_line(args, cwd)
    found = find_upwards(folder, PROJECT)
    return found.parent if found else None
