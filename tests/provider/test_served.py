"""The package's served classes hand their inputs to the real components as a dict.

Construct maps only the schema's inputs (the SDK drops any other before the class is
called), so these call the class the provider constructs directly: whatever reaches it
is read by the component itself, with the component's own refusals.
"""

from __future__ import annotations

import pytest
from pulumi.provider.experimental.component import ComponentProvider


@pytest.mark.parametrize("component", ["GpuDeployment", "GpuJob"])
def test_an_unknown_input_is_refused_with_the_components_own_message(
    provider: ComponentProvider, component: str
) -> None:
    served = provider._components[component]

    with pytest.raises(
        TypeError,
        match=rf"^{component}\('x'\): unexpected keyword argument 'replica_count'; allowed: .*\bspec\b",
    ):
        served("x", {"spec": {}, "replica_count": 2.0}, None)
