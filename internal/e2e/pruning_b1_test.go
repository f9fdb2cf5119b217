package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestPreserveUnknownFieldsPruningRefused is B1 of the 2026-12-01
// preflight holes: v1 keeps unknown fields of .spec and a map under
// .spec.labels, v2 declares fixed properties for both. add-version and
// promote-storage said "no field is pruned" and migrate then dropped
// image, extra and labels.env from etcd. Now every command names .spec.*
// and .spec.labels.*, and refuses without --allow-pruning.
func TestPreserveUnknownFieldsPruningRefused(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(`
metadata: {name: widgets.b1.pruning.example.com}
spec:
  group: b1.pruning.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              replicas: {type: integer}
              labels: {type: object, additionalProperties: {type: string}}
`), crd); err != nil {
		t.Fatal(err)
	}
	crd = createCRD(t, c, crd)
	name := crd.Name
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "b1.pruning.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec": map[string]any{"replicas": int64(1), "image": "nginx", "extra": map[string]any{"deep": []any{int64(1), int64(2)}},
			"labels": map[string]any{"team": "a", "env": "prod"}},
	}}
	if _, err := resource(c, crd, "v1", "default").Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schemaFile := filepath.Join(t.TempDir(), "v2.yaml")
	writeFile(t, schemaFile, `
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer}
      labels:
        type: object
        properties:
          team: {type: string}
`)
	r := refused(t, c, name, []string{"would be pruned"}, "add-version", name, "v2", "--schema-file", schemaFile)
	for _, want := range []string{".spec.* at v1 (read or written through v2)", ".spec.labels.* at v1 (read or written through v2)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("add-version does not name %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "no field is pruned") {
		t.Errorf("add-version still says no field is pruned:\n%s", r.stdout)
	}

	mustRun(t, "add-version", name, "v2", "--schema-file", schemaFile, "--allow-pruning")
	r = refused(t, c, name, []string{"would be pruned"}, "promote-storage", name, "v2")
	if !strings.Contains(r.stdout, ".spec.* at v1") || !strings.Contains(r.stdout, ".spec.labels.* at v1") {
		t.Errorf("promote-storage does not name the pruned paths:\n%s", r.stdout)
	}
	if s := fmt.Sprint(statusJSON(t, name).Findings); !strings.Contains(s, ".spec.*") || strings.Contains(s, "no field is pruned") {
		t.Errorf("status does not report the pruning: %s", s)
	}
	d := plugin(t, "diff", name, "v1", "v2")
	if d.err == nil || !strings.Contains(d.stdout, "PreserveUnknownFieldsRemoved") || !strings.Contains(d.stdout, ".spec.labels.*") {
		t.Errorf("diff v1 v2: err %v\n%s", d.err, d.stdout)
	}

	// What the API server does with the object at v2 is what was named.
	got, err := resource(c, crd, "v2", "default").Get(context.Background(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(got.Object, "spec")
	if _, ok := spec["image"]; ok || fmt.Sprint(spec["labels"]) != "map[team:a]" {
		t.Errorf("at v2 the API server keeps %v; the prediction says .spec.* and .spec.labels.* are pruned", spec)
	}
}
