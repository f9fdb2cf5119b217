package preflight

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// TestReferencesCheck: references found fail with the repair command;
// an inventory that could not read everything fails as unknown even with
// none found; only a complete inventory without a reference passes.
func TestReferencesCheck(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	cms := references.Resource{Version: "v1", Resource: "configmaps"}
	dep := func(ns, name string) references.Dependent {
		return references.Dependent{Resource: cms, Namespace: ns, Name: name, Owner: metav1.OwnerReference{APIVersion: "stable.example.com/v1", Kind: "CronTab"}}
	}
	hpa := func(ns, name string) references.Dependent {
		return references.Dependent{Resource: references.Resource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}, Namespace: ns, Name: name,
			Field: references.ScaleTarget, Owner: metav1.OwnerReference{APIVersion: "stable.example.com/v1", Kind: "CronTab", Name: "c"}}
	}
	unseen := []references.Unseen{{Resource: references.Resource{Version: "v1", Resource: "secrets"}, Reason: "forbidden", Forbidden: true}}
	for _, tc := range []struct {
		name    string
		inv     references.Inventory
		outcome edit.Outcome
		want    []string
	}{
		{"found", references.Inventory{Dependents: []references.Dependent{dep("a", "x"), dep("a", "y"), dep("b", "z"), dep("b", "w")}, Resources: 9, Objects: 40}, edit.Fail,
			[]string{"4 owner references on objects of 1 resource name stable.example.com/v1 Crontab", "rewrite them to stable.example.com/v2 first (kubectl crdversion repair-references crontabs.stable.example.com v1)",
				"configmaps: 4 in a, b (a/x, a/y, b/z, …)", "garbage collector cannot resolve such an owner"}},
		{"scale targets", references.Inventory{Dependents: []references.Dependent{dep("a", "x"), hpa("a", "h")}}, edit.Fail,
			[]string{"1 owner reference and 1 scale target on objects of 2 resources name stable.example.com/v1 Crontab", "garbage collector cannot resolve such an owner",
				"an autoscaler that maps its scale target by version (KEDA's ScaledObject) cannot find it", "horizontalpodautoscalers.autoscaling: 1 in a (a/h)"}},
		{"found, and unseen", references.Inventory{Dependents: []references.Dependent{dep("a", "x")}, Unseen: unseen}, edit.Fail,
			[]string{"1 owner reference on objects of 1 resource", "and 1 resource could not be read, so there may be more", "not read: secrets: forbidden"}},
		{"none found, unseen", references.Inventory{Unseen: unseen}, edit.Fail,
			[]string{"references to stable.example.com/v1 unknown: 1 of the resources could not be read (secrets)", "--skip-reference-check"}},
		{"none", references.Inventory{Resources: 9, Objects: 40}, edit.Pass, []string{"no owner reference, scale target or Helm release record names stable.example.com/v1 Crontab (40 objects of 9 resources read)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ReferencesCheck(crd, "v1", &tc.inv)
			all := c.Message + "\n" + strings.Join(c.Details, "\n")
			if c.Outcome != tc.outcome {
				t.Errorf("outcome %s, want %s: %s", c.Outcome, tc.outcome, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("%q not in\n%s", w, all)
				}
			}
			if (len(tc.inv.Dependents) > 0) != (len(c.Run) == 1) {
				t.Errorf("run %v", c.Run)
			}
		})
	}
}
