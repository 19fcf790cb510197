"""EKS add-ons, each pinned per Kubernetes version so a preview shows no change when nothing changed.

pulumi-eks, left alone, looks up the most recent add-on version on every run
(``aws.eks.getAddonVersion(mostRecent=true)`` in ``nodejs/eks/cluster/cluster.ts``
and ``addons/cni-addon.ts``), so a new eksbuild shows up as a diff nobody asked
for. Here every add-on has a version from this table, and a ``kubernetesVersion``
bump moves all of them with it.

Versions as published for each Kubernetes minor (AWS EKS user guide,
managing-kube-proxy / managing-coredns tables; vpc-cni and eks-pod-identity-agent
as `aws eks describe-addon-versions` reported them in 2026-09; the CloudWatch and
node monitoring add-ons from their charts' versions, 6.4.0 and 1.7.0). None could
be confirmed against the live API from here: ``bin/check-addon-versions`` asks AWS
for every row (the pull-request workflow runs it before ``pulumi preview``).
"""

from __future__ import annotations

from collections.abc import Mapping

VPC_CNI = "vpc-cni"
KUBE_PROXY = "kube-proxy"
COREDNS = "coredns"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
NODE_MONITORING_ADDON = "eks-node-monitoring-agent"

ADDON_VERSIONS: Mapping[str, Mapping[str, str]] = {
    "1.35": {
        VPC_CNI: "v1.22.4-eksbuild.3",
        KUBE_PROXY: "v1.35.3-eksbuild.13",
        COREDNS: "v1.14.3-eksbuild.3",
        POD_IDENTITY_AGENT: "v1.3.10-eksbuild.3",
        CLOUDWATCH_ADDON: "v6.4.0-eksbuild.1",
        NODE_MONITORING_ADDON: "v1.7.0-eksbuild.1",
    },
    "1.36": {
        VPC_CNI: "v1.22.4-eksbuild.3",
        KUBE_PROXY: "v1.36.0-eksbuild.14",
        COREDNS: "v1.14.3-eksbuild.3",
        POD_IDENTITY_AGENT: "v1.3.10-eksbuild.3",
        CLOUDWATCH_ADDON: "v6.4.0-eksbuild.1",
        NODE_MONITORING_ADDON: "v1.7.0-eksbuild.1",
    },
}

# On update, our configuration wins over what someone changed by hand in the cluster
# (the add-on's fields only; EKS never touches fields the add-on does not manage).
RESOLVE_CONFLICTS = "OVERWRITE"

# The VPC CNI's network-policy agent: without it NetworkPolicies are accepted by the
# API and enforced by nothing (AWS EKS user guide, cni-network-policy-configure).
VPC_CNI_CONFIGURATION = {"enableNetworkPolicy": "true"}


def version(addon: str, kubernetes_version: str) -> str:
    return ADDON_VERSIONS[kubernetes_version][addon]


def rows() -> list[tuple[str, str, str]]:
    """(Kubernetes version, add-on, version) for every pin, for ``bin/check-addon-versions``."""
    return [(k8s, addon, pinned) for k8s, pins in ADDON_VERSIONS.items() for addon, pinned in pins.items()]


if __name__ == "__main__":
    for row in rows():
        print(*row)
