package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// startHPAController runs kube-controller-manager's horizontal pod
// autoscaler controller (v1.37.2) against the test server, in this process,
// until the test ends, wired as cmd/kube-controller-manager/app/autoscaling.go
// wires it (a scale client over the shared RESTMapper, the REST metrics
// clients), with a sync period of 1 s instead of 15 s and no downscale
// stabilization window. No metrics API is served: the controller scales
// only on the replica bounds, which need no metrics.
func startHPAController(t *testing.T) {
	t.Helper()
	runControllers(t, 0, func(ctx context.Context, p controllerParts) []func(context.Context) {
		cfg := rest.CopyConfig(srv.Config)
		scales, err := scale.NewForConfig(cfg, p.mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(p.disc))
		if err != nil {
			t.Fatal(err)
		}
		resources, err := resourceclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		external, err := external_metrics.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		metricsClient := metrics.NewRESTMetricsClient(resources, custom_metrics.NewForConfig(cfg, p.mapper, custom_metrics.NewAvailableAPIsGetter(p.disc)), external)
		hpa := podautoscaler.NewHorizontalController(ctx, p.kube.CoreV1(), scales, p.kube.AutoscalingV2(), p.mapper, metricsClient,
			p.typed.Autoscaling().V2().HorizontalPodAutoscalers(), p.typed.Core().V1().Pods(), time.Second, 0, 0.1, 5*time.Minute, 30*time.Second)
		return []func(context.Context){func(ctx context.Context) { hpa.Run(ctx, 1) }}
	})
}

// TestScaleTargetOfAnUnservedVersion (issue 28): an HPA whose
// spec.scaleTargetRef names v1 of a CRD. unserve v1 refuses, changing
// nothing, and names the HPA and the repair. What the real HPA controller
// does once v1 is unserved anyway (--skip-reference-check): it maps the
// target by group and kind only, so it still reads and writes the scale —
// a target above maxReplicas is scaled down to it. repair-references then
// rewrites the scale target to v2 with its own JSON patch, and the
// controller keeps scaling through the new reference.
func TestScaleTargetOfAnUnservedVersion(t *testing.T) {
	checkReferences(t)
	c := newClients(t)
	ctx := context.Background()
	const group, ns = "scaletargets.example.com", "team-scale"
	ensureNamespace(t, c, ns)
	subresources := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
	}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
	}}}
	crd := createCRD(t, c, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "webapps." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "webapps", Singular: "webapp", Kind: "WebApp", ListKind: "WebAppList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Schema: schema, Subresources: subresources},
				{Name: "v2", Served: true, Storage: true, Schema: schema, Subresources: subresources},
			},
		},
	})
	app := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v2", "kind": "WebApp",
		"metadata": map[string]any{"name": "web", "namespace": ns}, "spec": map[string]any{"replicas": int64(2)}}}
	if _, err := resource(c, crd, "v2", ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hpa, err := c.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: group + "/v1", Kind: "WebApp", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startHPAController(t)

	// scaledTo sets the target's spec.replicas to 5, above maxReplicas,
	// and waits for the HPA controller to scale it to 3 through the scale
	// subresource.
	scaledTo := func(when string) {
		t.Helper()
		patch := []byte(`{"spec":{"replicas":5}}`)
		if _, err := resource(c, crd, "v2", ns).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the HPA controller to scale the target down to maxReplicas "+when, func() (bool, error) {
			u, err := resource(c, crd, "v2", ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			return n == 3, nil
		})
	}
	scaledTo("while v1 is served")

	refused(t, c, crd.Name, []string{"1 scale target on objects of 1 resource names " + group + "/v1 WebApp",
		"an autoscaler that maps its scale target by version (KEDA's ScaledObject) cannot find it",
		"horizontalpodautoscalers.autoscaling: 1 in " + ns + " (" + ns + "/web)",
		"rewrite them to " + group + "/v2 first (kubectl crdversion repair-references " + crd.Name + " v1)"},
		"unserve", crd.Name, "v1", "--skip-usage-check")

	// What the real controller does with a scale target of an unserved
	// version: the evidence behind the refusal's wording.
	mustRun(t, "unserve", crd.Name, "v1", "--skip-usage-check", "--skip-reference-check")
	waitListFails(t, c, crd, "v1", "the server could not find the requested resource")
	scaledTo("after v1 was unserved (the controller maps group and kind)")

	// doctor finds the scale target of the unserved version.
	if f := brokenReferences(t, crd.Name); f.Version != "v1" || !strings.Contains(f.Message, "1 scale target names "+group+"/v1 WebApp, which is not served") ||
		!strings.Contains(f.Message, ns+"/web") || f.Fix != "kubectl crdversion repair-references "+crd.Name+" v1" {
		t.Errorf("doctor does not report the scale target: %+v", f)
	}

	r := mustRun(t, "repair-references", crd.Name, "v1", "-o", "json")
	var rep report.ReferenceRepair
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rep.Repairs) != 1 || rep.Repairs[0].Field != references.ScaleTarget || rep.Repairs[0].Outcome != references.Rewritten || rep.Repairs[0].Name != "web" {
		t.Fatalf("repair report %+v", rep)
	}
	got, err := c.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := got.Spec.ScaleTargetRef; ref.APIVersion != group+"/v2" || ref.Kind != "WebApp" || ref.Name != "web" || got.UID != hpa.UID {
		t.Errorf("repaired scale target %+v (uid %s, was %s)", ref, got.UID, hpa.UID)
	}
	if got.Spec.MaxReplicas != 3 || *got.Spec.MinReplicas != 1 || len(got.Spec.Metrics) != 1 {
		t.Errorf("the repair changed more than the apiVersion: %+v", got.Spec)
	}
	scaledTo("after the repair")

	r = mustRun(t, "repair-references", crd.Name, "v1")
	if !strings.Contains(r.stdout, "No owner reference, scale target or Helm release record names "+group+"/v1") {
		t.Errorf("a second repair:\n%s", r.stdout)
	}
}
