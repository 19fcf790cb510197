// An inference service on the GPU platform, in TypeScript: stacks/inference's Triton service through
// the eks-gpu component package, with the SDK generated from its schema (sdks/eks-gpu).
import * as eksGpu from "@pulumi/eks-gpu";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

const config = new pulumi.Config();
const platform = new pulumi.StackReference(config.require("platformStack"));
const image = config.require("image");
const replicas = config.getNumber("replicas") ?? 1;
const namespaceName = config.get("namespace") ?? "inference";
// A pool the platform exports (its `placement` output lists them); unset: any GPU pool.
const pool = config.get("pool");

// Talk to the platform's cluster with the kubeconfig it exports (a secret).
const provider = new k8s.Provider("platform", { kubeconfig: platform.requireOutput("kubeconfig") });
const ns = new k8s.core.v1.Namespace("inference", { metadata: { name: namespaceName } }, { provider });

const labels = { "app.kubernetes.io/name": "triton" };
const server = new eksGpu.GpuDeployment(
    "triton",
    {
        metadata: {
            name: "triton",
            namespace: ns.metadata.name,
            labels,
            annotations: {
                // NGC publishes Triton by tag; pin a digest in production (`image` config).
                "checkov.io/skip1": "CKV_K8S_43=the example takes its image from config; pin a digest there",
            },
        },
        spec: {
            replicas,
            selector: { matchLabels: labels },
            template: {
                metadata: { labels },
                spec: {
                    securityContext: { runAsUser: 10001, runAsGroup: 10001 },
                    containers: [
                        {
                            name: "triton",
                            image,
                            imagePullPolicy: "Always",
                            args: ["tritonserver", "--model-repository=/models", "--model-control-mode=explicit"],
                            ports: [
                                { name: "http", containerPort: 8000 },
                                { name: "grpc", containerPort: 8001 },
                            ],
                            resources: {
                                requests: { cpu: "2", memory: "6Gi" },
                                limits: { cpu: "3", memory: "6Gi" },
                            },
                            readinessProbe: { httpGet: { path: "/v2/health/ready", port: "http" } },
                            livenessProbe: { httpGet: { path: "/v2/health/live", port: "http" } },
                            // Writes go to the emptyDirs only.
                            securityContext: { readOnlyRootFilesystem: true },
                            volumeMounts: [
                                { name: "models", mountPath: "/models" },
                                { name: "tmp", mountPath: "/tmp" },
                            ],
                        },
                    ],
                    volumes: [
                        { name: "models", emptyDir: {} },
                        { name: "tmp", emptyDir: {} },
                    ],
                },
            },
        },
        gpus: 1,
        pool,
        // The contract as the platform exported it, so a platform with other names just works.
        placement: platform.requireOutput("placement"),
    },
    // The component's Deployment and PodDisruptionBudget use the platform's cluster.
    { providers: [provider] },
);

const tritonService = new k8s.core.v1.Service(
    "triton",
    {
        metadata: { name: "triton", namespace: ns.metadata.name },
        spec: { selector: labels, ports: [{ name: "http", port: 8000, targetPort: "http" }] },
    },
    { provider },
);

// Only clients in the namespace reach the server; nothing else is allowed in.
new k8s.networking.v1.NetworkPolicy(
    "triton",
    {
        metadata: { name: "triton", namespace: ns.metadata.name },
        spec: {
            podSelector: { matchLabels: labels },
            policyTypes: ["Ingress"],
            ingress: [
                {
                    from: [{ podSelector: {} }],
                    ports: [
                        { port: 8000, protocol: "TCP" },
                        { port: 8001, protocol: "TCP" },
                    ],
                },
            ],
        },
    },
    { provider },
);

export const deployment = server.name;
export const namespace = server.namespace;
// The component's own Deployment, a resource of this program, typed: its uid as the cluster gave it.
// (Its status is what pulumi-kubernetes recorded when its wait ended: docs/components.md, "Outputs".)
export const deploymentUid = server.deployment.apply((d) => d.metadata).apply((m) => m.uid);
export const service = tritonService.metadata.name;
