"""Run a Pulumi program on Pulumi's own mock engine and record what it would ask for."""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pulumi
import pulumi.runtime
import yaml

# Not in pulumi.runtime's __all__, but what set_mocks(monitor=...) takes: why, decision 0030.
from pulumi.runtime.mocks import MockMonitor

from infra.tooling.manifests import manifest_of
from infra.workloads.wire import whole_numbers

PLATFORM_ROOT = Path(__file__).resolve().parents[2]
# Remote components' outputs are not their inputs (awsx's natGateways input is a config object,
# its output the gateways): they get only what they compute.
REMOTE_COMPONENTS = frozenset({"awsx:ec2:Vpc", "eks:index:Cluster"})


def computed(resource: str, prop: str) -> str:
    """A value only AWS can tell, shown the way a preview shows it."""
    return f"computed({resource}.{prop})"


def _arn(service: str, kind: str, name: str) -> str:
    region = "" if service == "iam" else "us-west-2"  # IAM is global: its ARNs name no region
    return f"arn:aws:{service}:{region}:123456789012:{kind}/{name}"


def platform_contract(stack: str) -> dict[str, Any] | None:
    """The placement this repository's platform exports for ``stack`` (pools included), or None."""
    if not (PLATFORM_ROOT / f"Pulumi.{stack}.yaml").is_file():
        return None
    from infra.platform.config import load

    project, config = load_project(PLATFORM_ROOT, stack)
    raw = {k.removeprefix(f"{project}:"): v for k, v in config.items() if k.startswith(f"{project}:")}
    settings = load(raw, region=config.get("aws:region"), default_cluster_name=f"{project}-{stack}")
    return settings.contract.to_dict()


def platform_outputs(stack: str) -> dict[str, Any]:
    """What a platform stack exports (see ``__main__.py``), as a consumer reads it back."""
    from infra.workloads.placement import DEFAULT_PLACEMENT

    parts, project_file = stack.split("/"), PLATFORM_ROOT / "Pulumi.yaml"
    ours = len(parts) >= 2 and project_file.is_file() and parts[-2] == _project_name(project_file)
    placement = platform_contract(parts[-1]) if ours else None
    return {
        "kubeconfig": computed(stack, "kubeconfig"),
        "placement": placement or DEFAULT_PLACEMENT.to_dict(),
    }


def _computed_outputs(typ: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What the cloud adds to a resource beyond its inputs: what a program reads back."""
    named = inputs.get("name", name)
    if typ == "eks:index:Cluster":
        return {p: computed(name, p) for p in ("kubeconfig", "kubeconfigJson")}
    if typ == "pulumi:pulumi:StackReference":
        return {"outputs": platform_outputs(named)}
    if typ == "awsx:ec2:Vpc":  # in three AZs
        subnets = {
            f"{k}SubnetIds": [computed(name, f"{k}SubnetIds[{i}]") for i in range(3)]
            for k in ("private", "public")
        }
        return {"vpcId": computed(name, "vpcId"), **subnets}
    if typ == "aws:eks/nodeGroup:NodeGroup":
        return {
            "arn": _arn("eks", "nodegroup", name),
            "nodeGroupName": inputs.get("nodeGroupName") or computed(name, "nodeGroupName"),
            "resources": [{"autoscalingGroups": [{"name": computed(name, "autoscalingGroupName")}]}],
        }
    if typ == "aws:iam/role:Role":
        return {"arn": _arn("iam", "role", named), "name": named}
    if typ == "aws:sqs/queue:Queue":  # Karpenter's interruption queue: its chart is told the name
        return {
            "arn": f"arn:aws:sqs:us-west-2:123456789012:{computed(name, 'name')}",
            "name": computed(name, "name"),
            "url": computed(name, "url"),
        }
    if typ == "aws:kms/key:Key":
        return {"arn": _arn("kms", "key", name), "keyId": computed(name, "keyId")}
    if typ == "aws:ec2/launchTemplate:LaunchTemplate":
        return {"latestVersion": 1, "name": named}
    if typ == "kubernetes:helm.sh/v3:Release":
        return {"status": {"name": named, "namespace": inputs.get("namespace", "default")}}
    if typ.startswith("kubernetes:"):
        return {"metadata": manifest_of(typ, name, inputs)["metadata"]}  # Pulumi's auto-name included
    return {}


def _call(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {"accountId": "123456789012", "arn": _arn("iam", "user", "preview"), "userId": "preview"}
    if token == "aws:index/getPartition:getPartition":
        return {
            "partition": "aws",
            "dnsSuffix": "amazonaws.com",
            "reverseDnsPrefix": "com.amazonaws",
            "id": "aws",
        }
    if token == "aws:index/getRegion:getRegion":
        return {"name": "us-west-2", "region": "us-west-2"}
    return {}


@dataclass
class Registration:
    """One resource the program declared, as the engine received it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str
    protect: bool
    inputs: dict[str, Any]
    ignore_changes: list[str] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)
    """URNs this resource waits for (depends_on and the resources its inputs come from)."""
    replace_on_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool | None = None
    """As the program set it; None when it left it to the provider."""
    custom_timeouts: tuple[str, str, str] = ("", "", "")
    """(create, update, delete) the program asked for; "" where it asked for none."""
    additional_secret_outputs: list[str] = field(default_factory=list)
    retain_on_delete: bool = False
    deleted_with: str = ""
    """The URN of the resource whose deletion this one's goes with; "" for none."""


