package loss

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// History reads a CRD as it was at an etcd revision (cluster.Client.CRDAt):
// the schemas in force when an object was last written.
type History interface {
	CRDAt(ctx context.Context, name, rv string) (*apiextensionsv1.CustomResourceDefinition, error)
}

// wholeVerdict is what judgeWhole found for the objects holding data
// their managedFields record only as a whole (atomic lists and maps, B10).
type wholeVerdict struct {
	// Hidden are the paths, in such data, that the schema of a version
	// the object may be stored at kept when it was last written and
	// prunes now: fields that may be in etcd, shown by no read, and that
	// the rewrite erases.
	Hidden []cluster.ObjectLoss
	// Unknown are the objects whose last write no evidence places after
	// the CRD's last change, with the paths of such data in them (Paths)
	// and why (Why, by object).
	Unknown []cluster.ObjectLoss
	Why     map[string]string
}

// crdHistory caches the CRD's states read by revision: a state read at
// revision r whose own resourceVersion is c holds for every revision from
// c to r (the CRD was not written between them).
type crdHistory struct {
	h      History
	name   string
	states []crdState
	absent map[string]bool // revisions at which the CRD did not exist
}

type crdState struct {
	since, until string
	crd          *apiextensionsv1.CustomResourceDefinition
}

// at is the CRD as it was at revision rv.
func (c *crdHistory) at(ctx context.Context, rv string) (*apiextensionsv1.CustomResourceDefinition, error) {
	for i, s := range c.states {
		lo, err1 := resourceversion.CompareResourceVersion(s.since, rv)
		hi, err2 := resourceversion.CompareResourceVersion(rv, s.until)
		if err1 == nil && err2 == nil && lo <= 0 && hi <= 0 {
			return c.states[i].crd, nil
		}
	}
	if c.absent[rv] {
		return nil, nil
	}
	crd, err := c.h.CRDAt(ctx, c.name, rv)
	if err != nil {
		return nil, err
	}
	if crd == nil {
		if c.absent == nil {
			c.absent = map[string]bool{}
		}
		c.absent[rv] = true
		return nil, nil
	}
	c.states = append(c.states, crdState{since: crd.ResourceVersion, until: rv, crd: crd})
	return crd, nil
}

// ApplyLag is how long an API server is assumed to take to apply a CRD
// change to the objects it stores: it rebuilds a CRD's storage, with the
// new schemas, once its informer sees the CRD written — usually within a
// second, on each API server instance on its own. An object written less
// than ApplyLag after a CRD change may have been pruned with the schemas
// before it.
const ApplyLag = time.Minute

// maxStates bounds how many states of the CRD one object is judged under
// (the states within ApplyLag before its write, and the one before them).
const maxStates = 20

