// Charts the tests render, taken from the Go module proxy with go.sum's checksums:
// the NVIDIA device plugin ships its chart in deployments/helm/nvidia-device-plugin.
// Not a program: nothing here is built, so never run `go mod tidy` (it would drop the pin).
module eksgpu.local/localcluster/charts

go 1.26.0

require github.com/NVIDIA/k8s-device-plugin v0.19.3
