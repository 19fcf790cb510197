"""GPU metrics add-on, node monitoring add-on, dashboard and alarms: exact requests, validated against botocore."""

from __future__ import annotations

import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import pulumi
import pytest
from botocore.validate import ParamValidator

from infra.platform.addons import ADDON_VERSIONS, CLOUDWATCH_ADDON, NODE_MONITORING_ADDON
from infra.platform.config import AlarmsConfig, PlatformConfig, load
from infra.platform.gpu_metrics import METRICS, alarms, dashboard_body
from infra.platform.instance_types import ARM_NVIDIA
from infra.platform.observability import (
    CLOUDWATCH_POLICY_ARN,
    configuration_json,
    main,
    observability,
)
from infra.tooling.agents import agents_of, groups_of, land
from infra.tooling.chart_models import DCGM_EXPORTER_INSTANCE_TYPES, cloudwatch_pods
from infra.tooling.offline import Run, run_program
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = "eks-gpu-platform-dev"
CUSTOM = Placement(key="accelerator", value="nvidia-t4g")


def _config(**observability: Any) -> PlatformConfig:
    """A stack with the CUSTOM contract and two pools: one of 1-GPU types, one of a 2-GPU type."""
    raw = {
        "endpoint": {"publicAccessCidrs": ["203.0.113.0/24"]},
        "placement": {"key": CUSTOM.key, "value": CUSTOM.value},
        "gpuPools": {
            "default": {"instanceTypes": ["g5g.xlarge", "g5g.2xlarge"]},
            "big": {"instanceTypes": ["g5g.16xlarge"]},
        },
        "observability": observability,
    }
    return load(raw, region="us-west-2", default_cluster_name=CLUSTER)


POOLS = _config().pools


@cache
def _model(service: str):
    return botocore.session.get_session().get_service_model(service)


def _errors(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    shape = _model(service).operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    problems = [report.generate_report()] if report.has_errors() else []
    for key, value in params.items():  # enums, as AWS checks them
        member = shape.members[key]
        if member.type_name == "string" and member.enum and value not in member.enum:
            problems.append(f"{key}: {value!r} not in {member.enum}")
    return problems


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _api(key: str) -> str:
    return _camel(key)[0].upper() + _camel(key)[1:]


def _dimensions(value: dict[str, str]) -> list[dict[str, str]]:
    return [{"Name": k, "Value": v} for k, v in value.items()]


def _metric_query(query: dict[str, Any]) -> dict[str, Any]:
    """A ``metric_queries`` item as the provider sends it in PutMetricAlarm ``Metrics`` (MetricDataQuery)."""
    request = {_api(k): v for k, v in query.items() if k != "metric"}
    if "metric" in query:
        metric = dict(query["metric"])
        request["MetricStat"] = {
            "Metric": {
                "Namespace": metric.pop("namespace"),
                "MetricName": metric.pop("metric_name"),
                "Dimensions": _dimensions(metric.pop("dimensions")),
            },
            "Period": metric.pop("period"),
            "Stat": metric.pop("stat"),
        }
        assert not metric, metric
    return request


def put_metric_alarm_request(args: dict[str, Any]) -> dict[str, Any]:
    """What the AWS provider sends to PutMetricAlarm for these aws.cloudwatch.MetricAlarm arguments."""
    rename = {"name": "AlarmName", "alarm_description": "AlarmDescription", "ok_actions": "OKActions"}
    request = {}
    for key, value in args.items():
        if key == "metric_queries":
            request["Metrics"] = [_metric_query(q) for q in value]
            continue
        if key == "dimensions":
            value = _dimensions(value)
        request[rename.get(key) or _api(key)] = value
    return request


# --- the add-on's configuration -------------------------------------------------------------


TOLERATION = {"key": "accelerator", "operator": "Equal", "value": "nvidia-t4g", "effect": "NoSchedule"}


def test_configuration_sends_only_the_root_toleration_and_container_logs_switch() -> None:
    assert json.loads(configuration_json(CUSTOM)) == {
        "tolerations": [TOLERATION],
        "containerLogs": {"enabled": False},
    }
    with_logs = json.loads(configuration_json(CUSTOM, container_logs=True))
    assert with_logs == {"tolerations": [TOLERATION], "containerLogs": {"enabled": True}}
    # the chart's helper falls back to the root list for every component that sets none:
    # each DaemonSet, dcgm-exporter included (enabled by default), gets the contract's toleration only
    pods = cloudwatch_pods(with_logs)
    assert set(pods) == {"cloudwatch-agent", "dcgm-exporter", "neuron-monitor", "fluent-bit"}
    assert all(pod["tolerations"] == [TOLERATION] for pod in pods.values())
    shown = (ROOT / "docs" / "operating-gpu-nodes.md").read_text()
    assert configuration_json(DEFAULT_PLACEMENT) in shown  # the JSON the docs show


def _schema(*, container_logs: bool = True) -> dict[str, Any]:
    """A configuration schema in the shape EKS publishes (draft-07, closed objects)."""
    properties: dict[str, Any] = {
        "tolerations": {"type": "array", "items": {"type": "object"}},
        "agent": {"type": "object"},
    }
    if container_logs:
        properties["containerLogs"] = {
            "type": "object",
            "properties": {"enabled": {"type": "boolean"}},
            "additionalProperties": False,
        }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def _stub_aws(tmp_path: Path, schema: dict[str, Any]) -> dict[str, str]:
    """A fake ``aws`` CLI on PATH: every pinned version offered, this schema for describe-addon-configuration."""
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    versions = " ".join(sorted({v for pins in ADDON_VERSIONS.values() for v in pins.values()}))
    stub = tmp_path / "aws"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$@" >> "{tmp_path}/calls"\n'
        'case "$2" in\n'
        f"  describe-addon-versions) echo '{versions}' ;;\n"
        f'  describe-addon-configuration) cat "{tmp_path}/schema.json" ;;\n'
        "  *) exit 9 ;;\n"
        "esac\n"
    )
    stub.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}


