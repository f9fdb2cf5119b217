package report

import (
	"errors"
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
