// Entry point of pulumi-resource-kubernetes, built from the pinned
// github.com/pulumi/pulumi-kubernetes/provider/v4 module (see go.mod).
//
// Upstream's cmd/pulumi-resource-kubernetes/main.go is not buildable from the
// module zip: it go:embeds schema-embed.json and terraform-mapping-embed.json,
// which upstream's Makefile generates (go generate -> generate.go) before
// `go build`. build.sh copies this file, go.mod and go.sum into a scratch dir
// under .cache/, runs upstream's generate.go there (from the module cache) and
// builds there. It does the same thing upstream's main does.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
