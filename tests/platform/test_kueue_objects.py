"""Kueue's objects for ``teams:``: flavors that agree with GpuJob's placement, queues scoped to a team."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from infra.platform import kueue_objects
from infra.platform.config import load
from infra.platform.kueue import VERSION, helm_values
from infra.tooling.pinned_chart import kueue_version
from infra.workloads.job import place_job_spec
from infra.workloads.placement import GpuPool, Placement
from infra.workloads.queues import COHORT, PRIORITY_CLASSES
from infra.workloads.scheduling import Node, placeable_on

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dev():
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    project = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("eks-gpu-platform:")}
    return load(project, region="us-west-2", default_cluster_name="eks-gpu-platform-dev")


def _by_kind(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def _kueue_merge(pod: dict, flavor: dict) -> dict:
    """What Kueue does to an admitted Job's pod template (pkg/podset/podset.go Merge): the flavor's
    nodeLabels join the nodeSelector (a different value for a key there is a permanent error),
    its tolerations are appended unless an equal one is there."""
    merged = copy.deepcopy(pod)
    selector = merged.setdefault("nodeSelector", {})
    for key, value in flavor["spec"]["nodeLabels"].items():
        if key in selector and selector[key] != value:
            raise ValueError(f"conflict for nodeSelector: {key}")
        selector[key] = value
    tolerations = merged.setdefault("tolerations", [])
    tolerations += [t for t in flavor["spec"]["tolerations"] if t not in tolerations]
    return merged


def test_every_object_speaks_the_storage_version_of_kueue_0_17() -> None:
    assert kueue_objects.API_VERSION == "kueue.x-k8s.io/v1beta2"
    assert VERSION == kueue_version() == "0.17.0"


def test_no_teams_no_objects(dev) -> None:
    assert kueue_objects.objects(dev.contract, {}) == []


@pytest.mark.parametrize("pool", ["inference", "training"])
def test_a_gpu_job_on_a_pool_is_what_kueue_admits_it_as(dev, pool) -> None:
    """The flavor gives exactly the placement GpuJob already gave: the merge neither fails nor changes it."""
    flavor = _by_kind(kueue_objects.objects(dev.contract, dev.teams), "ResourceFlavor")[pool]
    spec = place_job_spec(
        {"template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}}, dev.contract, pool=pool
    )
    pod = spec["template"]["spec"]
    assert _kueue_merge(pod, flavor) == pod


def test_a_job_pinned_to_another_pool_would_conflict_with_the_flavor(dev) -> None:
    """Why the flavor's labels and GpuJob's pool must agree: Kueue refuses the admission for good."""
    flavor = _by_kind(kueue_objects.objects(dev.contract, dev.teams), "ResourceFlavor")["inference"]
    spec = place_job_spec(
        {"template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}}, dev.contract, pool="training"
    )
    with pytest.raises(ValueError, match="eks-gpu/pool"):
        _kueue_merge(spec["template"]["spec"], flavor)


def test_one_flavor_per_pool_with_its_labels_and_the_contract_toleration(dev) -> None:
    flavors = _by_kind(kueue_objects.objects(dev.contract, dev.teams), "ResourceFlavor")
    assert set(flavors) == {"inference", "training"}
    assert flavors["training"]["spec"] == {
        "nodeLabels": {"GPU": "true", "eks-gpu/pool": "training"},
        "tolerations": [{"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    }


MIXED = Placement(
    pools=(GpuPool("inference", gpus_per_node=1), GpuPool("burst", gpus_per_node=1, provisioner="karpenter"))
)


def _pool_node(pool: str) -> Node:
    return Node(pool, MIXED.pool_labels(pool), tuple(MIXED.pool_taints(pool)), {"nvidia.com/gpu": 1})


@pytest.mark.parametrize("pool", ["inference", "burst"])
def test_in_a_mixed_cluster_the_flavor_gives_what_gpu_job_gives_its_pool(pool) -> None:
    """The merge changes nothing of a GpuJob's pod, on a node-group pool as on a Karpenter one."""
    spec = place_job_spec(
        {"template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}}, MIXED, pool=pool
    )
    pod = spec["template"]["spec"]
    assert _kueue_merge(pod, kueue_objects.resource_flavor(MIXED, pool)) == pod


def test_a_hand_written_queued_job_admitted_to_a_karpenter_flavor_can_run_there() -> None:
    """A Job that is not a GpuJob, with only the GPU toleration: the flavor adds the pool's label and the
    provisioner toleration the pool's nodes need in a mixed cluster (decision 0098), else it stays Pending."""
    pod = {
        "containers": [{"name": "t", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
        "tolerations": [MIXED.toleration()],
        "nodeSelector": MIXED.node_selector(),
    }
    admitted = _kueue_merge(pod, kueue_objects.resource_flavor(MIXED, "burst"))
    assert placeable_on(admitted, [_pool_node("inference"), _pool_node("burst")]) == ["burst"]


def test_each_team_has_a_cluster_queue_in_one_cohort_scoped_to_its_namespace(dev) -> None:
    queues = _by_kind(kueue_objects.objects(dev.contract, dev.teams), "ClusterQueue")
    assert set(queues) == {"vision", "speech"}
    assert {q["spec"]["cohortName"] for q in queues.values()} == {COHORT}
    vision = queues["vision"]["spec"]
    assert vision["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "vision"}}
    assert vision["preemption"] == {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "Never"},
        "withinClusterQueue": "LowerPriority",
    }
    (group,) = vision["resourceGroups"]
    assert group == {
        "coveredResources": ["nvidia.com/gpu"],
        "flavors": [
            # Slices on the time-sliced pool: 2 of its 8.
            {
                "name": "inference",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2", "lendingLimit": "1"}],
            },
            {
                "name": "training",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2", "borrowingLimit": "2"}],
            },
        ],
    }


def test_each_team_has_a_default_local_queue_in_its_namespace(dev) -> None:
    local = [o for o in kueue_objects.objects(dev.contract, dev.teams) if o["kind"] == "LocalQueue"]
    assert [(o["metadata"], o["spec"]) for o in local] == [
        ({"name": "default", "namespace": "vision"}, {"clusterQueue": "vision"}),
        ({"name": "default", "namespace": "speech"}, {"clusterQueue": "speech"}),
    ]


def test_the_platform_priority_classes(dev) -> None:
    classes = _by_kind(kueue_objects.objects(dev.contract, dev.teams), "WorkloadPriorityClass")
    assert {name: c["value"] for name, c in classes.items()} == dict(PRIORITY_CLASSES)
    assert "spec" not in classes["high"]  # value is a top-level field of a WorkloadPriorityClass


def test_manager_config_scopes_jobs_to_the_teams_and_quota_to_gpus(dev) -> None:
    config = kueue_objects.manager_config(dev.teams)
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["speech", "vision"]}
        ]
    }
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert "nvidia.com/gpu" not in config["resources"]["excludeResourcePrefixes"]
    assert {"cpu", "memory"} <= set(config["resources"]["excludeResourcePrefixes"])
    assert config["waitForPodsReady"]["timeout"] == "30m"


