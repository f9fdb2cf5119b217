package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// runFleet checks the release against every context at once, one check
// per context, and answers whether it can be applied in all of them: no
// when a cluster would reject it, unknown when a cluster could not be read.
func (o *CheckUpgradeOptions) runFleet(ctx context.Context, docs []manifest.CRDDoc) error {
	start := time.Now()
	clusters := eachCluster(ctx, o.fleet, o.Contexts, func(ctx context.Context, name string, getter *genericclioptions.ConfigFlags) report.FleetUpgradeCluster {
		t0 := time.Now()
		res := report.FleetUpgradeCluster{Context: name, Server: o.fleet.server(name)}
		var err error
		res.Check, err = o.check(ctx, getter, inContext(o.conn, name), docs)
		res.Reach, res.Error = clusterReach(err)
		res.Seconds = time.Since(t0).Seconds()
		return res
	})
	r := &report.FleetUpgradeCheck{Source: o.source(), Clusters: clusters, Answer: fleet.Yes}
	for _, c := range clusters {
		switch {
		case c.Check == nil:
			if r.Answer == fleet.Yes {
				r.Answer = fleet.Unknown
			}
		case c.Check.Summary.Incompatible:
			r.Answer = fleet.No
		}
		if c.Check != nil {
			r.Summary.Merge(c.Check.Summary)
		}
	}
	r.Summary.Incompatible = r.Answer != fleet.Yes
	r.Seconds = time.Since(start).Seconds()
	return printFindings(o.Out, o.print, r, r.Summary)
}

// inContext is conn with --context name: the connection flags of the
// commands printed for one cluster of a fleet run.
func inContext(conn []lifecycle.Flag, name string) []lifecycle.Flag {
	return append(slices.Clone(conn), lifecycle.Flag{Name: "context", Value: name})
}

// clusterReach is how a fleet run reports the error of one cluster's check
// (nil: Reached): a cluster without the CRDs that could still not be
// checked is Failed, not NotInstalled.
func clusterReach(err error) (fleet.Reach, string) {
	if err == nil {
		return fleet.Reached, ""
	}
	reach := reachOf(err)
	if reach == fleet.NotInstalled {
		reach = fleet.Failed
	}
	return reach, err.Error()
}

func printFleetUpgrade(out io.Writer, r *report.FleetUpgradeCheck) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTEXT\tCRD\tAPPLY\tDATA LOSS\tSTORED VERSIONS\tTIME")
	for _, c := range r.Clusters {
		t := fmt.Sprintf("%.1fs", c.Seconds)
		if c.Check == nil {
			fmt.Fprintf(w, "%s\t-\t%s: %s\t-\t-\t%s\n", c.Context, strings.ToLower(string(c.Reach)), firstLine(c.Error), t)
			continue
		}
		for _, p := range c.Check.CRDs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t[%s]\t%s\n", c.Context, p.Name, strings.ToLower(p.Apply), yesNo(p.DataLoss), strings.Join(p.StoredVersions, ", "), t)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s can be applied in every cluster: %s (%d cluster(s) checked in %.1fs)\n", r.Source, r.Answer, len(r.Clusters), r.Seconds)
	for _, c := range r.Clusters {
		if c.Check == nil {
			fmt.Fprintf(out, "  %s (unknown): %s: %s\n", c.Context, strings.ToLower(string(c.Reach)), firstLine(c.Error))
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
		}
	}
	return nil
}
