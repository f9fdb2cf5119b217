package e2e

import (
	"strings"
	"testing"

	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// checkErrorLines fails t when the output of a run, or the error line
// kubectl's error handling prints for the error an in-process run
// returned, holds an "error:" line longer than lifecycle.MaxErrorLine: an
// error says what failed in one short line, its details above it.
func checkErrorLines(t testing.TB, r result) {
	t.Helper()
	out := r.stdout + "\n" + r.stderr
	if r.err != nil {
		out += "\n" + errorLine(r.err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "error:") && len(line) > lifecycle.MaxErrorLine && !longLineTolerated(line) {
			t.Errorf("an error line of %d characters (at most %d):\n%s", len(line), lifecycle.MaxErrorLine, line)
		}
	}
}

// errorLine is err as the plugin's main prints it (cmdutil.CheckErr).
func errorLine(err error) string {
	if msg, ok := cmdutil.StandardErrorMessage(err); ok {
		return msg
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	return msg
}

// toleratedLong are the error lines still built as one long sentence by
// migrate's own refusals (internal/action/migrate.go), which have not been
// given the short form of lifecycle.RefusalError yet. TEMPORARY: each
// entry goes when its refusal is converted; TestToleratedLongLinesAreFew
// keeps the list from growing.
var toleratedLong = []string{
	"error: refusing to migrate ",
	"failed to migrate",
	"the trim of status.storedVersions",
}

// longLineTolerated reports whether line is one of migrate's refusals
// that toleratedLong still lets through.
func longLineTolerated(line string) bool {
	for _, s := range toleratedLong {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// TestToleratedLongLinesAreFew: the tolerance of long error lines covers
// migrate's refusals only, never another command's.
func TestToleratedLongLinesAreFew(t *testing.T) {
	t.Parallel()
	if len(toleratedLong) > 3 {
		t.Errorf("%d tolerated long error lines; convert refusals instead of tolerating more", len(toleratedLong))
	}
	long := "error: refusing to unserve x.example.com, nothing was changed: " + strings.Repeat("because ", 30)
	if longLineTolerated(long) {
		t.Errorf("an unserve refusal is tolerated: %s", long)
	}
}
