package lifecycle

import "fmt"

// RefusalError is a step refused before anything was written. Its message
// is one short line, as kubectl's errors are: what was refused, why in a
// clause and the first way out,
//
//	refusing to unserve crontabs.stable.example.com, nothing was changed: the preflight check ClientUsage failed; the FAIL line above says how to proceed
//
// The details (the failed checks, the missing permissions, the objects)
// are printed once, above it: by the preflight's report when Shown, else
// by the CLI from Details. Machine-readable output keeps every detail.
type RefusalError struct {
	// Operation is what was refused, as a verb phrase: "unserve",
	// "retire v1 of".
	Operation string
	// CRD is the name of the CRD.
	CRD string
	// Reason says why, in a clause: "missing 2 permission(s)".
	Reason string
	// Run, when set, is the command that resolves the refusal: the first
	// way out, rendered with Global (the connection flags the user typed).
	Run    *Command
	Global []Flag
	// WayOut is the first way out in words, used when Run is nil: "grant
	// them, or run as a user who has them".
	WayOut string
	// DetailsTitle heads Details: "Missing permission(s) to unserve
	// crontabs.stable.example.com".
	DetailsTitle string
	// Details are the items behind Reason, one a line.
	Details []string
	// Shown is true when Details were already printed (the preflight's
	// FAIL lines): the CLI does not print them again.
	Shown bool
	// Err, when set, is the error the refusal stems from (errors.Is and
	// errors.As see it); its text belongs in Details.
	Err error
}

// MaxErrorLine is the longest error line a refusal prints: a way out that
// would make it longer is left to the details above it.
const MaxErrorLine = 200

func (e *RefusalError) Error() string {
	return WithWayOut(e.head(), e.way(), len(e.Details) > 0 || !e.Shown)
}

// head is the error line without its way out.
func (e *RefusalError) head() string {
	return fmt.Sprintf("refusing to %s %s, nothing was changed: %s", e.Operation, e.CRD, e.Reason)
}

// way is the first way out: "run: command" or WayOut.
func (e *RefusalError) way() string {
	if e.Run != nil {
		return "run: " + e.Run.Render(e.Global)
	}
	return e.WayOut
}

// WithWayOut is msg followed by "; " and way, the first way out, unless
// the line would be longer than MaxErrorLine and details printed above it
// say how to proceed: then it points at those.
func WithWayOut(msg, way string, detailsAbove bool) string {
	const above = "; the lines above say how to proceed"
	switch {
	case way == "":
		return msg
	case len("error: "+msg+"; "+way) <= MaxErrorLine || !detailsAbove:
		return msg + "; " + way
	}
	return msg + above
}

// Unwrap returns Err.
func (e *RefusalError) Unwrap() error { return e.Err }

// DetailLines are the lines the CLI prints above the error line when the
// details were not shown: the title, then each detail as an item.
func (e *RefusalError) DetailLines() []string {
	if e.Shown {
		return nil
	}
	lines := itemLines(e.DetailsTitle, "Why", e.Details)
	// A way out too long for the error line is said here, once.
	if way := e.way(); way != "" && WithWayOut(e.head(), way, true) != e.head()+"; "+way {
		lines = append(lines, "To proceed: "+way)
	}
	return lines
}
