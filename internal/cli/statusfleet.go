package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/fleet"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// runFleet is status against every context: each cluster read at once,
// one table, and the verdicts.
func (o *StatusOptions) runFleet(ctx context.Context) error {
	start := time.Now()
	clusters := eachCluster(ctx, o.fleet, o.contexts, func(ctx context.Context, name string, getter *genericclioptions.ConfigFlags) (fc fleet.Cluster) {
		t0 := time.Now()
		fc = fleet.Cluster{Context: name, Server: o.fleet.server(name)}
		defer func() { fc.Seconds = time.Since(t0).Seconds() }()
		c, err := cluster.New(getter)
		var r *report.Status
		if err == nil {
			r, err = action.Status(ctx, statusReader{c}, o.CRD, o.Count, o.ChunkSize, lifecycle.Options{})
		}
		fc.Reach = cluster.ReachOf(err)
		if err != nil {
			fc.Error = err.Error()
			return fc
		}
		fc.SetAnalysis(&r.Analysis)
		if r.Objects != nil && r.Objects.Error == "" && r.Objects.Version != "" {
			n := r.Objects.Count
			fc.Objects = &n
		}
		return fc
	})
	name := fleet.CRDName(clusters, o.CRD)
	rep := &report.FleetStatus{CRD: name, Clusters: clusters, Verdicts: fleet.Verdicts(name, clusters, o.Versions), Seconds: time.Since(start).Seconds()}
	for i := range rep.Verdicts {
		for j, b := range rep.Verdicts[i].Blockers {
			rep.Verdicts[i].Blockers[j] = b.Rendered(o.conn)
		}
	}
	if err := o.print(rep, o.Out); err != nil {
		return err
	}
	return fleetStatusExit(rep, o.CRD)
}

// fleetStatusExit is the error a fleet status returns once its report is
// printed: *FindingsError (exit code 1) when a cluster's CRD has an
// error-level finding or a cluster could not be read, as in doctor's fleet
// run; a failure (2) when no cluster has the CRD, as status in one cluster
// fails (a misspelt name must not pass); nil otherwise. arg is the CRD as
// the command line named it.
func fleetStatusExit(rep *report.FleetStatus, arg string) error {
	if failing := rep.Failing(); len(failing) > 0 {
		return &FindingsError{Summary: fmt.Sprintf("%d of %d cluster(s): %s", len(failing), len(rep.Clusters), strings.Join(failing, ", "))}
	}
	if !rep.Installed() {
		return fmt.Errorf("no CustomResourceDefinition matches %q in any of the %d cluster(s)", arg, len(rep.Clusters))
	}
	return nil
}
