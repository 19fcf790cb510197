// The AWS half of Karpenter, for its CRDs (pkg/apis/crds: the preview checks Karpenter objects against
// them, so these pins ship as package data) and its chart (charts/karpenter, rendered by the tests)
// at the version of the core in localcluster/karpenter/go.mod: nothing here is built, so never run `go mod tidy`.
module eksgpu.local/infra/tooling/karpenter-pins

go 1.26.9

require github.com/aws/karpenter-provider-aws v1.15.0
