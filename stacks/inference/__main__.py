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
# A pool the platform exports (its `placement` output lists them); unset: any GPU pool.
pool = config.get("pool")

# Talk to the platform's cluster with the kubeconfig it exports (a secret).
provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))
ns = k8s.core.v1.Namespace(
    "inference", metadata={"name": namespace}, opts=pulumi.ResourceOptions(provider=provider)
)

labels = {"app.kubernetes.io/name": "triton"}
server = GpuDeployment(
    "triton",
    GpuDeploymentArgs(
        metadata={
            "name": "triton",
            "namespace": ns.metadata["name"],
            "labels": labels,
            "annotations": {
                # NGC publishes Triton by tag; pin a digest in production (`image` config).
                "checkov.io/skip1": "CKV_K8S_43=the example takes its image from config; pin a digest there",
            },
        },
        spec={
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {"runAsUser": 10001, "runAsGroup": 10001},
                    "containers": [
                        {
                            "name": "triton",
                            "image": image,
                            "imagePullPolicy": "Always",
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
                                "limits": {"cpu": "3", "memory": "6Gi"},
                            },
                            "readinessProbe": {"httpGet": {"path": "/v2/health/ready", "port": "http"}},
                            "livenessProbe": {"httpGet": {"path": "/v2/health/live", "port": "http"}},
                            # Writes go to the emptyDirs only.
                            "securityContext": {"readOnlyRootFilesystem": True},
                            "volumeMounts": [
                                {"name": "models", "mountPath": "/models"},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }
                    ],
                    "volumes": [{"name": "models", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
                },
            },
        },
        gpus=1,
        pool=pool,
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

# Only clients in the namespace reach the server; nothing else is allowed in.
k8s.networking.v1.NetworkPolicy(
    "triton",
    metadata={"name": "triton", "namespace": ns.metadata["name"]},
    spec={
        "podSelector": {"matchLabels": labels},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"podSelector": {}}],
                "ports": [{"port": 8000, "protocol": "TCP"}, {"port": 8001, "protocol": "TCP"}],
            }
        ],
    },
    opts=pulumi.ResourceOptions(provider=provider),
)

pulumi.export("deployment", server.name)
pulumi.export("namespace", server.namespace)
pulumi.export("service", service.metadata["name"])
