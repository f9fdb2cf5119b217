package loss

import (
	"context"
	"fmt"
	"slices"
	"sort"

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
	crd, err := c.h.CRDAt(ctx, c.name, rv)
	if err != nil || crd == nil {
		return crd, err
	}
	c.states = append(c.states, crdState{since: crd.ResourceVersion, until: rv, crd: crd})
	return crd, nil
}

// judgeWhole judges the objects of writes (each holding, at its Paths,
// data its managedFields record only as a whole): such data can hide a
// field pruned on read only where the schema of a version it may be
// stored at (stored) closes an object there now (schema.PrunesWithin), and
// only if that schema was wider when the object was last written — every
// write prunes with the schemas in force, so an object written after the
// CRD last changed hides nothing. The evidence, in order: the CRD never
// changed (metadata.generation 1: objects are deleted with their CRD, so
// none predates it); the object's resourceVersion is newer than the CRD's;
// else the CRD as it was at the object's revision (h), whose schemas of
// the versions it then listed in status.storedVersions are compared with
// today's (schema.Prune) within the object's whole-recorded paths. A
// revision etcd compacted, or a read refused, leaves the object unknown.
// Errors the API server did not answer are returned.
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
	for _, w := range writes {
		paths := slices.DeleteFunc(slices.Clone(w.Paths), func(p string) bool {
			return !slices.ContainsFunc(stored, func(v string) bool {
				cur := lifecycle.FindVersion(crd, v)
				return cur != nil && schema.PrunesWithin(schema.Of(cur), p)
			})
		})
		if len(paths) == 0 {
			continue
		}
		if c, err := resourceversion.CompareResourceVersion(w.ResourceVersion, crd.ResourceVersion); err == nil && c > 0 {
			continue
		}
		then, err := h.at(ctx, w.ResourceVersion)
		if err != nil {
			if _, answered := err.(apierrors.APIStatus); !answered {
				return out, err
			}
			why := "the CRD as it was at its last write (resourceVersion " + w.ResourceVersion + ") cannot be read: " + err.Error()
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				why = "it was last written (resourceVersion " + w.ResourceVersion + ") before the CRD's last change, and etcd no longer keeps the CRD as it was then (compacted)"
			}
			out.Unknown = append(out.Unknown, cluster.ObjectLoss{Object: w.Object, Paths: paths})
			out.Why[w.Object] = why
			continue
		}
		if then == nil {
			out.Unknown = append(out.Unknown, cluster.ObjectLoss{Object: w.Object, Paths: paths})
			out.Why[w.Object] = "the API server lists no such CRD at its last write (resourceVersion " + w.ResourceVersion + ")"
			continue
		}
		var hidden []string
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
		if len(hidden) > 0 {
			sort.Strings(hidden)
			out.Hidden = append(out.Hidden, cluster.ObjectLoss{Object: w.Object, Paths: hidden})
		}
	}
	sort.Slice(out.Hidden, func(i, j int) bool { return out.Hidden[i].Object < out.Hidden[j].Object })
	sort.Slice(out.Unknown, func(i, j int) bool { return out.Unknown[i].Object < out.Unknown[j].Object })
	return out, nil
}

// wholeUnknownText says why the objects of v.Unknown cannot be measured.
func wholeUnknownText(v wholeVerdict, limit int) string {
	parts := make([]string, len(v.Unknown))
	for i, l := range v.Unknown {
		parts[i] = fmt.Sprintf("%s (%s): %s", l.Object, lifecycle.Shorten(l.Paths, 5, ", ", ", … %d more"), v.Why[l.Object])
	}
	return lifecycle.Shorten(parts, limit, "; ", "; and %d more")
}
