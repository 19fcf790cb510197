"""GPU dashboard and alarms as plain data: the CloudWatch requests, built from the pools the stack declares.

Pure (no Pulumi): ``dashboard_body`` is the PutDashboard ``DashboardBody`` and
``alarms`` the PutMetricAlarm arguments (pulumi-aws ``aws.cloudwatch.MetricAlarm``
keywords), so tests validate both against botocore's CloudWatch model and the
preview can print them.

Every metric named here is in :data:`METRICS` with the dimension sets it is
published with and where that is written down:

- Container Insights (namespace ``ContainerInsights``), published by the
  CloudWatch agent that the ``amazon-cloudwatch-observability`` add-on runs:
  dimension sets from aws/amazon-cloudwatch-agent
  ``translator/translate/otel/exporter/awsemf/kubernetes.go``; the GPU names come
  from dcgm-exporter's ``DCGM_FI_DEV_*`` fields renamed by the agent's
  ``metricstransformprocessor`` translator (``DCGM_FI_DEV_GPU_UTIL`` ->
  ``gpu_utilization`` ...), then prefixed ``node_``/``pod_``/``container_``; listed in
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html
- ``AWS/EKS`` ``scheduler_pending_pods_UNSCHEDULABLE``: a control-plane metric EKS
  vends to CloudWatch itself (dimension ``ClusterName``), no agent involved.

**"Per pool" is not a Container Insights dimension.** Nodes are published by
``NodeName``/``InstanceId`` and, at GPU-device level, ``InstanceType``; nothing
carries the ``eks-gpu/pool`` label. A pool's series here is a metrics SEARCH over
the pool's instance types. Two pools that share an instance type therefore show
the same series (``pool_overlaps`` names them, the preview prints it).
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

    gpu_pod_pending_seconds: float
    node_not_ready_seconds: float
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


def dashboard_body(
    cluster: str, region: str, pools: Sequence[PoolView], gpu_namespaces: Sequence[str] = ()
) -> dict[str, Any]:
    """The GPU dashboard: utilization and memory per pool and per node, GPU nodes per pool, pending pods."""
    percent = {"yAxis": {"left": {"min": 0, "max": 100, "label": "%"}}}
    per_pool: dict[str, list[list[Any]]] = {"node_gpu_utilization": [], "node_gpu_memory_utilization": []}
    nodes_per_pool: list[list[Any]] = []
    for index, pool in enumerate(pools):
        types = _any_of("InstanceType", pool.instance_types)
        for metric, rows in per_pool.items():
            search = _search(metric, DEVICE_DIMENSIONS, cluster, types)
            rows.append(
                _expression(f"AVG({search})", f"p{index}", f"{pool.name} ({', '.join(pool.instance_types)})")
            )
        # Each GPU device of the pool reports one series; (x*0+1) turns each into 1 while it reports.
        devices = _search("node_gpu_utilization", DEVICE_DIMENSIONS, cluster, types)
        nodes_per_pool.append(
            _expression(f"SUM({devices}*0+1)/{pool.gpus_per_node}", f"n{index}", f"{pool.name} GPU nodes")
        )
    nodes_per_pool += [
        [CONTAINER_INSIGHTS, "cluster_node_count", "ClusterName", cluster, {"label": "all nodes"}],
        [CONTAINER_INSIGHTS, "cluster_failed_node_count", "ClusterName", cluster, {"label": "failed nodes"}],
    ]
    pending: list[list[Any]] = [
        [
            EKS_NAMESPACE,
            "scheduler_pending_pods_UNSCHEDULABLE",
            "ClusterName",
            cluster,
            {"label": "unschedulable pods"},
        ]
    ]
    if gpu_namespaces:
        search = _search(
            "pod_status_pending",
            ("ClusterName", "Namespace", "PodName"),
            cluster,
            _any_of("Namespace", gpu_namespaces),
            # Replicas of a Deployment share a PodName, so the per-minute Maximum of that series is 1
            # however many of them wait; the Sum counts each replica's datapoint.
            stat="Sum",
        )
        pending.append(
            _expression(f"SUM({search})", "pending", f"pending pods in {', '.join(gpu_namespaces)}")
        )
    return {
        "widgets": [
            _widget(
                "GPU utilization per pool (avg over its GPUs)",
                per_pool["node_gpu_utilization"],
                region,
                y=0,
                **percent,
            ),
            _widget(
                "GPU memory utilization per pool",
                per_pool["node_gpu_memory_utilization"],
                region,
                y=0,
                x=12,
                **percent,
            ),
            _widget(
                "GPU utilization per node",
                [_expression(_search("node_gpu_utilization", NODE_DIMENSIONS, cluster), "u", BY_NODE)],
                region,
                y=6,
                **percent,
            ),
            _widget(
                "GPU memory utilization per node",
                [_expression(_search("node_gpu_memory_utilization", NODE_DIMENSIONS, cluster), "m", BY_NODE)],
                region,
                y=6,
                x=12,
                **percent,
            ),
            _widget("GPU nodes per pool", nodes_per_pool, region, y=12, stat="Maximum"),
            _widget(
                "Pending pods (unschedulable: waiting for a GPU node)",
                pending,
                region,
                y=12,
                x=12,
                stat="Maximum",
            ),
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


def alarms(cluster: str, settings: AlarmSettings) -> dict[str, dict[str, Any]]:
    """PutMetricAlarm arguments (pulumi-aws keywords) by short name.

    ``gpu-pod-pending``: ``AWS/EKS scheduler_pending_pods_UNSCHEDULABLE`` above 0 in
    8 of every 10 minutes of the threshold (80%, at least one). Chosen over
    ``pod_status_pending`` because (1) it is the scheduler's own count of pods no node
    can take, which is exactly a stuck scale-up (kubernetes/autoscaler#8799), while
    ``pod_status_pending`` also counts pods that have a node and are pulling images;
    (2) it comes from the control plane, so it still fires when the CloudWatch agent
    itself is broken; (3) it needs no namespace list. The cost: it counts every
    unschedulable pod, GPU or not; on this platform the system group is untainted and
    autoscaled pods are GPU pods, so an unschedulable pod is almost always one waiting
    for a GPU node. Why 8 of 10 and not every minute: the scheduler moves parked pods
    out of the unschedulable queue into backoff/active on cluster events and on its
    periodic flush, then back after the next failed attempt; a minute that caught the
    pod outside the queue reads 0, and requiring every minute would let that one
    minute restart the clock. (Summing UNSCHEDULABLE and BACKOFF would also count pods
    backing off for other reasons, e.g. a failed bind.)

    ``gpu-node-not-ready``: metric math, fires when ``MAX(cluster_failed_node_count) > 0``
    or ``MIN(node_status_condition_ready) < 1`` (ClusterName level) for the threshold.
    ``cluster_failed_node_count`` counts only nodes with a pressure condition or
    NetworkUnavailable (opentelemetry-collector-contrib
    ``internal/aws/k8s/k8sclient/node.go`` ``failedNodeConditions``), never Ready=False,
    so Ready comes from ``node_status_condition_ready`` (1 Ready, 0 not), whose minimum
    over the cluster's nodes drops below 1 while any node is not Ready. ``FILL`` makes a
    minute where one of the two series is missing count as healthy for that series
    instead of dropping the minute from the expression. Neither metric has an
    instance-type or label dimension, so this covers every node, the system group's too.
    """
    actions = [settings.sns_topic_arn] if settings.sns_topic_arn else []
    common = {
        "comparison_operator": "GreaterThanThreshold",
        "threshold": 0,
        "treat_missing_data": "notBreaching",
        "actions_enabled": bool(actions),
        "alarm_actions": actions,
        "ok_actions": actions,
    }
    pending = _periods(settings.gpu_pod_pending_seconds, "observability.alarms.gpuPodPendingFor")
    not_ready = _periods(settings.node_not_ready_seconds, "observability.alarms.nodeNotReadyFor")
    return {
        "gpu-pod-pending": {
            **common,
            "name": f"{cluster}-gpu-pod-pending",
            "alarm_description": (
                f"Pods unschedulable in {cluster} for most of {pending} min: a GPU scale-up is stuck or "
                "impossible (pool at maxSize, no capacity, or a pod no pool fits). kubectl get pods -A "
                "--field-selector=status.phase=Pending; kubectl -n kube-system logs deploy/cluster-autoscaler"
            ),
            "namespace": EKS_NAMESPACE,
            "metric_name": "scheduler_pending_pods_UNSCHEDULABLE",
            "dimensions": {"ClusterName": cluster},
            "period": PERIOD_SECONDS,
            "statistic": "Maximum",
            "evaluation_periods": pending,
            "datapoints_to_alarm": max(1, math.ceil(pending * PENDING_BREACHING_SHARE)),
        },
        "gpu-node-not-ready": {
            **common,
            "name": f"{cluster}-node-not-ready",
            "alarm_description": (
                f"A node of {cluster} has been not Ready, or had a pressure/NetworkUnavailable condition, "
                f"for {not_ready} min (Container Insights node_status_condition_ready, "
                "cluster_failed_node_count). EKS node auto-repair replaces GPU nodes after 30 min "
                "NotReady; kubectl get nodes -L eks-gpu/pool"
            ),
            "metric_queries": [
                {
                    "id": "failed",
                    "label": "nodes with a pressure or NetworkUnavailable condition",
                    "metric": _metric(CONTAINER_INSIGHTS, "cluster_failed_node_count", "Maximum", cluster),
                    "return_data": False,
                },
                {
                    "id": "ready",
                    "label": "lowest node Ready condition (1 Ready, 0 not)",
                    "metric": _metric(CONTAINER_INSIGHTS, "node_status_condition_ready", "Minimum", cluster),
                    "return_data": False,
                },
                {
                    "id": "notready",
                    "label": "a node failed or not Ready (1) or not (0)",
                    "expression": "(FILL(failed, 0) > 0) OR (FILL(ready, 1) < 1)",
                    "return_data": True,
                },
            ],
            "evaluation_periods": not_ready,
            "datapoints_to_alarm": not_ready,
        },
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
