package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// ConflictError says the CRD changed between the read that the preflight
// checked and the write: nothing was written.
type ConflictError struct {
	Name            string
	ResourceVersion string
	Err             error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s changed since it was read at resourceVersion %s (someone else wrote it); nothing was written, re-run the command to check the preflight again", e.Name, e.ResourceVersion)
}

func (e *ConflictError) Unwrap() error { return e.Err }

// WriteOptions are the options of every write.
type WriteOptions struct {
	// DryRun asks the API server to validate and admit the write without
	// persisting it (--dry-run=server).
	DryRun bool
	// FieldManager names the writer in managedFields.
	FieldManager string
}

// UpdateCRD writes crd, which must carry the resourceVersion of the read
// its preflight checked: a concurrent change fails with *ConflictError
// instead of being overwritten. A server dry run (opts.DryRun) persists
// nothing, so a stale read is retried as DryRunUpdateCRD retries it: with
// crd's spec on a fresh read whose generation and storedVersions are those
// crd was read with.
func (c *Client) UpdateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts WriteOptions) (*apiextensionsv1.CustomResourceDefinition, error) {
	if crd.ResourceVersion == "" {
		return nil, fmt.Errorf("refusing to write %s without the resourceVersion it was read at", crd.Name)
	}
	var out *apiextensionsv1.CustomResourceDefinition
	var err error
	if opts.DryRun {
		out, err = c.dryRunUpdate(ctx, crd, func(obj *apiextensionsv1.CustomResourceDefinition) {
			// The edit on top of the fresh read: its spec (the fresh read's
			// spec is the one crd was edited from: same generation) and the
			// labels and annotations it carries (an edit may set one, e.g.
			// the retired-versions annotation).
			obj.Spec = *crd.Spec.DeepCopy()
			obj.Labels = mergeStrings(obj.Labels, crd.Labels)
			obj.Annotations = mergeStrings(obj.Annotations, crd.Annotations)
		}, opts.FieldManager)
	} else {
		out, err = c.CRDs.Update(ctx, crd, metav1.UpdateOptions{FieldManager: opts.FieldManager})
	}
	if apierrors.IsConflict(err) {
		return nil, &ConflictError{Name: crd.Name, ResourceVersion: crd.ResourceVersion, Err: err}
	}
	return out, err
}

// mergeStrings returns into with every key of from set to from's value.
func mergeStrings(into, from map[string]string) map[string]string {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]string, len(from))
	}
	maps.Copy(into, from)
	return into
}

// DryRunUpdateCRD asks the API server to admit and validate edit applied
// to live without persisting it (dryRun=All), as fieldManager. A dry run
// persists nothing, so when live is stale (a 409 Conflict: the API server's
// own controllers update a CRD's status conditions right after it changes,
// other clients its metadata) it is retried on a fresh read, as long as the
// fresh CRD has the spec (generation) and status.storedVersions of live —
// what the caller judged. Otherwise, or after client-go's default retries,
// the Conflict is returned.
func (c *Client) DryRunUpdateCRD(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, edit func(*apiextensionsv1.CustomResourceDefinition), fieldManager string) error {
	_, err := c.dryRunUpdate(ctx, live, edit, fieldManager)
	return err
}

// dryRunUpdate is DryRunUpdateCRD, returning what the API server answered.
func (c *Client) dryRunUpdate(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, edit func(*apiextensionsv1.CustomResourceDefinition), fieldManager string) (*apiextensionsv1.CustomResourceDefinition, error) {
	judged := live
	var out *apiextensionsv1.CustomResourceDefinition
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := live.DeepCopy()
		edit(obj)
		var err error
		out, err = c.CRDs.Update(ctx, obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
		if !apierrors.IsConflict(err) {
			return err
		}
		fresh, getErr := c.CRDs.Get(ctx, live.Name, metav1.GetOptions{})
		switch {
		case getErr != nil:
			return getErr
		case fresh.Generation != judged.Generation || !slices.Equal(fresh.Status.StoredVersions, judged.Status.StoredVersions):
			return err // changed in what was judged: not retried
		}
		live = fresh
		return err
	})
	return out, err
}

// NotYetServed paces WhenServed: about 30 s in all.
var NotYetServed = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Steps: 14, Cap: 5 * time.Second}

// WhenServed calls list until it is not answered 404 Not Found, for about
// 30 s (NotYetServed). Right after a CRD changes, an API server serves a new
// version only once its own CRD informer has the change — discovery may
// list the version first, and each instance of an HA control plane catches
// up on its own — so a list of a version the CRD serves can be answered 404
// for a moment. Any other answer, or the last 404, is returned.
func WhenServed(ctx context.Context, list func() error) error {
	return retry.OnError(NotYetServed, func(err error) bool {
		return apierrors.IsNotFound(err) && ctx.Err() == nil
	}, list)
}
