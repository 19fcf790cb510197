"""Entry point the Pulumi CLI runs for the ``eks-gpu`` component package (see PulumiPlugin.yaml).

The SDK's host infers the schema from the classes in ``eks_gpu_components`` and
answers the engine's Construct calls with them.
"""

from eks_gpu_components import COMPONENTS, PACKAGE, VERSION
from pulumi.provider.experimental import component_provider_host

if __name__ == "__main__":
    component_provider_host(COMPONENTS, name=PACKAGE, version=VERSION)
