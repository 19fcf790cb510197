"""Entry point the Pulumi CLI runs for the ``eks-gpu`` component package (see PulumiPlugin.yaml).

The SDK's analyzer infers the schema from the classes in ``eks_gpu_components``,
``package_schema`` types it with the Kubernetes package's own types, and the SDK's component
provider answers the engine's Construct calls with those classes.
"""

import sys

from eks_gpu_components import COMPONENTS, PACKAGE, SHARED_ARGS, VERSION
from package_schema import PackageProvider
from pulumi.provider import main

if __name__ == "__main__":
    main(PackageProvider(COMPONENTS, PACKAGE, VERSION, SHARED_ARGS), sys.argv[1:])
