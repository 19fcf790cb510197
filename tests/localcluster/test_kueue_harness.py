"""What the harness changes of Kueue's chart to run it on a bare local API server, and nothing more.

The real controller's scenarios are in tests/cluster/test_kueue.py; these check the harness's own
rewriting of the chart (rendered by the pinned helm from the pinned chart), so a listener left on
every interface, or a webhook configuration changed by the harness, fails here first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from infra.platform import kueue_objects
from localcluster import cluster, kueue
from localcluster import kueue_world as world


@pytest.fixture(scope="module")
def values() -> dict:
    """The values the platform program gives Kueue's chart for the scenarios' teams."""
    return world.chart_values(world.platform({})[1])


@pytest.fixture(scope="module")
def chart(values) -> list[dict]:
    return kueue.rendered(values)


def test_every_listener_binds_loopback_and_the_rest_of_the_platforms_configuration_is_kept(
    chart, values
) -> None:
    given = kueue.configuration(chart)
    local = kueue.local_configuration(given, {"health": 1, "metrics": 2, "webhook": 3}, Path("/certs"))
    assert local["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert local["metrics"]["bindAddress"] == "127.0.0.1:2"
    assert (local["webhook"]["host"], local["webhook"]["port"]) == ("127.0.0.1", 3)
    assert "VisibilityOnDemand=false" in kueue.feature_gates(chart).split(",")
    changed = {"health", "metrics", "webhook", "leaderElection", "namespace"}
    assert {k: v for k, v in local.items() if k not in changed} == {
        k: v for k, v in given.items() if k not in changed
    }
    platform = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert {k: given[k] for k in platform} == platform  # the chart adds only its cert management
    assert local["leaderElection"]["leaderElect"] is True  # as the chart sets it


def test_the_webhook_configurations_and_crds_are_applied_as_rendered_the_service_points_at_loopback(
    chart,
) -> None:
    applied = kueue.cluster_objects(chart, 8443)
    by_kind = {}
    for o in applied:
        by_kind.setdefault(o["kind"], []).append(o)
    for kind in (
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "CustomResourceDefinition",
    ):
        assert by_kind[kind] == [_with_port(o, 8443) for o in chart if o["kind"] == kind]
    (service,) = by_kind["Service"]
    assert service["metadata"]["name"] == kueue.SERVICE
    assert service["spec"] == {
        "type": "ExternalName",
        "externalName": "127.0.0.1",
        "ports": next(o for o in chart if o["kind"] == "Service" and o["metadata"]["name"] == kueue.SERVICE)[
            "spec"
        ]["ports"],
    }
    job_hook = next(
        w for o in by_kind["MutatingWebhookConfiguration"] for w in o["webhooks"] if w["name"] == "mjob.kb.io"
    )
    assert job_hook["failurePolicy"] == "Fail"
    assert job_hook["namespaceSelector"]["matchExpressions"][0]["values"] == sorted(world.NAMESPACES.values())
    rendered = next(o for o in chart if o["kind"] == "MutatingWebhookConfiguration")["webhooks"][0]
    assert "port" not in rendered["clientConfig"]["service"]  # the chart's: 443, one for all control planes


def _with_port(manifest: dict, port: int) -> dict:
    """``manifest`` as the harness applies it: its webhooks and conversion webhook (if any) name ``port``;
    nothing else changed."""
    result = json.loads(json.dumps(manifest))
    hooks = [
        *result.get("webhooks", []),
        *[(result.get("spec", {}).get("conversion") or {}).get("webhook") or {}],
    ]
    for hook in hooks:
        if hook:
            hook["clientConfig"]["service"]["port"] = port
    return result


def test_the_crds_conversion_webhooks_dial_the_harness_port_not_443(chart) -> None:
    converted = {
        o["metadata"]["name"]: o["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
        for o in kueue.cluster_objects(chart, 8443)
        if o["kind"] == "CustomResourceDefinition" and o["spec"].get("conversion", {}).get("webhook")
    }
    assert "workloads.kueue.x-k8s.io" in converted and "clusterqueues.kueue.x-k8s.io" in converted
    assert {s["port"] for s in converted.values()} == {8443}


def test_only_job_pods_carrying_the_hold_annotation_wait_to_complete(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(cluster, "RUN", tmp_path)
    stages = [yaml.safe_load(Path(p).read_text()) for p in cluster._kwok_stages() if "pod-complete" in p]
    key = f'.metadata.annotations["{cluster.HOLD_ANNOTATION}"]'
    ops = {
        s["metadata"]["name"]: next(
            e["operator"] for e in s["spec"]["selector"]["matchExpressions"] if e["key"] == key
        )
        for s in stages
    }
    assert ops == {"pod-complete": "DoesNotExist", "pod-complete-held": "Exists"}
    held = next(s for s in stages if s["metadata"]["name"] == "pod-complete-held")
    assert held["spec"]["delay"]["durationFrom"] == {"expressionFrom": key}


def test_the_scenarios_objects_are_the_ones_the_platform_declares_for_their_teams() -> None:
    settings, run = world.platform({"vision": {"training": {"nominalQuota": 1, "borrowingLimit": 1}}})
    declared = world.objects(run)
    assert [o["kind"] for o in declared] == sorted((o["kind"] for o in declared), key=world.KINDS.index)
    expected = kueue_objects.objects(settings.contract, settings.teams)
    assert sorted(map(_text, declared)) == sorted(map(_text, expected))
    assert {team: c.namespace for team, c in settings.teams.items()} == world.NAMESPACES
    assert settings.teams["speech"].quotas["training"].nominal_quota == 0  # a team given no GPUs


def _text(manifest: dict) -> str:
    return json.dumps(manifest, sort_keys=True)


def test_a_scenario_quota_the_pool_cannot_reach_is_refused_by_the_platforms_config() -> None:
    with pytest.raises(ValueError, match="pool 'training'"):
        world.platform({"vision": {"training": {"nominalQuota": 5}}})  # 2 nodes x 2 GPUs
    with pytest.raises(ValueError, match="allowed vision, speech"):
        world.teams_config({"gaming": {"training": {"nominalQuota": 1}}})


def test_the_requeue_scenarios_configuration_differs_from_the_platforms_only_in_timeout_and_backoff(
    values: dict,
) -> None:
    quick = world.quick_pods_ready(values, "20s", 10)

    def manager(v: dict) -> dict:
        return yaml.safe_load(v["managerConfig"]["controllerManagerConfigYaml"])

    mine, platforms = manager(quick), manager(values)
    assert mine["waitForPodsReady"]["timeout"] == "20s"
    assert mine["waitForPodsReady"]["requeuingStrategy"] == {
        "timestamp": "Eviction",
        "backoffBaseSeconds": 10,
    }
    assert platforms["waitForPodsReady"]["timeout"] == "30m"  # the platform's, untouched
    mine["waitForPodsReady"] = platforms["waitForPodsReady"]
    assert mine == platforms
    assert {k: v for k, v in quick.items() if k != "managerConfig"} == {
        k: v for k, v in values.items() if k != "managerConfig"
    }