// judgeWhole judges the objects of writes (each holding, at its Paths,
// data its managedFields record only as a whole, or not at all): such
// data can hide a field pruned on read only where the schema of a version
// it may be stored at (stored) closes an object there now
// (schema.PrunesWithin), and only if a schema in force when the object
// was last written was wider — every write prunes with the schemas the
// API server applies. The evidence, in order: the CRD never changed
// (metadata.generation 1: objects are deleted with their CRD, so none
// predates it); the object was written after the CRD's last write, by
// resourceVersion, and more than ApplyLag after it by their managedFields
// times; else the CRD as it was at the object's revision (h) and, while
// that state began less than ApplyLag before the write (or either time is
// unknown), the states before it: the schemas of the versions each listed
// in status.storedVersions are compared with today's (schema.Prune) within
// the object's paths. A revision etcd compacted, or a read refused, leaves
// the object unknown. Errors the API server did not answer are returned.
func judgeWhole(ctx context.Context, h *crdHistory, crd *apiextensionsv1.CustomResourceDefinition, stored []string, writes []cluster.ObjectWrite) (wholeVerdict, error) {
	out := wholeVerdict{Why: map[string]string{}}
	if crd.Generation <= 1 {
		return out, nil
	}
	// Newest first: one read of the CRD answers for every object written
	// between its last change and that revision.
	writes = slices.Clone(writes)
	sort.SliceStable(writes, func(i, j int) bool {
		c, err := resourceversion.CompareResourceVersion(writes[i].ResourceVersion, writes[j].ResourceVersion)
		return err == nil && c > 0
	})
	unknown := func(w cluster.ObjectWrite, paths []string, why string) {
		out.Unknown = append(out.Unknown, cluster.ObjectLoss{Object: w.Object, Paths: paths})
		out.Why[w.Object] = why
	}
	// Whether a stored version's schema closes an object at or below a
	// path: the same few paths recur in every object.
	closes := map[string]bool{}
	closed := func(p string) bool {
		c, ok := closes[p]
		if !ok {
			c = slices.ContainsFunc(stored, func(v string) bool {
				cur := lifecycle.FindVersion(crd, v)
				return cur != nil && schema.PrunesWithin(schema.Of(cur), p)
			})
			closes[p] = c
		}
		return c
	}
	for _, w := range writes {
		paths := slices.DeleteFunc(slices.Clone(w.Paths), func(p string) bool { return !closed(p) })
		if len(paths) == 0 {
			continue
		}
		newer := false
		if c, err := resourceversion.CompareResourceVersion(w.ResourceVersion, crd.ResourceVersion); err == nil && c > 0 {
			if settled(crd, w.WrittenAt) {
				continue
			}
			newer = true
		}
		var states []*apiextensionsv1.CustomResourceDefinition
		rv, why := w.ResourceVersion, ""
		for len(states) < maxStates {
			var then *apiextensionsv1.CustomResourceDefinition
			if newer && len(states) == 0 {
				then = crd
			} else {
				var err error
				if then, err = h.at(ctx, rv); err != nil {
					if _, answered := err.(apierrors.APIStatus); !answered {
						return out, err
					}
					why = "the CRD as it was at its last write (resourceVersion " + rv + ") cannot be read: " + err.Error()
					if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
						why = "it was last written (resourceVersion " + w.ResourceVersion + ") before the CRD's last change took effect, and etcd no longer keeps the CRD as it was then (compacted)"
					}
					break
				}
			}
			if then == nil {
				why = "the API server lists no such CRD at resourceVersion " + rv
				break
			}
			states = append(states, then)
			if then.Generation <= 1 || settled(then, w.WrittenAt) {
				break
			}
			// The write may have been pruned with the state before.
			n, err := strconv.ParseUint(then.ResourceVersion, 10, 64)
			if err != nil || n == 0 {
				why = "the CRD's state before resourceVersion " + then.ResourceVersion + " cannot be named"
				break
			}
			rv = strconv.FormatUint(n-1, 10)
		}
		if why == "" && len(states) == maxStates {
			why = fmt.Sprintf("it may have been written under any of more than %d states of the CRD (its managedFields give no time of writing)", maxStates)
		}
		if why != "" {
			unknown(w, paths, why)
			continue
		}
		var hidden []string
		for _, then := range states {
			for _, v := range then.Status.StoredVersions {
				old, cur := lifecycle.FindVersion(then, v), lifecycle.FindVersion(crd, v)
				if old == nil || cur == nil {
					continue
				}
				for _, p := range schema.Prune(schema.Of(old), schema.Of(cur)) {
					if p.Reason != schema.ReasonNull && schema.Under(paths, p.Path) && !slices.Contains(hidden, p.Path) {
						hidden = append(hidden, p.Path)
					}
				}
			}
		}
		if len(hidden) > 0 {
			sort.Strings(hidden)
			out.Hidden = append(out.Hidden, cluster.ObjectLoss{Object: w.Object, Paths: hidden})
		}
	}
	sort.Slice(out.Hidden, func(i, j int) bool { return out.Hidden[i].Object < out.Hidden[j].Object })
	sort.Slice(out.Unknown, func(i, j int) bool { return out.Unknown[i].Object < out.Unknown[j].Object })
	return out, nil
}

// settled reports whether an object written at writtenAt was written more
// than ApplyLag after the write that made crd what it is (the latest time
// its managedFields record): the API server had applied that state. False
// when either time is unknown.
func settled(crd *apiextensionsv1.CustomResourceDefinition, writtenAt time.Time) bool {
	changed := cluster.LastWritten(crd)
	return !writtenAt.IsZero() && !changed.IsZero() && writtenAt.After(changed.Add(ApplyLag))
}

// wholeUnknownText says why the objects of v.Unknown cannot be measured.
func wholeUnknownText(v wholeVerdict, limit int) string {
	parts := make([]string, len(v.Unknown))
	for i, l := range v.Unknown {
		parts[i] = fmt.Sprintf("%s (%s): %s", l.Object, lifecycle.Shorten(l.Paths, 5, ", ", ", … %d more"), v.Why[l.Object])
	}
	return lifecycle.Shorten(parts, limit, "; ", "; and %d more")
}
