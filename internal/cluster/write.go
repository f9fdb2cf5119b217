package cluster

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/crdversion/kubectl-crdversion/internal/guard"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
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
	// DryRun lifecycle.DryRunServer asks the API server to validate and
	// admit the write without persisting it (--dry-run=server); a client
	// dry run sends no write, so UpdateCRD refuses it.
	DryRun lifecycle.DryRun
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
	if guard.Guarded(crd) {
		// The guard's policy lets this tool's preflighted step through:
		// the stamp records the generation judged and the state written.
		crd = crd.DeepCopy()
		guard.Stamp(crd)
	}
	var out *apiextensionsv1.CustomResourceDefinition
	var err error
	switch opts.DryRun {
	case lifecycle.DryRunClient:
		return nil, fmt.Errorf("refusing to send %s in a client dry run, which sends no write", crd.Name)
	case lifecycle.DryRunServer:
		out, err = c.dryRunUpdate(ctx, crd, func(obj *apiextensionsv1.CustomResourceDefinition) {
			// The edit on top of the fresh read: its spec (the fresh read's
			// spec is the one crd was edited from: same generation) and the
			// labels and annotations it carries (an edit may set one, e.g.
			// the retired-versions annotation).
			obj.Spec = *crd.Spec.DeepCopy()
			obj.Labels = mergeStrings(obj.Labels, crd.Labels)
			obj.Annotations = mergeStrings(obj.Annotations, crd.Annotations)
		}, opts.FieldManager)
	default:
		out, err = c.CRDs.Update(ctx, crd, metav1.UpdateOptions{DryRun: opts.DryRun.Request(), FieldManager: opts.FieldManager})
	}
	if apierrors.IsConflict(err) {
		return nil, &ConflictError{Name: crd.Name, ResourceVersion: crd.ResourceVersion, Err: err}
	}
	return out, err
}

// AddStoredVersions adds versions to status.storedVersions of the CRD
// named name, through the status subresource (the only write the API
// server takes storedVersions from), keeping every entry it has: on a fresh
// read each time, retried on conflicts (the API server's own controllers
// write a CRD's status conditions right after it changes). Adding entries
// never loses data: the API server only refuses, until a migration trims
// them, to remove those versions from spec.versions. Each version must be
// in spec.versions.
func (c *Client) AddStoredVersions(ctx context.Context, name string, versions []string, fieldManager string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var out *apiextensionsv1.CustomResourceDefinition
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := c.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		missing := false
		for _, v := range versions {
			if !slices.Contains(crd.Status.StoredVersions, v) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v)
				missing = true
			}
		}
		if !missing {
			out = crd
			return nil
		}
		out, err = c.CRDs.UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
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
		out, err = c.CRDs.Update(ctx, obj, metav1.UpdateOptions{DryRun: lifecycle.DryRunServer.Request(), FieldManager: fieldManager})
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

// WhenServedBy calls list until the API server's answer no longer shows
// that it serves an older state of crd than the one read (see
// NotServedYet), for about 30 s (NotYetServed). Right after an edit that
// restores a version, the handler of the CRD's objects is rebuilt only
// once the API server's CRD informer has the edit; until then it cannot
// decode objects stored at the restored version ("request to convert CR
// from an invalid group/version"). Any other answer, or the last stale
// one, is returned.
func WhenServedBy(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, list func() error) error {
	return retry.OnError(NotYetServed, func(err error) bool {
		return ctx.Err() == nil && NotServedYet(crd, err)
	}, list)
}

// staleGroupVersion matches the group/version a list or read names when
// the API server cannot decode a stored object.
var staleGroupVersion = regexp.MustCompile(`invalid group/version: ([^/\s]+)/([a-z0-9-]+)`)

// NotServedYet reports whether err, the answer to a request for crd's
// objects, contradicts crd as it was read: 404 Not Found while crd is
// established (a served version not served yet), or an object stored at a
// version that crd has in spec.versions said to be an invalid
// group/version. Either means the API server instance that answered has
// not caught up with the CRD yet.
func NotServedYet(crd *apiextensionsv1.CustomResourceDefinition, err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsNotFound(err) {
		return established(crd)
	}
	return StaleVersion(crd, err)
}

// StaleVersion reports whether err says that an object of crd is stored at
// an invalid group/version although crd, as read, has that version in
// spec.versions: the API server has not caught up with the CRD yet.
func StaleVersion(crd *apiextensionsv1.CustomResourceDefinition, err error) bool {
	if err == nil {
		return false
	}
	for _, m := range staleGroupVersion.FindAllStringSubmatch(err.Error(), -1) {
		if m[1] != crd.Spec.Group {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == m[2] {
				return true
			}
		}
	}
	return false
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	// A CRD built in a test or read without status: assume it is.
	return true
}
