"""The config schema's vocabulary: the field types whose constraints the JSON schema states."""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Mapping
from ipaddress import IPv4Interface, IPv4Network
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from infra.platform import nodepool
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.platform.node_pools import WHOLE_GPUS
from infra.workloads.durations import go_duration_seconds

# CloudWatch refuses an alarm whose Period x EvaluationPeriods exceeds one day.
MAX_ALARM_SECONDS = 86400
# EC2 CreateVpc takes an IPv4 block from /16 (65,536 addresses) to /28 (16).
VPC_PREFIXES = (16, 28)
# A pool name goes into the node group name prefix gpu-<pool>-, which the AWS provider caps at 37
# characters (63 minus its 26-character unique suffix); in words: POOL_NAME_WORDS (and node_pools.WHOLE_GPUS).
POOL_NAME = rf"^(?!{WHOLE_GPUS}$)[A-Za-z0-9]([A-Za-z0-9_-]{{0,30}}[A-Za-z0-9])?$"
POOL_NAME_WORDS = (
    f"1-32 letters, digits, '-' or '_', a letter or digit at both ends, not {WHOLE_GPUS}; "
    "it becomes a node label value and part of a node group name"
)
CHART_VERSION = r"^\d+\.\d+\.\d+$"
CHART_VERSION_WORDS = "a release version: three numbers joined by dots, no v and no range"
NAMESPACE_WORDS = "a namespace name: 1-63 lowercase letters, digits or '-', a letter or digit at both ends"


def _no_boolean(value: Any) -> Any:
    # Lax int reads the CLI's text ("3") and JSON's 2.0, but would also read true as 1.
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


def _cidr_text(value: Any) -> Any:
    # Lax IPv4Network reads the number 7 as 0.0.0.7/32: a CIDR is written as text.
    if not isinstance(value, (str, IPv4Network)):
        raise PydanticCustomError("ip_v4_network", "not a CIDR")
    if isinstance(value, str) and _host_bits(value):
        # A host address with a prefix (10.0.0.1/16): name the block it is in, which AWS wants.
        raise ValueError(
            f"has host bits set: {value!r} is inside {IPv4Network(value, strict=False)}, write that"
        )
    return value


def _host_bits(value: str) -> bool:
    """Is ``value`` an IPv4 network written with its host bits set (anything else: the type refuses)?"""
    with contextlib.suppress(ValueError):
        written = IPv4Interface(value)
        return written.ip != written.network.network_address
    return False


def _cli_boolean(value: Any) -> Any:
    # `pulumi config set` stores true as text; strict bool then refuses "yes", 1 and the like.
    return value.lower() == "true" if isinstance(value, str) and value.lower() in ("true", "false") else value


def _unique(items: tuple[Any, ...]) -> tuple[Any, ...]:
    # Pydantic 2 dropped unique_items; the schema still says uniqueItems.
    if len(set(items)) != len(items):
        raise ValueError(f"lists an item twice: {[str(item) for item in items]}")
    return items


def _go_duration(value: str, alarm: bool = False) -> str:
    # Pydantic has no Go duration type; the grammar lives in infra.workloads.durations.
    seconds = go_duration_seconds(value)
    if seconds is not None and seconds < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    if seconds is None:
        raise ValueError(
            f"must be a duration as Go writes it (e.g. 90s, 10m, 1h30m; units ns, us, ms, s, m, h), got {value!r}"
        )
    if alarm and not 0 < seconds <= MAX_ALARM_SECONDS:  # refused here, not mid-`pulumi up`
        raise ValueError(
            f"must be more than 0s and at most 24h: CloudWatch refuses an alarm whose Period x "
            f"EvaluationPeriods exceeds {MAX_ALARM_SECONDS} s (one-minute periods here), got {value!r}"
        )
    return value


# Constraints go before the validators, so pydantic checks them natively and the schema states them.
def whole(low: int, high: int) -> Any:
    """A whole number from ``low`` to ``high``."""
    return Annotated[int, Field(ge=low, le=high), BeforeValidator(_no_boolean)]


def unique(item: Any, min_items: int = 0) -> Any:
    """A list of ``item``, at least ``min_items`` long, none twice."""
    return Annotated[
        tuple[item, ...],
        Field(min_length=min_items, json_schema_extra={"uniqueItems": True}),
        AfterValidator(_unique),
    ]


Flag = Annotated[StrictBool, BeforeValidator(_cli_boolean)]
Cidr = Annotated[IPv4Network, BeforeValidator(_cidr_text)]


