// The AWS half of Karpenter, for its chart (charts/karpenter) and its CRDs (pkg/apis/crds)
// at the version of the core in ../go.mod: nothing here is built, so never run `go mod tidy`.
module eksgpu.local/localcluster/karpenter/aws

go 1.26.9

require github.com/aws/karpenter-provider-aws v1.15.0