@pytest.fixture(scope="module")
def rendered(dev):
    from infra.tooling.pinned_chart import kueue_chart_dir, render

    try:
        return render(helm_values(dev), release="kueue", namespace="kueue-system", chart=kueue_chart_dir())
    except (FileNotFoundError, RuntimeError) as error:  # no helm or no Go module here
        pytest.skip(str(error))


def test_the_pinned_charts_job_webhook_acts_only_in_the_teams_namespaces(rendered) -> None:
    """Rendered by helm from the pinned chart: a Job outside the teams' namespaces never meets Kueue's
    webhook, which fails closed while the controller is down."""
    mutating = next(o for o in rendered if o["kind"] == "MutatingWebhookConfiguration")
    job = next(w for w in mutating["webhooks"] if w["name"] == "mjob.kb.io")
    assert job["failurePolicy"] == "Fail"
    assert job["namespaceSelector"]["matchExpressions"][0]["values"] == ["speech", "vision"]
    assert not [o for o in rendered if o["kind"] == "DaemonSet"]  # no node agent (infra/tooling/agents.py)
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    (manager,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "manager"]
    assert manager["image"] == "registry.k8s.io/kueue/kueue:v0.17.0"
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"node-role": "system"}


def test_the_controller_survives_a_node_drain_so_api_discovery_never_loses_kueues_apiservices(
    rendered,
) -> None:
    """The chart always registers the visibility APIServices; with no Kueue pod serving them, discovery
    fails and namespace deletion stalls in every namespace. Two replicas, spread, and a budget of one."""
    assert {o["metadata"]["name"] for o in rendered if o["kind"] == "APIService"} >= {
        "v1beta2.visibility.kueue.x-k8s.io"
    }
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 2
    (spread,) = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert spread["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    (budget,) = [o for o in rendered if o["kind"] == "PodDisruptionBudget"]
    assert budget["spec"] == {"minAvailable": 1, "selector": deployment["spec"]["selector"]}


def test_every_object_is_valid_for_the_pinned_crds(dev) -> None:
    from infra.tooling.manifests import ManifestError, validate_manifest

    objects = kueue_objects.objects(dev.contract, dev.teams)
    for manifest in objects:
        validate_manifest(manifest, "1.35")
    queue = copy.deepcopy(_by_kind(objects, "ClusterQueue")["vision"])
    queue["spec"]["preemption"]["withinClusterQueue"] = "Always"
    with pytest.raises(ManifestError, match=r"spec\.preemption\.withinClusterQueue: 'Always' is not one of"):
        validate_manifest(queue, "1.35")
