"""bin/probe-versions asks the proxy for each release under the names Go gives its commit.

The table of release tags -> commits is only worth something if the pseudo-versions made
from it are the ones the proxy serves: each pin of localcluster/ that is a pseudo-version
must be what the table gives its release tag. No network here: the probe itself is a tool.
"""

from __future__ import annotations

import re

import pytest

from infra.tooling import gomod
from localcluster.versions import HERE, Release, candidates, escape, load, newest_holding, pseudo_version

COMMIT = "f47bc2d6f1996444d11c12b4ef083b82585f7c07"
TIME = "20260115033456"


def test_a_pseudo_version_without_a_base_tag_carries_the_module_paths_major_version() -> None:
    provider = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    assert pseudo_version(provider, COMMIT, TIME) == "v4.0.0-20260115033456-f47bc2d6f199"
    assert pseudo_version("k8s.io/autoscaler/cluster-autoscaler", COMMIT, TIME).startswith("v0.0.0-")


def test_a_pseudo_version_after_a_tag_bumps_a_release_and_extends_a_pre_release() -> None:
    assert pseudo_version("m", COMMIT, TIME, "v1.25.0") == "v1.25.1-0.20260115033456-f47bc2d6f199"
    assert pseudo_version("m", COMMIT, TIME, "v1.3.0-rc.1") == "v1.3.0-rc.1.0.20260115033456-f47bc2d6f199"


@pytest.mark.parametrize(("commit", "time"), [("f47bc2d", TIME), (COMMIT, "2026-01-15T03:34:56Z")])
def test_a_short_hash_or_a_time_in_another_form_is_refused(commit: str, time: str) -> None:
    with pytest.raises(ValueError, match="yyyymmddhhmmss"):
        pseudo_version("m", commit, time)


def test_every_pin_that_is_a_pseudo_version_is_what_the_table_gives_its_release_tag() -> None:
    """A pin served only as a pseudo-version (the Kubernetes provider: tag v4.25.0's commit) can be
    re-probed only through the table; a pin served by tag (the CLI) needs no row."""
    pseudo = {}
    for module in load():
        try:
            version = gomod.pinned_version(HERE / (module.pins or "-"), module.path)
        except (OSError, LookupError):
            continue  # not pinned (yet) by localcluster/
        if re.search(r"-(0\.)?\d{14}-[0-9a-f]{12}$", version):
            releases = module.releases
            pseudo[module.path] = [
                r.tag for i, r in enumerate(releases) if version in candidates(module.path, releases, i)
            ]
    assert pseudo["github.com/pulumi/pulumi-kubernetes/provider/v4"] == ["v4.25.0"]
    assert all(pseudo.values()), f"pins that are no release of localcluster/release-tags.toml: {pseudo}"


def test_cluster_autoscaler_tags_are_read_as_versions_of_its_module() -> None:
    autoscaler = next(m for m in load() if m.path == "k8s.io/autoscaler/cluster-autoscaler")
    first = autoscaler.releases[0]
    assert first == Release(
        "cluster-autoscaler-1.33.0", "v1.33.0", "1959f5f61f6c4b818e668bd52fcd160c0d751fe4", "20250613073258"
    )
    # What the proxy serves for 1.33.0 (docs/local-cluster.md; FIELD-NOTES).
    assert "v0.0.0-20250613073258-1959f5f61f6c" in candidates(autoscaler.path, autoscaler.releases, 0)


def test_upper_case_letters_are_escaped_as_the_proxy_protocol_says() -> None:
    assert escape("github.com/Azure/azure-sdk-for-go") == "github.com/!azure/azure-sdk-for-go"


def test_the_newest_version_still_holding_a_package_is_found_by_halving() -> None:
    versions = [f"v3.{n}.0" for n in range(60, 80)]
    asked = []

    def holds(version: str) -> bool:
        asked.append(version)
        return int(version.split(".")[1]) <= 68

    assert newest_holding(holds, versions) == "v3.68.0"
    assert len(asked) <= 5
    assert newest_holding(lambda v: False, versions) is None
