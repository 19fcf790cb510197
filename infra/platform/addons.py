"""EKS add-ons pinned per Kubernetes version, and pinned Helm charts: no diff when nothing changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the policy pack imports this module's names without pulumi-aws
    import pulumi
    import pulumi_aws as aws
    import pulumi_kubernetes as k8s

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


def version(addon: str, kubernetes_version: str) -> str:
    return ADDON_VERSIONS[kubernetes_version][addon]


def addon(
    name: str,
    addon: str,
    cluster_name: str,
    kubernetes_version: str,
    opts: pulumi.ResourceOptions,
    **extra: Any,
) -> aws.eks.Addon:
    """An ``aws.eks.Addon`` at the pinned version, taking over the copy EKS may have bootstrapped."""
    import pulumi_aws as aws

    return aws.eks.Addon(
        name,
        cluster_name=cluster_name,
        addon_name=addon,
        addon_version=version(addon, kubernetes_version),
        resolve_conflicts_on_create=RESOLVE_CONFLICTS,
        resolve_conflicts_on_update=RESOLVE_CONFLICTS,
        **extra,
        opts=opts,
    )


def helm_release(name: str, chart: str, repository: str, **inputs: Any) -> k8s.helm.v3.Release:
    """A release of a pinned ``chart`` from ``repository`` (``oci://`` too; ``version``, ``namespace``, ``values``,
    ``opts`` as Release takes them): a failed install or upgrade rolls back, never half a release."""
    import pulumi_kubernetes as k8s

    if repository.startswith("oci://"):  # an OCI chart is named by its URL: no repository to add
        pinned = {"name": chart, "chart": f"{repository}/{chart}"}
    else:
        pinned = {"name": chart, "chart": chart, "repository_opts": {"repo": repository}}
    return k8s.helm.v3.Release(name, **pinned, atomic=True, cleanup_on_fail=True, timeout=600, **inputs)


if __name__ == "__main__":  # (Kubernetes version, add-on, version) per pin, for bin/check-addon-versions
    for k8s, pins in ADDON_VERSIONS.items():
        for name, pinned in pins.items():
            print(k8s, name, pinned)


def custom_resource(
    resource_name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.Resource:
    """An object of a chart's CRD as its ``manifest`` says it, under the type token pulumi-kubernetes gives a
    custom resource (``kubernetes:<apiVersion>:<kind>``). Not ``apiextensions.CustomResource``, which takes
    only ``spec`` beside the metadata: a WorkloadPriorityClass's ``value`` is a top-level field."""
    import pulumi

    token = f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}"
    return pulumi.CustomResource(token, resource_name, dict(manifest), opts)
