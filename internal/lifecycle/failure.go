package lifecycle

import (
	"errors"
	"strings"
)

// FailureError is a step that failed after it began to write, or a run
// whose outcome is not what it should be: a migration with objects that
// failed, a trim of status.storedVersions the API server refused, a retire
// run stopped after some of its steps. Like RefusalError its error line is
// short — what failed, why in a clause when that fits, the first way out —
// and anything longer is printed once, above it, by the CLI
// (DetailLines). Machine-readable output keeps every detail.
//
//	error: every object of crontabs.stable.example.com is at v2, but status.storedVersions was not trimmed: the CRD's spec changed during the run
type FailureError struct {
	// Summary says what failed, as a sentence without a final period:
	// "3 object(s) of crontabs.stable.example.com failed to migrate".
	Summary string
	// Why is the reason, as the API server or the step gave it. It follows
	// Summary after ": " when the line stays within MaxErrorLine, else it
	// is the first detail.
	Why string
	// WayOut is the first way out, in words or "run: command".
	WayOut string
	// DetailsTitle heads Details: "This run took".
	DetailsTitle string
	// Details are further lines, one item each, printed above the error
	// line.
	Details []string
	// Err, when set, is the error the failure stems from (errors.Is and
	// errors.As see it).
	Err error
}

// whyInline reports whether Why fits on the error line.
func (e *FailureError) whyInline() bool {
	return e.Why != "" && len("error: "+e.Summary+": "+e.Why) <= MaxErrorLine
}

// head is the error line without its way out.
func (e *FailureError) head() string {
	if e.whyInline() {
		return e.Summary + ": " + e.Why
	}
	return e.Summary
}

// wayInline reports whether WayOut fits on the error line after head.
func (e *FailureError) wayInline() bool {
	return e.WayOut == "" || len("error: "+e.head()+"; "+e.WayOut) <= MaxErrorLine
}

func (e *FailureError) Error() string {
	switch {
	case e.WayOut != "" && e.wayInline():
		return e.head() + "; " + e.WayOut
	case e.WayOut != "":
		return e.head() + "; the lines above say how to proceed"
	case len(e.DetailLines()) > 0:
		return e.head() + "; the lines above say why"
	}
	return e.head()
}

// Unwrap returns Err.
func (e *FailureError) Unwrap() error { return e.Err }

// DetailLines are the lines the CLI prints above the error line: Why and
// the way out when they did not fit there, then the title and each detail
// as an item.
func (e *FailureError) DetailLines() []string {
	var lines []string
	if e.Why != "" && !e.whyInline() {
		lines = append(lines, "Why: "+e.Why)
	}
	lines = append(lines, itemLines(e.DetailsTitle, "Details", e.Details)...)
	if !e.wayInline() {
		lines = append(lines, "To proceed: "+e.WayOut)
	}
	return lines
}

// Message is err's whole message on one line, for a report or a plan that
// records it where no lines are printed above it (a retire plan's step,
// fleet's JSON): the error line without its pointer to the lines above,
// then the lines the CLI prints above it (DetailLines), joined by "; ".
// An error with no such lines is its Error().
func Message(err error) string {
	var d interface{ DetailLines() []string }
	if !errors.As(err, &d) {
		return err.Error()
	}
	lines := d.DetailLines()
	if len(lines) == 0 {
		return err.Error()
	}
	msg, _, _ := strings.Cut(err.Error(), "; the lines above say")
	var b strings.Builder
	b.WriteString(msg)
	sep := ": "
	for _, l := range lines {
		l = strings.TrimPrefix(strings.TrimSpace(l), "- ")
		b.WriteString(sep + l)
		sep = "; "
		if strings.HasSuffix(l, ":") {
			sep = " "
		}
	}
	return b.String()
}

// itemLines are items under their title ("Title:", then "  - item" each),
// or none without items; fallback titles them when title is empty.
func itemLines(title, fallback string, items []string) []string {
	if len(items) == 0 {
		return nil
	}
	if title == "" {
		title = fallback
	}
	lines := []string{title + ":"}
	for _, item := range items {
		lines = append(lines, "  - "+item)
	}
	return lines
}
