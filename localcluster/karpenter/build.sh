#!/usr/bin/env bash
# Builds Karpenter's core with its kwok cloud provider (sigs.k8s.io/karpenter/kwok, the
# provider upstream tests the core with) into $1 as karpenter-kwok, at the version go.mod
# pins, and fetches the AWS provider at the same version (infra/tooling/karpenter-pins/go.mod: its chart and CRDs,
# nothing built). Karpenter v1.15.0 needs Go 1.26.9: GOTOOLCHAIN=auto lets the go command
# take that toolchain from the module proxy (module golang.org/toolchain, checked against
# the checksum database) when the installed Go is older.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: $0 OUTPUT_BIN_DIR}"
export GOTOOLCHAIN=auto CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
cd "$here"
version="$(awk '$1 == "sigs.k8s.io/karpenter" {print $2}' go.mod)"
aws_pins="$here/../../infra/tooling/karpenter-pins"  # package data: the preview reads its CRDs
aws_version="$(awk '$1 == "require" && $2 == "github.com/aws/karpenter-provider-aws" {print $3}' "$aws_pins/go.mod")"
if [ "$version" != "$aws_version" ]; then
  echo "karpenter/build.sh: core $version and AWS provider $aws_version differ: pin one version" >&2
  exit 1
fi
go build -trimpath -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=$version" \
  -o "$out/karpenter-kwok" sigs.k8s.io/karpenter/kwok
(cd "$aws_pins" && go mod download && go mod verify >/dev/null)
