package cli

import (
	"context"
	"slices"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
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
		res.Reach, res.Error = cluster.CheckReach(err)
		res.Seconds = time.Since(t0).Seconds()
		return res
	})
	if len(o.Allows) > 0 {
		for _, c := range clusters {
			if c.Check != nil {
				c.Check.Acknowledge(o.Allows)
			}
		}
		warnUnmatched(o.ErrOut, o.Allows)
	}
	r := &report.FleetUpgradeCheck{Source: o.source(), Clusters: clusters}
	r.Tally()
	r.Seconds = time.Since(start).Seconds()
	return printFindings(o.Out, o.print, r, r.Summary)
}

// inContext is conn with --context name: the connection flags of the
// commands printed for one cluster of a fleet run.
func inContext(conn []lifecycle.Flag, name string) []lifecycle.Flag {
	return append(slices.Clone(conn), lifecycle.Flag{Name: "context", Value: name})
}
