package edit

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

func TestRemoveVersion(t *testing.T) {
	s5 := func() *apiextensionsv1.CustomResourceDefinition {
		return crd([]string{"v2"}, version{name: "v1"}, version{name: "v2", served: true, storage: true})
	}
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
		checks  string
		noop    bool
	}{
		{"unserved, migrated", s5(), "v1", "NotServed=pass NotStorage=pass NotStored=pass DefaultVersion=pass", false},
		{"still served", crd([]string{"v2"}, version{name: "v1", served: true}, version{name: "v2", served: true, storage: true}), "v1",
			"NotServed=fail NotStorage=pass NotStored=pass DefaultVersion=pass", false},
		{"still stored", crd([]string{"v1", "v2"}, version{name: "v1"}, version{name: "v2", served: true, storage: true}), "v1",
			"NotServed=pass NotStorage=pass NotStored=fail DefaultVersion=pass", false},
		{"the storage version", crd([]string{"v1"}, version{name: "v1", storage: true}, version{name: "v2", served: true}), "v1",
			"NotServed=pass NotStorage=fail NotStored=fail DefaultVersion=pass", false},
		{"the only version", crd([]string{"v1"}, version{name: "v1", served: true, storage: true}), "v1",
			"NotServed=fail NotStorage=fail NotStored=fail AnotherVersion=fail DefaultVersion=warn", false},
		{"already removed", crd([]string{"v2"}, version{name: "v2", served: true, storage: true}), "v1", "", true},
		{"removed but still stored", crd([]string{"v1", "v2"}, version{name: "v2", served: true, storage: true}), "v1", "NotStored=fail", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RemoveVersion(tc.crd, tc.version)
			if got := outcomes(r.Checks); got != tc.checks {
				t.Errorf("checks:\n got %s\nwant %s", got, tc.checks)
			}
			if r.NoOp != tc.noop {
				t.Errorf("NoOp = %v, want %v", r.NoOp, tc.noop)
			}
			if len(r.Checks.Failed()) == 0 && !r.NoOp && lifecycle.FindVersion(r.Edited, tc.version) != nil {
				t.Error("the version is still in spec.versions")
			}
		})
	}

	r := RemoveVersion(s5(), "v1")
	if got := r.Edited.Annotations[lifecycle.RetiredVersionsAnnotation]; got != "v1" {
		t.Errorf("retired-versions annotation = %q, want v1", got)
	}
	if a := lifecycle.Analyze(r.Edited); a.State != lifecycle.StateS6 {
		t.Errorf("state after removal = %s, want S6", a.State)
	}
	// A second retirement appends, without repeating a version.
	c := r.Edited.DeepCopy()
	c.Annotations[lifecycle.RetiredVersionsAnnotation] = "v0,v1"
	c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Schema: schemaWith("size")})
	if got := RemoveVersion(c, "v1beta1").Edited.Annotations[lifecycle.RetiredVersionsAnnotation]; got != "v0,v1,v1beta1" {
		t.Errorf("annotation after a second retirement = %q", got)
	}
	if len(s5().Spec.Versions) != 2 {
		t.Error("RemoveVersion changed its input")
	}
}
