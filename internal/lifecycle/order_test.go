package lifecycle

import (
	"slices"
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
)

// TestOrderCompare is the ordering rule: the given order, then Kubernetes'
// rules when both names follow them, then storedVersions; otherwise
// unknown — never the alphabet (kubectl's priority for other names).
func TestOrderCompare(t *testing.T) {
	crd := crdtest.New("widgets.example.com").Stored("v1api20210501", "alpha", "v1api20230101").CRD()
	cases := []struct {
		given []string
		a, b  string
		want  int
		basis OrderBasis
	}{
		{nil, "v2", "v1", 1, OrderKubernetes},
		{nil, "v1beta1", "v1", -1, OrderKubernetes},
		{nil, "v1beta20201101", "v1beta2", 1, OrderKubernetes},
		{nil, "v1api20230101", "v1api20210501", 1, OrderStoredVersions},
		{nil, "alpha", "v1api20230101", -1, OrderStoredVersions},
		{nil, "stable", "alpha", 0, OrderUnknown},                 // alphabetical would say stable > alpha… by luck
		{nil, "alpha", "beta", 0, OrderUnknown},                   // …and beta > alpha: neither is a fact
		{nil, "v1beta20201101", "v1api20210501", 0, OrderUnknown}, // kubectl ranks the Kubernetes-form name first
		{nil, "v1", "v1", 0, OrderUnknown},
		{[]string{"stable", "alpha"}, "alpha", "stable", 1, OrderGiven},
		{[]string{"v2", "v1"}, "v1", "v2", 1, OrderGiven}, // the user's word over Kubernetes' rules
		{[]string{"v1api20230101", "v1api20210501"}, "v1api20210501", "v1api20230101", 1, OrderGiven},
		{[]string{"alpha", "stable"}, "stable", "v1api20210501", 0, OrderUnknown}, // stable is not in storedVersions
	}
	for _, tc := range cases {
		o := OrderOf(crd, tc.given)
		got, basis := o.Compare(tc.a, tc.b)
		if got != tc.want || basis != tc.basis {
			t.Errorf("given %v: Compare(%s, %s) = %d (%q), want %d (%q)", tc.given, tc.a, tc.b, got, basis, tc.want, tc.basis)
		}
		if back, _ := o.Compare(tc.b, tc.a); back != -got {
			t.Errorf("given %v: Compare(%s, %s) = %d is not the opposite of %d", tc.given, tc.b, tc.a, back, got)
		}
	}
}

func TestOrderSort(t *testing.T) {
	o := OrderOf(crdtest.New("widgets.example.com").Stored("v1api20210501", "v1api20230101").CRD(), nil)
	if got := strings.Join(o.Sort([]string{"v1api20210501", "v1", "v1api20230101", "v2"}), " "); got != "v1api20230101 v2 v1api20210501 v1" {
		t.Errorf("Sort = %s", got)
	}
	// Unknown pairs keep their input order, whatever the alphabet says.
	if got := strings.Join(o.Sort([]string{"alpha", "stable"}), " "); got != "alpha stable" {
		t.Errorf("Sort of unordered names = %s", got)
	}
	if got := strings.Join(o.Sort([]string{"stable", "alpha"}), " "); got != "stable alpha" {
		t.Errorf("Sort of unordered names = %s", got)
	}
	if o.Newest([]string{"v1", "v2", "v1beta1"}) != "v2" || o.Oldest([]string{"v1", "v2", "v1beta1"}) != "v1beta1" {
		t.Error("Newest/Oldest of Kubernetes names")
	}
}

