package edit

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

func TestRemoveVersion(t *testing.T) {
	s5 := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	}
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
		checks  string
		noop    bool
	}{
		{"unserved, migrated", s5(), "v1", "NotServed=pass NotStorage=pass NotStored=pass DefaultVersion=pass", false},
		{"still served", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), "v1",
			"NotServed=fail NotStorage=pass NotStored=pass DefaultVersion=pass", false},
		{"still stored", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD(), "v1",
			"NotServed=pass NotStorage=pass NotStored=fail DefaultVersion=pass", false},
		{"the storage version", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(), "v1",
			"NotServed=pass NotStorage=fail NotStored=fail DefaultVersion=pass", false},
		{"the only version", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(), "v1",
			"NotServed=fail NotStorage=fail NotStored=fail AnotherVersion=fail DefaultVersion=warn", false},
		{"already removed", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), "v1", "", true},
		{"removed but still stored", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD(), "v1", "NotStored=fail", false},
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
	c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Schema: crdtest.SpecSchema("size")})
	if got := RemoveVersion(c, "v1beta1").Edited.Annotations[lifecycle.RetiredVersionsAnnotation]; got != "v0,v1,v1beta1" {
		t.Errorf("annotation after a second retirement = %q", got)
	}
	if len(s5().Spec.Versions) != 2 {
		t.Error("RemoveVersion changed its input")
	}
}
