"""What the cluster-autoscaler chart makes of the platform's Helm values: the container's arguments
and the priority expander's ConfigMap, for ``cloudProvider: aws``.

The chart itself cannot be pinned here: it lives in kubernetes/autoscaler (from chart 9.52.0 inside
the ``k8s.io/autoscaler/cluster-autoscaler`` module) and the Go module proxy serves no version
that holds it (``localcluster/probe_autoscaler.py``). So this follows the template of chart 9.59.0
(the platform's pin) line by line, for the values the platform sets; anything else is refused
rather than guessed:

- ``templates/deployment.yaml`` 65-72 (``--cloud-provider``, ``--namespace``), 87-93
  (``--node-group-auto-discovery=asg:tag=<tags joined by ",">``, ``--cloud-config``), 136-145
  (``extraArgs`` in key order, the key cut at its first ``_``; ``customArgs`` as given);
- ``values.yaml`` 212-215: the default ``extraArgs`` (``logtostderr``, ``stderrthreshold``,
  ``v: 4``), which Helm merges under the release's own;
- ``templates/priority-expander-configmap.yaml`` and ``_helpers.tpl`` 104-109: the ConfigMap
  ``cluster-autoscaler-priority-expander`` exists only when ``extraArgs.expander`` lists
  ``priority`` and ``expanderPriorities`` is not empty; each priority is written ``{{ $k | int }}:``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

CHART_VERSION = "9.59.0"
DEFAULT_EXTRA_ARGS: dict[str, Any] = {"logtostderr": True, "stderrthreshold": "info", "v": 4}
PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
# Values this renderer knows how the chart uses; the chart's other values do not touch the arguments.
_ARGUMENT_VALUES = {"cloudProvider", "autoDiscovery", "cloudConfigPath", "extraArgs", "customArgs"}
_OTHER_VALUES = {"awsRegion", "image", "fullnameOverride", "rbac", "nodeSelector", "expanderPriorities"}


class ChartValuesError(ValueError):
    """Values this rendering does not follow the chart for."""


def _go_text(value: Any) -> str:
    """A value as Go's template prints it: booleans lower-case, numbers plainly."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def container_args(values: Mapping[str, Any], namespace: str) -> list[str]:
    """The autoscaler container's command after ``./cluster-autoscaler``, as the chart renders it."""
    unknown = set(values) - _ARGUMENT_VALUES - _OTHER_VALUES
    if unknown or values.get("cloudProvider") != "aws":
        raise ChartValuesError(
            f"chart {CHART_VERSION} rendering covers cloudProvider aws and {sorted(_ARGUMENT_VALUES | _OTHER_VALUES)}; got {sorted(unknown) or values.get('cloudProvider')}"
        )
    args = [f"--cloud-provider={values['cloudProvider']}", f"--namespace={namespace}"]
    discovery = values.get("autoDiscovery") or {}
    if discovery.get("clusterName"):
        args.append(f"--node-group-auto-discovery=asg:tag={','.join(discovery['tags'])}")
    if values.get("cloudConfigPath"):
        args.append(f"--cloud-config={values['cloudConfigPath']}")
    extra = {**DEFAULT_EXTRA_ARGS, **(values.get("extraArgs") or {})}
    for key in sorted(extra):  # Go templates range over a map in key order
        name = re.match(r"^[^_]+", key).group(0)
        args.append(f"--{name}" if extra[key] is None else f"--{name}={_go_text(extra[key])}")
    return [*args, *values.get("customArgs", [])]


def priority_configmap(values: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
    """The priority expander's ConfigMap the chart writes, or None where it writes none."""
    expanders = str((values.get("extraArgs") or {}).get("expander", "")).split(",")
    priorities = values.get("expanderPriorities")
    if "priority" not in expanders or not priorities:
        return None
    if isinstance(priorities, str):
        text = priorities
    else:
        text = "".join(
            f"{int(k)}:\n" + yaml.safe_dump(list(v), default_flow_style=False) for k, v in priorities.items()
        )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PRIORITY_CONFIGMAP, "namespace": namespace},
        "data": {"priorities": text},
    }
