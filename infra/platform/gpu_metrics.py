"""GPU dashboard and alarms as plain data: the CloudWatch requests, built from the stack's GPU pools."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from infra.workloads.durations import go_duration_seconds

if TYPE_CHECKING:
    from infra.platform.config import AlarmsConfig, Pool

CONTAINER_INSIGHTS = "ContainerInsights"
EKS_NAMESPACE = "AWS/EKS"
DEVICE_DIMENSIONS = ("ClusterName", "GpuDevice", "InstanceId", "InstanceType", "NodeName")
NODE_DIMENSIONS = ("ClusterName", "InstanceId", "NodeName")

# The metrics named here -> (namespace, the dimension sets each is published with).
_GPU = (CONTAINER_INSIGHTS, (("ClusterName",), NODE_DIMENSIONS, DEVICE_DIMENSIONS))
_CLUSTER = (CONTAINER_INSIGHTS, (("ClusterName",),))
METRICS: Mapping[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    "node_gpu_utilization": _GPU,
    "node_gpu_memory_utilization": _GPU,
    "node_status_condition_ready": (CONTAINER_INSIGHTS, (NODE_DIMENSIONS, ("ClusterName",))),
    "cluster_node_count": _CLUSTER,
    "cluster_failed_node_count": _CLUSTER,
    "pod_status_pending": (
        CONTAINER_INSIGHTS,
        (
            ("ClusterName", "Namespace", "PodName"),
            ("ClusterName",),
            ("ClusterName", "FullPodName", "Namespace", "PodName"),
            ("ClusterName", "Namespace", "Service"),
        ),
    ),
    "scheduler_pending_pods_UNSCHEDULABLE": (EKS_NAMESPACE, (("ClusterName",),)),
}

PERIOD_SECONDS = 60  # Container Insights publishes once a minute
BY_NODE = "${PROP('Dim.NodeName')}"  # dynamic label: one line per node


def _search(
    metric: str, dimensions: Sequence[str], cluster: str, extra: str = "", stat: str = "Average"
) -> str:
    """A metrics SEARCH expression (CloudWatch search syntax; exact matches in double quotes)."""
    assert tuple(sorted(dimensions)) in {tuple(sorted(d)) for d in METRICS[metric][1]}, (metric, dimensions)
    schema = ",".join((CONTAINER_INSIGHTS, *sorted(dimensions)))
    query = " ".join(filter(None, (f'{{{schema}}} MetricName="{metric}" ClusterName="{cluster}"', extra)))
    return f"SEARCH('{query}', '{stat}', {PERIOD_SECONDS})"


def _any_of(dimension: str, values: Sequence[str]) -> str:
    return "(" + " OR ".join(f'{dimension}="{v}"' for v in values) + ")"


def _expression(expression: str, ident: str, label: str) -> list[dict[str, Any]]:
    return [{"expression": expression, "id": ident, "label": label}]


def _pool_search(metric: str, cluster: str, pool: Pool) -> str:
    return _search(metric, DEVICE_DIMENSIONS, cluster, _any_of("InstanceType", pool.settings.instance_types))


def _per_pool(metric: str, cluster: str, pools: Sequence[Pool]) -> list[list[Any]]:
    return [
        _expression(
            f"AVG({_pool_search(metric, cluster, pool)})",
            f"p{index}",
            f"{pool.name} ({', '.join(pool.settings.instance_types)})",
        )
        for index, pool in enumerate(pools)
    ]


def _per_node(metric: str, ident: str, cluster: str) -> list[list[Any]]:
    return [_expression(_search(metric, NODE_DIMENSIONS, cluster), ident, BY_NODE)]


def _cluster_metric(namespace: str, metric: str, cluster: str, label: str) -> list[Any]:
    return [namespace, metric, "ClusterName", cluster, {"label": label}]


def _gpu_nodes(cluster: str, pools: Sequence[Pool]) -> list[list[Any]]:
    # Each GPU device of the pool reports one series; (x*0+1) turns each into 1 while it reports.
    rows = [
        _expression(
            f"SUM({_pool_search('node_gpu_utilization', cluster, pool)}*0+1)/{pool.contract.gpus_per_node}",
            f"n{index}",
            f"{pool.name} GPU nodes",
        )
        for index, pool in enumerate(pools)
    ]
    return [
        *rows,
        _cluster_metric(CONTAINER_INSIGHTS, "cluster_node_count", cluster, "all nodes"),
        _cluster_metric(CONTAINER_INSIGHTS, "cluster_failed_node_count", cluster, "failed nodes"),
    ]


def _pending(cluster: str, namespaces: Sequence[str]) -> list[list[Any]]:
    rows = [
        _cluster_metric(EKS_NAMESPACE, "scheduler_pending_pods_UNSCHEDULABLE", cluster, "unschedulable pods")
    ]
    if namespaces:
        # Sum, not Maximum: a Deployment's replicas share one PodName series (docs/operating-gpu-nodes.md).
        search = _search(
            "pod_status_pending",
            ("ClusterName", "Namespace", "PodName"),
            cluster,
            _any_of("Namespace", namespaces),
            stat="Sum",
        )
        rows.append(_expression(f"SUM({search})", "pending", f"pending pods in {', '.join(namespaces)}"))
    return rows


def dashboard_body(
    cluster: str, region: str, pools: Sequence[Pool], gpu_namespaces: Sequence[str] = ()
) -> dict[str, Any]:
    """The GPU dashboard: utilization and memory per pool and per node, GPU nodes per pool, pending pods."""
    percent = {"yAxis": {"left": {"min": 0, "max": 100, "label": "%"}}}
    maximum = {"stat": "Maximum"}
    used, memory = "node_gpu_utilization", "node_gpu_memory_utilization"
    panels = [  # two per row, left to right
        ("GPU utilization per pool (avg over its GPUs)", _per_pool(used, cluster, pools), percent),
        ("GPU memory utilization per pool", _per_pool(memory, cluster, pools), percent),
        ("GPU utilization per node", _per_node(used, "u", cluster), percent),
        ("GPU memory utilization per node", _per_node(memory, "m", cluster), percent),
        ("GPU nodes per pool", _gpu_nodes(cluster, pools), maximum),
        ("Pending pods (unschedulable: waiting for a GPU node)", _pending(cluster, gpu_namespaces), maximum),
    ]
    common = {"region": region, "view": "timeSeries", "stacked": False, "period": PERIOD_SECONDS}
    return {
        "widgets": [
            {
                "type": "metric",
                **{"x": 12 * (index % 2), "y": 6 * (index // 2), "width": 12, "height": 6},
                "properties": {"title": title, **common, "metrics": rows, **extra},
            }
            for index, (title, rows, extra) in enumerate(panels)
        ]
    }


PENDING_BREACHING_SHARE = 0.8
"""Share of the pending alarm's minutes that must breach: 8 of 10 for the default 10m."""


