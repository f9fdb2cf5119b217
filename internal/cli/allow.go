package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// addAllowFlag adds --allow, repeatable, to flags.
func addAllowFlag(flags *pflag.FlagSet, into *[]string) {
	flags.StringArrayVar(into, "allow", nil, "Acknowledge a deliberate change: RULE, RULE=CRD or RULE=CRD:PATH, where RULE is a crdify rule name (default, enum, existingFieldRemoval, …) or a finding code; repeatable. An acknowledged finding is still printed, marked, and does not count toward the exit code.")
}

// parseAllows reads the --allow values; the first bad one is an error.
func parseAllows(values []string) ([]*schemadiff.Allow, error) {
	var out []*schemadiff.Allow
	for _, v := range values {
		a, err := schemadiff.ParseAllow(v)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// warnUnmatched prints a warning for each --allow that acknowledged no
// finding (a misspelt CRD or path, or a change the release no longer has),
// and for each finding an --allow matched that no acknowledgement lets
// through (the API server rejects the update).
func warnUnmatched(errOut io.Writer, allows []*schemadiff.Allow) {
	for _, a := range allows {
		for _, f := range a.Refused {
			fmt.Fprintf(errOut, "Warning: --allow %s does not acknowledge %s: the API server rejects that update, so it still counts\n", a.Text, f)
		}
		if a.Matched == 0 && len(a.Refused) == 0 {
			fmt.Fprintf(errOut, "Warning: --allow %s matched no finding\n", a.Text)
		}
	}
}
