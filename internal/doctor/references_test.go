package doctor

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
)

// matchAll applies the matcher to refs, as references.Find would.
type matchAll []metav1.OwnerReference

func (m matchAll) FindMatching(_ context.Context, match func(metav1.OwnerReference) bool) (*references.Inventory, error) {
	inv := &references.Inventory{}
	for i, ref := range m {
		if match(ref) {
			inv.Dependents = append(inv.Dependents, references.Dependent{Resource: references.Resource{Version: "v1", Resource: "configmaps"}, Namespace: "a", Name: string(rune('p' + i)), Owner: ref})
		}
	}
	return inv, nil
}

// TestBrokenReferences: a reference is broken when it names a CRD of the
// run (group and kind) through a version it does not serve — unserved, or
// not in spec.versions; one to a served version, to another kind of the
// group or to another group is not. Each broken version is an error with
// repair-references as the fix — none for a version the command cannot
// take (not a version name), whose message says to edit by hand; an inventory that could not read
// everything adds a warning.
func TestBrokenReferences(t *testing.T) {
	crd := crdtest.New("crontabs.stable.example.com").Kind("CronTab").Version("v1").Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	refs := matchAll{
		{APIVersion: "stable.example.com/v1", Kind: "CronTab"},       // unserved
		{APIVersion: "stable.example.com/v0", Kind: "CronTab"},       // never had
		{APIVersion: "stable.example.com/v2", Kind: "CronTab"},       // served
		{APIVersion: "stable.example.com/v1", Kind: "Widget"},        // another kind
		{APIVersion: "other.example.com/v1", Kind: "CronTab"},        // another group
		{APIVersion: "stable.example.com/v1/extra", Kind: "CronTab"}, // not an apiVersion
		{APIVersion: "stable.example.com/V1", Kind: "CronTab"},       // not a version name
	}
	inv, err := brokenReferences(context.Background(), refs, []*apiextensionsv1.CustomResourceDefinition{crd})
	if err != nil {
		t.Fatal(err)
	}
	fs := referenceFindings(crd, inv)
	var got []string
	for _, f := range fs {
		got = append(got, f.Version+":"+string(f.Severity)+":"+f.Fix)
	}
	want := "v1:error:kubectl crdversion repair-references crontabs.stable.example.com v1 v0:error:kubectl crdversion repair-references crontabs.stable.example.com v0 V1:error:"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("findings %q, want %q", g, want)
	}
	if !strings.Contains(fs[0].Message, "which is not served") || !strings.Contains(fs[1].Message, "which is not in spec.versions") || !strings.Contains(fs[1].Message, "configmaps: 1 in a (a/q)") {
		t.Errorf("messages: %q; %q", fs[0].Message, fs[1].Message)
	}
	// repair-references refuses "V1": no fix to paste, the hand edit said.
	if m := fs[2].Message; !strings.Contains(m, `names "stable.example.com/V1" CronTab, which is not a version name`) || !strings.Contains(m, "edit them by hand to name stable.example.com/v2") || len(fs[2].Run) != 0 {
		t.Errorf("an apiVersion that is not a version name: %+v", fs[2])
	}

	inv.Unseen = []references.Unseen{{Resource: references.Resource{Version: "v1", Resource: "secrets"}, Reason: "forbidden", Forbidden: true}}
	fs = referenceFindings(crd, inv)
	if last := fs[len(fs)-1]; last.Code != lifecycle.CodeReferencesUnknown || last.Severity != lifecycle.SeverityWarning || !strings.Contains(last.Message, "1 resource that could not be read: secrets (forbidden); grant list on them") {
		t.Errorf("incomplete inventory: %+v", last)
	}
}
