package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// TestStatusReferencesLines: status --references prints a line per
// version with the repair to paste; for an apiVersion the API server kept
// that is not a version name ("V1"), which repair-references refuses, no
// command, and the name quoted; with nothing found, one line saying what
// was read and what was not.
func TestStatusReferencesLines(t *testing.T) {
	r := &report.Status{Analysis: lifecycle.Analysis{CRD: lifecycle.CRDRef{Name: "crontabs.stable.example.com", Group: "stable.example.com", Kind: "CronTab"}, StorageVersion: "v2"},
		References: &report.StatusReferences{Versions: []report.VersionReferences{{Version: "v1", References: 3, Objects: 2, Resources: 1}, {Version: "V1", References: 1, Objects: 1, Resources: 1}}}}
	var out bytes.Buffer
	if err := view.Status(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 object(s) of 1 kind(s) still name stable.example.com/v1 (3 reference(s); repair: kubectl crdversion repair-references crontabs.stable.example.com v1)",
		`1 object(s) of 1 kind(s) still name "stable.example.com/V1" (1 reference(s); not a version name: edit them by hand)`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%q not in\n%s", want, out.String())
		}
	}
	r.References = &report.StatusReferences{Versions: []report.VersionReferences{}, Resources: 9, Objects: 40, Unseen: []string{"secrets"}}
	out.Reset()
	if err := view.Status(&out, r); err != nil {
		t.Fatal(err)
	}
	if want := "none name a version other than v2 (40 objects of 9 resources read; 1 resource(s) not read: secrets)"; !strings.Contains(out.String(), want) {
		t.Errorf("%q not in\n%s", want, out.String())
	}
}
