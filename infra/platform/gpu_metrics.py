"""GPU dashboard and alarms as plain data: the CloudWatch requests, built from the stack's GPU pools.

Pure (no Pulumi): ``dashboard_body`` is the PutDashboard ``DashboardBody``, ``alarms`` the
PutMetricAlarm arguments (pulumi-aws keywords); tests validate both against botocore's model.
Every metric named is in :data:`METRICS` with the dimension sets it is published with.
Container Insights has no pool dimension, so a pool's series is a SEARCH over its instance
types (``pool_overlaps`` names pools that share one). Sources and the alarms' rationale:
docs/decisions/0031-gpu-dashboard-and-alarms.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONTAINER_INSIGHTS = "ContainerInsights"
EKS_NAMESPACE = "AWS/EKS"

# metric name -> (namespace, dimension sets it is published with)
METRICS: Mapping[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    **{
        name: (
            CONTAINER_INSIGHTS,
            (
                ("ClusterName",),
                ("ClusterName", "NodeName", "InstanceId"),
                ("ClusterName", "NodeName", "InstanceId", "InstanceType", "GpuDevice"),
            ),
        )
        for name in (
            "node_gpu_utilization",
            "node_gpu_memory_utilization",
            "node_gpu_memory_used",
            "node_gpu_memory_total",
            "node_gpu_temperature",
            "node_gpu_power_draw",
        )
    },
    **{
        name: (CONTAINER_INSIGHTS, (("NodeName", "InstanceId", "ClusterName"), ("ClusterName",)))
        for name in (
            "node_gpu_limit",
            "node_gpu_usage_total",
            "node_gpu_reserved_capacity",
            "node_status_condition_ready",
        )
    },
    **{
        name: (CONTAINER_INSIGHTS, (("ClusterName",),))
        for name in ("cluster_node_count", "cluster_failed_node_count")
    },
    "pod_status_pending": (
        CONTAINER_INSIGHTS,
        (
            ("PodName", "Namespace", "ClusterName"),
            ("ClusterName",),
            ("FullPodName", "PodName", "Namespace", "ClusterName"),
            ("Service", "Namespace", "ClusterName"),
        ),
    ),
    "scheduler_pending_pods_UNSCHEDULABLE": (EKS_NAMESPACE, (("ClusterName",),)),
}

PERIOD_SECONDS = 60  # Container Insights publishes once a minute
DEVICE_DIMENSIONS = ("ClusterName", "GpuDevice", "InstanceId", "InstanceType", "NodeName")
NODE_DIMENSIONS = ("ClusterName", "InstanceId", "NodeName")
BY_NODE = "${PROP('Dim.NodeName')}"  # dynamic label: one line per node


@dataclass(frozen=True)
class PoolView:
    """What the dashboard needs to know of a GPU pool."""

    name: str
    instance_types: tuple[str, ...]
    gpus_per_node: int


@dataclass(frozen=True)
class AlarmSettings:
    """Thresholds in seconds and the optional SNS topic the alarms notify."""

    gpu_pod_pending_seconds: float = 600
    node_not_ready_seconds: float = 600
    sns_topic_arn: str | None = None


def _schema(*dimensions: str) -> str:
    return "{" + ",".join((CONTAINER_INSIGHTS, *sorted(dimensions))) + "}"


def _search(
    metric: str, dimensions: Sequence[str], cluster: str, extra: str = "", stat: str = "Average"
) -> str:
    """A metrics SEARCH expression (CloudWatch search syntax; exact matches in double quotes)."""
    assert tuple(sorted(dimensions)) in {tuple(sorted(d)) for d in METRICS[metric][1]}, (metric, dimensions)
    query = f'{_schema(*dimensions)} MetricName="{metric}" ClusterName="{cluster}"'
    if extra:
        query += f" {extra}"
    return f"SEARCH('{query}', '{stat}', {PERIOD_SECONDS})"


def _any_of(dimension: str, values: Sequence[str]) -> str:
    return "(" + " OR ".join(f'{dimension}="{v}"' for v in values) + ")"


def pool_overlaps(pools: Sequence[PoolView]) -> dict[str, list[str]]:
    """Instance types listed by more than one pool: their per-pool series cannot be told apart."""
    owners: dict[str, list[str]] = {}
    for pool in pools:
        for instance_type in pool.instance_types:
            owners.setdefault(instance_type, []).append(pool.name)
    return {t: names for t, names in owners.items() if len(names) > 1}


def _widget(
    title: str, metrics: list[list[Any]], region: str, *, y: int, x: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": 12,
        "height": 6,
        "properties": {
            "title": title,
            "region": region,
            "view": "timeSeries",
            "stacked": False,
            "period": PERIOD_SECONDS,
            "metrics": metrics,
            **extra,
        },
    }


def _expression(expression: str, ident: str, label: str) -> list[dict[str, Any]]:
    return [{"expression": expression, "id": ident, "label": label}]


def _per_pool(metric: str, cluster: str, pools: Sequence[PoolView]) -> list[list[Any]]:
    return [
        _expression(
            f"AVG({_search(metric, DEVICE_DIMENSIONS, cluster, _any_of('InstanceType', pool.instance_types))})",
            f"p{index}",
            f"{pool.name} ({', '.join(pool.instance_types)})",
        )
        for index, pool in enumerate(pools)
    ]


def _per_node(metric: str, ident: str, cluster: str) -> list[list[Any]]:
    return [_expression(_search(metric, NODE_DIMENSIONS, cluster), ident, BY_NODE)]


def _cluster_metric(namespace: str, metric: str, cluster: str, label: str) -> list[Any]:
    return [namespace, metric, "ClusterName", cluster, {"label": label}]


def _gpu_nodes(cluster: str, pools: Sequence[PoolView]) -> list[list[Any]]:
    # Each GPU device of the pool reports one series; (x*0+1) turns each into 1 while it reports.
    rows = [
        _expression(
            f"SUM({_search('node_gpu_utilization', DEVICE_DIMENSIONS, cluster, _any_of('InstanceType', pool.instance_types))}*0+1)/{pool.gpus_per_node}",
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
        # Replicas of a Deployment share a PodName, so the per-minute Maximum of that series is 1
        # however many of them wait; the Sum counts each replica's datapoint.
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
    cluster: str, region: str, pools: Sequence[PoolView], gpu_namespaces: Sequence[str] = ()
) -> dict[str, Any]:
    """The GPU dashboard: utilization and memory per pool and per node, GPU nodes per pool, pending pods."""
    percent = {"yAxis": {"left": {"min": 0, "max": 100, "label": "%"}}}
    maximum = {"stat": "Maximum"}
    panels = [  # two per row, left to right
        (
            "GPU utilization per pool (avg over its GPUs)",
            _per_pool("node_gpu_utilization", cluster, pools),
            percent,
        ),
        (
            "GPU memory utilization per pool",
            _per_pool("node_gpu_memory_utilization", cluster, pools),
            percent,
        ),
        ("GPU utilization per node", _per_node("node_gpu_utilization", "u", cluster), percent),
        ("GPU memory utilization per node", _per_node("node_gpu_memory_utilization", "m", cluster), percent),
        ("GPU nodes per pool", _gpu_nodes(cluster, pools), maximum),
        ("Pending pods (unschedulable: waiting for a GPU node)", _pending(cluster, gpu_namespaces), maximum),
    ]
    return {
        "widgets": [
            _widget(title, rows, region, x=12 * (index % 2), y=6 * (index // 2), **extra)
            for index, (title, rows, extra) in enumerate(panels)
        ]
    }


MAX_ALARM_SECONDS = 86400
"""CloudWatch refuses an alarm whose Period x EvaluationPeriods exceeds one day (for 60 s periods)."""
PENDING_BREACHING_SHARE = 0.8
"""Share of the pending alarm's minutes that must breach: 8 of 10 for the default 10m."""


