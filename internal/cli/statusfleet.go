package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

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
			r, err = action.Status(ctx, c, o.CRD, o.Count, o.ChunkSize, lifecycle.Options{})
		}
		fc.Reach = reachOf(err)
		if err != nil {
			fc.Error = err.Error()
			return fc
		}
		a := r.Analysis
		fc.Name = a.CRD.Name
		fc.State, fc.StorageVersion, fc.StoredVersions = a.State, a.StorageVersion, a.StoredVersions
		for _, v := range a.Versions {
			if v.InSpec {
				fc.Versions = append(fc.Versions, v.Name)
			}
			if v.Served {
				fc.Served = append(fc.Served, v.Name)
			}
		}
		if r.Objects != nil && r.Objects.Error == "" && r.Objects.Version != "" {
			n := r.Objects.Count
			fc.Objects = &n
		}
		for _, f := range a.Findings {
			if f.Severity == lifecycle.SeverityError {
				fc.Blocking = append(fc.Blocking, f.Message)
			}
		}
		return fc
	})
	name := o.CRD
	for _, c := range clusters {
		if c.Reach == fleet.Reached {
			name = c.Name
			break
		}
	}
	rep := &report.FleetStatus{CRD: name, Clusters: clusters, Verdicts: fleet.Verdicts(name, clusters, o.Versions), Seconds: time.Since(start).Seconds()}
	for i := range rep.Verdicts {
		for j, b := range rep.Verdicts[i].Blockers {
			rep.Verdicts[i].Blockers[j] = b.Rendered(o.conn)
		}
	}
	return o.print(rep, o.Out)
}

func printFleetStatus(out io.Writer, r *report.FleetStatus) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTEXT\tSTATE\tSTORAGE\tSTORED VERSIONS\tOBJECTS\tTIME\tBLOCKING")
	for _, c := range r.Clusters {
		t := fmt.Sprintf("%.1fs", c.Seconds)
		if c.Reach != fleet.Reached {
			what := strings.ToLower(string(c.Reach))
			if c.Error != "" {
				what += ": " + firstLine(c.Error)
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
			blocking = firstLine(c.Blocking[0])
			if len(c.Blocking) > 1 {
				blocking += fmt.Sprintf(" (and %d more)", len(c.Blocking)-1)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t[%s]\t%s\t%s\t%s\n", c.Context, c.State, dash(c.StorageVersion), strings.Join(c.StoredVersions, ", "), objects, t, blocking)
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
