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

// BlockedError is returned when a step of retire is blocked. The step's
// message is in the plan printed before (and in the report); the error
// line names the step and the command that unblocks it.
type BlockedError struct {
	CRD, Version string
	Step         Step
	// Taken are the steps this run took before the blocked one (none:
	// nothing was changed), with their undo.
	Taken []Step
}

func (e *BlockedError) Error() string {
	if len(e.Taken) == 0 {
		return e.Refusal().Error()
	}
	msg := fmt.Sprintf("retire %s of %s stopped at step %d, blocked, after taking the steps listed above", e.Version, e.CRD, e.Step.Number)
	return lifecycle.WithWayOut(msg, wayOut(e.Step.Command), true)
}

// Unwrap returns the refusal when the run took no step.
func (e *BlockedError) Unwrap() error {
	if len(e.Taken) > 0 {
		return nil
	}
	return e.Refusal()
}

// DetailLines are the steps this run took, with their undo, printed above
// the error line; a run that took none has the plan above.
func (e *BlockedError) DetailLines() []string {
	if len(e.Taken) == 0 {
		return nil
	}
	lines := []string{"This run took:"}
	for _, s := range e.Taken {
		line := fmt.Sprintf("  - step %d (%s)", s.Number, s.Title)
		if s.UndoCommand != "" {
			line += "; to undo it: " + s.UndoCommand
		}
		lines = append(lines, line)
	}
	return lines
}

// Refusal is e, for a run that took no step, as a refusal: the step's
// message is its detail, shown in the plan.
func (e *BlockedError) Refusal() *lifecycle.RefusalError {
	return &lifecycle.RefusalError{Operation: "retire " + e.Version + " of", CRD: e.CRD,
		Reason: fmt.Sprintf("it stopped at step %d, which is blocked", e.Step.Number), WayOut: wayOut(e.Step.Command),
		Details: []string{e.Step.Message}, Shown: true}
}

// wayOut is the way out "run: command", or a pointer to the plan.
func wayOut(command string) string {
	if command == "" {
		return "the plan above says why"
	}
	return "run: " + command
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
