"""The eks-gpu package's TypeScript and Go SDKs, generated from the schema the package itself serves.

``pulumi package add ./provider`` asks the project's language host to generate the SDK (its
GeneratePackage); the Node.js (v3.68) and Go (v3.66) hosts the Go module proxy serves have none.
So the same generators, Pulumi's ``pkg/v3/codegen/nodejs`` and ``codegen/go`` at the CLI's pin,
run through our ``pulumi-sdkgen`` (``localcluster/pulumi/cli/sdkgen``), called as the CLI and the
v3.276 hosts call them (same tool name in every header, same options), on the schema ``pulumi
package get-schema`` reads from the package's plugin file, and on the schema of every package it
references (the Kubernetes provider's, read the same way): what the CLI's loader hands the host.
``bin/gen-sdk`` writes each where ``package add`` would, ``<project>/sdks/eks-gpu``. Committed,
and compared with fresh ones by ``tests/provider/test_sdks.py``.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from localcluster.cluster import BIN, ROOT
from localcluster.pulumi_cli import environment, prepare

PLUGIN = ROOT / "provider" / "pulumi-resource-eks-gpu"
"""The package's plugin file: the CLI executes it (no language host) and asks it for its schema."""
SDKS = {
    "nodejs": ROOT / "stacks" / "inference-ts" / "sdks" / "eks-gpu",
    "go": ROOT / "stacks" / "inference-go" / "sdks" / "eks-gpu",
}
"""Where ``pulumi package add`` writes the SDK in each consumer project: ``<project>/sdks/<package>``."""
TYPESCRIPT_SDK = SDKS["nodejs"]
REFERENCE = re.compile(r'"\$ref":\s*"/([-\w]+)/v([^/"]+)/schema\.json#')
"""A reference to another package's schema (``/<name>/v<version>/schema.json#/...``)."""


def package_schema() -> str:
    """The package's schema (JSON), as ``pulumi package get-schema`` receives it from the running plugin."""
    prepare()
    return _schema(str(PLUGIN))


@functools.cache  # per process (bin/gen-sdk builds and installs the plugin before it starts): each language, one schema
def _schema(plugin: str) -> str:
    return _run(BIN / "pulumi", "package", "get-schema", plugin).stdout


def referenced_packages(schema: str) -> list[str]:
    """``name@version`` of every package ``schema`` references, as the CLI's loader would load them."""
    return sorted({f"{name}@{version}" for name, version in REFERENCE.findall(schema)})


def generate_sdk(language: str, out: Path | None = None) -> None:
    """Replace ``out`` (default: the consumer project's ``sdks/eks-gpu``) with the SDK Pulumi's ``language`` generator writes."""
    schema = package_schema()
    with tempfile.TemporaryDirectory() as scratch:
        files = [Path(scratch) / "schema.json"]
        files[0].write_text(schema)
        for package in referenced_packages(schema):
            files.append(Path(scratch) / f"{package}.json")
            files[-1].write_text(_schema(_plugin(package)))
        _run(BIN / "pulumi-sdkgen", language, files[0], out or SDKS[language], *files[1:])


def _plugin(package: str) -> str:
    """The built plugin file of ``name@version`` where localcluster/build made it (no download here), else the name."""
    built = BIN / f"pulumi-resource-{package.split('@')[0]}"
    return str(built) if built.exists() else package


def _run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in argv], cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} {' '.join(map(str, argv[1:]))} failed:\n{result.stderr}")
    return result


if __name__ == "__main__":
    languages = sys.argv[1:] or sorted(SDKS)
    unknown = [language for language in languages if language not in SDKS]
    if unknown:
        sys.exit(f"gen-sdk: no SDK for {unknown}; languages: {sorted(SDKS)}")
    for language in languages:
        generate_sdk(language)
