"""The observability config section: defaults, and bad input refused naming the key and what is allowed."""

from __future__ import annotations

import pytest

from infra.platform.config import ConfigError, load
from infra.platform.gpu_metrics import alarms


def _minutes(section) -> tuple[int, int]:
    """The alarms' thresholds in one-minute periods: gpu-pod-pending, gpu-node-not-ready."""
    found = alarms("c", section.alarms)
    return found["gpu-pod-pending"]["evaluation_periods"], found["gpu-node-not-ready"]["evaluation_periods"]


def _load(**raw):
    raw.setdefault("endpoint", {"publicAccessCidrs": ["203.0.113.0/24"]})
    return load(raw, region="us-west-2", default_cluster_name="eks-gpu-platform-test")


def test_defaults_turn_metrics_and_node_health_on_logs_off_and_alarm_after_ten_minutes() -> None:
    section = _load().observability
    assert (section.enabled, section.container_logs, section.node_monitoring_agent) == (True, False, True)
    assert _minutes(section) == (10, 10)
    assert section.alarms.sns_topic_arn is None and section.gpu_namespaces == ()


def test_a_topic_and_thresholds_are_read() -> None:
    section = _load(
        observability={
            "gpuNamespaces": ["inference"],
            "alarms": {
                "snsTopicArn": "arn:aws:sns:us-west-2:123456789012:gpu-oncall",
                "gpuPodPendingFor": "15m",
                "nodeNotReadyFor": "1h30m",
            },
        }
    ).observability
    assert section.alarms.sns_topic_arn == "arn:aws:sns:us-west-2:123456789012:gpu-oncall"
    assert _minutes(section) == (15, 90)
    assert section.gpu_namespaces == ("inference",)


def test_a_day_is_the_longest_alarm_and_is_1440_one_minute_periods() -> None:
    section = _load(
        observability={"alarms": {"gpuPodPendingFor": "24h", "nodeNotReadyFor": "1440m"}}
    ).observability
    assert _minutes(section) == (1440, 1440)  # 1440 x 60 s = 86400 s: allowed
    datapoints = {name: alarm["datapoints_to_alarm"] for name, alarm in alarms("c", section.alarms).items()}
    assert datapoints == {"gpu-pod-pending": 1152, "gpu-node-not-ready": 1440}


@pytest.mark.parametrize(
    ("observability", "message"),
    [
        (
            {"alarms": {"gpuPodPendingFor": "0s"}},
            "observability.alarms.gpuPodPendingFor must be more than 0s and at most 24h",
        ),
        (
            {"alarms": {"nodeNotReadyFor": "ten minutes"}},
            "observability.alarms.nodeNotReadyFor must be a duration as Go writes it",
        ),
        (
            {"alarms": {"snsTopicArn": "gpu-oncall"}},
            "observability.alarms.snsTopicArn must be an SNS topic ARN, arn:PARTITION:sns:REGION:ACCOUNT:TOPIC",
        ),
        (
            {"alarms": {"snsTopicArn": "arn:aws:sqs:us-west-2:123456789012:q"}},
            "e.g. arn:aws:sns:us-west-2:123456789012:gpu-oncall, got 'arn:aws:sqs:us-west-2:123456789012:q'",
        ),
        (
            {"containerLog": True},
            "unknown setting observability.containerLog (did you mean observability.containerLogs?)",
        ),
        (
            {"gpuNamespaces": ["ML"]},
            "observability.gpuNamespaces[0] must be a namespace name: 1-63 lowercase letters",
        ),
        (
            {"alarms": {"gpuPodPendingFor": "25h"}},
            "observability.alarms.gpuPodPendingFor must be more than 0s and at most 24h: CloudWatch refuses an alarm whose "
            "Period x EvaluationPeriods exceeds 86400 s",
        ),
        (
            {"alarms": {"nodeNotReadyFor": "24h0m1s"}},
            "observability.alarms.nodeNotReadyFor must be more than 0s and at most 24h",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_key(observability: dict, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        _load(observability=observability)
    assert message in str(error.value)