Nodes = whole(0, 450)  # EKS CreateNodegroup (NodegroupScalingConfig)
MaxNodes = whole(1, 450)
GoDuration = Annotated[str, AfterValidator(_go_duration), Field(json_schema_extra={"format": "go-duration"})]
AlarmWindow = Annotated[
    str,
    AfterValidator(functools.partial(_go_duration, alarm=True)),
    Field(json_schema_extra={"format": "go-duration", "exclusiveMinimum": "0s", "maximum": "24h"}),
]


def text(pattern: str, words: str, example: str) -> Any:
    """Text matching ``pattern``, which ``words`` says plainly (schema key ``x-allowed``): the docs and
    every refusal show the words and the example, never the expression."""
    return Annotated[str, Field(pattern=pattern, examples=[example], json_schema_extra={"x-allowed": words})]


SubnetId = text(
    r"^subnet-[0-9a-f]{8,17}$",
    "a subnet ID: subnet- and 8 to 17 lowercase hex digits",
    "subnet-0123456789abcdef0",
)
Namespace = text(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", NAMESPACE_WORDS, "inference")
IamPrincipal = text(
    r"^arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]{1,512}$",
    "an IAM role or user ARN, arn:PARTITION:iam::ACCOUNT:role/NAME or :user/NAME (PARTITION aws, aws-cn "
    "or aws-us-gov; ACCOUNT 12 digits), not an sts assumed-role session",
    "arn:aws:iam::123456789012:role/ci-deploy",
)
SnsTopic = text(
    r"^arn:aws(-cn|-us-gov)?:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$",
    "an SNS topic ARN, arn:PARTITION:sns:REGION:ACCOUNT:TOPIC (PARTITION aws, aws-cn or aws-us-gov; "
    "ACCOUNT 12 digits; TOPIC 1-256 letters, digits, '-' or '_', then .fifo or nothing)",
    "arn:aws:sns:us-west-2:123456789012:gpu-oncall",
)
SystemType = Literal[tuple(ARM_SYSTEM)]
GpuType = Literal[tuple(ARM_NVIDIA)]


class Section(BaseModel):
    """A config object: camelCase keys as in the stack file; unknown keys refused (see :func:`_message`)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        regex_engine="python-re",  # for the look-aheads that refuse reserved names
    )

    @model_validator(mode="before")
    @classmethod
    def _json_text(cls, data: Any) -> Any:
        # `pulumi config set` without --path stores an object or list as JSON text, at any depth.
        data = json_text(data)
        return {k: json_text(v) for k, v in data.items()} if isinstance(data, Mapping) else data


def _karpenter_duration(value: str) -> str:
    # A Go duration (as everywhere here) that Karpenter's NodePool CRD also takes: whole s, m, h parts.
    _go_duration(value)
    if not re.fullmatch(nodepool.CONSOLIDATE_AFTER, value):
        raise ValueError(
            f"must be whole seconds, minutes or hours as Karpenter's NodePool takes them (e.g. 30s, 10m, 1h30m), got {value!r}"
        )
    return value


KarpenterDuration = Annotated[
    str,
    AfterValidator(_karpenter_duration),
    Field(
        json_schema_extra={"format": "go-duration", "x-allowed": "a duration of whole s, m and h parts"},
        examples=["10m"],
    ),
]


def json_text(value: Any) -> Any:
    """The CLI hands objects and lists over as JSON text."""
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(value)
    return value


def release_version(example: str) -> Any:
    """A Helm chart's release version."""
    return text(CHART_VERSION, CHART_VERSION_WORDS, example)


VpcId = text(
    r"^vpc-[0-9a-f]{8,17}$", "a VPC ID: vpc- and 8 to 17 lowercase hex digits", "vpc-0123456789abcdef0"
)
ClusterName = text(
    r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$",
    "1-100 letters, digits, '-' or '_', the first a letter or digit (what EKS CreateCluster takes)",
    "eks-gpu-platform-dev",
)
PoolName = text(POOL_NAME, POOL_NAME_WORDS, "inference")  # a map key: its words go to propertyNames
PluginNamespace = text(
    r"^(?!default$|kube-system$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    f"{NAMESPACE_WORDS}, not default or kube-system",
    "nvidia-device-plugin",
)
DisruptionBudget = text(nodepool.BUDGET_NODES, "a node count, or a percentage from 0% to 100%", "1")
AmiAlias = text(nodepool.AMI_ALIAS_PATTERN, nodepool.AMI_ALIAS_WORDS, "al2023@v20261120")
SECTION = Field(default_factory=dict, validate_default=True)  # a section's defaults go through its checks
