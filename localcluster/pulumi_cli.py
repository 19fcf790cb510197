"""The built Pulumi CLI, run as a user would, against a file backend under the cache.

No service, no plugin downloads: the CLI, its language hosts and the Kubernetes
provider come from ``.cache/localcluster/bin`` (``localcluster/build pulumi``),
found on ``PATH`` as the CLI finds ambient plugins; state lives in
``.cache/localcluster/state``. ``bin/pulumi`` is the same for a shell.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from localcluster import projects
from localcluster.cluster import BIN, ROOT
from localcluster.processes import INSTANCE_VARIABLE, instance_dir

STATE = instance_dir("state")
HOME = instance_dir("pulumi-home")
PYTHON = ROOT / ".venv" / "bin" / "python"
PASSPHRASE = "local-test-only"  # encrypts the file backend's secrets; nothing here is secret


def _kill_session(sid: int) -> None:
    """SIGKILL every process of the CLI's session: its plugins run in process groups of their
    own (sdk/go/common/resource/plugin: Setpgid), so killing the CLI's group would leave them."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(stat.parent.name), signal.SIGKILL)


class PulumiError(RuntimeError):
    """A pulumi command failed; the message holds its output."""


def _outside_virtualenvs(path: str) -> str:
    """``PATH`` without any virtualenv's ``bin`` (an activated .venv): a user's shell has none of ours."""
    kept = [d for d in path.split(os.pathsep) if d and not (Path(d).parent / "pyvenv.cfg").is_file()]
    return os.pathsep.join(kept)


def environment(project: Path | None = None) -> dict[str, str]:
    """The environment a command on ``project`` runs with: offline, file backend, our binaries first.

    Nothing Python-related that a user's machine lacks: no ``VIRTUAL_ENV``, no virtualenv on
    ``PATH``, and ``PULUMI_PYTHON_CMD`` only for a Python *program* (``runtime: python``). That
    one is the harness's kindness, named in docs/local-cluster.md: the Python language host
    served here (v3.68, localcluster/pulumi/README.md) does not read Pulumi.yaml's
    ``virtualenv`` from CLI v3.276, so programs run on the checkout's ``.venv``, which holds
    their requirements. A YAML or TypeScript program, and the ``eks-gpu`` plugin the CLI
    executes for it, get no Python from here: the plugin runs on ``provider/.venv``
    (``provider/install``) or says how to make it, as on a user's machine.
    """
    dropped = (
        "KUBECONFIG",
        "PULUMI_IGNORE_AMBIENT_PLUGINS",
        "PULUMI_PYTHON_CMD",
        "VIRTUAL_ENV",
        INSTANCE_VARIABLE,
    )
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PATH=f"{BIN}{os.pathsep}{_outside_virtualenvs(env.get('PATH', ''))}",
        PULUMI_HOME=str(HOME),
        PULUMI_BACKEND_URL=f"file://{STATE}",
        PULUMI_CONFIG_PASSPHRASE=PASSPHRASE,
        PULUMI_SKIP_UPDATE_CHECK="1",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
        PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK="1",
    )
    definition = projects.definition_in(project, projects.PROJECT) if project else None
    if definition and projects.runtime_of(definition) == "python":
        env["PULUMI_PYTHON_CMD"] = str(PYTHON)
    return env


def prepare() -> None:
    """What the CLI needs before its first command: the file backend's folder and its home."""
    STATE.mkdir(parents=True, exist_ok=True)
    HOME.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Stack:
    """One stack of one project, driven through the CLI."""

    project_dir: Path
    name: str

    def run(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``pulumi <args>`` on this stack; on ``timeout`` the CLI and its plugins are killed, never left."""
        prepare()
        argv = [str(BIN / "pulumi"), *args, "--stack", self.name, "--non-interactive"]
        with subprocess.Popen(
            argv,
            cwd=self.project_dir,
            env=environment(self.project_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as proc:
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_session(proc.pid)
                stdout, stderr = proc.communicate()
                message = f"pulumi {' '.join(args)} still running after {timeout:.0f} s:\n{stdout}\n{stderr}"
                raise PulumiError(message) from None
        result = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
        if check and result.returncode != 0:
            raise PulumiError(f"pulumi {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def init(self, secrets: Mapping[str, str] | None = None) -> None:
        """Create the stack (or reuse it); its config is ``Pulumi.<stack>.yaml``; set ``secrets`` encrypted.

        A lock left by a killed run (the file backend keeps it as a file) is removed: the
        cache's state belongs to these tests alone, and they run one command at a time.
        """
        prepare()
        project = yaml.safe_load((self.project_dir / "Pulumi.yaml").read_text())["name"]
        shutil.rmtree(STATE / ".pulumi" / "locks" / "organization" / project / self.name, ignore_errors=True)
        subprocess.run(
            [str(BIN / "pulumi"), "stack", "init", self.name, "--non-interactive"],
            cwd=self.project_dir,
            env=environment(self.project_dir),
            capture_output=True,
            text=True,
        )
        for key, value in (secrets or {}).items():
            self.run("config", "set", "--secret", key, value)

    def up(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("up", "--yes", "--skip-preview", *args)

    def preview(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("preview", *args, check=check)

    def destroy(self) -> subprocess.CompletedProcess[str]:
        return self.run("destroy", "--yes", "--skip-preview")

    def outputs(self) -> dict[str, Any]:
        return json.loads(self.run("stack", "output", "--json", "--show-secrets").stdout)

    def remove(self) -> None:
        self.run("stack", "rm", "--yes", "--force", "--preserve-config", check=False)
