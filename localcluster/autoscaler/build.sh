#!/usr/bin/env bash
# Builds cluster-autoscaler (the tag cluster-autoscaler-1.33.0, pinned in go.mod/go.sum) into $1
# with only the AWS cloud provider compiled in (`-tags aws`; without a tag every provider is).
# See localcluster/autoscaler/README.md for the pins and why each replace is there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: $0 OUTPUT_BIN_DIR}"
cd "$here"
CGO_ENABLED=0 go build -tags aws -ldflags "-s -w" -o "$out/cluster-autoscaler" k8s.io/autoscaler/cluster-autoscaler
