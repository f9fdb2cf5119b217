package cli

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// runFleet is retire in every context, each cluster on its own: one
// cluster's refusal or failure does not stop the others. Each cluster gets
// its own executor, with the connection flags plus its --context in every
// printed command, and its own progress log (a buffer). The output is each
// cluster's log, then a table of outcomes.
func (o *RetireOptions) runFleet(ctx context.Context) error {
	start := time.Now()
	results := eachCluster(ctx, o.fleet, o.contexts, func(ctx context.Context, name string, getter *genericclioptions.ConfigFlags) (res report.FleetRetireCluster) {
		t0 := time.Now()
		var log bytes.Buffer
		res = report.FleetRetireCluster{Context: name, Server: o.fleet.server(name)}
		defer func() { res.Log = log.String() }()
		err := func() error {
			c, err := cluster.New(getter)
			if err != nil {
				return err
			}
			crd, err := c.ResolveCRD(ctx, o.CRD)
			if err != nil {
				return err
			}
			opts := o.Retire
			opts.Global = append(slices.Clone(o.Retire.Global), lifecycle.Flag{Name: "context", Value: name})
			res.Report, err = o.retire(ctx, c, crd, opts, &log, &log, false)
			res.Outcome = res.Report.Outcome
			return err
		}()
		// A refusal's details not shown yet (missing permissions) go to the
		// cluster's log: its error is one short line.
		printRefusal(&log, err)
		res.Seconds = time.Since(t0).Seconds()
		res.End(err, cluster.ReachOf(err))
		return res
	})
	rep := &report.FleetRetire{CRD: o.CRD, Version: o.Version, DryRun: o.DryRun != lifecycle.DryRunNone, Clusters: results, Seconds: time.Since(start).Seconds()}
	if err := o.print(rep, o.Out); err != nil {
		return err
	}
	notDone := rep.NotDone()
	if len(notDone) > 0 {
		return fmt.Errorf("retire %s of %s did not finish in %d of %d cluster(s): %s", o.Version, o.CRD, len(notDone), len(results), strings.Join(notDone, ", "))
	}
	return nil
}
