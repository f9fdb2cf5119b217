package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/reach"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"k8s.io/cli-runtime/pkg/printers"
)

// FleetStatus writes a fleet status report: a row per context, then each
// version's verdict on leaving the manifest with what blocks it and the
// command to run.
func FleetStatus(out io.Writer, r *report.FleetStatus) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTEXT\tSTATE\tSTORAGE\tSTORED VERSIONS\tOBJECTS\tTIME\tBLOCKING")
	for _, c := range r.Clusters {
		t := fmt.Sprintf("%.1fs", c.Seconds)
		if c.Reach != reach.Reached {
			what := strings.ToLower(string(c.Reach))
			if c.Error != "" {
				what += ": " + FirstLine(c.Error)
			}
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s\t%s\n", c.Context, t, what)
			continue
		}
		objects := "-"
		if c.Objects != nil {
			objects = fmt.Sprint(*c.Objects)
		}
		blocking := "-"
		if len(c.Blocking) > 0 {
			blocking = lifecycle.Some(append([]string{FirstLine(c.Blocking[0])}, c.Blocking[1:]...), 1)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t[%s]\t%s\t%s\t%s\n", c.Context, c.State, Dash(c.StorageVersion), strings.Join(c.StoredVersions, ", "), objects, t, blocking)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d cluster(s) read in %.1fs\n", len(r.Clusters), r.Seconds)
	for _, v := range r.Verdicts {
		fmt.Fprintf(out, "\n%s can leave the manifest of %s: %s\n", v.Version, r.CRD, v.Answer)
		for _, b := range v.Blockers {
			fmt.Fprintf(out, "  %s (%s): %s\n", b.Context, b.Answer, b.Reason)
			if b.Command != "" {
				fmt.Fprintf(out, "    run: %s\n", b.Command)
			}
		}
		for _, n := range v.Notes {
			fmt.Fprintf(out, "  note: %s\n", n)
		}
	}
	return nil
}

// FleetRetire writes a fleet retire report: each context's log, then a
// row per context with its outcome.
func FleetRetire(out io.Writer, r *report.FleetRetire) error {
	for _, c := range r.Clusters {
		fmt.Fprintf(out, "=== %s (%s)\n", c.Context, Dash(c.Server))
		fmt.Fprint(out, c.Log)
		if c.Error != "" {
			fmt.Fprintf(out, "error: %s\n", c.Error)
		}
		fmt.Fprintln(out)
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTEXT\tOUTCOME\tTIME\tDETAIL")
	for _, c := range r.Clusters {
		detail := "-"
		switch {
		case c.Error != "":
			detail = FirstLine(c.Error)
		case c.Report != nil && len(c.Report.Taken) > 0:
			detail = "took " + strings.Join(c.Report.Taken, ", ")
		}
		fmt.Fprintf(w, "%s\t%s\t%.1fs\t%s\n", c.Context, c.Outcome, c.Seconds, detail)
	}
	_ = w.Flush()
	fmt.Fprintf(out, "%d cluster(s) in %.1fs\n", len(r.Clusters), r.Seconds)
	return nil
}
