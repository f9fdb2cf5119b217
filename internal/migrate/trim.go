package migrate

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// Trim writes status.storedVersions = [storage] when, and only when, res
// says the pass was complete and clean and, re-read now, the CRD's storage
// version is storage, its metadata.generation is generation (no spec change
// since the run started) and storedVersions gained no version: it writes
// the status subresource (writes of status through the main resource are
// ignored) pinned to the resourceVersion just read, re-checks after a 409,
// and reads the answer back. opts.NoTrim and a client dry run skip it; a
// server dry run (opts.DryRun server) sends the same write as a server-side dry
// run once its pass was complete and clean, so that validation and
// admission of the status write answer before anything relies on it (a
// refusal sets Failed). Nothing is written when storedVersions already is
// [storage]. The Trim says what happened and, when nothing was trimmed,
// why.
func (e *Engine) Trim(ctx context.Context, name, storage string, generation int64, res *Result, opts Options) Trim {
	t := Trim{Before: res.Trim.Before, After: res.Trim.Before}
	switch {
	case opts.NoTrim:
		t.Reason = "--no-trim was given"
		return t
	case res.DryRun && opts.DryRun != lifecycle.DryRunServer:
		t.Reason = "dry run"
		return t
	case !res.Complete && res.Failed > 0:
		t.Reason = fmt.Sprintf("the list stopped at %d object(s) the API server cannot read", res.Failed)
		return t
	case !res.Complete:
		t.Reason = "the run was interrupted before every object was listed"
		return t
	case res.Failed > 0:
		t.Reason = fmt.Sprintf("%d object(s) failed and may still be stored at an old version", res.Failed)
		return t
	}
	for attempt := 0; attempt < 5; attempt++ {
		crd, err := e.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Reason, t.Failed = "re-reading the CRD failed: "+err.Error(), true
			return t
		}
		t.After = crd.Status.StoredVersions
		now := lifecycle.StorageVersion(crd)
		if now != storage {
			t.Reason, t.Failed = fmt.Sprintf("the storage version changed from %s to %s during the run; objects written since may be stored at either: run migrate again", storage, now), true
			return t
		}
		if crd.Generation != generation {
			// Any spec change may have been a storage flip and back, during
			// which objects were written (or found current) at another
			// version; only a run without spec changes proves the pass.
			t.Reason, t.Failed = fmt.Sprintf("the CRD's spec changed during the run (generation %d -> %d), possibly the storage version and back: run migrate again", generation, crd.Generation), true
			return t
		}
		for _, v := range crd.Status.StoredVersions {
			if v != storage && !slices.Contains(res.Trim.Before, v) {
				t.Reason, t.Failed = fmt.Sprintf("%s was added to storedVersions during the run (the storage version changed and changed back): run migrate again", v), true
				return t
			}
		}
		if len(crd.Status.StoredVersions) == 1 && crd.Status.StoredVersions[0] == storage {
			t.Reason = "storedVersions is already [" + storage + "]"
			return t
		}
		crd.Status.StoredVersions = []string{storage}
		update := metav1.UpdateOptions{DryRun: opts.DryRun.Request(), FieldManager: opts.FieldManager}
		updated, err := e.CRDs.UpdateStatus(ctx, crd, update)
		if apierrors.IsConflict(err) {
			continue // someone changed the CRD: re-check the storage version
		}
		if err != nil {
			t.Reason, t.Failed = "writing status.storedVersions failed: "+err.Error(), true
			return t
		}
		if opts.DryRun == lifecycle.DryRunServer {
			t.Reason = fmt.Sprintf("dry run: the API server accepts storedVersions [%s] (server-side dry run of the status write)", storage)
			return t
		}
		if len(updated.Status.StoredVersions) != 1 || updated.Status.StoredVersions[0] != storage {
			t.After = updated.Status.StoredVersions
			t.Reason, t.Failed = fmt.Sprintf("the API server kept storedVersions %v", updated.Status.StoredVersions), true
			return t
		}
		t.Trimmed, t.After, t.By = true, updated.Status.StoredVersions, TrimmedByUs
		return t
	}
	t.Reason, t.Failed = "the CRD kept changing while storedVersions was written; run migrate again", true
	return t
}
