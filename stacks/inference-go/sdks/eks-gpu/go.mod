module example.com/pulumi-eks-gpu/sdk/go

go 1.25

require github.com/pulumi/pulumi/sdk/v3 v3.269.0
