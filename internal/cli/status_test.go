package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// TestStatusExit: status prints its whole report, then returns
// *FindingsError (exit code 1) exactly when a finding is an error, in the
// table and in -o json alike (issue 33: it exited 0 whatever it found).
func TestStatusExit(t *testing.T) {
	for name, want := range map[string]bool{"S1": false, "S4-context": false, "storedversion-missing": true} {
		for _, output := range []string{"", "json"} {
			r := statusFixtures()[name]
			pf := genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme)
			pf.OutputFormat = &output
			printer, err := printerFunc(pf, "status", humanPrinter(view.Status))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = printFindings(&out, printer, r, r.Summary())
			var found *FindingsError
			if errors.As(err, &found) != want || (err != nil && !want) {
				t.Errorf("%s -o %q: err = %v, want findings: %v", name, output, err, want)
			}
			if want && (found.Summary != view.SummaryText(r.Summary()) || r.Summary().Errors == 0) {
				t.Errorf("%s: summary %q of %+v", name, found.Summary, r.Summary())
			}
			if whole := printed(t, output, humanPrinter(view.Status), statusFixtures()[name]); out.String() != whole {
				t.Errorf("%s -o %q: printed\n%s\nwant the whole report\n%s", name, output, out.String(), whole)
			}
		}
	}
}

// TestFleetStatusExit: a fleet status exits 1 when a cluster's CRD has an
// error-level finding or a cluster could not be read, as doctor's fleet
// run does; a cluster without the CRD does neither, but a CRD that no
// cluster has is a failure (2), as in one cluster.
func TestFleetStatusExit(t *testing.T) {
	healthy := fleet.Cluster{Context: "ok", Reach: reach.Reached}
	broken := fleet.Cluster{Context: "broken", Reach: reach.Reached, Blocking: []string{"a", "b"}}
	absent := fleet.Cluster{Context: "absent", Reach: reach.NotInstalled}
	down := fleet.Cluster{Context: "down", Reach: reach.Unreachable, Error: "timeout"}
	for _, tc := range []struct {
		name     string
		clusters []fleet.Cluster
		findings string // the *FindingsError's summary; "" for none
		failed   bool
	}{
		{"healthy", []fleet.Cluster{healthy, healthy}, "", false},
		{"one cluster without the CRD", []fleet.Cluster{healthy, absent}, "", false},
		{"error-level findings", []fleet.Cluster{healthy, broken}, "1 of 2 cluster(s): broken (2 errors)", false},
		{"a cluster not read", []fleet.Cluster{down, healthy, absent}, "1 of 3 cluster(s): down (unreachable)", false},
		{"both", []fleet.Cluster{down, broken}, "2 of 2 cluster(s): down (unreachable), broken (2 errors)", false},
		{"no cluster has the CRD", []fleet.Cluster{absent, absent}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fleetStatusExit(&report.FleetStatus{Clusters: tc.clusters}, "crontabs")
			var found *FindingsError
			switch {
			case tc.findings != "":
				if !errors.As(err, &found) || found.Summary != tc.findings {
					t.Errorf("err = %v, want findings %q", err, tc.findings)
				}
			case tc.failed:
				if err == nil || errors.As(err, &found) || !strings.Contains(err.Error(), `no CustomResourceDefinition matches "crontabs" in any of the 2 cluster(s)`) {
					t.Errorf("err = %v, want a failure", err)
				}
			case err != nil:
				t.Errorf("err = %v, want none", err)
			}
		})
	}
}

// TestStatusFailureIsCheckError: status's failures exit with code 2
// (*CheckError), so that 1 always means "error-level findings".
func TestStatusFailureIsCheckError(t *testing.T) {
	for _, args := range [][]string{
		{"status"},
		{"status", "crontabs", "--chunk-size", "0"},
		{"status", "crontabs", "--no-such-flag"},
		{"status", "crontabs", "--version-order", "V1"},
	} {
		_, _, err := run(t, args...)
		var checkErr *CheckError
		if !errors.As(err, &checkErr) {
			t.Errorf("%v: err = %v (%T), want *CheckError", args, err, err)
		}
	}
}
