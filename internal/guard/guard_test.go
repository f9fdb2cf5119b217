package guard

import (
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestStamp: the state lists every version in order, served "+" or "-",
// the storage version "*"; the stamp prefixes the generation judged.
func TestStamp(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Version("v3", crdtest.Served).CRD()
	crd.Generation = 7
	if got := State(crd); got != "v1-,v2+*,v3+" {
		t.Errorf("state %q", got)
	}
	if Guarded(crd) {
		t.Error("a CRD without the annotation is guarded")
	}
	Stamp(crd)
	if got := crd.Annotations[StampAnnotation]; got != "7:v1-,v2+*,v3+" {
		t.Errorf("stamp %q", got)
	}
}

// TestPolicy: the policy and binding share the CRD's guard name, match
// UPDATE of that CRD only, deny, and fail closed.
func TestPolicy(t *testing.T) {
	p, b := Policy("crontabs.stable.example.com")
	if p.Name != "crdversion-guard.crontabs.stable.example.com" || b.Name != p.Name || b.Spec.PolicyName != p.Name {
		t.Errorf("names %q %q %q", p.Name, b.Name, b.Spec.PolicyName)
	}
	r := p.Spec.MatchConstraints.ResourceRules
	if len(r) != 1 || len(r[0].ResourceNames) != 1 || r[0].ResourceNames[0] != "crontabs.stable.example.com" || len(r[0].Operations) != 1 || r[0].Operations[0] != "UPDATE" ||
		r[0].Resources[0] != "customresourcedefinitions" {
		t.Errorf("match %+v", r)
	}
	if *p.Spec.FailurePolicy != "Fail" || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != "Deny" {
		t.Errorf("failure policy %v, actions %v", *p.Spec.FailurePolicy, b.Spec.ValidationActions)
	}
}
