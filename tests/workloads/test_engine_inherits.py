"""What the real engine (the built CLI, pkg/v3 v3.276.0) hands a child from its parent without being told.

``resource/deploy/source_eval.go`` ``inheritFromParent`` (~2127): a registration with a parent
takes the parent's ``deletedWith``, ``protect``, ``retainOnDelete`` and provider where it sets
none, and not its ``dependsOn``. infra/workloads/child_options.py hands all three on anyway, so
they hold on any CLI; this pins what docs/components.md says the engine does.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from localcluster.pulumi_cli import Stack

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def _resource(options: dict[str, object] | None = None) -> dict[str, object]:
    return {"type": CONFIG_MAP, "properties": {"data": {"a": "b"}}, "options": options or {}}


def test_a_child_gets_its_parents_retain_on_delete_and_deleted_with_but_not_its_depends_on(
    tmp_path: Path,
) -> None:
    program = {
        "name": "engine-inherits",
        "runtime": "yaml",
        "resources": {
            "other": _resource(),
            "parent": _resource(
                {
                    "retainOnDelete": True,
                    "deletedWith": "${other}",
                    "dependsOn": ["${other}"],
                    "ignoreChanges": ["data"],
                }
            ),
            "child": _resource({"parent": "${parent}"}),
        },
    }
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump(program))
    stack = Stack(tmp_path, "inherits")
    stack.init()
    try:
        steps = json.loads(stack.preview("--json").stdout)["steps"]  # no cluster needed for a preview
    finally:
        stack.remove()
    states = {step["urn"].rsplit("::", 1)[-1]: step["newState"] for step in steps}
    other = states["other"]["urn"]
    child = states["child"]
    assert (child.get("retainOnDelete"), child.get("deletedWith")) == (True, other)
    assert other not in (child.get("dependencies") or [])
    assert states["parent"]["dependencies"] == [other]  # dependsOn was given, on the parent only