def test_check_addon_versions_fails_when_the_pinned_addon_schema_refuses_what_we_send(tmp_path: Path) -> None:
    script = ROOT / "bin" / "check-addon-versions"
    ok = subprocess.run(
        [script], env=_stub_aws(tmp_path, _schema()), capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"ok       configurationValues {configuration_json(DEFAULT_PLACEMENT)}" in ok.stdout
    calls = (tmp_path / "calls").read_text().splitlines()
    assert (
        "eks describe-addon-configuration --addon-name amazon-cloudwatch-observability "
        "--addon-version v6.4.0-eksbuild.1 --query configurationSchema --output text"
    ) in calls
    refused = subprocess.run(
        [script],
        env=_stub_aws(tmp_path, _schema(container_logs=False)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 1
    assert "REFUSED  configurationValues" in refused.stdout
    assert "(root): Additional properties are not allowed ('containerLogs' was unexpected)" in refused.stdout


def test_the_charts_dcgm_instance_types_cover_every_arm_gpu_type_we_allow() -> None:
    assert set(ARM_NVIDIA) <= set(DCGM_EXPORTER_INSTANCE_TYPES)


def test_the_config_cli_names_the_pinned_kubernetes_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--print-config", "1.36"]) == 0
    assert capsys.readouterr().out.strip() == configuration_json(DEFAULT_PLACEMENT)
    with pytest.raises(SystemExit) as refused:
        main(["--print-config", "1.99"])
    assert refused.value.code == 2
    assert "invalid choice: '1.99' (choose from '1.35', '1.36')" in capsys.readouterr().err


# --- dashboard ------------------------------------------------------------------------------


def _check_dashboard(body: dict[str, Any]) -> None:
    """The dashboard body structure (CloudWatch "Dashboard Body Structure and Syntax")."""
    assert set(body) == {"widgets"} and body["widgets"]
    for widget in body["widgets"]:
        assert widget["type"] == "metric"
        assert widget["x"] >= 0 and widget["x"] + widget["width"] <= 24 and 1 <= widget["height"] <= 1000
        props = widget["properties"]
        assert props["region"] and props["metrics"] and isinstance(props["metrics"], list)
        ids = []
        for row in props["metrics"]:
            assert isinstance(row, list) and row
            if isinstance(row[0], dict):  # [{expression, id, label}]
                assert set(row[0]) <= {"expression", "id", "label", "period", "visible", "yAxis", "color"}
                assert re.fullmatch(r"[a-z][a-zA-Z0-9_]*", row[0]["id"]), row[0]["id"]
                ids.append(row[0]["id"])
                assert row[0]["expression"].count("(") == row[0]["expression"].count(")")
            else:  # [Namespace, MetricName, (DimName, DimValue)*, {options}?]
                plain = [x for x in row if not isinstance(x, dict)]
                assert len(plain) % 2 == 0 and all(isinstance(x, str) for x in plain)
                assert all(isinstance(x, dict) for x in row[len(plain) :])
        assert len(ids) == len(set(ids))


def metric_names(body: dict[str, Any]) -> set[str]:
    """Every metric a dashboard body names, in plain metric rows or in SEARCH expressions."""
    names: set[str] = set()
    for widget in body["widgets"]:
        for row in widget["properties"]["metrics"]:
            if isinstance(row[0], dict):
                names.update(part.split('"')[1] for part in row[0]["expression"].split("MetricName=")[1:])
            else:
                names.add(row[1])
    return names


def test_dashboard_names_only_real_metrics_with_their_published_dimensions() -> None:
    body = dashboard_body(CLUSTER, "us-west-2", POOLS, gpu_namespaces=("inference",))
    _check_dashboard(body)
    assert metric_names(body) == {
        "node_gpu_utilization",
        "node_gpu_memory_utilization",
        "cluster_node_count",
        "cluster_failed_node_count",
        "scheduler_pending_pods_UNSCHEDULABLE",
        "pod_status_pending",
    }
    assert metric_names(body) <= set(METRICS)
    text = json.dumps(body)
    # per pool: a SEARCH over the pool's instance types at GPU-device level, averaged
    assert (
        "AVG(SEARCH('{ContainerInsights,ClusterName,GpuDevice,InstanceId,InstanceType,NodeName} "
        'MetricName=\\"node_gpu_utilization\\" ClusterName=\\"eks-gpu-platform-dev\\" '
        '(InstanceType=\\"g5g.xlarge\\" OR InstanceType=\\"g5g.2xlarge\\")\', \'Average\', 60))'
    ) in text
    # GPU nodes of a 2-GPU pool: devices reporting / 2
    assert "*0+1)/2" in text
    assert 'Namespace=\\"inference\\"' in text
    # replicas share a PodName: summed, so three pending replicas count 3, not 1
    (pending,) = [
        row[0]["expression"]
        for widget in body["widgets"]
        for row in widget["properties"]["metrics"]
        if isinstance(row[0], dict) and "pod_status_pending" in row[0]["expression"]
    ]
    assert pending.startswith("SUM(SEARCH(") and pending.endswith("'Sum', 60))")
    errors = _errors("cloudwatch", "PutDashboard", {"DashboardName": f"{CLUSTER}-gpu", "DashboardBody": text})
    assert errors == []


# --- alarms ---------------------------------------------------------------------------------


def test_alarms_are_valid_put_metric_alarm_requests_with_the_thresholds_in_minutes() -> None:
    topic = "arn:aws:sns:us-west-2:123456789012:gpu-oncall"
    found = alarms(
        CLUSTER, AlarmsConfig(gpu_pod_pending_for="15m", node_not_ready_for="90s", sns_topic_arn=topic)
    )
    pending, not_ready = found["gpu-pod-pending"], found["gpu-node-not-ready"]
    assert (pending["namespace"], pending["metric_name"]) == (
        "AWS/EKS",
        "scheduler_pending_pods_UNSCHEDULABLE",
    )
    # 80% of the minutes: one minute the scheduler spent retrying the pod does not restart the clock
    assert (pending["evaluation_periods"], pending["datapoints_to_alarm"], pending["period"]) == (15, 12, 60)
    assert (
        not_ready["evaluation_periods"] == not_ready["datapoints_to_alarm"] == 2
    )  # 90 s: two 1-minute periods
    for args in found.values():
        assert args["alarm_actions"] == [topic] and args["actions_enabled"] is True
        assert _errors("cloudwatch", "PutMetricAlarm", put_metric_alarm_request(args)) == []


def test_the_default_pending_alarm_fires_on_8_of_10_minutes() -> None:
    pending = alarms(CLUSTER, AlarmsConfig())["gpu-pod-pending"]
    assert (pending["datapoints_to_alarm"], pending["evaluation_periods"]) == (8, 10)
    one_minute = alarms(CLUSTER, AlarmsConfig(gpu_pod_pending_for="1m"))["gpu-pod-pending"]
    assert (one_minute["datapoints_to_alarm"], one_minute["evaluation_periods"]) == (1, 1)


def test_node_not_ready_is_metric_math_over_failed_nodes_and_the_ready_condition() -> None:
    """cluster_failed_node_count never counts Ready=False (otel-contrib k8sclient/node.go), so Ready is read too."""
    args = alarms(CLUSTER, AlarmsConfig())["gpu-node-not-ready"]
    # a metric-math alarm names its metrics only in Metrics; PutMetricAlarm refuses both at once
    assert not {"metric_name", "namespace", "statistic", "period", "dimensions"} & set(args)
    queries = {q["id"]: q for q in args["metric_queries"]}
    assert queries["failed"]["metric"] == {
        "namespace": "ContainerInsights",
        "metric_name": "cluster_failed_node_count",
        "dimensions": {"ClusterName": CLUSTER},
        "period": 60,
        "stat": "Maximum",
    }
    assert queries["ready"]["metric"] == {
        "namespace": "ContainerInsights",
        "metric_name": "node_status_condition_ready",
        "dimensions": {"ClusterName": CLUSTER},
        "period": 60,
        "stat": "Minimum",
    }
    for query in queries.values():
        if "metric" in query:  # published with exactly these dimensions
            assert ("ClusterName",) in METRICS[query["metric"]["metric_name"]][1]
        assert re.fullmatch(r"[a-z][a-zA-Z0-9_]*", query["id"])
    assert [q["id"] for q in args["metric_queries"] if q["return_data"]] == ["notready"]
    expression = queries["notready"]["expression"]
    assert expression == "(FILL(failed, 0) > 0) OR (FILL(ready, 1) < 1)"
    assert (args["comparison_operator"], args["threshold"]) == ("GreaterThanThreshold", 0)
    assert (
        "not Ready" in args["alarm_description"]
        and "node_status_condition_ready" in args["alarm_description"]
    )
    request = put_metric_alarm_request(args)
    assert request["Metrics"][0]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "ClusterName", "Value": CLUSTER}
    ]
    assert _errors("cloudwatch", "PutMetricAlarm", request) == []


def test_alarms_without_a_topic_exist_but_notify_nobody() -> None:
    found = alarms(CLUSTER, AlarmsConfig())
    assert all(a["alarm_actions"] == [] and a["actions_enabled"] is False for a in found.values())


# --- resources ------------------------------------------------------------------------------


def _declare(config: PlatformConfig) -> Run:
    def program() -> None:
        agent = pulumi.CustomResource(
            "aws:eks/addon:Addon", "pod-identity", {"addonName": "eks-pod-identity-agent"}
        )
        observability("obs", config, pod_identity_agent=agent, opts=pulumi.ResourceOptions())

    return run_program(program)


def test_declares_addons_with_pod_identity_dashboard_and_alarms() -> None:
    run = _declare(_config(alarms={"snsTopicArn": "arn:aws:sns:us-west-2:123456789012:gpu"}))
    cloudwatch = run.one("aws:eks/addon:Addon", "obs-cloudwatch")
    assert cloudwatch.inputs["addonName"] == CLOUDWATCH_ADDON
    assert cloudwatch.inputs["configurationValues"] == configuration_json(CUSTOM)
    association = cloudwatch.inputs["podIdentityAssociations"][0]
    assert association["serviceAccount"] == "cloudwatch-agent"
    pod_identity = run.one("aws:eks/addon:Addon", "pod-identity")
    assert pod_identity.urn in cloudwatch.dependencies  # agents start with credentials
    attachment = run.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachment.inputs["policyArn"] == CLOUDWATCH_POLICY_ARN
    trust = json.loads(run.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    node_monitoring = run.one("aws:eks/addon:Addon", "obs-node-monitoring")
    assert "configurationValues" not in node_monitoring.inputs  # chart defaults tolerate every taint
    for addon in (cloudwatch, node_monitoring):
        request = {
            "clusterName": addon.inputs["clusterName"],
            "addonName": addon.inputs["addonName"],
            "addonVersion": addon.inputs["addonVersion"],
            "resolveConflicts": addon.inputs["resolveConflictsOnCreate"],
            **(
                {
                    "configurationValues": addon.inputs["configurationValues"],
                    "podIdentityAssociations": [
                        {
                            "serviceAccount": association["serviceAccount"],
                            "roleArn": "arn:aws:iam::123456789012:role/cw",
                        }
                    ],
                }
                if addon is cloudwatch
                else {}
            ),
        }
        assert _errors("eks", "CreateAddon", request) == []
    assert run.one("aws:cloudwatch/dashboard:Dashboard").inputs["dashboardName"] == f"{CLUSTER}-gpu"
    assert {a.name for a in run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")} == {
        "obs-gpu-pod-pending",
        "obs-gpu-node-not-ready",
    }


def test_switched_off_keeps_only_the_node_monitoring_agent() -> None:
    run = _declare(_config(enabled=False))
    assert {r.inputs["addonName"] for r in run.of_type("aws:eks/addon:Addon")} == {
        "eks-pod-identity-agent",
        NODE_MONITORING_ADDON,
    }
    assert run.of_type("aws:cloudwatch/dashboard:Dashboard") == []


def test_declared_agents_land_on_every_gpu_pool_of_a_custom_contract() -> None:
    """The add-on's declared inputs, the charts' defaults and the scheduler model: dcgm-exporter on GPU pools only."""
    run = _declare(_config())
    groups = [
        (
            "aws:eks/nodeGroup:NodeGroup",
            "system",
            {"instanceTypes": ["t4g.large"], "labels": {"node-role": "system"}},
        ),
        *(
            (
                "aws:eks/nodeGroup:NodeGroup",
                f"gpu-{p.name}",
                {
                    "amiType": "AL2023_ARM_64_NVIDIA",
                    "instanceTypes": list(p.settings.instance_types),
                    "labels": {**CUSTOM.node_labels(), "eks-gpu/pool": p.name},
                    "taints": [CUSTOM.eks_taint()],
                },
            )
            for p in POOLS
        ),
    ]
    resources = [(r.type, r.name, r.inputs) for r in run.resources]
    nodes = groups_of(groups, CUSTOM)
    where = {a.name: land(a, nodes, CUSTOM).where for a in agents_of(resources, CUSTOM)}
    assert where["cloudwatch-agent (amazon-cloudwatch-observability)"] == {
        "system": "yes",
        "gpu-default": "yes",
        "gpu-big": "yes",
    }
    assert where["dcgm-exporter (amazon-cloudwatch-observability)"] == {
        "system": "-",
        "gpu-default": "yes",
        "gpu-big": "yes",
    }
    assert where["neuron-monitor (amazon-cloudwatch-observability)"] == {
        "system": "-",
        "gpu-default": "-",
        "gpu-big": "-",
    }
    assert where["eks-node-monitoring-agent (eks-node-monitoring-agent)"] == {
        "system": "yes",
        "gpu-default": "yes",
        "gpu-big": "yes",
    }
    assert set(where["dcgm-server (eks-node-monitoring-agent, amd64 only)"].values()) == {"-"}
