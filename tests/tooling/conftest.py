"""Fixtures the tooling tests share."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tooling import crossguard


@pytest.fixture(scope="module")
def analyzer() -> Any:
    """The policy pack behind pulumi_policy's analyzer servicer, as the CLI calls it."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _, policies = crossguard.pack_module(monkeypatch)
    return crossguard.servicer(policies)
