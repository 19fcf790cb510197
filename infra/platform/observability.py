"""Operate the GPU nodes: GPU metrics from the CloudWatch add-on, node health for repair, dashboard, alarms.

- ``amazon-cloudwatch-observability`` (EKS add-on): the CloudWatch agent on every node and
  NVIDIA dcgm-exporter on the GPU nodes (Container Insights ``node_gpu_*``); AWS access by
  EKS Pod Identity with ``CloudWatchAgentServerPolicy``. Sent values: root ``tolerations``
  (the contract's, replacing the chart's tolerate-everything) and ``containerLogs.enabled``.
- ``eks-node-monitoring-agent`` (EKS add-on): the node conditions EKS auto-repair acts on;
  its chart tolerates every taint, so it needs no values.
- the dashboard and alarms of :mod:`infra.platform.gpu_metrics`.

Why these values, and what the charts do with them: docs/decisions/0032-cloudwatch-addon-values.md.
``python -m infra.platform.observability --print-config 1.35 [--container-logs]`` prints the
configurationValues; ``--check-config 1.35 --schema FILE`` validates both variants.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from infra.platform.addons import ADDON_VERSIONS, CLOUDWATCH_ADDON, NODE_MONITORING_ADDON, RESOLVE_CONFLICTS
from infra.platform.gpu_metrics import AlarmSettings, PoolView, alarms, dashboard_body
from infra.platform.iam import POD_IDENTITY_TRUST_POLICY
from infra.workloads.durations import go_duration_seconds
from infra.workloads.placement import Placement

CLOUDWATCH_NAMESPACE = "amazon-cloudwatch"
CLOUDWATCH_SERVICE_ACCOUNT = "cloudwatch-agent"
CLOUDWATCH_POLICY_ARN = "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"

# Add-on versions: infra.platform.addons (bin/check-addon-versions asks AWS which exist).


class ObservabilityError(ValueError):
    """A setting the observability resources cannot be built from; the message names it."""


@dataclass(frozen=True)
class ObservabilitySettings(AlarmSettings):
    """The ``observability`` config section, as this module reads it (config.py validates it)."""

    enabled: bool = True
    container_logs: bool = False
    node_monitoring_agent: bool = True
    gpu_namespaces: tuple[str, ...] = ()


def addon_version(addon: str, kubernetes_version: str) -> str:
    """The pinned version of ``addon`` for the cluster's minor; the error names the setting."""
    try:
        return ADDON_VERSIONS[kubernetes_version][addon]
    except KeyError:
        raise ObservabilityError(
            f"kubernetesVersion {kubernetes_version!r}: no pinned {addon} add-on version; "
            f"allowed: {', '.join(ADDON_VERSIONS)} (add a row to infra/platform/addons.py ADDON_VERSIONS)"
        ) from None


def cloudwatch_configuration(placement: Placement, *, container_logs: bool = False) -> dict[str, Any]:
    """The add-on's configurationValues: every agent tolerates the contract's taint, and only that."""
    return {"tolerations": [placement.toleration()], "containerLogs": {"enabled": container_logs}}


def configuration_json(placement: Placement, *, container_logs: bool = False) -> str:
    """The exact ``configurationValues`` text the add-on is declared with."""
    return json.dumps(cloudwatch_configuration(placement, container_logs=container_logs), sort_keys=True)


def configuration_errors(schema: Mapping[str, Any], configuration: str) -> list[str]:
    """Why the add-on's schema (its ``$schema`` draft) would refuse ``configuration`` (JSON text); empty if none."""
    try:
        import jsonschema
    except ImportError as missing:  # pragma: no cover - a dev environment without it
        raise ObservabilityError(
            "validating configurationValues needs the jsonschema package (pip install jsonschema)"
        ) from missing
    validator = jsonschema.validators.validator_for(schema)(schema)
    return sorted(
        f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in validator.iter_errors(json.loads(configuration))
    )


@dataclass
class Observability:
    """What :func:`observability` declared; ``None`` where a part is switched off."""

    cloudwatch_addon: aws.eks.Addon | None = None
    node_monitoring_addon: aws.eks.Addon | None = None
    dashboard: aws.cloudwatch.Dashboard | None = None
    alarms: dict[str, aws.cloudwatch.MetricAlarm] = field(default_factory=dict)


def _addon(
    name: str,
    addon: str,
    cluster_name: str,
    kubernetes_version: str,
    opts: pulumi.ResourceOptions,
    **extra: Any,
) -> aws.eks.Addon:
    return aws.eks.Addon(
        name,
        cluster_name=cluster_name,
        addon_name=addon,
        addon_version=addon_version(addon, kubernetes_version),
        **extra,
        resolve_conflicts_on_create=RESOLVE_CONFLICTS,
        resolve_conflicts_on_update=RESOLVE_CONFLICTS,
        opts=opts,
    )


