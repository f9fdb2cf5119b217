package view

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"k8s.io/cli-runtime/pkg/printers"
)

// Migration writes the report of a client-engine migration: the headline
// (Migrated, Interrupted or Failed), the counts, the failures by object and
// whether storedVersions was trimmed.
func Migration(w io.Writer, r *result.Result, dryRun lifecycle.DryRun) {
	verb := "Migrated"
	switch {
	case dryRun == lifecycle.DryRunClient:
		verb = "Counted (dry run, nothing written)"
	case dryRun == lifecycle.DryRunServer:
		verb = "Checked (server dry run, nothing written)"
	case r.Failed > 0:
		// Also when the list stopped at objects the API server cannot
		// read: the run did not finish, and it was not interrupted.
		verb = "Failed"
	case !r.Complete:
		verb = "Interrupted"
	}
	if dryRun != lifecycle.DryRunNone && !r.Complete {
		verb = "Interrupted: " + verb
	}
	switch {
	case r.Restarted:
		verb += ", restarted from the first object (the checkpoint's continue token had expired),"
	case r.Resumed:
		verb += ", resuming from the checkpoint,"
	}
	fmt.Fprintf(w, "%s %s at %s in %.1fs (%.0f objects/s)\n", verb, r.CRD, r.StorageVersion, r.ElapsedSeconds, r.ObjectsPerSecond)
	switch dryRun {
	case lifecycle.DryRunClient:
		fmt.Fprintf(w, "  total %d listed, nothing checked\n", r.Total)
	case lifecycle.DryRunServer:
		fmt.Fprintf(w, "  total %d, accepted by the dry run %d (a dry run cannot tell rewritten from already current), conflicts %d, deleted %d, failed %d\n",
			r.Total, r.Accepted, r.Conflicts, r.Deleted, r.Failed)
	default:
		fmt.Fprintf(w, "  total %d, rewritten %d, already current %d, conflicts %d, deleted %d, failed %d\n",
			r.Total, r.Rewritten, r.Current, r.Conflicts, r.Deleted, r.Failed)
	}
	for _, m := range r.Measured {
		through := cmp.Or(m.Through, r.StorageVersion)
		if through != r.StorageVersion {
			through += " (a round trip through " + r.StorageVersion + ")"
		}
		how := "dry-run written through " + through
		if m.Design == result.DesignReads {
			how = "at " + through + " and compared (no dry run: nothing acts on the write"
			if m.DryRuns > 0 {
				how += fmt.Sprintf("; %d dry-run written after all: written between the reads, or invalid as new", m.DryRuns)
			}
			how += ")"
		}
		accepted := ""
		if n := len(m.Accepted); n > 0 {
			accepted = fmt.Sprintf(" not accepted; %d path(s) lost or changed as --allow-pruning accepts them (see the warning)", n)
		}
		fmt.Fprintf(w, "  measured first: %d object(s) read at %s and %s in %.1fs, %d losing a field, %d changing a value%s\n",
			m.Objects, m.From, how, m.ElapsedSeconds, m.Lost, m.Changed, accepted)
		if m.DryRunBecause != "" {
			fmt.Fprintf(w, "  dry runs, not reads, because %s\n", m.DryRunBecause)
		}
		if line := rewriteSets(m); line != "" {
			fmt.Fprintf(w, "  the rewrite %s\n", line)
		}
	}
	if c := r.Concurrency; c != nil {
		limit := fmt.Sprintf("%d writes in flight (--max-speed)", c.Max)
		if r.OwnPriorityLevel != nil {
			limit = fmt.Sprintf("%d writes in flight (fixed: its own priority level spares the other clients)", c.Max)
		}
		if c.Mode == "adaptive" {
			limit = fmt.Sprintf("%.1f writes in flight on average (1 to %d, --max-latency %s)", c.MeanLimit, c.Max, time.Duration(c.MaxLatencySeconds*float64(time.Second)))
		}
		fmt.Fprintf(w, "  %s, write latency p50 %.0f ms, p99 %.0f ms; %d answered 429 Too Many Requests, %d retries\n",
			limit, 1000*c.WriteLatencyP50Seconds, 1000*c.WriteLatencyP99Seconds, r.TooManyRequests, r.Retries)
	}
	if own := r.OwnPriorityLevel; own != nil {
		state := "removed after the run"
		switch {
		case own.DryRun:
			state = "created as a server-side dry run only: the requests landed where they always do"
		case !own.Removed:
			state = "NOT removed (see the warning)"
		}
		fmt.Fprintf(w, "  its own priority level %s (%d nominal concurrency share(s), requests of %s to this resource): %s", own.Name, own.Shares, own.User, state)
		if own.LeftoverRemoved {
			fmt.Fprint(w, "; one a killed run left was removed first")
		}
		fmt.Fprintln(w)
	}
	if p := r.PriorityAndFairness; p != nil {
		fmt.Fprintf(w, "  API Priority and Fairness: priority level %s, flow schema %s", cmp.Or(p.PriorityLevel, p.PriorityLevelUID), cmp.Or(p.FlowSchema, p.FlowSchemaUID))
		if p.Unresolved != "" {
			fmt.Fprintf(w, " (names not known: %s)", p.Unresolved)
		}
		fmt.Fprintln(w)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	failed := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		failed[i] = fmt.Sprintf("  FAILED %s: %s\n", f.Object, f.Message)
	}
	fmt.Fprint(w, lifecycle.Shorten(failed, 20, "", "  … and %d more failures (-o json lists all)\n"))
	before, after := "["+strings.Join(r.Trim.Before, ", ")+"]", "["+strings.Join(r.Trim.After, ", ")+"]"
	if r.Trim.Trimmed {
		fmt.Fprintf(w, "status.storedVersions: %s -> %s\n", before, after)
		return
	}
	fmt.Fprintf(w, "status.storedVersions: %s, not trimmed: %s\n", after, r.Trim.Reason)
}

