"""Entry point the Pulumi CLI runs for the ``eks-gpu`` component package (see PulumiPlugin.yaml)."""

import sys

from construct_options import serve
from eks_gpu_components import COMPONENTS, PACKAGE, SHARED_ARGS, VERSION
from package_schema import PackageProvider

if __name__ == "__main__":
    serve(PackageProvider(COMPONENTS, PACKAGE, VERSION, SHARED_ARGS), sys.argv[1:])
