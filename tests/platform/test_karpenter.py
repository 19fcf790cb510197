"""Karpenter pools under the mock engine: what the program declares, and what it refuses before that.

The scheduling behaviour of these objects is proven by Karpenter's real core in
tests/cluster/test_karpenter.py; here: the contract they carry, the AWS half (IAM, queue, rules)
against botocore's models, and the bad input.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.platform import nodepool
from infra.platform.config import ConfigError, load
from infra.platform.karpenter import EVENT_RULES, NAMESPACE, SERVICE_ACCOUNT, controller_policy, queue_policy
from infra.platform.node_pools import AUTOSCALED_TAG, SYSTEM_LABELS
from infra.tooling.manifests import manifest_of
from infra.tooling.offline import Run
from infra.workloads.placement import EKS_TO_K8S_EFFECT, GPU_RESOURCE
from localcluster import karpenter as pins
from tests.platform.test_gpu_platform import _validate

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@pytest.fixture(scope="module")
def stack() -> tuple[Any, Run]:
    return pins.platform_run()


def _one(run: Run, kind: str, name: str) -> dict[str, Any]:
    return next(m for m in pins.declared(run, kind) if m["metadata"]["name"] == name)


def _release(run: Run, name: str) -> Any:
    return run.one("kubernetes:helm.sh/v3:Release", name)


def test_a_karpenter_pool_gets_a_nodepool_and_no_node_group(stack: tuple[Any, Run]) -> None:
    _, run = stack
    groups = {g.inputs["nodeGroupNamePrefix"] for g in run.of_type(NODE_GROUP)}
    assert groups == {"system-", "gpu-inference-", "gpu-training-"}
    assert {m["metadata"]["name"] for m in pins.declared(run, "NodePool")} == {"gpu-burst", "gpu-batch"}


def test_cluster_autoscaler_never_manages_a_karpenter_pool(stack: tuple[Any, Run]) -> None:
    _, run = stack
    values = _release(run, "cluster-autoscaler").inputs["values"]
    patterns = [p for group in values.get("expanderPriorities", {}).values() for p in group]
    assert patterns and not any("burst" in p or "batch" in p for p in patterns)
    tagged = [t.name for t in run.of_type("aws:autoscaling/tag:Tag")]
    assert tagged and not any("burst" in t or "batch" in t for t in tagged)
    assert all(
        t.inputs["tag"]["key"] != AUTOSCALED_TAG or "burst" not in t.name
        for t in run.of_type("aws:autoscaling/tag:Tag")
    )


def test_no_autoscaler_when_every_pool_is_karpenters() -> None:
    only = {name: {**pool, "provisioner": "karpenter"} for name, pool in pins.POOLS.items()}
    # Every pool a 1-GPU batch pool: the dev teams' quotas would not fit, and are not what this is about.
    pools = {**only, **{p: {**only["batch"]} for p in ("inference", "training")}}
    _, run = pins.platform_run(pools, top={"teams": {}})
    assert [
        r.name for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.name == "cluster-autoscaler"
    ] == []
    assert [g.inputs["nodeGroupNamePrefix"] for g in run.of_type(NODE_GROUP)] == ["system-"]


def test_the_nodepool_carries_what_the_same_pool_as_a_node_group_carries(stack: tuple[Any, Run]) -> None:
    """Taint, contract label, pool label and plugin config label: the same on both provisioners."""
    as_group = {**pins.POOLS["burst"], "provisioner": "managedNodeGroup"}
    as_group.pop("karpenter")
    _, run = pins.platform_run({"burst": as_group})
    group = next(g for g in run.of_type(NODE_GROUP) if g.inputs["nodeGroupNamePrefix"] == "gpu-burst-")
    template = _one(stack[1], "NodePool", "gpu-burst")["spec"]["template"]
    ca_only = {"k8s.amazonaws.com/accelerator"}  # Cluster Autoscaler's GPU label, for node groups only
    assert template["metadata"]["labels"] == {
        k: v for k, v in group.inputs["labels"].items() if k not in ca_only
    }
    assert template["spec"]["taints"] == [
        {"key": t["key"], "value": t["value"], "effect": EKS_TO_K8S_EFFECT[t["effect"]]}
        for t in group.inputs["taints"]
    ] + [stack[0].contract.provisioner_taint()]  # node groups too in this stack: decision 0098
    requirements = {r["key"]: r["values"] for r in template["spec"]["requirements"]}
    assert requirements == {
        "kubernetes.io/arch": ["arm64"],
        "kubernetes.io/os": ["linux"],
        "node.kubernetes.io/instance-type": group.inputs["instanceTypes"],
        nodepool.CAPACITY_TYPE_LABEL: ["spot", "on-demand"],
    }


def test_gpu_limit_and_disruption_come_from_the_pool(stack: tuple[Any, Run]) -> None:
    burst, batch = (_one(stack[1], "NodePool", f"gpu-{p}")["spec"] for p in ("burst", "batch"))
    assert burst["limits"] == {GPU_RESOURCE: "8"}  # maxSize 2 x 1 GPU x 4 slices: counted as advertised
    assert batch["limits"] == {GPU_RESOURCE: "2"}
    assert batch["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "20s",
        "budgets": [{"nodes": "1"}],
    }


def test_a_karpenter_node_is_never_expired_outside_the_pools_budget(stack: tuple[Any, Run]) -> None:
    """Unset, the NodePool CRD defaults expireAfter to 720h (sigs.k8s.io/karpenter v1.15.0
    pkg/apis/crds/karpenter.sh_nodepools.yaml:237), and the expiration controller deletes the NodeClaim
    when it is due, with no disruption budget asked (pkg/controllers/nodeclaim/expiration/controller.go:72-82):
    every GPU node, training or serving, would be drained after 30 days. A node group's nodes never
    expire; Karpenter's are replaced only by the budgeted methods (drift, consolidation)."""
    for pool in ("burst", "batch"):
        template = _one(stack[1], "NodePool", f"gpu-{pool}")["spec"]["template"]["spec"]
        assert template["expireAfter"] == "Never"


