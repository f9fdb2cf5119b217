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
		if strings.HasPrefix(strings.TrimSpace(line), "error:") && len(line) > lifecycle.MaxErrorLine {
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
