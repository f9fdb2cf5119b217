package schemadiff

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestVersionParts: each subresource and the printer columns, removed,
// added and changed, in both directions (issue 17: diff said nothing of
// them, so a --schema-file version that lost them passed unseen).
func TestVersionParts(t *testing.T) {
	status := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	scale := func(spec string) *apiextensionsv1.CustomResourceSubresources {
		return &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: spec, StatusReplicasPath: ".status.replicas"}}
	}
	cols := []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Ready", Type: "string", JSONPath: ".status.ready"}}
	cases := []struct {
		name     string
		old, new apiextensionsv1.CustomResourceDefinitionVersion
		want     []string
	}{
		{"same", apiextensionsv1.CustomResourceDefinitionVersion{Subresources: status, AdditionalPrinterColumns: cols}, apiextensionsv1.CustomResourceDefinitionVersion{Subresources: status, AdditionalPrinterColumns: cols}, nil},
		{"status removed", apiextensionsv1.CustomResourceDefinitionVersion{Subresources: status}, apiextensionsv1.CustomResourceDefinitionVersion{}, []string{"StatusSubresourceRemoved warning subresources.status @v2"}},
		{"status added", apiextensionsv1.CustomResourceDefinitionVersion{}, apiextensionsv1.CustomResourceDefinitionVersion{Subresources: status}, []string{"StatusSubresourceAdded info subresources.status @v2"}},
		{"scale removed", apiextensionsv1.CustomResourceDefinitionVersion{Subresources: scale(".spec.replicas")}, apiextensionsv1.CustomResourceDefinitionVersion{Subresources: status}, []string{"ScaleSubresourceRemoved warning subresources.scale @v2", "StatusSubresourceAdded info subresources.status @v2"}},
		{"scale added", apiextensionsv1.CustomResourceDefinitionVersion{}, apiextensionsv1.CustomResourceDefinitionVersion{Subresources: scale(".spec.replicas")}, []string{"ScaleSubresourceAdded info subresources.scale @v2"}},
		{"scale changed", apiextensionsv1.CustomResourceDefinitionVersion{Subresources: scale(".spec.replicas")}, apiextensionsv1.CustomResourceDefinitionVersion{Subresources: scale(".spec.size")}, []string{"ScaleSubresourceChanged warning subresources.scale @v2"}},
		{"columns removed", apiextensionsv1.CustomResourceDefinitionVersion{AdditionalPrinterColumns: cols}, apiextensionsv1.CustomResourceDefinitionVersion{}, []string{"PrinterColumnsChanged info additionalPrinterColumns @v2"}},
		{"columns added", apiextensionsv1.CustomResourceDefinitionVersion{}, apiextensionsv1.CustomResourceDefinitionVersion{AdditionalPrinterColumns: cols}, []string{"PrinterColumnsChanged info additionalPrinterColumns @v2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.old.Name, tc.new.Name = "v1", "v2"
			got := VersionParts(&tc.old, &tc.new)
			Sort(got)
			if !slices.Equal(render(got), sorted(tc.want...)) {
				t.Errorf("got %q, want %q", render(got), tc.want)
			}
		})
	}
}

// TestVersionsReportsVersionParts: diff CRD FROM TO includes them.
func TestVersionsReportsVersionParts(t *testing.T) {
	c := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1", crdtest.Served, crdtest.Fields("image")).Version("v2", crdtest.Served, crdtest.Storage, crdtest.Fields("image")).Stored("v2").CRD()
	c.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	got, err := Versions(c, "v1", "v2")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(render(got), "StatusSubresourceRemoved warning subresources.status @v2") {
		t.Errorf("got %q", render(got))
	}
}

// TestTransitionRulesAreNotRatcheted: an added rule that reads oldSelf is
// reported as what the API server does with it — evaluated on every
// update, migrate's no-op rewrite included — not as ratcheted (issue 17).
func TestTransitionRulesAreNotRatcheted(t *testing.T) {
	old := parse(t, spec("type: object\nproperties:\n  a: {type: integer}"))
	plain := parse(t, spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > 0'}]\nproperties:\n  a: {type: integer}"))
	transition := parse(t, spec("type: object\nx-kubernetes-validations: [{rule: 'self.a > oldSelf.a'}]\nproperties:\n  a: {type: integer}"))
	if fs := Schemas(old, plain); len(fs) != 1 || !strings.Contains(fs[0].Message, "ratchets unchanged values") {
		t.Errorf("plain rule: %+v", fs)
	}
	fs := Schemas(old, transition)
	if len(fs) != 1 || fs[0].Code != CodeValidationRulesAdded || strings.Contains(fs[0].Message, "ratchets") ||
		!strings.Contains(fs[0].Message, "transition rules added") || !strings.Contains(fs[0].Message, "no-op rewrite by migrate") {
		t.Errorf("transition rule: %+v", fs)
	}
}
