"""A team's training Job through Kueue: ``GpuJob(queue="default")`` in the team's namespace.

Kueue holds the Job suspended until the team's quota on the training pool allows it, then
admits it; the pods land on that pool's nodes (docs/teams.md). The namespace is the team's,
created by the platform from its ``teams:``: this stack does not declare it.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from infra import GpuJob, GpuJobArgs

config = pulumi.Config()
platform = pulumi.StackReference(config.require("platformStack"))
namespace = config.require("namespace")

# Talk to the platform's cluster with the kubeconfig it exports (a secret).
provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))

labels = {"app.kubernetes.io/name": "finetune"}
job = GpuJob(
    "finetune",
    GpuJobArgs(
        metadata={
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                "checkov.io/skip1": "CKV_K8S_43=the example takes its image from config; pin a digest there",
            },
        },
        spec={
            "backoffLimit": 1,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    # Not root: the security profile then gives the container the restricted defaults.
                    "securityContext": {"runAsUser": 10001, "runAsGroup": 10001},
                    "containers": [
                        {
                            "name": "train",
                            "image": config.require("image"),
                            "imagePullPolicy": "Always",
                            # Stands in for a training script: PyTorch sees the GPUs the pod was given.
                            "command": [
                                "python",
                                "-c",
                                "import torch; print(torch.cuda.device_count(), 'GPUs')",
                            ],
                            "resources": {
                                "requests": {"cpu": "16", "memory": "64Gi"},
                                "limits": {"cpu": "16", "memory": "64Gi"},
                            },
                            # Writes go to the emptyDir only.
                            "securityContext": {"readOnlyRootFilesystem": True},
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                        }
                    ],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
        # Both GPUs of one g5g.16xlarge: 2 of the team's training quota.
        gpus=2,
        pool="training",
        # The team's LocalQueue; Kueue admits the Job when the quota allows (the wait allows 4 h).
        queue="default",
        priority=config.get("priority"),  # optional: low, normal, high (unset: the team's default)
        # The contract as the platform exported it, with the teams' queues the Job is checked against.
        placement=platform.require_output("placement"),
    ),
    opts=pulumi.ResourceOptions(provider=provider),
)

# A training pod takes no connections: nothing is allowed in.
k8s.networking.v1.NetworkPolicy(
    "finetune",
    metadata={"name": "finetune", "namespace": namespace},
    spec={"podSelector": {"matchLabels": labels}, "policyTypes": ["Ingress"]},
    opts=pulumi.ResourceOptions(provider=provider),
)

pulumi.export("job", job.name)
pulumi.export("namespace", job.namespace)
