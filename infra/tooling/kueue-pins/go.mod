// Kueue's chart (charts/kueue, CRDs in templates/crd) at the version infra/platform/kueue.py
// installs, taken from the Go module proxy with go.sum's checksums: the module's h1 digest is the
// chart's digest here. Shipped as package data, so the tooling renders it wherever the package is
// installed. Not a program: nothing here is built, so never run `go mod tidy` (it would drop the pin).
module eksgpu.local/infra/tooling/kueue-pins

go 1.25.0

require sigs.k8s.io/kueue v0.17.0
