package retire

import (
	"errors"
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
	return takenLines(e.Taken)
}

// takenLines are the steps a run took, with their undo: "This run took:",
// then "  - step 3 (v1 unserved); to undo it: kubectl crdversion serve …".
func takenLines(taken []Step) []string {
	lines := []string{"This run took:"}
	for _, s := range taken {
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

// Error is the failure's own line when the run took no step. After steps
// were taken it is one short line — the failure, then "this run took
// step 3 (v1 unserved) before step 5" — when that fits in
// lifecycle.MaxErrorLine, else a line that names the failed step; the
// failure's text, when it did not fit, and how to undo each step taken
// are in DetailLines, printed above it.
func (e *StepError) Error() string {
	if len(e.Taken) == 0 {
		return e.Err.Error()
	}
	if line := e.inline(); len("error: "+line+"; the lines above say how to undo it") <= lifecycle.MaxErrorLine {
		return line + "; the lines above say how to undo it"
	}
	at := ""
	if e.Step.Number > 0 {
		at = fmt.Sprintf(" at step %d", e.Step.Number)
	}
	return fmt.Sprintf("retire %s of %s failed%s after taking steps; the lines above say what failed and how to undo it", e.Version, e.CRD, at)
}

// inline is the failure's text, then the steps taken.
func (e *StepError) inline() string {
	before := ""
	if e.Step.Number > 0 {
		before = fmt.Sprintf(" before step %d", e.Step.Number)
	}
	return fmt.Sprintf("%v; this run took %s%s", e.Err, stepList(e.Taken), before)
}

func (e *StepError) Unwrap() error { return e.Err }

// DetailLines are printed above the error line: the failure's own details
// (a refusal's, a migration's), its text when the error line could not
// hold it, and the steps this run took, with their undo.
func (e *StepError) DetailLines() []string {
	var lines []string
	var d interface{ DetailLines() []string }
	if errors.As(e.Err, &d) {
		lines = append(lines, d.DetailLines()...)
	}
	if len(e.Taken) == 0 {
		return lines
	}
	if line := e.inline(); len("error: "+line+"; the lines above say how to undo it") > lifecycle.MaxErrorLine {
		step := "It failed"
		if e.Step.Number > 0 {
			step = fmt.Sprintf("Step %d (%s) failed", e.Step.Number, e.Step.Title)
		}
		lines = append(lines, step+": "+e.Err.Error())
	}
	return append(lines, takenLines(e.Taken)...)
}

// stepList is "step 3 (v1 unserved) and step 5 (…)".
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
