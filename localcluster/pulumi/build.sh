#!/usr/bin/env bash
# Builds the pinned Pulumi toolchain from Go modules only (Go module proxy ->
# module cache) into the directory given as $1, e.g.
#
#   localcluster/pulumi/build.sh .cache/localcluster/bin [cli|hosts|yaml|kubernetes ...]
#
# One part per Go module, one Go invocation each; without parts, all four in turn.
# localcluster/build runs the parts as separate targets (pulumi-cli, ...), beside other builds.
#
# Each sub-directory here is one Go module whose go.mod/go.sum pin what is built
# (see README.md next to this script for what each pin is and why):
#   cli/                 pulumi                   (pulumi/pkg/v3 v3.276.0)
#   cli/sdkgen/          pulumi-sdkgen-nodejs     (our main over pkg/v3's codegen/nodejs, same pins)
#   language-hosts/      pulumi-language-python,  (pulumi/sdk/v3 v3.68.0: the newest
#                        pulumi-language-nodejs    served sdk/v3 zip that holds them)
#   yaml/                pulumi-language-yaml     (pulumi-yaml v1.25.0)
#   kubernetes-provider/ pulumi-resource-kubernetes (provider/v4 at tag v4.25.0)
# plus the helper scripts exec'd at run time, copied from the CLI's sdk/v3
# module (v3.276.0) in the module cache.
#
# Idempotent: re-running rebuilds from Go's build cache (seconds) and
# overwrites the outputs. Needs go >= 1.26.6 and network access to the Go
# module proxy (or a warm module cache). Writes nothing outside $1 except the
# scratch dir below (under the git-ignored .cache/) and Go's own caches.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
out="${1:?usage: $0 OUTPUT_BIN_DIR [cli|hosts|yaml|kubernetes ...]}"
shift
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(cli hosts go yaml kubernetes)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
scratch="$repo_root/.cache/localcluster/pulumi-build"

# Versions stamped into the binaries (must match the pins in the go.mod files).
PULUMI_VERSION=v3.276.0        # cli/go.mod: github.com/pulumi/pulumi/pkg/v3
LANGHOST_VERSION=v3.68.0       # language-hosts/go.mod: github.com/pulumi/pulumi/sdk/v3
YAML_VERSION=v1.25.0           # yaml/go.mod: github.com/pulumi/pulumi-yaml
K8S_VERSION=4.25.0             # kubernetes-provider/go.mod: provider/v4 @ tag v4.25.0
K8S_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4

# Release-like, reproducible builds: upstream's release builds use CGO_ENABLED=0
# (pulumi's scripts/go-wrapper.sh, pulumi-kubernetes' Makefile), -trimpath, -s -w.
# -mod=readonly: the committed go.mod/go.sum are the pins; never rewrite them.
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false -trimpath"

need_go="1.26.6"   # highest `go` line among the pinned modules (pulumi/pkg/v3 v3.276.0)
have_go="$(go env GOVERSION)"; have_go="${have_go#go}"
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -n1)" != "$need_go" ]; then
	echo "build.sh: go $have_go is older than go $need_go, which the pins need" >&2
	exit 1
fi

step() { echo "==> [$(date +%H:%M:%S)] $*"; }

part_cli() {
# --- 1. pulumi CLI and pulumi-sdkgen: one Go invocation ------------------------
# pulumi-sdkgen builds TypeScript and Go SDKs of component packages (what `pulumi package add` asks
# the Node.js or Go host for, which the served hosts cannot do): our small main over pkg/v3's own
# codegen/nodejs and codegen/go, in the CLI's module so it builds from the same pins (cli/sdkgen/main.go). Built
# with the CLI's tags in the same invocation, the packages both import compile once, not twice.
step "building pulumi $PULUMI_VERSION (github.com/pulumi/pulumi/pkg/v3/cmd/pulumi) and pulumi-sdkgen (cli/sdkgen)"
(cd "$here/cli" && go build -tags osusergo,grpcnotrace \
	-ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
	-o "$out/" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi ./sdkgen)
mv "$out/sdkgen" "$out/pulumi-sdkgen"
}