def test_a_time_sliced_pool_tells_karpenter_its_slices_and_a_whole_gpu_pool_does_not(
    stack: tuple[Any, Run],
) -> None:
    overlays = pins.declared(stack[1], "NodeOverlay")
    assert [o["metadata"]["name"] for o in overlays] == ["gpu-burst"]
    assert overlays[0]["spec"] == {
        "requirements": [{"key": nodepool.NODEPOOL_LABEL, "operator": "In", "values": ["gpu-burst"]}],
        "capacity": {GPU_RESOURCE: "4"},
    }
    gates = _release(stack[1], "karpenter").inputs["values"]["settings"]["featureGates"]
    assert gates["nodeOverlay"] is True


def test_the_node_class_is_imdsv2_encrypted_private_and_the_karpenter_node_role(
    stack: tuple[Any, Run],
) -> None:
    _, run = stack
    spec = _one(run, "EC2NodeClass", "gpu-batch")["spec"]
    role = run.one("aws:iam/role:Role", "karpenter-node")
    assert spec["role"] == role.outputs["name"]
    assert spec["amiSelectorTerms"] == [{"alias": nodepool.AMI_ALIAS}]
    assert spec["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
    }
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeType": "gp3",
                "encrypted": True,
                "deleteOnTermination": True,
                "volumeSize": "100Gi",
            },
        }
    ]
    assert spec["subnetSelectorTerms"] == [{"tags": {nodepool.DISCOVERY_TAG: "eks-gpu-platform-dev"}}]
    # A new VPC's private subnets carry the tag from awsx (a second owner of their tags would fight it).
    private = run.one("awsx:ec2:Vpc").inputs["subnetSpecs"][0]
    assert private["type"] == "Private" and private["tags"][nodepool.DISCOVERY_TAG] == "eks-gpu-platform-dev"
    assert [t for t in run.of_type("aws:ec2/tag:Tag") if t.inputs["key"] == nodepool.DISCOVERY_TAG] == []
    access = run.one("aws:eks/accessEntry:AccessEntry", "karpenter-node-access")
    assert access.inputs["type"] == "EC2_LINUX" and access.inputs["principalArn"] == role.outputs["arn"]


