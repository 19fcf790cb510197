"""The eks-gpu package's TypeScript SDK, generated from the schema the package itself serves.

``pulumi package add ./provider`` asks the Node.js language host to generate it (its
GeneratePackage); the v3.68 host the Go module proxy serves has none. So the same generator,
Pulumi's ``pkg/v3/codegen/nodejs`` at the CLI's pin, runs through our ``pulumi-sdkgen-nodejs``
(``localcluster/pulumi/cli/sdkgen``), on the schema ``pulumi package get-schema`` reads from the
package's plugin file. ``bin/gen-sdk`` writes it where ``package add`` would: the TypeScript
stack's ``sdks/eks-gpu``. Committed, and compared with a fresh one by
``tests/provider/test_typescript_sdk.py``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from localcluster.cluster import BIN, ROOT
from localcluster.pulumi_cli import environment, prepare

PLUGIN = ROOT / "provider" / "pulumi-resource-eks-gpu"
"""The package's plugin file: the CLI executes it (no language host) and asks it for its schema."""
TYPESCRIPT_SDK = ROOT / "stacks" / "inference-ts" / "sdks" / "eks-gpu"
"""Where ``pulumi package add`` writes the SDK in the TypeScript stack: ``<project>/sdks/<package>``."""


def package_schema() -> str:
    """The package's schema (JSON), as ``pulumi package get-schema`` receives it from the running plugin."""
    prepare()
    return _run(BIN / "pulumi", "package", "get-schema", str(PLUGIN)).stdout


def generate_typescript_sdk(out: Path = TYPESCRIPT_SDK) -> None:
    """Replace ``out`` with the TypeScript SDK Pulumi's Node.js code generator writes for the package."""
    with tempfile.TemporaryDirectory() as scratch:
        schema = Path(scratch) / "schema.json"
        schema.write_text(package_schema())
        _run(BIN / "pulumi-sdkgen-nodejs", str(schema), str(out))


def _run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in argv], cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} {' '.join(map(str, argv[1:]))} failed:\n{result.stderr}")
    return result


if __name__ == "__main__":
    generate_typescript_sdk(Path(sys.argv[1]) if len(sys.argv) > 1 else TYPESCRIPT_SDK)