def observability(
    name: str,
    settings: ObservabilitySettings,
    *,
    cluster_name: str,
    region: str,
    kubernetes_version: str,
    placement: Placement,
    pools: Sequence[PoolView],
    pod_identity_agent: pulumi.Resource,
    opts: pulumi.ResourceOptions,
) -> Observability:
    """Declare the add-ons, the agent's IAM role, the dashboard and the alarms.

    The CloudWatch agent's pods start after ``pod_identity_agent`` (the platform's
    ``eks-pod-identity-agent`` add-on), or they run without credentials.
    """
    declared = Observability()
    if settings.node_monitoring_agent:
        declared.node_monitoring_addon = _addon(
            f"{name}-node-monitoring", NODE_MONITORING_ADDON, cluster_name, kubernetes_version, opts
        )
    if not settings.enabled:
        return declared
    if not pools:
        raise ObservabilityError(
            "observability.enabled is true but the stack declares no GPU pool: GPU metrics need a pool "
            "in gpuPools, or set observability.enabled to false"
        )
    role = aws.iam.Role(
        f"{name}-cloudwatch-agent", assume_role_policy=json.dumps(POD_IDENTITY_TRUST_POLICY), opts=opts
    )
    attachment = aws.iam.RolePolicyAttachment(
        f"{name}-cloudwatch-agent-policy",
        role=role.name,
        policy_arn=CLOUDWATCH_POLICY_ARN,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=role)),
    )
    declared.cloudwatch_addon = _addon(
        f"{name}-cloudwatch",
        CLOUDWATCH_ADDON,
        cluster_name,
        kubernetes_version,
        pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[pod_identity_agent, attachment])
        ),
        configuration_values=configuration_json(placement, container_logs=settings.container_logs),
        pod_identity_associations=[{"role_arn": role.arn, "service_account": CLOUDWATCH_SERVICE_ACCOUNT}],
    )
    declared.dashboard = aws.cloudwatch.Dashboard(
        f"{name}-dashboard",
        dashboard_name=f"{cluster_name}-gpu",
        dashboard_body=json.dumps(dashboard_body(cluster_name, region, pools, settings.gpu_namespaces)),
        opts=opts,
    )
    for short, args in alarms(cluster_name, settings).items():
        declared.alarms[short] = aws.cloudwatch.MetricAlarm(f"{name}-{short}", **args, opts=opts)
    return declared


def settings_from_config(section: Any) -> ObservabilitySettings:
    """Adapter from the validated config section (``PlatformConfig.observability``) to this module's settings."""
    alarms_section = getattr(section, "alarms", None)
    return ObservabilitySettings(
        enabled=section.enabled,
        container_logs=section.container_logs,
        node_monitoring_agent=section.node_monitoring_agent,
        gpu_namespaces=tuple(section.gpu_namespaces),
        sns_topic_arn=getattr(alarms_section, "sns_topic_arn", None),
        gpu_pod_pending_seconds=float(go_duration_seconds(alarms_section.gpu_pod_pending_for) or 0),
        node_not_ready_seconds=float(go_duration_seconds(alarms_section.node_not_ready_for) or 0),
    )


def pool_views(pools: Mapping[str, Any]) -> list[PoolView]:
    """The dashboard's view of ``config.gpu_pools`` (name -> pool config with instance types, GPU count)."""
    return [
        PoolView(name=name, instance_types=tuple(pool.instance_types), gpus_per_node=pool.gpus_per_node)
        for name, pool in pools.items()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """``--print-config K8S [--container-logs]`` or ``--check-config K8S --schema FILE`` (for bin/check-addon-versions)."""
    import argparse
    import sys

    from infra.workloads.placement import DEFAULT_PLACEMENT

    parser = argparse.ArgumentParser(prog="python -m infra.platform.observability")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--print-config", metavar="K8S", help="print the CloudWatch add-on's configurationValues"
    )
    mode.add_argument("--check-config", metavar="K8S", help="validate both variants against --schema")
    parser.add_argument("--container-logs", action="store_true", help="the variant with containerLogs on")
    parser.add_argument("--schema", help="the add-on's configurationSchema (describe-addon-configuration)")
    args = parser.parse_args(argv)
    kubernetes_version = args.print_config or args.check_config
    try:
        addon_version(CLOUDWATCH_ADDON, kubernetes_version)  # same refusal as the stack for an unpinned minor
    except ObservabilityError as error:
        print(error, file=sys.stderr)
        return 2
    if args.print_config:
        print(configuration_json(DEFAULT_PLACEMENT, container_logs=args.container_logs))
        return 0
    if not args.schema:
        parser.error("--check-config needs --schema FILE")
    with open(args.schema, encoding="utf-8") as handle:
        schema = json.load(handle)
    status = 0
    for logs in (False, True):
        sent = configuration_json(DEFAULT_PLACEMENT, container_logs=logs)
        errors = configuration_errors(schema, sent)
        print(f"{'REFUSED' if errors else 'ok':8} configurationValues {sent}")
        for error in errors:
            print(f"         {error}")
        status |= bool(errors)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
