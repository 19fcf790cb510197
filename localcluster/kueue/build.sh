#!/usr/bin/env bash
# Builds Kueue's controller (sigs.k8s.io/kueue/cmd/kueue, the manager its chart runs) into $1 as
# kueue, at the version go.mod pins (Go 1.25, k8s.io v0.35.3, no replace directives upstream), with
# its version string set as upstream's Makefile sets it. Only cmd/kueue: kueuectl, the importer and
# kueueviz are not built. The chart and its CRDs come from the same module zip (localcluster/kueue.py
# reads them from the module cache; nothing rendered here).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: $0 OUTPUT_BIN_DIR}"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
cd "$here"
version="$(awk '$1 == "sigs.k8s.io/kueue" {print $2}' go.mod)"
go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$version" \
  -o "$out/kueue" sigs.k8s.io/kueue/cmd/kueue