part_hosts() {
# --- 2. language hosts for Python and Node.js: one Go invocation ---------------
step "building pulumi-language-python and pulumi-language-nodejs $LANGHOST_VERSION (github.com/pulumi/pulumi/sdk/v3/{python,nodejs}/cmd)"
(cd "$here/language-hosts" && go build -tags osusergo,grpcnotrace \
	-ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$LANGHOST_VERSION" \
	-o "$out/" github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python \
	github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs)
}

# Scripts exec'd at run time, copied from the CLI's github.com/pulumi/pulumi/sdk/v3
# (v3.276.0, the version pulumi==3.272.0's runtime API is closest to; its
# exec script accepts every flag the v3.68.0 host passes):
#  - pulumi-language-python-exec: pulumi-language-python runs the program through
#    it and looks for it next to its own executable;
#  - pulumi-resource-pulumi-{python,nodejs}: the "bundled" dynamic-provider
#    plugins (pulumi.dynamic / @pulumi/pulumi/dynamic) the CLI looks for on
#    $PATH or next to the pulumi executable.
# (The v3.68.0-era pulumi-analyzer-policy[-python] shims are not copied: CLI
# v3.276.0 only uses them when no language host for the pack's runtime exists.)
part_scripts() {
sdk_dir="$(cd "$here/cli" && go mod download github.com/pulumi/pulumi/sdk/v3 \
	&& go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)"
for f in python/cmd/pulumi-language-python-exec \
	python/dist/pulumi-resource-pulumi-python \
	nodejs/dist/pulumi-resource-pulumi-nodejs; do
	step "copying $(basename "$f") from github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION ($f)"
	install -m 0755 "$sdk_dir/$f" "$out/$(basename "$f")"
done
}

part_go() {
# The Go host: sdk/v3 v3.66.0 is the newest served sdk/v3 that holds go/pulumi-language-go (its
# standalone module, sdk/go/pulumi-language-go/v3, is served at no version: README.md).
step "building pulumi-language-go v3.66.0 (github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go)"
(cd "$here/language-host-go" && go build -tags osusergo,grpcnotrace \
	-ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v3.66.0" \
	-o "$out/pulumi-language-go" github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go)
}

part_yaml() {
# --- 3. YAML language host -----------------------------------------------------
step "building pulumi-language-yaml $YAML_VERSION (github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml)"
(cd "$here/yaml" && go build \
	-ldflags "-s -w -X github.com/pulumi/pulumi-yaml/pkg/version.Version=$YAML_VERSION" \
	-o "$out/pulumi-language-yaml" github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml)
}

part_kubernetes() {
# --- 4. Kubernetes provider ----------------------------------------------------
# The provider's main package go:embeds schema-embed.json and
# terraform-mapping-embed.json, which upstream's Makefile generates with
# `VERSION=<v> go generate cmd/pulumi-resource-kubernetes/main.go` (i.e. `go run
# ./generate.go` in that directory: schema.json with .version set, and
# terraform-mapping.json re-serialised). The module zip has the inputs and
# generate.go but not the outputs, so do the same in a scratch dir and build
# our copy of main (kubernetes-provider/main.go) there with the committed pins.
step "building pulumi-resource-kubernetes $K8S_VERSION ($K8S_MODULE/cmd/pulumi-resource-kubernetes)"
k8s_src="$(cd "$here/kubernetes-provider" && go mod download "$K8S_MODULE" \
	&& go list -m -f '{{.Dir}}' "$K8S_MODULE")"
k8s_scratch="$scratch/kubernetes-provider"
rm -rf "$k8s_scratch"
mkdir -p "$k8s_scratch"
cp "$here/kubernetes-provider/go.mod" "$here/kubernetes-provider/go.sum" "$here/kubernetes-provider/main.go" "$k8s_scratch/"
cp "$k8s_src/cmd/pulumi-resource-kubernetes/generate.go" \
	"$k8s_src/cmd/pulumi-resource-kubernetes/schema.json" \
	"$k8s_src/cmd/pulumi-resource-kubernetes/terraform-mapping.json" "$k8s_scratch/"
chmod -R u+w "$k8s_scratch"   # files from the module cache are read-only
(cd "$k8s_scratch" \
	&& VERSION="$K8S_VERSION" go run generate.go \
	&& rm generate.go \
	&& go build -ldflags "-s -w -X $K8S_MODULE/pkg/version.Version=$K8S_VERSION" \
		-o "$out/pulumi-resource-kubernetes" .)
}

for part in "${parts[@]}"; do
	case "$part" in
	cli) part_cli; part_scripts ;;
	hosts | go | yaml | kubernetes) "part_$part" ;;
	*) echo "build.sh: no part $part (cli hosts go yaml kubernetes)" >&2; exit 2 ;;
	esac
done
step "done: ${parts[*]} in $out"