def test_the_controller_runs_on_the_system_nodes_with_pod_identity(stack: tuple[Any, Run]) -> None:
    _, run = stack
    release = _release(run, "karpenter")
    assert release.inputs["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert release.inputs["version"] == nodepool.VERSION and release.inputs["skipCrds"] is True
    assert _release(run, "karpenter-crd").inputs["version"] == nodepool.VERSION
    values = release.inputs["values"]
    assert values["nodeSelector"] == SYSTEM_LABELS
    association = run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-identity")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == (
        NAMESPACE,
        SERVICE_ACCOUNT,
    )
    assert values["serviceAccount"]["name"] == SERVICE_ACCOUNT and release.inputs["namespace"] == NAMESPACE
    custom = [r for r in run.resources if r.type.startswith("kubernetes:karpenter")]
    assert custom and all(release.urn in r.dependencies for r in custom)


def test_one_version_for_chart_controller_and_the_core_the_tests_run() -> None:
    assert pins.version() == nodepool.VERSION
    from infra.tooling import gomod

    assert f"v{nodepool.VERSION}" == gomod.pinned_version(pins.AWS_PINS, pins.AWS_PROVIDER)


POLICY_ARGS = {
    "cluster_name": "eks-gpu-platform-dev",
    "region": "us-west-2",
    "account_id": "123456789012",
    "partition": "aws",
    "queue_arn": "arn:aws:sqs:us-west-2:123456789012:karpenter-interruptions",
    "node_role_arn": "arn:aws:iam::123456789012:role/karpenter-node",
}


def test_the_controller_may_only_touch_what_this_cluster_owns() -> None:
    statements = controller_policy(**POLICY_ARGS)["Statement"]
    owned = "kubernetes.io/cluster/eks-gpu-platform-dev"
    for s in statements:
        actions = [s["Action"]] if isinstance(s["Action"], str) else s["Action"]
        verbs = ("Terminate", "Delete", "CreateTags", "Tag", "Add", "Remove")
        mutating = [
            a for a in actions if a.startswith(("ec2:", "iam:")) and a.split(":")[1].startswith(verbs)
        ]
        if mutating:  # EC2 and IAM by tag; the queue's messages by its ARN
            assert owned in json.dumps(s["Condition"]), s["Sid"]
    passes = [s for s in statements if s["Action"] == "iam:PassRole"]
    assert [s["Resource"] for s in passes] == [POLICY_ARGS["node_role_arn"]]
    _validate(
        "iam",
        "PutRolePolicy",
        {
            "RoleName": "karpenter-controller",
            "PolicyName": "karpenter",
            "PolicyDocument": json.dumps(controller_policy(**POLICY_ARGS)),
        },
    )


def test_the_interruption_queue_and_rules_are_valid_requests(stack: tuple[Any, Run]) -> None:
    _, run = stack
    queue = run.one("aws:sqs/queue:Queue", "karpenter-interruptions")
    assert queue.inputs["sqsManagedSseEnabled"] is True
    _validate("sqs", "CreateQueue", {
        "QueueName": "karpenter-interruptions",
        "Attributes": {"MessageRetentionPeriod": str(queue.inputs["messageRetentionSeconds"]), "SqsManagedSseEnabled": "true"},
    })  # fmt: skip
    assert queue.urn in run.one("aws:sqs/queuePolicy:QueuePolicy", "karpenter-interruptions").dependencies
    policy = json.dumps(queue_policy(POLICY_ARGS["queue_arn"]))
    assert json.loads(policy)["Statement"][0]["Principal"] == {
        "Service": ["events.amazonaws.com", "sqs.amazonaws.com"]
    }
    _validate(
        "sqs", "SetQueueAttributes", {"QueueUrl": "https://sqs/queue", "Attributes": {"Policy": policy}}
    )
    rules = {r.name.removeprefix("karpenter-"): r for r in run.of_type("aws:cloudwatch/eventRule:EventRule")}
    assert set(rules) == set(EVENT_RULES)
    for name, rule in rules.items():
        source, detail = EVENT_RULES[name]
        assert json.loads(rule.inputs["eventPattern"]) == {"source": [source], "detail-type": [detail]}
        _validate("events", "PutRule", {"Name": rule.name, "EventPattern": rule.inputs["eventPattern"]})
    targets = run.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == len(EVENT_RULES) and all(queue.urn in t.dependencies for t in targets)
    _validate(
        "events", "PutTargets", {"Rule": "r", "Targets": [{"Id": "queue", "Arn": POLICY_ARGS["queue_arn"]}]}
    )


