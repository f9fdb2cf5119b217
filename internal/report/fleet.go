package report

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
)

// End records how retire ended in the cluster c: err is the run's error
// (nil: it finished, or planned with nothing blocked) and r what the
// error says about the cluster (cluster.ReachOf). A *retire.BlockedError is
// a cluster that was reached and refused a step; a cluster that was not
// reached, is forbidden or lacks the CRD has its reach as Outcome. An
// Outcome still empty then (the run stopped before it had one) is "Failed".
func (c *FleetRetireCluster) End(err error, r reach.Reach) {
	c.Reach = r
	var blocked *retire.BlockedError
	switch {
	case err == nil:
	case errors.As(err, &blocked):
		c.Reach = reach.Reached
		c.Error = lifecycle.Message(err)
	case r == reach.Reached || r == reach.Failed:
		c.Error = lifecycle.Message(err)
	default:
		c.Error = lifecycle.Message(err)
		c.Outcome = string(r)
	}
	if c.Outcome == "" {
		c.Outcome = "Failed"
	}
}

// NotDone lists the clusters where retire neither completed nor planned
// a run with nothing blocked, as "CONTEXT (outcome)" with the outcome in
// lower case, in the order of Clusters.
func (r *FleetRetire) NotDone() []string {
	var out []string
	for _, c := range r.Clusters {
		if c.Outcome != string(retire.OutcomeComplete) && c.Outcome != string(retire.OutcomePlanned) {
			out = append(out, c.Context+" ("+strings.ToLower(c.Outcome)+")")
		}
	}
	return out
}

// Tally sets Answer and Summary from Clusters: the answer is No when a
// cluster's check is incompatible, else Unknown when a cluster could not
// be checked, else Yes; the summary adds up the checks', and is
// Incompatible unless the answer is Yes.
func (r *FleetUpgradeCheck) Tally() {
	r.Answer, r.Summary = fleet.Yes, Summary{}
	for _, c := range r.Clusters {
		switch {
		case c.Check == nil:
			if r.Answer == fleet.Yes {
				r.Answer = fleet.Unknown
			}
		case c.Check.Summary.Incompatible:
			r.Answer = fleet.No
		}
		if c.Check != nil {
			r.Summary.Merge(c.Check.Summary)
		}
	}
	r.Summary.Incompatible = r.Answer != fleet.Yes
}

// Tally sets Summary from Clusters: the clusters' summaries added up, and
// Incompatible also when a cluster could not be checked (it is not
// healthy).
func (r *FleetDoctor) Tally() {
	r.Summary = Summary{}
	for _, c := range r.Clusters {
		if c.Doctor == nil {
			r.Summary.Incompatible = true
			continue
		}
		r.Summary.Merge(c.Doctor.Summary)
	}
}

// Failing lists the clusters that make a fleet status exit with code 1,
// in the order of Clusters: a cluster whose CRD has error-level findings
// (its Blocking) as "CONTEXT (N errors)", and, as in doctor's fleet run, a
// cluster that could not be read (it is not known to be healthy) as
// "CONTEXT (reach)" with the reach in lower case. A cluster without the
// CRD is neither: the CRD may not have reached it yet.
func (r *FleetStatus) Failing() []string {
	var out []string
	for _, c := range r.Clusters {
		switch c.Reach {
		case reach.NotInstalled:
		case reach.Reached:
			switch n := len(c.Blocking); {
			case n == 1:
				out = append(out, c.Context+" (1 error)")
			case n > 1:
				out = append(out, fmt.Sprintf("%s (%d errors)", c.Context, n))
			}
		default:
			out = append(out, c.Context+" ("+strings.ToLower(string(c.Reach))+")")
		}
	}
	return out
}

// Installed reports whether some cluster may have the CRD: one that was
// read, or could not be; false when every cluster answered that it has no
// such CRD.
func (r *FleetStatus) Installed() bool {
	for _, c := range r.Clusters {
		if c.Reach != reach.NotInstalled {
			return true
		}
	}
	return false
}
