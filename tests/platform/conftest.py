"""Platform test helpers: the dev stack with edits, and EKS as the program reads it (live sizes)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from infra.tooling import offline
from infra.tooling.offline import Run, run_project

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "eks-gpu-platform-dev"
SUFFIX = "2026120210153012340000000a"  # terraform-plugin-sdk's PrefixedUniqueId after gpu-<pool>-


def dev_variant(tmp_path: Path, edits: Mapping[str, str], stack: str = "dev") -> Run:
    """The dev stack with text edits (old -> new), run as the program would run on `pulumi up`."""
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(text)
    return run_project(tmp_path, stack)


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """EKS as the program reads it: node group name -> desired size (the autoscaler's), or (size, EKS
    status) for a group not ACTIVE, in the dev (or prod) stack's cluster. Empty: no cluster yet."""
    groups: dict[str, Any] = {}
    answer = offline._call

    def call(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
        if token == "aws:eks/getClusters:getClusters":
            return {"names": [CLUSTER, CLUSTER.replace("-dev", "-prod")] if groups else []}
        if token == "aws:eks/getNodeGroups:getNodeGroups":
            return {"names": sorted(groups)}
        if token == "aws:eks/getNodeGroup:getNodeGroup":
            given = groups[args["nodeGroupName"]]
            size, status = given if isinstance(given, tuple) else (given, "ACTIVE")
            return {"scalingConfigs": [{"desiredSize": size, "minSize": 0, "maxSize": 450}], "status": status}
        return answer(token, args)

    monkeypatch.setattr(offline, "_call", call)
    yield groups