# Bad input: refused before anything is declared, naming the key.
E = {"endpoint": {"publicAccess": False}}


def _load(pool: dict[str, Any], **top: Any) -> Any:
    return load(
        {**E, **top, "gpuPools": {"p": {"provisioner": "karpenter", **pool}}},
        region="us-west-2",
        default_cluster_name="c",
    )


@pytest.mark.parametrize(
    ("pool", "says"),
    [
        ({"instanceTypes": ["g5.xlarge"]}, "gpuPools.p.instanceTypes[0] must be one of g5g.xlarge"),
        ({"instanceTypes": ["t4g.large"]}, "gpuPools.p.instanceTypes[0] must be one of g5g.xlarge"),
        (
            {"karpenter": {"gpuLimit": 1}, "instanceTypes": ["g5g.16xlarge"]},
            "gpuPools.p.karpenter.gpuLimit (1) is below what one node advertises (2",
        ),
        (
            {"karpenter": {"gpuLimit": 3}, "sharing": {"timeSlicing": {"replicas": 4}}},
            "gpuPools.p.karpenter.gpuLimit (3) is below",
        ),
        (
            {"karpenter": {"consolidateAfter": "soon"}},
            "gpuPools.p.karpenter.consolidateAfter must be a duration",
        ),
        (
            {"karpenter": {"consolidateAfter": "1.5h"}},
            "gpuPools.p.karpenter.consolidateAfter must be whole seconds, minutes or hours",
        ),
        ({"karpenter": {"disruptionBudget": "all"}}, "gpuPools.p.karpenter.disruptionBudget"),
        ({"minSize": 1}, "gpuPools.p.minSize and .desiredSize do not apply with provisioner: karpenter"),
        (
            {"capacityType": "SPOT", "karpenter": {"capacityTypes": ["SPOT"]}},
            "gpuPools.p.capacityType and .karpenter.capacityTypes",
        ),
        (
            {"provisioner": "managedNodeGroup", "karpenter": {}},
            "gpuPools.p.karpenter is set but provisioner is not karpenter",
        ),
        (
            {"provisioner": "fargate"},
            "gpuPools.p.provisioner must be one of managedNodeGroup, karpenter, got 'fargate'",
        ),
    ],
)
def test_bad_karpenter_pools_are_refused_naming_the_key(pool: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(pool)
    assert says in str(refused.value)


def test_karpenter_on_a_minor_its_pinned_version_does_not_run_on_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _load({}).kubernetes_version == "1.35"  # supported today: 1.26 to 1.37
    monkeypatch.setattr(nodepool, "KUBERNETES_MINORS", ("1.26", "1.35"))
    with pytest.raises(ConfigError) as refused:
        _load({}, kubernetesVersion="1.36")
    assert "kubernetesVersion '1.36' is not one Karpenter 1.15.0 runs on (1.26 to 1.35)" in str(refused.value)
    assert "gpuPools.p.provisioner: karpenter" in str(refused.value)
    load(
        {**E, "kubernetesVersion": "1.36"}, region="us-west-2", default_cluster_name="c"
    )  # node groups: fine


def test_the_ami_can_be_pinned_and_the_node_class_names_that_release() -> None:
    from infra.platform.karpenter import pool_manifests

    config = _load({"karpenter": {"amiAlias": "al2023@v20261120"}})
    node_class = pool_manifests(config, config.karpenter_pools[0], "role")[0]
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20261120"}]


@pytest.mark.parametrize("alias", ["al2023@v2026112", "al2@latest", "al2023@20261120", "bottlerocket@latest"])
def test_an_ami_alias_that_is_not_an_al2023_release_is_refused(alias: str) -> None:
    with pytest.raises(ConfigError, match=r"gpuPools\.p\.karpenter\.amiAlias .*al2023@vYYYYMMDD"):
        _load({"karpenter": {"amiAlias": alias}})


def test_a_production_stack_refuses_a_floating_ami_naming_the_setting() -> None:
    """managing-amis.md: pin in production; @latest drifts every GPU node on each EKS AMI release."""
    with pytest.raises(
        ConfigError, match=r"gpuPools\.p\.karpenter\.amiAlias is 'al2023@latest' on a production"
    ):
        _load({}, production=True)
    with pytest.raises(ConfigError, match=r"gpuPools\.p\.karpenter\.amiAlias"):
        _load({"karpenter": {"amiAlias": "al2023@latest"}}, production=True)
    assert _load({"karpenter": {"amiAlias": "al2023@v20261120"}}, production=True).production


def test_a_spot_capable_pool_is_a_spot_pool_to_its_consumers() -> None:
    pool = _load({"karpenter": {"capacityTypes": ["SPOT", "ON_DEMAND"]}}).contract.pool("p")
    assert pool.capacity_type == "SPOT"
    assert _load({}).contract.pool("p").capacity_type == "ON_DEMAND"


def test_declared_objects_keep_their_names(stack: tuple[Any, Run]) -> None:
    for r in stack[1].resources:
        if r.type.startswith("kubernetes:karpenter"):
            assert manifest_of(r.type, r.name, r.inputs)["metadata"]["name"].startswith("gpu-")


def test_the_preview_checks_karpenter_objects_against_the_pinned_crds(stack: tuple[Any, Run]) -> None:
    from infra.tooling.manifests import ManifestError, validate_manifest

    declared = [
        m for kind in ("NodePool", "EC2NodeClass", "NodeOverlay") for m in pins.declared(stack[1], kind)
    ]
    for manifest in declared:
        validate_manifest(manifest, "1.35")
    broken = pins.declared(stack[1], "NodePool")[0]
    broken["spec"]["disruption"]["consolidateAfter"] = "1.5h"
    with pytest.raises(ManifestError, match=r"spec\.disruption\.consolidateAfter: '1\.5h' does not match"):
        validate_manifest(broken, "1.35")


def test_a_pool_moving_to_karpenter_keeps_its_node_group_without_the_autoscaler() -> None:
    """keepNodeGroup: the old nodes stay to be drained by hand, and Cluster Autoscaler lets go of the group."""
    moving = {**pins.POOLS["batch"], "karpenter": {**pins.POOLS["batch"]["karpenter"], "keepNodeGroup": True}}
    _, run = pins.platform_run({"batch": moving})
    groups = {g.inputs["nodeGroupNamePrefix"] for g in run.of_type(NODE_GROUP)}
    assert "gpu-batch-" in groups
    assert "gpu-batch" in {m["metadata"]["name"] for m in pins.declared(run, "NodePool")}
    assert not any("batch" in t.name for t in run.of_type("aws:autoscaling/tag:Tag"))
    values = _release(run, "cluster-autoscaler").inputs["values"]
    assert not any("batch" in p for group in values.get("expanderPriorities", {}).values() for p in group)


def test_the_kept_node_group_stays_exactly_as_it_was_whatever_the_migration_edits() -> None:
    """The natural migration edits (more instance types for Karpenter, [SPOT, ON_DEMAND]) would replace a
    group rebuilt from the pool's settings, and EKS force-terminates its nodes after 5 minutes. The kept
    group and its launch template take every input from state instead (the engine's processIgnoreChanges
    resets each key under "*" to the old inputs), so a preview of the migration replaces nothing."""
    moving = {
        **pins.POOLS["batch"],
        "instanceTypes": ["g5g.xlarge", "g5g.2xlarge", "g5g.4xlarge"],
        "karpenter": {
            **pins.POOLS["batch"]["karpenter"],
            "keepNodeGroup": True,
            "capacityTypes": ["SPOT", "ON_DEMAND"],
        },
    }
    moving.pop("capacityType", None)
    _, run = pins.platform_run({"batch": moving})
    kept = next(g for g in run.of_type(NODE_GROUP) if g.inputs["nodeGroupNamePrefix"] == "gpu-batch-")
    template = next(
        t for t in run.of_type("aws:ec2/launchTemplate:LaunchTemplate") if t.urn in kept.dependencies
    )
    assert kept.ignore_changes == ["*"] and template.ignore_changes == ["*"]
    others = [g for g in run.of_type(NODE_GROUP) if g is not kept]
    assert others and all(
        g.ignore_changes != ["*"] for g in others
    )  # a live pool's group follows its settings


def test_an_existing_vpcs_private_subnets_get_the_discovery_tag() -> None:
    import runpy

    from infra.tooling.offline import PLATFORM_ROOT, load_project, run_program

    project, config = load_project(PLATFORM_ROOT, "dev")
    subnets = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    config[f"{project}:network"] = json.dumps({"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": subnets})
    config[f"{project}:gpuPools"] = json.dumps({"batch": pins.POOLS["batch"]})
    config.pop(f"{project}:teams")  # their quotas name the dev pools, replaced here
    run = run_program(
        lambda: runpy.run_path(str(PLATFORM_ROOT / "__main__.py"), run_name="__main__"),
        project=project, stack="dev", config=config, preview=True,
    )  # fmt: skip
    tags = [t.inputs for t in run.of_type("aws:ec2/tag:Tag") if t.inputs["key"] == nodepool.DISCOVERY_TAG]
    assert sorted(t["resourceId"] for t in tags) == subnets
    assert {t["value"] for t in tags} == {"eks-gpu-platform-dev"}


def _allowing(action: str) -> list[dict[str, Any]]:
    statements = controller_policy(**POLICY_ARGS)["Statement"]
    return [
        s for s in statements if action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]


def test_the_controller_may_make_the_node_class_instance_profile_karpenter_tags() -> None:
    """Karpenter v1.15 tags the instance profile it makes for an EC2NodeClass with
    karpenter.k8s.aws/ec2nodeclass and eks:eks-cluster-name (karpenter-provider-aws
    pkg/apis/v1/ec2nodeclass.go:581 InstanceProfileTags, labels.go:170); a condition on any other
    key denies CreateInstanceProfile, the node class never gets Ready and no GPU node launches."""
    request = {
        "kubernetes.io/cluster/eks-gpu-platform-dev": "owned",
        "eks:eks-cluster-name": "eks-gpu-platform-dev",
        "karpenter.k8s.aws/ec2nodeclass": "gpu-train",
        "topology.kubernetes.io/region": "us-west-2",
    }
    for action in ("iam:CreateInstanceProfile", "iam:TagInstanceProfile"):
        for statement in _allowing(action):
            for values in statement["Condition"].values():
                for key in (k for k in values if k.startswith("aws:RequestTag/")):
                    assert key.removeprefix("aws:RequestTag/") in request, (action, key)
        assert all(
            s["Resource"].startswith("arn:aws:iam::123456789012:instance-profile/") for s in _allowing(action)
        )


def test_the_controller_may_tag_its_instances_as_karpenter_does() -> None:
    """The NodeClaim tagging controller sets Name, karpenter.sh/nodeclaim and eks:eks-cluster-name in
    one CreateTags (pkg/controllers/nodeclaim/tagging/controller.go:107-109)."""
    (statement,) = [s for s in _allowing("ec2:CreateTags") if "aws:TagKeys" in json.dumps(s)]
    keys = statement["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
    assert {"Name", "karpenter.sh/nodeclaim", "eks:eks-cluster-name"} <= set(keys)


def test_the_controller_may_call_what_karpenter_v1_15_always_calls() -> None:
    """Controllers that run whatever the settings: instance status (controllers.go:117,
    providers/instancestatus DescribeInstanceStatus), instance profile garbage collection
    (controllers.go:121, instanceprofile.go:217 ListInstanceProfiles)."""
    for action in (
        "ec2:DescribeInstanceStatus",
        "iam:ListInstanceProfiles",
        "ec2:DescribeCapacityReservations",
    ):
        assert _allowing(action), action


def test_the_controller_gets_no_more_than_karpenters_template_lists() -> None:
    """Least privilege: the queue's attributes are not read, launch templates are used only when they
    carry this cluster's tags, instance profiles only in this account (v1.15 cloudformation.yaml)."""
    assert not _allowing("sqs:GetQueueAttributes")
    unscoped = [s for s in _allowing("ec2:RunInstances") if "Condition" not in s]
    assert all("launch-template" not in json.dumps(s["Resource"]) for s in unscoped)
    assert all(s["Resource"] != "*" for s in _allowing("iam:GetInstanceProfile"))


def test_the_controller_may_pass_the_node_role_in_every_partition() -> None:
    (statement,) = _allowing("iam:PassRole")
    assert "ec2.amazonaws.com.cn" in statement["Condition"]["StringEquals"]["iam:PassedToService"]
