package report

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
)

func TestFleetRetireClusterEnd(t *testing.T) {
	blocked := fmt.Errorf("plan: %w", &retire.BlockedError{CRD: "crontabs.stable.example.com", Version: "v1beta1"})
	for _, tc := range []struct {
		name          string
		outcome       string // set by the run before End
		err           error
		reach         reach.Reach
		wantReach     reach.Reach
		wantOutcome   string
		wantHasErrMsg bool
	}{
		{"complete", "Complete", nil, reach.Reached, reach.Reached, "Complete", false},
		{"blocked", "Blocked", blocked, reach.Failed, reach.Reached, "Blocked", true},
		{"failed after a plan", "Blocked", errors.New("conflict"), reach.Failed, reach.Failed, "Blocked", true},
		{"failed before a plan", "", errors.New("boom"), reach.Reached, reach.Reached, "Failed", true},
		{"unreachable", "", errors.New("dial tcp: refused"), reach.Unreachable, reach.Unreachable, "Unreachable", true},
		{"not installed", "", errors.New("no CRD"), reach.NotInstalled, reach.NotInstalled, "NotInstalled", true},
		{"forbidden", "", errors.New("forbidden"), reach.Forbidden, reach.Forbidden, "Forbidden", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := FleetRetireCluster{Context: "prod", Outcome: tc.outcome}
			c.End(tc.err, tc.reach)
			if c.Reach != tc.wantReach || c.Outcome != tc.wantOutcome || (c.Error != "") != tc.wantHasErrMsg {
				t.Errorf("got reach %s, outcome %s, error %q; want %s, %s, an error: %v", c.Reach, c.Outcome, c.Error, tc.wantReach, tc.wantOutcome, tc.wantHasErrMsg)
			}
			if tc.err != nil && c.Error != tc.err.Error() {
				t.Errorf("error %q, want %q", c.Error, tc.err)
			}
		})
	}
}

func TestFleetRetireNotDone(t *testing.T) {
	r := &FleetRetire{Clusters: []FleetRetireCluster{
		{Context: "a", Outcome: "Complete"}, {Context: "b", Outcome: "Blocked"},
		{Context: "c", Outcome: "Planned"}, {Context: "d", Outcome: "Unreachable"},
	}}
	if got := strings.Join(r.NotDone(), ", "); got != "b (blocked), d (unreachable)" {
		t.Errorf("got %q", got)
	}
	if got := (&FleetRetire{Clusters: []FleetRetireCluster{{Context: "a", Outcome: "Complete"}}}).NotDone(); got != nil {
		t.Errorf("got %q, want none", got)
	}
}

func TestFleetUpgradeCheckTally(t *testing.T) {
	ok := &UpgradeCheck{Summary: Summary{Warnings: 1}}
	bad := &UpgradeCheck{Summary: Summary{Errors: 2, Incompatible: true}}
	for _, tc := range []struct {
		name   string
		checks []*UpgradeCheck // nil: the cluster could not be checked
		answer fleet.Answer
		sum    Summary
	}{
		{"all fine", []*UpgradeCheck{ok, ok}, fleet.Yes, Summary{Warnings: 2}},
		{"one unchecked", []*UpgradeCheck{ok, nil}, fleet.Unknown, Summary{Warnings: 1, Incompatible: true}},
		{"one rejects", []*UpgradeCheck{nil, bad, ok}, fleet.No, Summary{Errors: 2, Warnings: 1, Incompatible: true}},
		{"rejects, then unchecked", []*UpgradeCheck{bad, nil}, fleet.No, Summary{Errors: 2, Incompatible: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &FleetUpgradeCheck{}
			for _, c := range tc.checks {
				r.Clusters = append(r.Clusters, FleetUpgradeCluster{Check: c})
			}
			r.Tally()
			if r.Answer != tc.answer || r.Summary != tc.sum {
				t.Errorf("got %s %+v, want %s %+v", r.Answer, r.Summary, tc.answer, tc.sum)
			}
		})
	}
}

func TestFleetDoctorTally(t *testing.T) {
	healthy := &Doctor{Summary: Summary{Infos: 3}}
	r := &FleetDoctor{Clusters: []FleetDoctorCluster{{Doctor: healthy}, {Doctor: healthy}}}
	r.Tally()
	if r.Summary != (Summary{Infos: 6}) {
		t.Errorf("healthy fleet: %+v", r.Summary)
	}
	r.Clusters = append(r.Clusters, FleetDoctorCluster{Reach: reach.Unreachable})
	r.Tally()
	if r.Summary != (Summary{Infos: 6, Incompatible: true}) {
		t.Errorf("a cluster not checked: %+v", r.Summary)
	}
}

func TestFleetStatusFailing(t *testing.T) {
	r := &FleetStatus{Clusters: []fleet.Cluster{
		{Context: "ok", Reach: reach.Reached},
		{Context: "one", Reach: reach.Reached, Blocking: []string{"a"}},
		{Context: "absent", Reach: reach.NotInstalled},
		{Context: "two", Reach: reach.Reached, Blocking: []string{"a", "b"}},
		{Context: "down", Reach: reach.Forbidden},
	}}
	if got := strings.Join(r.Failing(), ", "); got != "one (1 error), two (2 errors), down (forbidden)" {
		t.Errorf("got %q", got)
	}
	if !r.Installed() {
		t.Error("not installed, with clusters that have the CRD")
	}
	r.Clusters = []fleet.Cluster{{Context: "ok", Reach: reach.Reached}, {Context: "absent", Reach: reach.NotInstalled}}
	if got := r.Failing(); got != nil || !r.Installed() {
		t.Errorf("healthy fleet: failing %q, installed %v", got, r.Installed())
	}
	r.Clusters = []fleet.Cluster{{Context: "a", Reach: reach.NotInstalled}, {Context: "b", Reach: reach.NotInstalled}}
	if got := r.Failing(); got != nil || r.Installed() {
		t.Errorf("no cluster with the CRD: failing %q, installed %v", got, r.Installed())
	}
}

func TestStatusSummary(t *testing.T) {
	s := &Status{}
	for _, sev := range []lifecycle.Severity{lifecycle.SeverityInfo, lifecycle.SeverityWarning, lifecycle.SeverityError, lifecycle.SeverityError} {
		s.Findings = append(s.Findings, lifecycle.Finding{Severity: sev})
	}
	if got := s.Summary(); got != (Summary{Errors: 2, Warnings: 1, Infos: 1, Incompatible: true}) {
		t.Errorf("got %+v", got)
	}
	s.Findings = s.Findings[:2]
	if got := s.Summary(); got.Incompatible {
		t.Errorf("no error, but %+v", got)
	}
}