// TestVersionOrderFlag: with --version-order the lifecycle goes the way
// the user said, the printed commands that take the flag repeat it, and a
// migration is refused or allowed by that order.
func TestVersionOrderFlag(t *testing.T) {
	// The repro of B2: v1api20230101 is the storage version, v1api20210501
	// the old API.
	crd := crdtest.New("widgets.example.com").Version("v1api20210501", crdtest.Served).Version("v1api20230101", crdtest.Served, crdtest.Storage).Stored("v1api20230101").CRD()
	if got := PromotionPending(crd, Options{}); got != "" {
		t.Errorf("PromotionPending without an order = %q, want none (nothing says v1api20210501 is newer)", got)
	}
	a := AnalyzeWith(crd, Options{VersionOrder: []string{"v1api20210501", "v1api20230101"}})
	if a.State != StateS3 || a.OldVersion != "v1api20210501" || a.Next == nil || a.Next.Command != "kubectl crdversion deprecate widgets.example.com v1api20210501 --version-order v1api20210501,v1api20230101" {
		t.Errorf("S3 by the given order: %s [%s -> %s], next %+v", a.State, a.OldVersion, a.NewVersion, a.Next)
	}
	if codes(a.Findings) != CodeVersionOrderNotKubernetes || !strings.Contains(a.Findings[0].Message, "v1api20210501, v1api20230101, from --version-order") {
		t.Errorf("findings %+v", a.Findings)
	}
	// The other way round it is S1: promote the newer one; migrate refuses.
	rev := Options{VersionOrder: []string{"v1api20230101", "v1api20210501"}}
	b := AnalyzeWith(crd, rev)
	if b.State != StateS1 || b.NewVersion != "v1api20210501" {
		t.Errorf("S1 by the reverse order: %s [%s -> %s]", b.State, b.OldVersion, b.NewVersion)
	}
	if got := PromotionPending(crd, rev); got != "v1api20210501" {
		t.Errorf("PromotionPending by the reverse order = %q", got)
	}
	// Commands that take the flag repeat it; others do not get it.
	c := AnalyzeWith(crdtest.New("widgets.example.com").Version("alpha", crdtest.Served).Version("stable", crdtest.Served, crdtest.Storage).Stored("alpha", "stable").CRD(), Options{VersionOrder: []string{"alpha", "stable"}})
	if c.Next == nil || c.Next.Command != "kubectl crdversion migrate widgets.example.com --version-order alpha,stable" {
		t.Errorf("next %+v", c.Next)
	}
	for _, bad := range [][]string{{"v1api20210501"}, {"v1api20210501", "v1api20210501"}, {"v1api20210501", "v9"}} {
		if err := CheckVersionOrder(crd, bad); err == nil {
			t.Errorf("CheckVersionOrder(%v) accepted", bad)
		}
	}
	if err := CheckVersionOrder(crd, []string{"v1api20210501", "v1api20230101"}); err != nil {
		t.Error(err)
	}
	// A version retire removed stays a valid name of the order.
	retired := crdtest.New("widgets.example.com").Version("stable", crdtest.Served, crdtest.Storage).Stored("stable").Annotate(RetiredVersionsAnnotation, "alpha").CRD()
	if err := CheckVersionOrder(retired, []string{"alpha", "stable"}); err != nil {
		t.Errorf("an order naming a retired version: %v", err)
	}
}

// TestNeverAdviseUnservingStored (B6): a deprecated version that is the
// storage version, or still in storedVersions, is never advised to be
// unserved.
func TestNeverAdviseUnservingStored(t *testing.T) {
	for _, crd := range []*crdtest.Builder{
		crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Deprecate("v2").Stored("v2"),
		crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Deprecate("v2").Deprecate("v1").Stored("v1", "v2"),
		crdtest.New("widgets.example.com").Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Deprecate("v1").Stored("v1", "v2"),
	} {
		a := Analyze(crd.CRD())
		stored := map[string]bool{a.StorageVersion: true}
		for _, s := range a.StoredVersions {
			stored[s] = true
		}
		var cmds []Command
		for _, f := range a.Findings {
			cmds = append(cmds, f.Run...)
		}
		if a.Next != nil {
			cmds = append(cmds, a.Next.Run...)
		}
		for _, c := range cmds {
			if (c.Verb == "unserve" || c.Verb == "retire") && len(c.Args) > 1 && stored[c.Args[1]] {
				t.Errorf("%v: advises %s although %s is stored", crd.CRD().Spec.Versions, c, c.Args[1])
			}
			if c.Verb == "deprecate" && len(c.Args) > 1 && c.Args[1] != a.StorageVersion && FindVersion(crd.CRD(), a.StorageVersion).Deprecated {
				t.Errorf("%v: advises %s while the storage version is deprecated", crd.CRD().Spec.Versions, c)
			}
		}
	}
}

