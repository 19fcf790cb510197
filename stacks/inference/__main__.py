"""An inference service on the GPU platform: the worked example of importing GpuDeployment."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from infra import GpuDeployment, GpuDeploymentArgs

config = pulumi.Config()
platform = pulumi.StackReference(config.require("platformStack"))
image = config.require("image")
replicas = config.get_int("replicas") or 1
namespace = config.get("namespace") or "inference"

# Talk to the platform's cluster with the kubeconfig it exports (a secret).
provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))
ns = k8s.core.v1.Namespace(
    "inference", metadata={"name": namespace}, opts=pulumi.ResourceOptions(provider=provider)
)

labels = {"app.kubernetes.io/name": "triton"}
server = GpuDeployment(
    "triton",
    GpuDeploymentArgs(
        metadata={"name": "triton", "namespace": ns.metadata["name"], "labels": labels},
        spec={
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
                    "containers": [
                        {
                            "name": "triton",
                            "image": image,
                            "args": [
                                "tritonserver",
                                "--model-repository=/models",
                                "--model-control-mode=explicit",
                            ],
                            "ports": [
                                {"name": "http", "containerPort": 8000},
                                {"name": "grpc", "containerPort": 8001},
                            ],
                            "resources": {
                                "requests": {"cpu": "2", "memory": "6Gi"},
                                "limits": {"memory": "6Gi"},
                            },
                            "readinessProbe": {"httpGet": {"path": "/v2/health/ready", "port": "http"}},
                            "volumeMounts": [{"name": "models", "mountPath": "/models"}],
                        }
                    ],
                    "volumes": [{"name": "models", "emptyDir": {}}],
                },
            },
        },
        gpus=1,
        # The contract as the platform exported it, so a platform with other names just works.
        placement=platform.require_output("placement"),
    ),
    opts=pulumi.ResourceOptions(provider=provider),
)

service = k8s.core.v1.Service(
    "triton",
    metadata={"name": "triton", "namespace": ns.metadata["name"]},
    spec={"selector": labels, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}]},
    opts=pulumi.ResourceOptions(provider=provider),
)

pulumi.export("deployment", server.name)
pulumi.export("namespace", server.namespace)
pulumi.export("service", service.metadata["name"])
