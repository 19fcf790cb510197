// An inference service on the GPU platform, in Go: stacks/inference's Triton service through the
// eks-gpu component package, with the SDK generated from its schema (sdks/eks-gpu, Pulumi's
// codegen/go). metadata and spec are the Kubernetes package's own types, checked by the compiler.
package main

import (
	"encoding/json"

	"example.com/pulumi-eks-gpu/sdk/go/eksgpu"
	k8s "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	networkingv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/networking/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		conf := config.New(ctx, "")
		platform, err := pulumi.NewStackReference(ctx, conf.Require("platformStack"), nil)
		if err != nil {
			return err
		}
		// Talk to the platform's cluster with the kubeconfig it exports (a secret): pulumi-eks exports
		// it as an object, so a non-string is sent as its JSON (which is YAML too).
		kubeconfig := platform.GetOutput(pulumi.String("kubeconfig")).ApplyT(func(v interface{}) (string, error) {
			if text, ok := v.(string); ok {
				return text, nil
			}
			encoded, err := json.Marshal(v)
			return string(encoded), err
		}).(pulumi.StringOutput)
		provider, err := k8s.NewProvider(ctx, "platform", &k8s.ProviderArgs{Kubeconfig: kubeconfig})
		if err != nil {
			return err
		}
		namespaceName := conf.Get("namespace")
		if namespaceName == "" {
			namespaceName = "inference"
		}
		ns, err := corev1.NewNamespace(ctx, "inference", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(namespaceName)},
		}, pulumi.Provider(provider))
		if err != nil {
			return err
		}
		server, err := triton(ctx, conf, platform, ns, provider)
		if err != nil {
			return err
		}
		if err := expose(ctx, ns, provider); err != nil {
			return err
		}
		ctx.Export("deployment", server.Name)
		ctx.Export("namespace", server.Namespace)
		// The component's own Deployment, a resource of this program, typed: its uid as the cluster gave it.
		// (Its status is what pulumi-kubernetes recorded when its wait ended: docs/components.md, "Outputs".)
		ctx.Export("deploymentUid", server.Deployment.Metadata().Uid())
		return nil
	})
}

var labels = pulumi.StringMap{"app.kubernetes.io/name": pulumi.String("triton")}

// triton is the Triton server, placed on the platform's GPU nodes by GpuDeployment.
func triton(
	ctx *pulumi.Context, conf *config.Config, platform *pulumi.StackReference, ns *corev1.Namespace,
	provider *k8s.Provider,
) (*eksgpu.GpuDeployment, error) {
	replicas := conf.GetInt("replicas")
	if replicas == 0 {
		replicas = 1
	}
	var pool *string
	if p := conf.Get("pool"); p != "" {
		pool = &p // a pool the platform exports (its `placement` output lists them); unset: any GPU pool
	}
	container := tritonContainer(conf.Require("image"))
	return eksgpu.NewGpuDeployment(ctx, "triton", &eksgpu.GpuDeploymentArgs{
		Metadata: metav1.ObjectMetaArgs{
			Name:      pulumi.String("triton"),
			Namespace: ns.Metadata.Name(),
			Labels:    labels,
			Annotations: pulumi.StringMap{
				// NGC publishes Triton by tag; pin a digest in production (`image` config).
				"checkov.io/skip1": pulumi.String("CKV_K8S_43=the example takes its image from config; pin a digest there"),
			},
		},
		Spec: appsv1.DeploymentSpecArgs{
			Replicas: pulumi.Int(replicas),
			Selector: metav1.LabelSelectorArgs{MatchLabels: labels},
			Template: corev1.PodTemplateSpecArgs{
				Metadata: metav1.ObjectMetaArgs{Labels: labels},
				Spec: corev1.PodSpecArgs{
					SecurityContext: corev1.PodSecurityContextArgs{
						RunAsUser: pulumi.Int(10001), RunAsGroup: pulumi.Int(10001),
					},
					Containers: corev1.ContainerArray{container},
					Volumes: corev1.VolumeArray{
						corev1.VolumeArgs{Name: pulumi.String("models"), EmptyDir: corev1.EmptyDirVolumeSourceArgs{}},
						corev1.VolumeArgs{Name: pulumi.String("tmp"), EmptyDir: corev1.EmptyDirVolumeSourceArgs{}},
					},
				},
			},
		},
		Gpus: pulumi.IntRef(1),
		Pool: pool,
		// The contract as the platform exported it, so a platform with other names just works.
		Placement: platform.GetOutput(pulumi.String("placement")).AsMapOutput(),
	}, pulumi.Providers(provider)) // the component's Deployment and PodDisruptionBudget use the platform's cluster
}

