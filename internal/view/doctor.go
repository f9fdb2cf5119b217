package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"k8s.io/cli-runtime/pkg/printers"
)

// Doctor writes a doctor report: per CRD its state and findings, each
// deprecated or old version's client usage and the clients named, then the count
// of CRDs, requests and findings.
func Doctor(out io.Writer, r *report.Doctor) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CRD\tSTATE\tSTORAGE\tSTORED VERSIONS\tCONVERSION\tOBJECTS\tERRORS\tWARNINGS")
	for _, c := range r.CRDs {
		objects := "?"
		if c.Objects != nil {
			objects = fmt.Sprint(*c.Objects)
		}
		var s report.Summary
		for _, f := range c.Findings {
			s.Add(f.Severity)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t[%s]\t%s\t%s\t%d\t%d\n", c.Name, c.State, Dash(c.StorageVersion), strings.Join(c.StoredVersions, ","), c.Conversion, objects, s.Errors, s.Warnings)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, c := range r.CRDs {
		header := false
		for _, f := range c.Findings {
			if f.Severity == lifecycle.SeverityInfo {
				continue
			}
			if !header {
				fmt.Fprintf(out, "\n%s:\n", c.Name)
				header = true
			}
			fmt.Fprintf(out, "  %s: %s\n", strings.ToUpper(string(f.Severity)), f.Message)
			if f.Fix != "" {
				fmt.Fprintf(out, "    fix: %s\n", f.Fix)
			}
		}
	}
	for _, c := range r.CRDs {
		if len(c.Usage) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s: client usage of its deprecated and old versions\n", c.Name)
		for _, a := range c.Usage {
			fmt.Fprintf(out, "  %s: %s\n", strings.ToUpper(string(a.Verdict)), a.Message())
			for _, cl := range a.Clients() {
				fmt.Fprintf(out, "    client: %s\n", cl)
			}
		}
	}
	fmt.Fprintf(out, "\n%s checked with %s; %s\n", Plural(len(r.CRDs), "CRD"), Plural(int(r.Requests), "API request"), SummaryText(r.Summary))
	return nil
}

// FleetDoctor writes a fleet doctor report: a section per context.
func FleetDoctor(out io.Writer, r *report.FleetDoctor) error {
	tw := printers.GetNewTabWriter(out)
	fmt.Fprintln(tw, "CONTEXT\tCRDS\tERRORS\tWARNINGS\tREQUESTS\tTIME\tPROBLEM")
	for _, c := range r.Clusters {
		if c.Doctor == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%.1fs\t%s: %s\n", c.Context, c.Seconds, strings.ToLower(string(c.Reach)), FirstLine(c.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1fs\t-\n", c.Context, len(c.Doctor.CRDs), c.Doctor.Summary.Errors, c.Doctor.Summary.Warnings, c.Doctor.Requests, c.Seconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d cluster(s) in %.1fs\n", len(r.Clusters), r.Seconds)
	for _, c := range r.Clusters {
		if c.Doctor != nil && (c.Doctor.Summary.Errors > 0 || c.Doctor.Summary.Warnings > 0) {
			fmt.Fprintf(out, "\n=== %s\n", c.Context)
			if err := Doctor(out, c.Doctor); err != nil {
				return err
			}
		}
	}
	return nil
}
