"""Every refusal the components make from ``metadata`` holds when ``metadata`` is an Output.

From YAML, TypeScript or Go, ``metadata`` reaches the component as one Output whenever any of its
fields comes from another resource (``namespace: ${ns.metadata.name}``; pulumi
``provider/server.py`` ``_select_value``). So each refusal has two spellings: plain, refused
before anything is declared; an Output, refused with the same words once it resolves, before the
child is registered (at ``pulumi up``). ``tests/cluster/test_pulumi_yaml_refusals.py`` runs the
replaceUnready case from YAML on the engine, where a preview that does not know the value yet
refuses nothing (docs/components.md, "Refusals and Outputs").
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pytest

from infra import GpuDeployment, GpuJob, PodSpecError
from infra.workloads.component import TIMEOUT_SECONDS
from infra.workloads.gpu_job import REPLACE_UNREADY, SKIP_AWAIT, WAIT_FOR
from tests.conftest import deployment_spec

JOB_SPEC = {"template": {"spec": {"containers": [{"name": "t", "image": "i"}]}}}
DEADLINE = {**JOB_SPEC, "activeDeadlineSeconds": 7200}
UNREADY = {"replace_unready": True, "spec": DEADLINE}
NOT_WAITING = {"wait_for_completion": False, "spec": JOB_SPEC}

# (component, its args besides metadata, metadata, the start of the refusal after "<Component>('x'): ")
CASES: dict[str, tuple[Any, dict[str, Any], dict[str, Any], str]] = {
    "replaceUnready written by hand": (
        GpuJob,
        {"spec": JOB_SPEC},
        {"annotations": {REPLACE_UNREADY: "true"}},
        "metadata.annotations['pulumi.com/replaceUnready'] 'true': use replace_unready=True instead",
    ),
    "replaceUnready 'false' beside replace_unready": (
        GpuJob,
        UNREADY,
        {"annotations": {REPLACE_UNREADY: "false"}},
        "metadata.annotations['pulumi.com/replaceUnready'] is 'false' but replace_unready=True means 'true'",
    ),
    "skipAwait beside replace_unready": (
        GpuJob,
        UNREADY,
        {"annotations": {SKIP_AWAIT: "true"}},
        "metadata.annotations['pulumi.com/skipAwait'] 'true' beside replace_unready=True",
    ),
    "waitFor beside replace_unready": (
        GpuJob,
        UNREADY,
        {"annotations": {WAIT_FOR: "condition=Complete"}},
        "metadata.annotations['pulumi.com/waitFor'] beside replace_unready=True",
    ),
    "waitFor beside not waiting": (
        GpuJob,
        NOT_WAITING,
        {"annotations": {WAIT_FOR: "condition=Complete"}},
        "metadata.annotations['pulumi.com/waitFor'] beside wait_for_completion=False",
    ),
    "skipAwait 'false' beside not waiting": (
        GpuJob,
        NOT_WAITING,
        {"annotations": {SKIP_AWAIT: "false"}},
        "metadata.annotations['pulumi.com/skipAwait'] is 'false' but wait_for_completion=False means 'true'",
    ),
    "a fixed name, not waiting": (
        GpuJob,
        NOT_WAITING,
        {"name": "train"},
        "wait_for_completion=False (pulumi.com/skipAwait: 'true') with a fixed metadata.name",
    ),
    "a fixed name beside the user's skipAwait": (
        GpuJob,
        {"spec": JOB_SPEC},
        {"name": "train", "annotations": {SKIP_AWAIT: "true"}},
        "wait_for_completion=False (pulumi.com/skipAwait: 'true') with a fixed metadata.name",
    ),
    "a timeoutSeconds that is no whole number (Job)": (
        GpuJob,
        {"spec": JOB_SPEC},
        {"annotations": {TIMEOUT_SECONDS: "10m"}},
        "metadata.annotations['pulumi.com/timeoutSeconds'] must be a whole number of seconds above 0",
    ),
    "a timeoutSeconds that is no whole number (Deployment)": (
        GpuDeployment,
        {"spec": deployment_spec()},
        {"annotations": {TIMEOUT_SECONDS: "0"}},
        "metadata.annotations['pulumi.com/timeoutSeconds'] must be a whole number of seconds above 0",
    ),
}


def _declare(case: str, metadata: Any) -> None:
    component, args, _, _ = CASES[case]
    component("x", metadata=metadata, **args)


@pytest.mark.parametrize("case", sorted(CASES))
def test_plain_metadata_is_refused_at_once_and_output_metadata_with_the_same_words_once_known(
    run, case: str
) -> None:
    component, _, metadata, refusal = CASES[case]
    refused = f"{component.__name__}('x'): {refusal}"
    caught: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            _declare(case, metadata)
        caught.append(str(raised.value))

    assert run(program).resources == []  # plain: before anything is declared
    assert caught[0].startswith(refused), caught[0]
    # An Output: the SDK reports the child's input that failed, "... has risen: <the refusal>",
    # and the child is never registered.
    with pytest.raises(Exception, match=re.escape(f"has risen: {refused}")):
        run(lambda: _declare(case, pulumi.Output.from_input(metadata)))