// tritonContainer is the Triton server container: its ports, probes and resources.
func tritonContainer(image string) corev1.ContainerArgs {
	return corev1.ContainerArgs{
		Name:            pulumi.String("triton"),
		Image:           pulumi.String(image),
		ImagePullPolicy: pulumi.String("Always"),
		Args: pulumi.ToStringArray([]string{
			"tritonserver", "--model-repository=/models", "--model-control-mode=explicit",
		}),
		Ports: corev1.ContainerPortArray{
			corev1.ContainerPortArgs{Name: pulumi.String("http"), ContainerPort: pulumi.Int(8000)},
			corev1.ContainerPortArgs{Name: pulumi.String("grpc"), ContainerPort: pulumi.Int(8001)},
		},
		Resources: corev1.ResourceRequirementsArgs{
			Requests: pulumi.StringMap{"cpu": pulumi.String("2"), "memory": pulumi.String("6Gi")},
			Limits:   pulumi.StringMap{"cpu": pulumi.String("3"), "memory": pulumi.String("6Gi")},
		},
		ReadinessProbe: corev1.ProbeArgs{HttpGet: corev1.HTTPGetActionArgs{
			Path: pulumi.String("/v2/health/ready"), Port: pulumi.String("http"),
		}},
		LivenessProbe: corev1.ProbeArgs{HttpGet: corev1.HTTPGetActionArgs{
			Path: pulumi.String("/v2/health/live"), Port: pulumi.String("http"),
		}},
		// Writes go to the emptyDirs only.
		SecurityContext: corev1.SecurityContextArgs{ReadOnlyRootFilesystem: pulumi.Bool(true)},
		VolumeMounts: corev1.VolumeMountArray{
			corev1.VolumeMountArgs{Name: pulumi.String("models"), MountPath: pulumi.String("/models")},
			corev1.VolumeMountArgs{Name: pulumi.String("tmp"), MountPath: pulumi.String("/tmp")},
		},
	}
}

// expose is the Service in front of Triton and the NetworkPolicy that lets only the namespace in.
func expose(ctx *pulumi.Context, ns *corev1.Namespace, provider *k8s.Provider) error {
	meta := metav1.ObjectMetaArgs{Name: pulumi.String("triton"), Namespace: ns.Metadata.Name()}
	_, err := corev1.NewService(ctx, "triton", &corev1.ServiceArgs{
		Metadata: meta,
		Spec: corev1.ServiceSpecArgs{
			Selector: labels,
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{
				Name: pulumi.String("http"), Port: pulumi.Int(8000), TargetPort: pulumi.String("http"),
			}},
		},
	}, pulumi.Provider(provider))
	if err != nil {
		return err
	}
	port := func(n int) networkingv1.NetworkPolicyPortArgs {
		return networkingv1.NetworkPolicyPortArgs{Port: pulumi.Int(n), Protocol: pulumi.String("TCP")}
	}
	_, err = networkingv1.NewNetworkPolicy(ctx, "triton", &networkingv1.NetworkPolicyArgs{
		Metadata: meta,
		Spec: networkingv1.NetworkPolicySpecArgs{
			PodSelector: metav1.LabelSelectorArgs{MatchLabels: labels},
			PolicyTypes: pulumi.ToStringArray([]string{"Ingress"}),
			Ingress: networkingv1.NetworkPolicyIngressRuleArray{networkingv1.NetworkPolicyIngressRuleArgs{
				From:  networkingv1.NetworkPolicyPeerArray{networkingv1.NetworkPolicyPeerArgs{PodSelector: metav1.LabelSelectorArgs{}}},
				Ports: networkingv1.NetworkPolicyPortArray{port(8000), port(8001)},
			}},
		},
	}, pulumi.Provider(provider))
	return err
}