// TestOneVersionNeedsNoOrder: a CRD with one version whose name is not in
// Kubernetes form has nothing to order; status said "the order used ...
// is v1api20210501, from " with no source (found by trying the tool).
func TestOneVersionNeedsNoOrder(t *testing.T) {
	a := Analyze(crdtest.New("widgets.example.com").Version("v1api20210501", crdtest.Served, crdtest.Storage).Stored("v1api20210501").CRD())
	for _, f := range a.Findings {
		if f.Code == CodeVersionOrderNotKubernetes || f.Code == CodeVersionOrderUnknown {
			t.Errorf("one version, an order finding: %+v", f)
		}
	}
}

// TestUnknownOrderIsNoState (issue 17): with versions that nothing orders
// against the storage version, status said "S3, migrated [next -> v1]"
// (oldVersion next, which may be the newer API) and printed a command with
// a placeholder (--version-order <oldest,...,newest>) that cannot be
// pasted. Now the state is Unknown with no OLD or NEW, and no command is
// advised: the words name the versions to order.
func TestUnknownOrderIsNoState(t *testing.T) {
	for _, crd := range []*crdtest.Builder{
		crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("next", crdtest.Served).Stored("v1"),
		crdtest.New("widgets.example.com").Version("alpha", crdtest.Served).Version("stable", crdtest.Served, crdtest.Storage).Stored("stable"),
		crdtest.New("widgets.example.com").Version("alpha", crdtest.Served).Deprecate("alpha").Version("stable", crdtest.Served, crdtest.Storage).Stored("stable"),
		crdtest.New("widgets.example.com").Version("alpha").Version("stable", crdtest.Served, crdtest.Storage).Stored("stable"),
	} {
		a := Analyze(crd.CRD())
		if a.State != StateUnknown || a.StateDescription != OrderUnknownDescription || a.OldVersion != "" || a.NewVersion != "" {
			t.Errorf("%s: state %s %q [%s -> %s], want Unknown with no OLD or NEW", a.UnorderedVersions, a.State, a.StateDescription, a.OldVersion, a.NewVersion)
		}
		// The names are asked for in braces, alphabetically: a list that
		// put the storage version last read as "oldest first" would say
		// it is the newest, and pasted as given could move the lifecycle
		// backwards.
		names := append(slices.Clone(a.UnorderedVersions), a.StorageVersion)
		slices.Sort(names)
		if a.Next == nil || a.Next.Command != "" || len(a.Next.Run) > 0 || !strings.Contains(a.Next.Reason, "--version-order listing the versions {"+strings.Join(names, ", ")+"} in their real order") {
			t.Errorf("%s: next %+v, want no command and the versions to order", a.UnorderedVersions, a.Next)
		}
		for _, f := range a.Findings {
			if len(f.Run) > 0 || strings.Contains(f.Fix, "<") {
				t.Errorf("%s: finding %s advises %q", a.UnorderedVersions, f.Code, f.Fix)
			}
		}
	}
	// The order given, the state is known again.
	a := AnalyzeWith(crdtest.New("widgets.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("next", crdtest.Served).Stored("v1").CRD(), Options{VersionOrder: []string{"v1", "next"}})
	if a.State != StateS1 || a.NewVersion != "next" || a.Next == nil || a.Next.Command != "kubectl crdversion promote-storage widgets.example.com next --version-order v1,next" {
		t.Errorf("with the order: %s [%s -> %s], next %+v", a.State, a.OldVersion, a.NewVersion, a.Next)
	}
}
