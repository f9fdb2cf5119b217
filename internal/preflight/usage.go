package preflight

import (
	"fmt"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// CheckClientUsage is the name of the client-usage check.
const CheckClientUsage = "ClientUsage"

// ClientUsage is the client-usage check of the group/version gv from a
// measured report: a client seen fails it, an unknown verdict fails it
// (unknown is not pass), no client seen passes it. The evidence is in the
// details.
func ClientUsage(rep usage.Report, gv string) edit.Check {
	c := edit.Check{Name: CheckClientUsage, Details: rep.Evidence()}
	switch rep.Verdict {
	case usage.InUse:
		c.Outcome, c.Message = edit.Fail, fmt.Sprintf("clients still use %s: move them to another version first (or pass --skip-usage-check)", gv)
	case usage.Unknown:
		c.Outcome, c.Message = edit.Fail, fmt.Sprintf("whether clients still use %s is unknown: %s; re-run", gv, rep.Reason)
	default:
		c.Outcome, c.Message = edit.Pass, "no client request to "+gv+" seen"
	}
	return c
}

// ClientUsageUnmeasured is the check when the metrics could not be read
// (why): it fails, naming the ways out.
func ClientUsageUnmeasured(gv string, why error) edit.Check {
	return edit.Check{Name: CheckClientUsage, Outcome: edit.Fail,
		Message: fmt.Sprintf("whether clients still use %s is unknown: %v (grant get on the non-resource URL /metrics, or pass --skip-usage-check once you know no client uses it)", gv, why)}
}

// ClientUsageSkipped is the check when --skip-usage-check was given: a
// warning the output records.
func ClientUsageSkipped(gv string) edit.Check {
	return edit.Check{Name: CheckClientUsage, Outcome: edit.Warn, Message: "client usage of " + gv + " was NOT checked (--skip-usage-check)"}
}
