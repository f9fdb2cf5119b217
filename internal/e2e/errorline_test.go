package e2e

import (
	"strings"
	"testing"

	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

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

// checkErrorLines fails t when a run's output, or the error line kubectl's
// error handling prints for the error an in-process run returned, holds an
// "error:" line longer than lifecycle.MaxErrorLine: an error says what
// failed in one short line, its details once, above it. Every run of the
// plugin in these tests passes through it.
func checkErrorLines(t testing.TB, r result) {
	t.Helper()
	out := r.stdout + "\n" + r.stderr
	if r.err != nil {
		out += "\n" + errorLine(r.err)
	}
	for _, line := range strings.Split(out, "\n") {
		if long := errorLineTooLong(line); long {
			t.Errorf("an error line of %d characters (at most %d):\n%s", len(line), lifecycle.MaxErrorLine, line)
		}
	}
}

// errorLineTooLong reports whether line is an "error:" line over
// lifecycle.MaxErrorLine.
func errorLineTooLong(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "error:") && len(line) > lifecycle.MaxErrorLine
}

// TestErrorLineCheck: the check sees error lines in the output and in the
// returned error, and lets short ones and long non-error lines through.
func TestErrorLineCheck(t *testing.T) {
	t.Parallel()
	long := "error: refusing to unserve x.example.com, nothing was changed: " + strings.Repeat("because ", 30)
	for _, tc := range []struct {
		line string
		want bool
	}{
		{long, true},
		{"  " + long, true},
		{"error: refusing to unserve x.example.com, nothing was changed: the preflight check ClientUsage failed", false},
		{"FAIL ClientUsage " + strings.Repeat("because ", 40), false},
	} {
		if got := errorLineTooLong(tc.line); got != tc.want {
			t.Errorf("errorLineTooLong(%.60q…) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
