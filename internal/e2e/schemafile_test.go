package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestAddVersionSchemaFileKeepsSubresources reproduces B3 of the
// preflight-holes report on the real API server: add-version
// --schema-file gave the new version neither the status and scale
// subresources nor the printer columns of the version it follows, and
// nothing said so. Now the new version keeps them (taken from the storage
// version, or from --from), the API server serves /scale at it, and diff
// reports a version that lacks them.
func TestAddVersionSchemaFileKeepsSubresources(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
	}}
	crd := crontab("b3.schemafile.example.com", apiextensionsv1.NamespaceScoped)
	v1 := &crd.Spec.Versions[0]
	v1.Schema.OpenAPIV3Schema = schema
	v1.Subresources = &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
	}
	v1.AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"}}
	crd = createCRD(t, c, crd)
	createObject(t, c, crd, "v1", "r1", map[string]any{"replicas": int64(2)})

	file := filepath.Join(t.TempDir(), "v2.yaml")
	if err := os.WriteFile(file, []byte("type: object\nproperties:\n  spec: {type: object, properties: {replicas: {type: integer}}}\n  status: {type: object, properties: {replicas: {type: integer}}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := succeeds(t, "add-version", crd.Name, "v2", "--schema-file", file)
	got := lifecycle.FindVersion(getCRD(t, c, crd.Name), "v2")
	if got == nil || got.Subresources == nil || got.Subresources.Status == nil || got.Subresources.Scale == nil ||
		got.Subresources.Scale.SpecReplicasPath != ".spec.replicas" || len(got.AdditionalPrinterColumns) != 1 {
		t.Fatalf("v2 after add-version --schema-file: %+v\n%s", got, out.stdout)
	}
	if !strings.Contains(out.stdout, "v1") || !strings.Contains(strings.ToLower(out.stdout), "subresources") {
		t.Errorf("add-version does not say where v2's subresources come from:\n%s", out.stdout)
	}
	// The API server serves the scale subresource at v2 (it was NotFound).
	path := "/apis/" + crd.Spec.Group + "/v2/namespaces/default/" + crd.Spec.Names.Plural + "/r1/scale"
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("GET %s: not served at v2", path)
	}

	// diff names a version that lacks them: here a v3 added by hand.
	updateCRD(t, c, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v3", Served: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema}})
	})
	d := plugin(t, "diff", crd.Name, "v1", "v3")
	for _, want := range []string{"StatusSubresourceRemoved", "ScaleSubresourceRemoved", "PrinterColumnsChanged"} {
		if !strings.Contains(d.stdout, want) {
			t.Errorf("diff v1 v3 does not report %s:\n%s", want, d.stdout)
		}
	}
	// So do status (and doctor, from the same analysis) and the
	// promote-storage that would make v3 the version controllers write
	// /status at: only diff said it.
	s := statusJSON(t, crd.Name)
	var codes []string
	for _, f := range s.Findings {
		if f.Version == "v3" && f.Severity == lifecycle.SeverityWarning {
			codes = append(codes, f.Code)
		}
	}
	if strings.Join(codes, ",") != lifecycle.CodeStatusSubresourceRemoved+","+lifecycle.CodeScaleSubresourceRemoved {
		t.Errorf("status warns of v3 with %v, want the status and scale subresources it lacks", codes)
	}
	p := succeeds(t, "promote-storage", crd.Name, "v3", "--dry-run=server")
	if !strings.Contains(p.stdout, "WARN  v3 has no status subresource (v1 has)") || !strings.Contains(p.stdout, "WARN  v3 has no scale subresource (v1 has)") {
		t.Errorf("promote-storage v3 does not warn of the subresources v3 lacks:\n%s", p.stdout)
	}
}
