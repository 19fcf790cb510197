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


def analyze_stack(analyzer, resources: Iterable[tuple[str, str, Mapping[str, Any]]]):
    """AnalyzeStack over (type, name, properties) triples, properties as the engine sends them."""
    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(type=t, name=n, urn=urn(t, n), properties=_struct(p))
            for t, n, p in resources
        ]
    )
    return analyzer.AnalyzeStack(request, None)


def analyze(analyzer, typ: str, name: str, props: Mapping[str, Any]):
    """Analyze (the per-resource call) for one resource."""
    request = analyzer_pb2.AnalyzeRequest(type=typ, name=name, urn=urn(typ, name), properties=_struct(props))
    return analyzer.Analyze(request, None)


def level(diagnostic) -> str:
    return analyzer_pb2.EnforcementLevel.Name(diagnostic.enforcementLevel).lower()
