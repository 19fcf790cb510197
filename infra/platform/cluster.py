"""The EKS control plane: pulumi-eks ``eks.Cluster``, secrets encrypted with our KMS key."""

from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from infra.platform import addons
from infra.platform.config import PlatformConfig
from infra.platform.iam import in_partition, partition
from infra.platform.network import Network

LOG_TYPES = ("api", "audit", "authenticator")
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def secrets_key(name: str, opts: pulumi.ResourceOptions) -> aws.kms.Key:
    """Envelope encryption of Kubernetes Secrets in etcd, with yearly rotation."""
    return aws.kms.Key(
        name,
        description="EKS secrets envelope encryption",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        opts=opts,
    )


def access_entries(
    config: PlatformConfig, account_partition: pulumi.Input[str]
) -> dict[str, eks.AccessEntryArgs]:
    """``clusterAdmins`` as cluster-scoped ``AmazonEKSClusterAdminPolicy`` access entries (the
    access policy's ARN in the account's partition)."""
    secret = "clusterAdmins" in config.secret_keys
    entries = {}
    for index, arn in enumerate(config.cluster_admins):
        kind, _, path = arn.split(":", 5)[-1].partition("/")
        key = re.sub(r"[^a-z0-9-]", "-", f"{kind}-{path.rsplit('/', 1)[-1]}".lower())
        entries[f"admin-{index}" if secret else key] = eks.AccessEntryArgs(
            principal_arn=config.secret("clusterAdmins", arn),
            access_policies={
                "cluster-admin": eks.AccessPolicyAssociationArgs(
                    policy_arn=in_partition(CLUSTER_ADMIN_POLICY, account_partition),
                    access_scope={"type": "cluster"},
                )
            },
        )
    return entries


def _warn_if_creator_listed(caller_arn: str, admins: tuple[str, ...]) -> None:
    """The caller may be the creator, whom EKS already made admin: a second entry would fail."""
    parts = caller_arn.split(":", 5)
    if len(parts) < 6:
        return
    account, resource = parts[4], parts[5]
    name = resource.split("/")[1] if resource.startswith("assumed-role/") else resource.rsplit("/", 1)[-1]
    for arn in admins:
        if arn.split(":", 5)[4] == account and arn.rsplit("/", 1)[-1] == name:
            pulumi.log.warn(
                f"clusterAdmins lists {arn}, which is running this deployment: if it also created the "
                "cluster, EKS already gave it an admin access entry and CreateAccessEntry fails with "
                "ResourceInUseException; remove it from clusterAdmins in that case"
            )


def cluster(
    name: str,
    config: PlatformConfig,
    net: Network,
    *,
    key: aws.kms.Key,
    opts: pulumi.ResourceOptions,
) -> eks.Cluster:
    endpoint, version = config.endpoint, config.kubernetes_version
    conflicts = {  # as for every other add-on (addons.addon)
        "resolve_conflicts_on_create": eks.ResolveConflictsOnCreate(addons.RESOLVE_CONFLICTS),
        "resolve_conflicts_on_update": eks.ResolveConflictsOnUpdate(addons.RESOLVE_CONFLICTS),
    }
    if config.cluster_admins and "clusterAdmins" not in config.secret_keys:
        aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent)).arn.apply(
            lambda arn: _warn_if_creator_listed(arn, config.cluster_admins)
        )
    return eks.Cluster(
        name,
        name=config.cluster_name,
        version=version,
        vpc_id=net.vpc_id,
        private_subnet_ids=net.private_subnet_ids,
        public_subnet_ids=net.public_subnet_ids,
        authentication_mode=eks.AuthenticationMode.API,
        access_entries=access_entries(config, partition(opts)),
        skip_default_node_group=True,
        skip_default_security_groups=True,
        endpoint_private_access=endpoint.private_access,
        endpoint_public_access=endpoint.public_access,
        public_access_cidrs=config.secret("endpoint", [str(c) for c in endpoint.public_access_cidrs])
        if endpoint.public_access
        else None,
        encryption_config_key_arn=key.arn,
        enabled_cluster_log_types=list(LOG_TYPES),
        vpc_cni_options=eks.VpcCniOptionsArgs(
            addon_version=addons.version(addons.VPC_CNI, version), enable_network_policy=True, **conflicts
        ),
        kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(
            version=addons.version(addons.KUBE_PROXY, version), **conflicts
        ),
        opts=opts,
    )
