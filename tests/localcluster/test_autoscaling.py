"""The autoscaler's command line in the test run: the chart's arguments, then the only timing
difference (a 1 s scan interval), which never replaces a value the platform sets itself."""

from __future__ import annotations

from infra.tooling.offline import PLATFORM_ROOT, run_project
from localcluster.autoscaling import autoscaler_argv, autoscaler_values
from localcluster.chart_args import container_args


def _flags(argv: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for arg in argv[1:]:
        name, _, value = arg.partition("=")
        found.setdefault(name, []).append(value)
    return found


def test_the_chart_arguments_come_first_then_a_one_second_scan_interval() -> None:
    values = autoscaler_values(run_project(PLATFORM_ROOT, "dev"))
    argv = autoscaler_argv(values, "/cloud-config", 8085)
    assert argv[1 : 1 + len(container_args(values, "kube-system"))] == container_args(values, "kube-system")
    assert _flags(argv)["--scan-interval"] == ["1s"]
    assert _flags(argv)["--scale-down-unneeded-time"] == ["10m"]  # the platform's, untouched


def test_a_scan_interval_the_platform_sets_is_the_one_the_autoscaler_gets() -> None:
    values = autoscaler_values(run_project(PLATFORM_ROOT, "dev"))
    values = {**values, "extraArgs": {**values["extraArgs"], "scan-interval": "30s"}}
    assert _flags(autoscaler_argv(values, "/cloud-config", 8085))["--scan-interval"] == ["30s"]
