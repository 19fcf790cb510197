"""Entry point the Pulumi CLI runs for the ``eks-gpu`` component package (see PulumiPlugin.yaml).

The SDK's analyzer infers the schema from the classes in ``eks_gpu_components``,
``package_schema`` types it with the Kubernetes package's own types, and the SDK's component
provider answers the engine's Construct calls with those classes, reading every resource option
the engine sends (``construct_options``).
"""

import sys

from construct_options import serve
from eks_gpu_components import COMPONENTS, PACKAGE, SHARED_ARGS, VERSION
from package_schema import PackageProvider

if __name__ == "__main__":
    serve(PackageProvider(COMPONENTS, PACKAGE, VERSION, SHARED_ARGS), sys.argv[1:])