class AlarmError(ValueError):
    """An alarm threshold CloudWatch would refuse; the message names the setting."""


def _periods(seconds: float, setting: str) -> int:
    """Whole 1-minute periods covering ``seconds``; more than a day is refused naming ``setting``."""
    periods = max(1, math.ceil(seconds / PERIOD_SECONDS))
    if periods * PERIOD_SECONDS > MAX_ALARM_SECONDS:
        raise AlarmError(
            f"{setting} must be at most 24h (CloudWatch: Period x EvaluationPeriods <= {MAX_ALARM_SECONDS} s "
            f"with {PERIOD_SECONDS} s periods), got {seconds:g} s"
        )
    return periods


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


# short name -> (the setting its threshold comes from, the AlarmSettings field holding it, builder)
ALARMS = {
    "gpu-pod-pending": ("observability.alarms.gpuPodPendingFor", "gpu_pod_pending_seconds", _pending_alarm),
    "gpu-node-not-ready": (
        "observability.alarms.nodeNotReadyFor",
        "node_not_ready_seconds",
        _not_ready_alarm,
    ),
}


def alarms(cluster: str, settings: AlarmSettings) -> dict[str, dict[str, Any]]:
    """PutMetricAlarm arguments (pulumi-aws keywords) by short name; why these: docs/decisions/0031."""
    actions = [settings.sns_topic_arn] if settings.sns_topic_arn else []
    common = {
        "comparison_operator": "GreaterThanThreshold",
        "threshold": 0,
        "treat_missing_data": "notBreaching",
        "actions_enabled": bool(actions),
        "alarm_actions": actions,
        "ok_actions": actions,
    }
    return {
        short: {**common, **build(cluster, _periods(getattr(settings, field), setting))}
        for short, (setting, field, build) in ALARMS.items()
    }


def metric_names(body: Mapping[str, Any]) -> set[str]:
    """Every metric a dashboard body names, in plain metric rows or in SEARCH expressions."""
    names: set[str] = set()
    for widget in body.get("widgets", []):
        for row in widget.get("properties", {}).get("metrics", []):
            if row and isinstance(row[0], dict):
                expression = row[0].get("expression", "")
                names.update(part.split('"')[1] for part in expression.split("MetricName=")[1:])
            elif len(row) >= 2:
                names.add(row[1])
    return names
