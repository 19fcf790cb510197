"""Operate the GPU nodes: GPU metrics from the CloudWatch add-on, node health for repair, dashboard, alarms."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from infra.platform import addons
from infra.platform.gpu_metrics import alarms, dashboard_body
from infra.platform.iam import POD_IDENTITY_TRUST_POLICY, in_partition, partition
from infra.workloads.placement import Placement

if TYPE_CHECKING:
    from infra.platform.config import PlatformConfig

CLOUDWATCH_SERVICE_ACCOUNT = "cloudwatch-agent"
CLOUDWATCH_POLICY_ARN = "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"


def configuration_json(placement: Placement, *, container_logs: bool = False) -> str:
    """The add-on's exact configurationValues: every agent tolerates the contract's taint (and, where the cluster
    has both kinds of pool, Karpenter's provisioner taint: decision 0098), and only that."""
    values = {"tolerations": placement.agent_tolerations(), "containerLogs": {"enabled": container_logs}}
    return json.dumps(values, sort_keys=True)


def observability(
    name: str, platform: PlatformConfig, *, pod_identity_agent: pulumi.Resource, opts: pulumi.ResourceOptions
) -> None:
    """Declare the add-ons, the agent's IAM role, the dashboard and the alarms."""
    config, cluster_name = platform.observability, platform.cluster_name
    on_cluster = (cluster_name, platform.kubernetes_version)
    if config.node_monitoring_agent:
        addons.addon(f"{name}-node-monitoring", addons.NODE_MONITORING_ADDON, *on_cluster, opts)
    if not config.enabled:
        return
    role = aws.iam.Role(
        f"{name}-cloudwatch-agent", assume_role_policy=json.dumps(POD_IDENTITY_TRUST_POLICY), opts=opts
    )
    attachment = aws.iam.RolePolicyAttachment(
        f"{name}-cloudwatch-agent-policy",
        role=role.name,
        policy_arn=in_partition(CLOUDWATCH_POLICY_ARN, partition(opts)),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=role)),
    )
    addons.addon(
        f"{name}-cloudwatch",
        addons.CLOUDWATCH_ADDON,
        *on_cluster,
        pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[pod_identity_agent, attachment])
        ),
        configuration_values=configuration_json(platform.contract, container_logs=config.container_logs),
        pod_identity_associations=[{"role_arn": role.arn, "service_account": CLOUDWATCH_SERVICE_ACCOUNT}],
    )
    aws.cloudwatch.Dashboard(
        f"{name}-dashboard",
        dashboard_name=f"{cluster_name}-gpu",
        dashboard_body=json.dumps(
            dashboard_body(cluster_name, platform.region, platform.pools, config.gpu_namespaces)
        ),
        opts=opts,
    )
    for short, args in alarms(cluster_name, config.alarms).items():
        aws.cloudwatch.MetricAlarm(f"{name}-{short}", **args, opts=opts)


def main(argv: Sequence[str] | None = None) -> int:
    """``--print-config K8S [--container-logs]`` or ``--check-config K8S --schema FILE`` (for bin/check-addon-versions)."""
    import argparse

    from infra.workloads.placement import DEFAULT_PLACEMENT

    parser = argparse.ArgumentParser(prog="python -m infra.platform.observability")
    mode = parser.add_mutually_exclusive_group(required=True)
    versions = {"metavar": "K8S", "choices": addons.ADDON_VERSIONS}  # the minors with pinned add-ons
    mode.add_argument("--print-config", **versions, help="print the CloudWatch add-on's configurationValues")
    mode.add_argument("--check-config", **versions, help="validate both variants against --schema")
    parser.add_argument("--container-logs", action="store_true", help="the variant with containerLogs on")
    parser.add_argument("--schema", help="the add-on's configurationSchema (describe-addon-configuration)")
    args = parser.parse_args(argv)
    if args.print_config:
        print(configuration_json(DEFAULT_PLACEMENT, container_logs=args.container_logs))
        return 0
    if not args.schema:
        parser.error("--check-config needs --schema FILE")
    import jsonschema  # a dev tool: only bin/check-addon-versions needs it

    schema = json.loads(Path(args.schema).read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)  # the schema's own $schema draft
    status = 0
    for logs in (False, True):
        sent = configuration_json(DEFAULT_PLACEMENT, container_logs=logs)
        errors = sorted(
            f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in validator.iter_errors(json.loads(sent))
        )
        print(f"{'REFUSED' if errors else 'ok':8} configurationValues {sent}")
        for error in errors:
            print(f"         {error}")
        status |= bool(errors)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