// ServerMigration is the text summary of an --engine=server run; in a
// client dry run it prints wouldCreate, the StorageVersionMigration the run
// would have created.
func ServerMigration(w io.Writer, r *result.Result, dryRun lifecycle.DryRun, wouldCreate runtime.Object) error {
	sm := r.StorageVersionMigration
	switch dryRun {
	case lifecycle.DryRunClient:
		fmt.Fprintf(w, "Would create (dry run, nothing created) this StorageVersionMigration for the %d object(s) of %s, to store them at %s:\n", r.Total, r.CRD, r.StorageVersion)
		return (&printers.YAMLPrinter{}).PrintObj(wouldCreate, w)
	case lifecycle.DryRunServer:
		fmt.Fprintf(w, "Checked (server dry run, nothing created): the API server accepts StorageVersionMigration %s (%s) for the %d object(s) of %s\n", sm.Name, sm.APIVersion, r.Total, r.CRD)
		return nil
	}
	verb := "Migrated"
	if sm.Phase != string(result.PhaseSucceeded) {
		verb = "Did not migrate"
	}
	fmt.Fprintf(w, "%s %s at %s through StorageVersionMigration %s (%s) in %.1fs (%.0f objects/s)\n", verb, r.CRD, r.StorageVersion, sm.Name, sm.APIVersion, r.ElapsedSeconds, r.ObjectsPerSecond)
	fmt.Fprintf(w, "  objects %d (counted before the migration; the controller reports no per-object outcomes), phase %s", r.Total, sm.Phase)
	if sm.Message != "" {
		fmt.Fprintf(w, ": %s", sm.Message)
	}
	fmt.Fprintln(w)
	before, after := "["+strings.Join(r.Trim.Before, ", ")+"]", "["+strings.Join(r.Trim.After, ", ")+"]"
	if r.Trim.Trimmed {
		fmt.Fprintf(w, "status.storedVersions: %s -> %s (trimmed by %s)\n", before, after, r.Trim.By)
		return nil
	}
	if r.Trim.Restored {
		fmt.Fprintf(w, "status.storedVersions: %s, restored after the controller's trim: %s\n", after, r.Trim.Reason)
		return nil
	}
	fmt.Fprintf(w, "status.storedVersions: %s, not trimmed: %s\n", after, r.Trim.Reason)
	return nil
}

// rewriteSets says what the measured rewrite sets without losing anything:
// paths it sets (defaults, admission), explicit nulls it drops, and how
// many objects' metadata.generation it changes; "" when none.
func rewriteSets(m result.Measurement) string {
	counts := func(ps []result.PathCount) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = fmt.Sprintf("%s (%d)", p.Path, p.Objects)
		}
		return lifecycle.Shorten(parts, 5, ", ", ", and %d more paths (-o json lists all)")
	}
	var parts []string
	if len(m.Set) > 0 {
		parts = append(parts, "sets "+counts(m.Set)+" (defaults of the schema or admission)")
	}
	if len(m.NullsDropped) > 0 {
		parts = append(parts, "drops the explicit null of "+counts(m.NullsDropped))
	}
	if m.GenerationChanged > 0 {
		parts = append(parts, fmt.Sprintf("changes metadata.generation of %d object(s): their controllers reconcile them again", m.GenerationChanged))
	}
	return strings.Join(parts, "; ")
}