@dataclass
class Run:
    """What one program run declared."""

    resources: list[Registration]
    stack_outputs: dict[str, Any]

    def of_type(self, typ: str) -> list[Registration]:
        return [r for r in self.resources if r.type == typ]

    def one(self, typ: str, name: str | None = None) -> Registration:
        found = [r for r in self.of_type(typ) if name is None or r.name == name]
        if len(found) != 1:
            names = [r.name for r in self.of_type(typ)]
            raise LookupError(f"expected one {typ} named {name!r}, found {len(found)} among {names}")
        return found[0]

    def children_of(self, parent: Registration) -> list[Registration]:
        return [r for r in self.resources if r.parent == parent.urn]


@dataclass(frozen=True)
class Secret:
    """A stack output the engine would keep encrypted; shown masked by the preview."""

    value: Any

    def __repr__(self) -> str:
        return "[secret]"


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = _computed_outputs(args.typ, args.name, args.inputs)
        return f"{args.name}-id", state if args.typ in REMOTE_COMPONENTS else {**args.inputs, **state}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return _call(args.token, args.args)


class _Monitor(MockMonitor):
    """The SDK's mock monitor, keeping what it otherwise throws away: parents, providers, options."""

    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        if urn in self.resources:  # the engine refuses two resources with one URN; so does this
            raise ValueError(f"duplicate resource URN {urn}: give each resource a unique name")
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            timeouts = request.customTimeouts
            self.registrations.append(
                Registration(
                    urn=urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    custom=request.custom,
                    provider=request.provider,
                    protect=request.protect,
                    inputs=whole_numbers(pulumi.runtime.rpc.deserialize_properties(request.object)),
                    ignore_changes=list(request.ignoreChanges),
                    outputs=whole_numbers(self.resources[urn].state),
                    dependencies=list(request.dependencies),
                    replace_on_changes=list(request.replaceOnChanges),
                    delete_before_replace=(
                        request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None
                    ),
                    custom_timeouts=(timeouts.create, timeouts.update, timeouts.delete),
                    additional_secret_outputs=list(request.additionalSecretOutputs),
                    retain_on_delete=request.retainOnDelete,
                    deleted_with=request.deletedWith,
                )
            )
        return response


def run_program(
    program: Callable[[], Any],
    *,
    project: str = "project",
    stack: str = "stack",
    config: Mapping[str, Any] | None = None,
    preview: bool = False,
    secret_keys: Sequence[str] = (),
) -> Run:
    """Run ``program`` (a function declaring resources) and return every registration."""
    monitor = _Monitor()
    # A fresh root Stack per run, so one program's exports never show up in the next.
    pulumi.runtime.reset_options(project=project, stack=stack, preview=preview)
    pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    # Config as the engine passes it: PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS in the environment,
    # which the language host also loads into the SDK (pulumi-language-python-exec does both).
    values = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()}
    env = {"PULUMI_CONFIG": json.dumps(values), "PULUMI_CONFIG_SECRET_KEYS": json.dumps(list(secret_keys))}
    pulumi.runtime.set_all_config(values, list(secret_keys))
    stack_outputs: dict[str, Any] = {}

    async def _collect_exports() -> None:
        # pulumi.export() keeps outputs on the root Stack, which the mock engine never registers.
        for key, value in pulumi.runtime.get_root_resource().outputs.items():
            output = pulumi.Output.from_input(value)
            resolved = await output.future(with_unknowns=True)
            stack_outputs[key] = Secret(resolved) if await output.is_secret() else resolved

    @pulumi.runtime.test
    def _run() -> Any:
        program()
        return asyncio.ensure_future(_collect_exports())

    with mock.patch.dict(os.environ, env):
        _run()
    return Run(resources=monitor.registrations, stack_outputs=whole_numbers(stack_outputs))


class ProjectError(ValueError):
    """A Pulumi project or stack file that cannot be read."""


def _project_name(project_file: Path) -> str:
    return yaml.safe_load(project_file.read_text())["name"]


def load_project(project_dir: str | Path, stack: str) -> tuple[str, dict[str, Any]]:
    """The project name and the stack's config (``Pulumi.<stack>.yaml``), as the CLI would pass them."""
    directory = Path(project_dir)
    if not (directory / "Pulumi.yaml").is_file():
        raise ProjectError(f"{directory} is not a Pulumi project: no Pulumi.yaml")
    project = _project_name(directory / "Pulumi.yaml")
    stack_file = directory / f"Pulumi.{stack}.yaml"
    if not stack_file.is_file():
        raise ProjectError(f"no stack {stack!r} in {directory}: {stack_file.name} is missing")
    config: dict[str, Any] = {}
    for key, value in ((yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}).items():
        if isinstance(value, dict) and "secure" in value:
            value = "[secret]"  # encrypted with the stack's key; only the CLI can read it
        config[key if ":" in key else f"{project}:{key}"] = (
            value if isinstance(value, str) else json.dumps(value)
        )
    return project, config


def run_project(
    project_dir: str | Path, stack: str, *, preview: bool = True, secret_keys: Sequence[str] = ()
) -> Run:
    """Run a project's ``__main__.py`` with its stack config, as ``pulumi preview`` would."""
    directory = Path(project_dir).resolve()
    project, config = load_project(directory, stack)
    sys.path.insert(0, str(directory))
    try:
        return run_program(
            lambda: runpy.run_path(str(directory / "__main__.py"), run_name="__main__"),
            project=project,
            stack=stack,
            config=config,
            preview=preview,
            secret_keys=[*secret_keys, *(k for k, v in config.items() if v == "[secret]")],
        )
    finally:
        sys.path.remove(str(directory))