def _minutes(duration: str) -> int:
    """Whole 1-minute periods covering a Go duration (config.py refuses more than a day)."""
    return max(1, math.ceil((go_duration_seconds(duration) or 0) / PERIOD_SECONDS))


def _metric(namespace: str, metric: str, stat: str, cluster: str) -> dict[str, Any]:
    """A MetricStat query (pulumi-aws ``metric_queries[].metric``) of a metric published by ClusterName."""
    assert ("ClusterName",) in METRICS[metric][1] and METRICS[metric][0] == namespace, metric
    return {
        "namespace": namespace,
        "metric_name": metric,
        "dimensions": {"ClusterName": cluster},
        "period": PERIOD_SECONDS,
        "stat": stat,
    }


def _pending_alarm(cluster: str, minutes: int) -> dict[str, Any]:
    return {
        "name": f"{cluster}-gpu-pod-pending",
        "alarm_description": (
            f"Pods unschedulable in {cluster} for most of {minutes} min: a GPU scale-up is stuck or "
            "impossible (pool at maxSize, no capacity, or a pod no pool fits). kubectl get pods -A "
            "--field-selector=status.phase=Pending; kubectl -n kube-system logs deploy/cluster-autoscaler"
        ),
        "namespace": EKS_NAMESPACE,
        "metric_name": "scheduler_pending_pods_UNSCHEDULABLE",
        "dimensions": {"ClusterName": cluster},
        "period": PERIOD_SECONDS,
        "statistic": "Maximum",
        "evaluation_periods": minutes,
        "datapoints_to_alarm": max(1, math.ceil(minutes * PENDING_BREACHING_SHARE)),
    }


def _not_ready_alarm(cluster: str, minutes: int) -> dict[str, Any]:
    def query(ident: str, label: str, **source: Any) -> dict[str, Any]:  # the alarm reads "notready" only
        return {"id": ident, "label": label, **source, "return_data": ident == "notready"}

    return {
        "name": f"{cluster}-node-not-ready",
        "alarm_description": (
            f"A node of {cluster} has been not Ready, or had a pressure/NetworkUnavailable condition, "
            f"for {minutes} min (Container Insights node_status_condition_ready, "
            "cluster_failed_node_count). EKS node auto-repair replaces GPU nodes after 30 min "
            "NotReady; kubectl get nodes -L eks-gpu/pool"
        ),
        "metric_queries": [
            query(
                "failed",
                "nodes with a pressure or NetworkUnavailable condition",
                metric=_metric(CONTAINER_INSIGHTS, "cluster_failed_node_count", "Maximum", cluster),
            ),
            query(
                "ready",
                "lowest node Ready condition (1 Ready, 0 not)",
                metric=_metric(CONTAINER_INSIGHTS, "node_status_condition_ready", "Minimum", cluster),
            ),
            query(
                "notready",
                "a node failed or not Ready (1) or not (0)",
                expression="(FILL(failed, 0) > 0) OR (FILL(ready, 1) < 1)",
            ),
        ],
        "evaluation_periods": minutes,
        "datapoints_to_alarm": minutes,
    }


def alarms(cluster: str, config: AlarmsConfig) -> dict[str, dict[str, Any]]:
    """PutMetricAlarm arguments (pulumi-aws keywords) by short name; why these: docs/decisions/0031."""
    actions = [config.sns_topic_arn] if config.sns_topic_arn else []
    common = {
        "comparison_operator": "GreaterThanThreshold",
        "threshold": 0,
        "treat_missing_data": "notBreaching",
        "actions_enabled": bool(actions),
        "alarm_actions": actions,
        "ok_actions": actions,
    }
    return {
        "gpu-pod-pending": {**common, **_pending_alarm(cluster, _minutes(config.gpu_pod_pending_for))},
        "gpu-node-not-ready": {**common, **_not_ready_alarm(cluster, _minutes(config.node_not_ready_for))},
    }
