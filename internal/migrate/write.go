package migrate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// migrate writes one object and tells what happened.
func (r *run) migrate(ctx context.Context, it item) (Outcome, string) {
	if r.opts.DryRun == lifecycle.DryRunClient {
		return Listed, ""
	}
	// The metadata client asks for the answer as PartialObjectMetadata
	// (protobuf): the API server still decodes, re-encodes and stores the
	// whole object, but it serializes and the client decodes only the
	// metadata, which is all the outcome needs.
	var ri metadata.ResourceInterface = r.engine.Metadata.Resource(r.gvr)
	if r.namespaced {
		ri = r.engine.Metadata.Resource(r.gvr).Namespace(it.namespace)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": it.uid, "resourceVersion": it.resourceVersion}})
	opts := metav1.PatchOptions{DryRun: r.opts.DryRun.Request(), FieldManager: r.opts.FieldManager}
	var newRV string
	sent := false // a request reached the wire: it may have landed
	err := r.retry(ctx, func() error {
		done, err := r.limiter.acquire(ctx)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			done()
			return err // interrupted before this write was sent
		}
		r.limitSum.Add(int64(r.limiter.limit()))
		start := time.Now()
		sent = true
		out, err := ri.Patch(ctx, it.name, types.MergePatchType, patch, opts)
		took := time.Since(start)
		done()
		r.latMu.Lock()
		r.latencies = append(r.latencies, took)
		r.latMu.Unlock()
		if err == nil {
			newRV = out.GetResourceVersion()
		}
		return err
	})
	switch {
	case err == nil && r.opts.DryRun == lifecycle.DryRunServer:
		return Accepted, ""
	case err == nil && newRV != it.resourceVersion:
		return Rewritten, ""
	case err == nil:
		return Current, ""
	case apierrors.IsConflict(err):
		return Conflict, ""
	case apierrors.IsNotFound(err):
		return Deleted, ""
	case ctx.Err() != nil && sent && r.opts.DryRun == lifecycle.DryRunNone:
		// Interrupted with a write sent: the API server may have applied it
		// after the client stopped waiting. settle asks.
		r.mu.Lock()
		r.inFlight = append(r.inFlight, it)
		r.mu.Unlock()
		return "", ""
	case ctx.Err() != nil:
		return "", "" // interrupted: neither done nor failed
	default:
		return Failed, apiMessageOf(err)
	}
}

// settleTimeout bounds settle's reads, all of them together: the user
// interrupted the run and waits for it to stop.
const settleTimeout = 5 * time.Second

// settle asks the API server, once the run was interrupted, whether each
// write that was in flight landed: the object's resourceVersion differs
// from the one it was listed at (rewritten, counted), is the same (not
// written, not counted), or the object is gone (deleted). Reads that fail
// or time out are counted in Result.InFlightUnknown with a warning: those
// writes may have landed. Its reads outlive ctx, which has ended, by at
// most settleTimeout.
func (r *run) settle(ctx context.Context) {
	r.mu.Lock()
	items := r.inFlight
	r.inFlight = nil
	r.mu.Unlock()
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var unknown atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, it := range items {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var ri metadata.ResourceInterface = r.engine.Metadata.Resource(r.gvr)
			if r.namespaced {
				ri = r.engine.Metadata.Resource(r.gvr).Namespace(it.namespace)
			}
			m, err := ri.Get(ctx, it.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				r.record(it, Deleted, "")
			case err != nil:
				unknown.Add(1)
			case m.UID != it.uid:
				r.record(it, Deleted, "") // deleted and created again under its name
			case m.ResourceVersion != it.resourceVersion:
				r.record(it, Rewritten, "")
			}
		})
	}
	wg.Wait()
	if n := unknown.Load(); n > 0 {
		r.mu.Lock()
		r.res.InFlightUnknown = n
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%d write(s) were in flight when the run was interrupted and could not be read back within %s: they may have landed, and are not counted", n, settleTimeout))
		r.mu.Unlock()
	}
}

func (r *run) record(it item, o Outcome, msg string) {
	if o == "" {
		return
	}
	r.mu.Lock()
	r.counts.Add(o)
	if it.page != nil {
		it.page.counts.Add(o)
	}
	if o == Failed {
		name := it.name
		if it.namespace != "" {
			name = it.namespace + "/" + name
		}
		r.failures = append(r.failures, Failure{Object: name, Message: msg})
	}
	r.mu.Unlock()
	r.done.Add(1)
	if r.opts.Progress != nil {
		r.progressMu.Lock()
		defer r.progressMu.Unlock()
		p := Progress{Done: r.done.Load(), Total: r.total.Load(), Limit: r.limiter.limit()}
		if r.apf != nil {
			p.PriorityLevel, p.FlowSchema, p.Exempt = cmp.Or(r.apf.PriorityLevel, r.apf.PriorityLevelUID), cmp.Or(r.apf.FlowSchema, r.apf.FlowSchemaUID), r.apf.Exempt
		}
		if fc := r.engine.FlowControl; fc != nil {
			p.TooManyRequests = fc.TooManyRequests()
		}
		r.opts.Progress(p)
	}
}

// fill copies the counts into the result, failures sorted by object.
func (r *run) fill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Counts = r.counts
	r.res.Retries = r.retries.Load()
	if r.opts.DryRun != lifecycle.DryRunClient {
		c := &Concurrency{Mode: "fixed", Max: max(1, r.opts.Concurrency), FinalLimit: r.limiter.limit()}
		if r.opts.MaxLatency > 0 {
			c.Mode, c.MaxLatencySeconds = "adaptive", r.opts.MaxLatency.Seconds()
		}
		r.latMu.Lock()
		lat := r.latencies
		r.latMu.Unlock()
		if len(lat) > 0 {
			c.MeanLimit = float64(r.limitSum.Load()) / float64(len(lat))
			slices.Sort(lat)
			c.WriteLatencyP50Seconds = lat[(len(lat)-1)*50/100].Seconds()
			c.WriteLatencyP99Seconds = lat[(len(lat)-1)*99/100].Seconds()
		}
		r.res.Concurrency = c
	}
	sort.Slice(r.failures, func(i, j int) bool { return r.failures[i].Object < r.failures[j].Object })
	r.res.Failures = append(r.res.Failures, r.failures...)
}
