"""The package's served classes hand their inputs to the real components as a dict.

Construct maps only the schema's inputs (the SDK drops any other before the class is
called), so these call the class the provider constructs directly: whatever reaches it
is read by the component itself, with the component's own refusals.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from pulumi.provider.experimental.component import ComponentProvider

from tests.provider.conftest import PROVIDER_DIR, ROOT


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


@pytest.mark.parametrize("component", ["GpuDeployment", "GpuJob"])
def test_each_served_class_constructs_the_component_of_infra_workloads(
    provider: ComponentProvider, component: str
) -> None:
    import eks_gpu_components

    import infra.workloads

    served = provider._components[component]

    assert eks_gpu_components.served_class(served) is getattr(infra.workloads, component)


def test_the_schema_is_served_without_importing_the_components_or_kubernetes() -> None:
    # The CLI starts the plugin once just for GetSchema (a YAML program is type-checked
    # against the schema first); infra.workloads and pulumi_kubernetes are ~0.8 s of imports
    # that only Construct needs (decision 0089).
    probe = (
        "import runpy, sys\n"
        "import pulumi.provider\n"
        "served = []\n"
        "pulumi.provider.main = lambda provider, args: served.append(provider)\n"
        f"sys.path.insert(0, {str(PROVIDER_DIR)!r})\n"
        f"runpy.run_path({str(PROVIDER_DIR / '__main__.py')!r}, run_name='__main__')\n"
        "assert served[0].schema\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('infra', 'pulumi_kubernetes')))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False)

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
