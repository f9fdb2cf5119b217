package report

import (
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
)

func TestNewRetire(t *testing.T) {
	m := &result.Result{}
	res := &retire.Result{Outcome: retire.OutcomeComplete, Taken: []retire.StepID{retire.Unserved, retire.Removed},
		Migration: &retire.Migration{Report: m}}
	r := NewRetire("crontabs.stable.example.com", "v1beta1", false, res)
	if r.CRD != "crontabs.stable.example.com" || r.Version != "v1beta1" || r.DryRun || r.Outcome != "Complete" ||
		strings.Join(r.Taken, ",") != string(retire.Unserved)+","+string(retire.Removed) || r.Migration != m {
		t.Errorf("got %+v", r)
	}
	// A dry run that took no step, or a migration by another engine: no
	// Taken, no migrate report.
	r = NewRetire("crontabs.stable.example.com", "v1beta1", true, &retire.Result{Outcome: retire.OutcomePlanned, Migration: &retire.Migration{Report: "server"}})
	if !r.DryRun || r.Outcome != "Planned" || r.Taken != nil || r.Migration != nil {
		t.Errorf("dry run: %+v", r)
	}
}
