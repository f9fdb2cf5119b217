package e2e

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestRetireMigrateRefusesToLoseData: retire --migrate rewrote objects
// whose fields the storage version drops, with no --allow-pruning, where
// migrate alone refuses (found by trying the tool as a new user: v1 keeps
// unknown fields, v2 declares fixed ones, v2 promoted with
// --allow-pruning, then retire v1 --migrate lost .spec.color for good).
// Now retire measures the loss in its plan, before it unserves anything,
// and refuses, naming the object and the paths; nothing is changed. With
// --allow-pruning=PATHS it accepts those paths only (issue 34, item 3), and
// with every lost path named it retires v1.
func TestRetireMigrateRefusesToLoseData(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	yes := true
	crd := crontab("retire-loss.example.com", apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", XPreserveUnknownFields: &yes, Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
	}}
	crd = createCRD(t, c, crd)
	name := crd.Name
	createObject(t, c, crd, "v1", "w1", map[string]any{"size": int64(1), "color": "red", "nested": map[string]any{"a": int64(1)}})
	serveVersion(t, c, crd, "v2", &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
	}})
	succeeds(t, "promote-storage", name, "v2", "--allow-pruning")
	crd = getCRD(t, c, name)

	args := []string{"retire", name, "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check"}
	r := refused(t, c, name, []string{"drops", "default/w1: .spec.color", "--allow-pruning"}, args...)
	// refused checked that the CRD was not written.
	if !lifecycle.FindVersion(getCRD(t, c, name), "v1").Served {
		t.Fatalf("the refused retire unserved v1:\n%s", r.stdout)
	}
	if spec := specAt(t, c, crd, "v1", "w1"); spec["color"] != "red" {
		t.Fatalf("the refused retire lost w1's fields: %v", spec)
	}

	// Paths accept those paths only, as migrate's do: the rest of the
	// loss still refuses, naming it.
	r = refused(t, c, name, []string{"default/w1: .spec.nested"}, append(args, "--allow-pruning=.spec.color")...)
	if strings.Contains(r.stdout+r.stderr, "w1: .spec.color") {
		t.Errorf("the refusal names .spec.color, which was accepted:\n%s%s", r.stdout, r.stderr)
	}
	ok := succeeds(t, append(args, "--allow-pruning=.spec.color,.spec.nested")...)
	if lifecycle.FindVersion(getCRD(t, c, name), "v1") != nil {
		t.Errorf("v1 still in spec.versions after retire --allow-pruning=PATHS:\n%s", ok.stdout)
	}
	if got := strings.Join(storedVersionsOf(t, c, name), ","); got != "v2" {
		t.Errorf("storedVersions [%s] after retire --allow-pruning=PATHS", got)
	}
}
