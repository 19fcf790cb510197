"""Registry round trips of the image-architecture check, counted against a real registry.

Starts the loopback registries of the tests (Distribution's ``docker-registry``, one
open and one behind bearer-token auth), declares N ``GpuDeployment``s sharing a few
images on Pulumi's mock engine with ``EKS_GPU_IMAGE_CHECK=warn`` (which lets the
check ask loopback registries there), and counts every HTTP exchange the check
made, from the client's own log (``RegistryClient.round_trips``).

    .venv/bin/python bench/bench_images.py [--deployments 10]

Needs /usr/bin/docker-registry (``apt-get install docker-registry``).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).absolute().parents[1]
sys.path.insert(0, str(ROOT))

from infra.tooling.offline import run_program  # noqa: E402
from infra.workloads import images  # noqa: E402
from infra.workloads.gpu_deployment import GpuDeployment, GpuDeploymentArgs  # noqa: E402
from tests.workloads.registry import LocalRegistry, registry_available, start_registries  # noqa: E402


def _spec(app: str, image: str) -> dict:
    return {
        "selector": {"matchLabels": {"app": app}},
        "template": {
            "metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "m", "image": image}]},
        },
    }


def scenario(label: str, registry: LocalRegistry, names: list[str], deployments: int) -> dict:
    """Declare ``deployments`` GpuDeployments cycling over ``names``; count the check's HTTP exchanges."""
    images.reset_default_checker()
    refs = [f"{registry.host}/{name}" for name in names]
    start = time.perf_counter()
    run_program(
        lambda: [
            GpuDeployment(f"d{i}", GpuDeploymentArgs(spec=_spec(f"d{i}", refs[i % len(refs)])))
            for i in range(deployments)
        ]
    )
    elapsed = time.perf_counter() - start
    trips = images.default_checker().client.round_trips
    by_purpose = collections.Counter("challenge" if t.status == 401 else t.purpose for t in trips)
    lookups = by_purpose["manifest"] + by_purpose["blob"] + by_purpose["redirect"]
    return {
        "scenario": label,
        "deployments": deployments,
        "distinct": len(set(refs)),
        "total": len(trips),
        "by_purpose": dict(by_purpose),
        "per_image": lookups / len(set(refs)),
        "per_image_with_auth": len(trips) / len(set(refs)),
        "seconds": elapsed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deployments", type=int, default=10)
    options = parser.parse_args()
    if not registry_available():
        print("needs /usr/bin/docker-registry: apt-get install docker-registry", file=sys.stderr)
        return 2
    os.environ[images.ENV_VAR] = "warn"
    started = start_registries()
    try:
        n = options.deployments
        rows = [
            scenario("open registry, 1 index image", started.open, ["ml/multiarch:v1"], n),
            scenario("open registry, 1 single-manifest image", started.open, ["ml/arm64-only:v1"], n),
            scenario(
                "open registry, index + single manifest",
                started.open,
                ["ml/multiarch:v1", "ml/arm64-only:v1"],
                n,
            ),
            scenario("token registry, 1 index image", started.token, ["ml/multiarch:v1"], n),
            scenario(
                "token registry, index + single manifest",
                started.token,
                ["ml/multiarch:v1", "ml/arm64-only:v1"],
                n,
            ),
        ]
    finally:
        started.stop()
    print(
        "| scenario | GpuDeployments | distinct images | HTTP requests: challenge / token / manifest / blob "
        "| lookups per distinct image | all requests per distinct image |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        p = row["by_purpose"]
        print(
            f"| {row['scenario']} | {row['deployments']} | {row['distinct']} | {row['total']}: "
            f"{p.get('challenge', 0)} / {p.get('token', 0)} / {p.get('manifest', 0)} / {p.get('blob', 0)} | "
            f"{row['per_image']:.1f} | {row['per_image_with_auth']:.1f} |"
        )
    print(
        "\nlookups: manifest GETs (one Accept header listing the OCI and Docker index and manifest "
        "types, so no HEAD first) plus a config-blob GET for a single manifest (it alone names the "
        "architecture). challenge: the first anonymous GET that answers 401 with the token realm, once "
        "per registry. token: one GET to the token service per repository."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
