"""A GpuDeployment that a HorizontalPodAutoscaler scales: created at one replica, held at two or more by the HPA."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from infra import GpuDeployment

config = pulumi.Config()
provider = k8s.Provider("local", kubeconfig=config.require_secret("kubeconfig"))
opts = pulumi.ResourceOptions(provider=provider)
namespace = k8s.core.v1.Namespace("ns", metadata={"name": config.require("namespace")}, opts=opts)

labels = {"app": "llm"}
llm = GpuDeployment(
    "llm",
    metadata={"name": "llm", "namespace": namespace.metadata["name"]},
    spec={
        "replicas": 1,  # the count at create; the HPA owns it afterwards
        "selector": {"matchLabels": labels},
        "template": {
            # A change here (the `revision` config) is an update of the Deployment: a rollout.
            "metadata": {
                "labels": labels,
                "annotations": {"example.com/revision": config.require("revision")},
            },
            "spec": {
                "containers": [
                    {
                        "name": "server",
                        "image": "registry.invalid/llm:1",  # kwok runs no image
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ]
            },
        },
    },
    gpus=1,
    placement=config.require_object("placement"),
    autoscaled=True,
    check_image_architecture=False,
    opts=opts,
)

hpa = k8s.autoscaling.v2.HorizontalPodAutoscaler(
    "llm",
    metadata={"name": "llm", "namespace": llm.namespace},
    spec={
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": llm.name},
        "minReplicas": 2,  # above the count at create: the HPA controller scales up at once, metrics or not
        "maxReplicas": 3,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
            }
        ],
    },
    opts=opts,
)

pulumi.export("deployment", llm.name)
pulumi.export("namespace", llm.namespace)
pulumi.export("hpa", hpa.metadata["name"])
