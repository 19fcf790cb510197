"""The CrossGuard pack as the Pulumi CLI drives it: pulumi_policy's own analyzer servicer, fed protobuf requests.

``policy/__main__.py`` builds its policies and hands them to ``PolicyPack``, which would
serve them on a port; here ``PolicyPack`` is swapped for a collector and the policies go
to pulumi_policy's real ``_PolicyAnalyzerServicer``. So every request passes through the
same deserialization, unknown-checking proxy, config handling and error catching as
under ``pulumi preview --policy-pack policy``.
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pulumi_policy
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy.policy import _PolicyAnalyzerServicer

from infra.tooling.offline import Run
from infra.tooling.preview import _secrets  # a secret as its value: what the engine sends a policy

ROOT = Path(__file__).resolve().parents[2]
PACK = "eks-gpu-guardrails"


def pack_module(monkeypatch) -> tuple[dict[str, Any], list[Any]]:
    """Run policy/__main__.py with PolicyPack collected, not served: (its globals, its policies)."""
    packs: list[list[Any]] = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda name, policies, **kw: packs.append(policies))
    module = runpy.run_path(str(ROOT / "policy" / "__main__.py"))
    (policies,) = packs
    return module, policies


def servicer(policies: list[Any], config: Mapping[str, Mapping[str, Any]] | None = None):
    """The analyzer the pack serves, configured as the CLI does for ``--policy-pack-config``."""
    analyzer = _PolicyAnalyzerServicer(PACK, "0.0.1", policies, pulumi_policy.EnforcementLevel.ADVISORY)
    if config:
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, properties in config.items():
            request.policyConfig[name].properties.update(dict(properties))
            level = next(p.enforcement_level for p in policies if p.name == name)
            request.policyConfig[name].enforcementLevel = getattr(analyzer_pb2, level.name)
        analyzer.Configure(request, None)
    return analyzer


def _struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    return json_format.ParseDict(json.loads(json.dumps(props, default=str)), struct_pb2.Struct())


def urn(typ: str, name: str) -> str:
    return f"urn:pulumi:dev::eks-gpu-platform::{typ}::{name}"


def analyze_stack(
    analyzer,
    resources: Iterable[tuple[str, str, Mapping[str, Any]]],
    parents: Mapping[str, str] | None = None,
    dependencies: Mapping[str, Iterable[str]] | None = None,
):
    """AnalyzeStack over (type, name, properties) triples, properties as the engine sends them.

    ``parents`` and ``dependencies`` name resources as ``"<type> <name>"`` (both optional).
    """

    def urn_of(key: str) -> str:
        return urn(*key.split(" ", 1))

    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=t,
                name=n,
                urn=urn(t, n),
                properties=_struct(p),
                parent=urn_of(parents[f"{t} {n}"]) if f"{t} {n}" in (parents or {}) else "",
                dependencies=[urn_of(d) for d in (dependencies or {}).get(f"{t} {n}", ())],
            )
            for t, n, p in resources
        ]
    )
    return analyzer.AnalyzeStack(request, None)


def analyze_run(analyzer, run: Run, project: str, stack: str) -> list[Any]:
    """Every diagnostic ``pulumi preview --policy-pack`` would get for a program's run.

    As the engine drives an analyzer (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``):
    ``Analyze`` per registered resource with its inputs, then one ``AnalyzeStack`` with
    every resource's outputs, parents and dependencies, the root ``pulumi:pulumi:Stack``
    among them with the stack's outputs as its properties. Reads (a StackReference) get
    neither: the engine keeps them apart from the stack's resources (``step_executor.go``).
    """
    stack_urn = f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::{project}-{stack}"
    managed = [r for r in run.resources if r.type != "pulumi:pulumi:StackReference"]
    diagnostics: list[Any] = []
    for r in managed:
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type, name=r.name, urn=r.urn, properties=_struct(_secrets(r.inputs, reveal=True))
        )
        diagnostics += analyzer.Analyze(request, None).diagnostics
    urns = {r.urn for r in managed}
    resources = [
        analyzer_pb2.AnalyzerResource(
            type="pulumi:pulumi:Stack",
            name=f"{project}-{stack}",
            urn=stack_urn,
            properties=_struct(_secrets(run.stack_outputs, reveal=True)),
        )
    ]
    resources += [
        analyzer_pb2.AnalyzerResource(
            type=r.type,
            name=r.name,
            urn=r.urn,
            properties=_struct(_secrets(r.outputs, reveal=True)),
            parent=r.parent if r.parent in urns else stack_urn,
            dependencies=[d for d in r.dependencies if d in urns],
        )
        for r in managed
    ]
    request = analyzer_pb2.AnalyzeStackRequest(resources=resources)
    diagnostics += analyzer.AnalyzeStack(request, None).diagnostics
    return diagnostics


def mandatory(diagnostics: Iterable[Any]) -> list[str]:
    return [d.message for d in diagnostics if level(d) == "mandatory"]


def analyze(analyzer, typ: str, name: str, props: Mapping[str, Any]):
    """Analyze (the per-resource call) for one resource."""
    request = analyzer_pb2.AnalyzeRequest(type=typ, name=name, urn=urn(typ, name), properties=_struct(props))
    return analyzer.Analyze(request, None)


def level(diagnostic) -> str:
    return analyzer_pb2.EnforcementLevel.Name(diagnostic.enforcementLevel).lower()
