package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
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

// RetireLog renders a retire run's events (retire.Event) as its progress
// log: lines to Log, warnings to ErrOut.
type RetireLog struct {
	Log, ErrOut io.Writer
	// Sources names where the client-usage check looks.
	Sources string
	// Refresh is the command that refreshes kubectl's cached discovery
	// (see Unserved).
	Refresh string
}

// Event writes e.
func (l *RetireLog) Event(e retire.Event) {
	w := l.Log
	switch e.Kind {
	case retire.EventMeasuring:
		fmt.Fprintf(w, "Measuring the client usage of %s/%s from %s…\n", e.Group, e.Version, l.Sources)
	case retire.EventChecking:
		fmt.Fprintf(w, "Checking, with a server-side dry run of the migration, that the API server accepts the rewrite of every object of %s…\n", e.CRD)
	case retire.EventPlan:
		RetirePlan(w, e.CRD, e.Version, e.Steps)
	case retire.EventRetiring:
		fmt.Fprintf(w, "Retiring %s from %s\n", e.Version, e.CRD)
	case retire.EventStep:
		s := e.Step
		fmt.Fprintf(w, "[%d/%d] %s: %s — %s\n", s.Number, e.Total, s.Title, strings.ToUpper(string(s.Status)), s.Message)
		for _, ev := range s.Evidence {
			fmt.Fprintf(w, "      · %s\n", ev)
		}
		if s.Status == retire.Blocked && s.Command != "" {
			fmt.Fprintf(w, "      run: %s\n", s.Command)
		}
	case retire.EventTaking:
		fmt.Fprintf(w, "[%d/%d] %s: %s…\n", e.Step.Number, e.Total, e.Step.Title, e.Step.Message)
	case retire.EventManagedFieldsCleaned:
		c := e.ManagedFields
		fmt.Fprintf(w, "      managedFields rewritten on %d object(s) (entries relabeled: %d, merged: %d); %d already clean, %d deleted\n",
			c.Rewritten, c.Relabeled, c.Merged, c.Current, c.Deleted)
	case retire.EventReferencesRewritten:
		fmt.Fprintf(w, "      %s\n", e.Message)
	case retire.EventMigrated:
		if res, ok := e.Migration.Report.(*result.Result); ok {
			Migration(w, res, lifecycle.DryRunNone)
		}
	case retire.EventWarning:
		fmt.Fprintf(l.ErrOut, "Warning: %v\n", e.Err)
	case retire.EventRetired:
		fmt.Fprintf(w, "%s retired from %s. State: %s, %s\n", e.Version, e.CRD, e.Analysis.State, e.Analysis.StateDescription)
		Unserved(w, e.Group+"/"+e.Version, l.Refresh)
	}
}
