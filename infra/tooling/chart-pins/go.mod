// The device plugin chart the tooling renders (the offline preview, the policy pack), taken
// from the Go module proxy with go.sum's checksums: the NVIDIA device plugin ships its chart
// in deployments/helm/nvidia-device-plugin. Shipped inside the package (package data), so
// the preview and the pack render it wherever the package is installed.
// Not a program: nothing here is built, so never run `go mod tidy` (it would drop the pin).
module eksgpu.local/infra/tooling/chart-pins

go 1.26.0

require github.com/NVIDIA/k8s-device-plugin v0.19.3
