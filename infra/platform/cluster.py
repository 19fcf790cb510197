"""The EKS control plane: pulumi-eks ``eks.Cluster``, secrets encrypted with our KMS key.

API authentication mode (access entries, no aws-auth ConfigMap), no default node
group and no extra security groups: managed nodes use the cluster's primary
security group, which EKS manages.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from infra.platform.config import PlatformConfig

LOG_TYPES = ("api", "audit", "authenticator")


def secrets_key(name: str, opts: pulumi.ResourceOptions) -> aws.kms.Key:
    """Envelope encryption of Kubernetes Secrets in etcd, with yearly rotation."""
    return aws.kms.Key(
        name,
        description="EKS secrets envelope encryption",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        opts=opts,
    )


def cluster(
    name: str,
    config: PlatformConfig,
    *,
    vpc_id: pulumi.Input[str],
    private_subnet_ids: pulumi.Input[list[str]],
    public_subnet_ids: pulumi.Input[list[str]],
    key: aws.kms.Key,
    opts: pulumi.ResourceOptions,
) -> eks.Cluster:
    endpoint = config.endpoint
    return eks.Cluster(
        name,
        name=config.cluster_name,
        version=config.kubernetes_version,
        vpc_id=vpc_id,
        private_subnet_ids=private_subnet_ids,
        public_subnet_ids=public_subnet_ids,
        authentication_mode=eks.AuthenticationMode.API,
        skip_default_node_group=True,
        skip_default_security_groups=True,
        endpoint_private_access=endpoint.private_access,
        endpoint_public_access=endpoint.public_access,
        public_access_cidrs=list(endpoint.public_access_cidrs) if endpoint.public_access else None,
        encryption_config_key_arn=key.arn,
        enabled_cluster_log_types=list(LOG_TYPES),
        opts=opts,
    )
