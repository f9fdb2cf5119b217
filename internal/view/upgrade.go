package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
	"k8s.io/cli-runtime/pkg/printers"
)

// UpgradeCheck writes a check-upgrade report: a row per CRD of the release,
// then, for each CRD that is rejected, has notable findings or could not be
// dry-run, the reasons, the findings and the commands that make it safe.
func UpgradeCheck(out io.Writer, r *report.UpgradeCheck) error {
	if r.Rules != "" {
		fmt.Fprintf(out, "Rules: crdversion's, and the verdict of %s\n\n", r.Rules)
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CRD\tINSTALLED\tSTORAGE\tAPPLY\tDATA LOSS\tDEFAULT VERSION\tSERVED VERSIONS REMOVED")
	for _, p := range r.CRDs {
		storage, def := p.NewStorageVersion, p.NewDefaultVersion
		if p.Installed {
			storage = arrow(p.LiveStorageVersion, p.NewStorageVersion)
			def = arrow(p.LiveDefaultVersion, p.NewDefaultVersion)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, YesNo(p.Installed), Dash(storage), strings.ToLower(p.Apply), YesNo(p.DataLoss), Dash(def), Dash(strings.Join(p.RemovedServedVersions, ",")))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, p := range r.CRDs {
		notable := 0
		for _, f := range p.Findings {
			if f.Severity != lifecycle.SeverityInfo {
				notable++
			}
		}
		if p.Apply == upgrade.Accepted && notable == 0 && p.ServerDryRun != upgrade.DryRunSkipped {
			continue
		}
		fmt.Fprintf(out, "\n%s (%s):\n", p.Name, p.Source)
		switch p.Apply {
		case upgrade.Deleted:
			fmt.Fprintf(out, "  Apply: DELETED by helm upgrade of release %s, with every object of it\n", p.Deletion.Release)
		case upgrade.Rejected:
			fmt.Fprintf(out, "  Apply: REJECTED by the API server%s\n", serverOf(p))
		default:
			fmt.Fprintf(out, "  Apply: accepted%s\n", serverOf(p))
		}
		for _, reason := range p.Reasons {
			fmt.Fprintf(out, "    - %s\n", reason)
		}
		switch {
		case p.ServerDryRun == upgrade.DryRunSkipped && p.ServerMessage != "":
			fmt.Fprintf(out, "  Server dry run: skipped (%s)\n", p.ServerMessage)
		case p.ServerDryRun != upgrade.DryRunSkipped && p.ServerDryRun != strings.ToLower(p.Static):
			fmt.Fprintf(out, "  Server dry run: %s, unlike the prediction from the update rules (%s): %s\n", p.ServerDryRun, strings.ToLower(p.Static), Dash(p.ServerMessage))
		case p.ServerDryRun == upgrade.DryRunRejected:
			fmt.Fprintf(out, "  Server dry run: rejected: %s\n", p.ServerMessage)
		case p.ServerDryRun == upgrade.DryRunAccepted:
			fmt.Fprintln(out, "  Server dry run: accepted")
		}
		if notable > 0 {
			fmt.Fprintln(out, "  Findings:")
			for _, f := range p.Findings {
				if f.Severity == lifecycle.SeverityInfo {
					continue
				}
				fmt.Fprintf(out, "    %s %s %s: %s\n", strings.ToUpper(severityText(f.Severity, f.Acknowledged)), Dash(f.Version), f.Path, f.Message)
			}
		}
		if p.Immutable != nil {
			fmt.Fprintf(out, "  Not a version change: %s\n", p.Immutable.Describe(p.Name))
		}
		if len(p.Fix) > 0 {
			fmt.Fprintln(out, "  To upgrade safely, run in order:")
			for i, c := range p.Fix {
				fmt.Fprintf(out, "    %d. %s\n", i+1, c)
			}
		}
		if p.Then != "" {
			if len(p.Fix) == 0 {
				fmt.Fprintln(out, "  To upgrade safely:")
			}
			fmt.Fprintf(out, "    then (no command: it loses data): %s\n", p.Then)
		}
	}
	if h := r.Helm; h != nil {
		switch {
		case h.DeletionsChecked:
			fmt.Fprintf(out, "\nHelm release %s/%s: its installed CRDs that the release no longer renders were looked for.\n", h.Namespace, h.Release)
		default:
			fmt.Fprintln(out, "\nHelm: which installed CRDs the release deletes was NOT checked: give --release NAME (and -n NAMESPACE) to check them.")
		}
	}
	fmt.Fprintf(out, "\n%s; %s\n", Plural(len(r.CRDs), "CRD"), SummaryText(r.Summary))
	return nil
}

// serverOf names the API server version a plan's verdict holds for.
func serverOf(p upgrade.Plan) string {
	if p.Predicted {
		return " (predicted, no server: the previous release stands for the cluster)"
	}
	if p.APIServer == "" {
		return " (API server version unknown)"
	}
	return " (API server " + p.APIServer + ")"
}

// FleetUpgrade writes a fleet check-upgrade report: a row per context and
// CRD, the answer for the fleet, and per context what blocks it.
func FleetUpgrade(out io.Writer, r *report.FleetUpgradeCheck) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTEXT\tCRD\tAPPLY\tDATA LOSS\tSTORED VERSIONS\tTIME")
	for _, c := range r.Clusters {
		t := fmt.Sprintf("%.1fs", c.Seconds)
		if c.Check == nil {
			fmt.Fprintf(w, "%s\t-\t%s: %s\t-\t-\t%s\n", c.Context, strings.ToLower(string(c.Reach)), FirstLine(c.Error), t)
			continue
		}
		for _, p := range c.Check.CRDs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t[%s]\t%s\n", c.Context, p.Name, strings.ToLower(p.Apply), YesNo(p.DataLoss), strings.Join(p.StoredVersions, ", "), t)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s can be applied in every cluster: %s (%d cluster(s) checked in %.1fs)\n", r.Source, r.Answer, len(r.Clusters), r.Seconds)
	for _, c := range r.Clusters {
		if c.Check == nil {
			fmt.Fprintf(out, "  %s (unknown): %s: %s\n", c.Context, strings.ToLower(string(c.Reach)), FirstLine(c.Error))
			continue
		}
		for _, p := range c.Check.CRDs {
			if p.Apply != upgrade.Rejected && !p.DataLoss {
				continue
			}
			what := "rejected"
			if p.Apply != upgrade.Rejected {
				what = "data loss"
			}
			fmt.Fprintf(out, "  %s (no): %s %s: %s\n", c.Context, p.Name, what, strings.Join(p.Reasons, "; "))
			for _, f := range p.Fix {
				fmt.Fprintf(out, "    run: %s\n", f)
			}
			if p.Then != "" {
				fmt.Fprintf(out, "    then (no command: it loses data): %s\n", p.Then)
			}
		}
	}
	return nil
}

// arrow is "a -> b", or a when nothing changes.
func arrow(a, b string) string {
	if a == b {
		return a
	}
	return Dash(a) + " -> " + Dash(b)
}
