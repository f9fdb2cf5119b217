package view

import (
	"fmt"
	"io"

	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// ReferenceRepair writes the report of repair-references: what the
// inventory read, one line per reference and what was done to it,
// what could not be read, and a summary line.
func ReferenceRepair(w io.Writer, r *report.ReferenceRepair) error {
	suffix := ""
	switch r.DryRun {
	case "client":
		suffix = " (dry run)"
	case "server":
		suffix = " (server dry run)"
	}
	fmt.Fprintf(w, "References to %s %s: %d (read %d objects of %d resources)\n", r.Target.APIVersion, r.Target.Kind, r.Found, r.Objects, r.Resources)
	counts := map[references.Outcome]int{}
	for _, x := range r.Repairs {
		counts[x.Outcome]++
		line := fmt.Sprintf("  %s %s %s (%s %s): ", x.Resource.GroupResource(), x.Object(), x.Where(), x.Owner.Kind, x.Owner.Name)
		switch x.Outcome {
		case references.Rewritten:
			line += "rewritten to " + x.To + suffix
			if x.Revision > 0 {
				line += fmt.Sprintf(" in revision %d (revision %d kept, superseded)", x.Revision, x.Release.Revision)
			}
		case references.Planned:
			line += "would be rewritten to " + x.To + suffix
		default:
			line += string(x.Outcome) + ": " + x.Message
		}
		fmt.Fprintln(w, line)
	}
	for _, u := range r.Unseen {
		fmt.Fprintf(w, "  not read: %s: %s\n", u.Name(), u.Reason)
	}
	switch {
	case len(r.Unseen) > 0:
		what := fmt.Sprintf("%d resources", len(r.Unseen))
		if len(r.Unseen) == 1 {
			what = "1 resource"
		}
		fmt.Fprintf(w, "%s could not be read: references on their objects are unknown; grant list on them, or make their lists answer, and run again.\n", what)
	case len(r.Repairs) == 0:
		fmt.Fprintf(w, "No owner reference, scale target or Helm release record names %s: nothing to repair.\n", r.Target.APIVersion)
	}
	if n := counts[references.Changed]; n > 0 {
		fmt.Fprintf(w, "%d changed by another writer since they were read, not rewritten: run again to read them anew.\n", n)
	}
	if n := counts[references.Failed]; n > 0 {
		fmt.Fprintf(w, "%d refused by the API server, not rewritten: see why above.\n", n)
	}
	return nil
}
