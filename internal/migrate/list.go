package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
)

// pass lists every object (metadata only, page by page) and writes each
// one with bounded concurrency. Listing runs ahead of the writes by at most
// one page.
func (r *run) pass(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan item, r.opts.ChunkSize)
	var wg sync.WaitGroup
	for i := 0; i < max(1, r.opts.Concurrency); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				o, msg := r.migrate(ctx, it)
				r.record(it, o, msg)
				if it.page.pending.Add(-1) == 0 && it.page.finished.Load() {
					it.page.close()
				}
			}
		}()
	}

	pages := make(chan *page, 2)
	var cpErr error
	cpDone := make(chan struct{})
	go func() { // checkpoint pages in order as they complete
		defer close(cpDone)
		for p := range pages {
			select {
			case <-p.done:
			case <-ctx.Done():
				continue // interrupted: pages not fully handled are not recorded
			}
			if ctx.Err() == nil && r.opts.Checkpoint != "" && !r.res.DryRun {
				if err := r.saveCheckpoint(p); err != nil && cpErr == nil {
					cpErr = err
				}
			}
		}
	}()

	listErr := r.list(ctx, items, pages)
	close(items)
	wg.Wait()
	close(pages)
	<-cpDone
	if listErr != nil {
		if ctx.Err() != nil && errors.Is(listErr, context.Canceled) {
			return nil // interrupted: not complete, the checkpoint stays
		}
		if unreadable, truncated := unreadableObjects(listErr, r.gvr); len(unreadable) > 0 {
			// The API server cannot read some stored objects (typically a
			// conversion webhook failing for them), so the list stops there:
			// report them by name; the run is not complete.
			r.mu.Lock()
			for _, name := range unreadable {
				r.counts.Total++
				r.counts.Failed++
				r.failures = append(r.failures, Failure{Object: name, Message: "cannot be read from storage: " + apiMessageOf(listErr)})
			}
			if truncated {
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("the API server stopped naming the objects it cannot read after %d; more may be unreadable, and the list stopped there", len(unreadable)))
			}
			r.mu.Unlock()
			return nil
		}
		return listErr
	}
	if cpErr != nil {
		return fmt.Errorf("writing the checkpoint: %w", cpErr)
	}
	r.res.Complete = ctx.Err() == nil
	return nil
}

// list pages through the objects, starting at the checkpoint's continue
// token. When a continue token expires (410 Gone), listing restarts from the
// beginning and skips the objects already handed out, so none is skipped.
func (r *run) list(ctx context.Context, items chan<- item, pages chan<- *page) error {
	res := r.engine.Metadata.Resource(r.gvr)
	token := r.continueToken
	for {
		var list *metav1.PartialObjectMetadataList
		// Right after an edit of the CRD (a repair that restores a
		// version) the API server may still serve its earlier state and
		// fail to read objects stored at the restored version: wait,
		// bounded, until it serves the CRD that was read.
		err := retry.OnError(cluster.NotYetServed, func(err error) bool {
			return ctx.Err() == nil && cluster.StaleVersion(r.crd, err)
		}, func() error {
			return retry.OnError(listBackoff, listRetriable, func() error {
				var err error
				list, err = res.List(ctx, metav1.ListOptions{Limit: r.opts.ChunkSize, Continue: token})
				return err
			})
		})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			if token == r.continueToken && r.res.Resumed && !r.res.Restarted {
				r.restart()
			}
			token = ""
			continue
		}
		if err != nil {
			return err
		}
		p := &page{next: list.Continue, done: make(chan struct{})}
		var batch []item
		r.mu.Lock()
		for i := range list.Items {
			m := &list.Items[i]
			if _, dup := r.seen[m.UID]; dup {
				continue
			}
			r.seen[m.UID] = struct{}{}
			batch = append(batch, item{namespace: m.Namespace, name: m.Name, uid: m.UID, resourceVersion: m.ResourceVersion, page: p})
		}
		// The total is known from the first page on: what was listed plus
		// what the API server says remains.
		switch {
		case list.RemainingItemCount != nil:
			r.total.Store(r.base + int64(len(r.seen)) + *list.RemainingItemCount)
		case list.Continue == "":
			r.total.Store(r.base + int64(len(r.seen)))
		}
		r.mu.Unlock()
		p.pending.Store(int64(len(batch)))
		select {
		case pages <- p:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, it := range batch {
			select {
			case items <- it:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p.finished.Store(true)
		if p.pending.Load() == 0 {
			p.close()
		}
		if list.Continue == "" {
			return nil
		}
		token = list.Continue
	}
}

// restart drops what the checkpoint counted: its continue token expired,
// so the list starts again from the first object and every object the
// interrupted run handled is listed, and counted, once more.
func (r *run) restart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Restarted = true
	r.counts, r.saved = Counts{}, Counts{}
	r.done.Add(-r.base)
	r.base = 0
	r.res.Warnings = append(r.res.Warnings, "the checkpoint's continue token has expired (etcd was compacted since): the list restarted from the first object, so objects the interrupted run handled were handled again (found current) and are counted once, by this run")
}
