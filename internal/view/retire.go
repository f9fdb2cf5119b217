package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/retire"
)

// RetirePlan writes every step with its status.
func RetirePlan(w io.Writer, crd, version string, steps []retire.Step) {
	fmt.Fprintf(w, "Plan to retire %s from %s:\n", version, crd)
	blocked := false
	for _, s := range steps {
		fmt.Fprintf(w, "  %d. %-8s %s: %s\n", s.Number, strings.ToUpper(string(s.Status)), s.Title, s.Message)
		for _, e := range s.Evidence {
			fmt.Fprintf(w, "              · %s\n", e)
		}
		if s.Status == retire.Blocked && s.Command != "" {
			fmt.Fprintf(w, "              run: %s\n", s.Command)
		}
		blocked = blocked || s.Status == retire.Blocked
	}
	if blocked {
		fmt.Fprintln(w, "Nothing is changed while a step is blocked; after unblocking, re-run to take the steps in order.")
	}
}
