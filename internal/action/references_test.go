package action

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

type foundRefs []references.Dependent

func (f foundRefs) Find(context.Context, references.Target) (*references.Inventory, error) {
	return &references.Inventory{Dependents: f}, nil
}

type noPatch struct{}

func (noPatch) PatchJSON(context.Context, schema.GroupVersionResource, string, string, []byte, bool) error {
	return nil
}

func (noPatch) RewriteRelease(context.Context, references.Release, string, func(string) (string, int), bool) (int, error) {
	return 0, nil
}

// TestRepairReferencesVersions: --to must be another served version; a
// version the CRD neither has nor had is looked for anyway (a reference
// to a version it never had is doctor's finding), but when none names it
// the run says that the CRD has no such version (a typo, most likely)
// instead of "nothing to repair".
func TestRepairReferencesVersions(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Version("v3").Stored("v2").CRD()
	one := foundRefs{{Name: "cm"}}
	for _, tc := range []struct {
		name, version, to string
		found             foundRefs
		err               string
	}{
		{"unserved version", "v1", "", nil, ""},
		{"to the storage version by default", "v1", "", one, ""},
		{"to itself", "v2", "v2", nil, "the references name v2 already"},
		{"to an unserved version", "v1", "v3", nil, "v3 of crontabs.stable.example.com is not served"},
		{"to no version", "v1", "v9", nil, "has no version v9 to rewrite the references to"},
		{"a typo, nothing found", "v1aplha1", "", nil, "crontabs.stable.example.com has no version v1aplha1 (spec.versions: v1, v2, v3; status.storedVersions: v2), and no owner reference, scale target or Helm release record names it"},
		{"a version it never had, references found", "v0", "", one, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := RepairReferences(context.Background(), tc.found, noPatch{}, crd, RepairReferencesOptions{Version: tc.version, To: tc.to, DryRun: lifecycle.DryRunClient})
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want %q", err, tc.err)
			case tc.err == "" && (r.Found != len(tc.found) || r.To != "stable.example.com/v2"):
				t.Errorf("report %+v", r)
			}
		})
	}
}
