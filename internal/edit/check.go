// Package edit holds the spec.versions edits of kubectl crdversion
// (add-version, promote-storage, deprecate, serve, unserve) as pure
// functions: each takes the CRD as read, returns an edited copy and the
// preflight checks that decide whether the edit may be written. Checks that
// need the cluster (objects, webhooks) are added by the commands; the rules
// here need only the CRD.
package edit

import (
	"fmt"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Outcome of one preflight check.
type Outcome string

// Outcomes, from blocking to informative.
const (
	// Fail blocks the edit: nothing is written.
	Fail Outcome = "fail"
	// Warn lets the edit proceed but deserves attention.
	Warn Outcome = "warn"
	// Pass is a check that held.
	Pass Outcome = "pass"
	// Skip is a check that could not run (for example the webhook is not
	// reachable from this client); the edit proceeds.
	Skip Outcome = "skip"
)

// Check is the result of one preflight check.
type Check struct {
	// Name is a stable identifier, e.g. "VersionName".
	Name    string  `json:"name"`
	Outcome Outcome `json:"outcome"`
	Message string  `json:"message"`
	// Details lists items behind the message: pruned fields, objects that
	// fail validation, …
	Details []string `json:"details,omitempty"`
	// Run are the commands that resolve a failed check, in order, when
	// commands do (the message names them too).
	Run []lifecycle.Command `json:"run,omitempty"`
}

// Checks is the preflight of one edit.
type Checks []Check

func (cs *Checks) add(name string, o Outcome, format string, args ...any) *Check {
	*cs = append(*cs, Check{Name: name, Outcome: o, Message: fmt.Sprintf(format, args...)})
	return &(*cs)[len(*cs)-1]
}

// Failed returns the checks whose outcome is Fail.
func (cs Checks) Failed() Checks {
	var out Checks
	for _, c := range cs {
		if c.Outcome == Fail {
			out = append(out, c)
		}
	}
	return out
}

// refusal is the refusal of operation on crd by the failed checks, whose
// FAIL lines the preflight's report has printed: the error line names the
// checks and the first way out, the lines above say the rest.
func refusal(operation, crd string, failed Checks) *lifecycle.RefusalError {
	e := &lifecycle.RefusalError{Operation: operation, CRD: crd, Shown: true}
	names := make([]string, len(failed))
	for i, c := range failed {
		names[i] = c.Name
		e.Details = append(e.Details, c.withDetails(5))
		if e.Run == nil && len(c.Run) > 0 {
			e.Run = &c.Run[0]
		}
	}
	if len(failed) == 1 {
		e.Reason = fmt.Sprintf("the preflight check %s failed", names[0])
		e.WayOut = "the FAIL line above says how to proceed"
	} else {
		e.Reason = fmt.Sprintf("%d preflight checks failed (%s)", len(failed), strings.Join(names, ", "))
		e.WayOut = "the FAIL lines above say how to proceed"
	}
	return e
}

// withDetails is the message followed by up to limit details.
func (c Check) withDetails(limit int) string {
	if len(c.Details) == 0 {
		return c.Message
	}
	return c.Message + ": " + lifecycle.Some(c.Details, limit)
}
