package retire

import (
	"fmt"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// undo is the command that reverses step id: serving old again reverses
// unserving it. Nothing reverses a migration or a managedFields clean-up,
// and nothing needs to: objects read the same at every served version.
func undo(crd, old string, id StepID) []lifecycle.Command {
	if id == Unserved {
		return []lifecycle.Command{lifecycle.Crdversion("serve", crd, old)}
	}
	return nil
}

// BlockedError is returned when a step of retire is blocked.
type BlockedError struct {
	CRD, Version string
	Step         Step
	// Taken are the steps this run took before the blocked one (none:
	// nothing was changed), with their undo.
	Taken []Step
}

func (e *BlockedError) Error() string {
	changed := "nothing was changed"
	if len(e.Taken) > 0 {
		changed = "after this run took " + stepList(e.Taken)
	}
	msg := fmt.Sprintf("retire %s of %s stopped at step %d (%s), %s: %s", e.Version, e.CRD, e.Step.Number, e.Step.Title, changed, e.Step.Message)
	if e.Step.Command != "" {
		msg += "; run: " + e.Step.Command
	}
	return msg + undoClause(e.Taken)
}

// StepError is returned when a step failed while it was taken (or while
// the API server was asked about it), after the steps in Taken.
type StepError struct {
	CRD, Version string
	Step         Step
	Taken        []Step
	Err          error
}

func (e *StepError) Error() string {
	if len(e.Taken) == 0 {
		return e.Err.Error()
	}
	before := ""
	if e.Step.Number > 0 {
		before = fmt.Sprintf(" before step %d", e.Step.Number)
	}
	return fmt.Sprintf("%v; this run took %s%s%s", e.Err, stepList(e.Taken), before, undoClause(e.Taken))
}

func (e *StepError) Unwrap() error { return e.Err }

// stepList is "step 2 (v1 unserved) and step 4 (…)".
func stepList(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = fmt.Sprintf("step %d (%s)", s.Number, s.Title)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// undoClause says how to undo the steps taken that have an undo.
func undoClause(taken []Step) string {
	var out string
	for _, s := range taken {
		if s.UndoCommand != "" {
			out += fmt.Sprintf("; to undo step %d (%s): %s", s.Number, s.Title, s.UndoCommand)
		}
	}
	return out
}
