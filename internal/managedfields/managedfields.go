// Package managedfields finds and rewrites the managedFields entries of
// custom objects that still name a version about to leave a CRD.
//
// Server-side apply records, per field manager, the set of fields it owns
// together with the apiVersion of the request that wrote them; a no-op
// rewrite of the object (storage migration) leaves these entries as they
// are. Once that version is removed from spec.versions, server-side apply
// of such an object makes the API server convert to the entry's version and
// fail with "request to convert CR to an invalid group/version"
// (kubernetes/kubernetes#111937).
//
// Relabel moves the entries to a version that stays, the way the API
// server's own bookkeeping would have them had the managers written through
// that version: an applier has one entry whatever the version (the next
// apply stamps it with the request's version), an updater one per version,
// so a stale updater entry is merged into the same manager's entry at the
// new version. Field sets are kept as they are: when both versions have the
// same field paths (conversion None, or a webhook that renames nothing) the
// result is exact; otherwise a path that only the old version has stays
// owned until that manager next writes.
package managedfields

import (
	"bytes"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Stale reports whether any entry names apiVersion (group/version).
func Stale(entries []metav1.ManagedFieldsEntry, apiVersion string) bool {
	for _, e := range entries {
		if e.APIVersion == apiVersion {
			return true
		}
	}
	return false
}

// Relabel returns a copy of entries in which no entry names from
// (group/version): each names to instead, and an entry that would then
// duplicate another of the same manager, operation and subresource (which
// the API server rejects) is merged into it, the union of both field sets,
// keeping the later time. It returns how many entries were relabeled and
// how many merged, and an error when a field set does not parse.
func Relabel(entries []metav1.ManagedFieldsEntry, from, to string) (out []metav1.ManagedFieldsEntry, relabeled, merged int, err error) {
	type key struct{ manager, operation, subresource string }
	keyOf := func(e metav1.ManagedFieldsEntry) key {
		return key{e.Manager, string(e.Operation), e.Subresource}
	}
	atTo := map[key]bool{}
	for _, e := range entries {
		if e.APIVersion == to {
			atTo[keyOf(e)] = true
		}
	}
	pending := map[key][]metav1.ManagedFieldsEntry{}
	out = make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for _, e := range entries {
		e = *e.DeepCopy()
		if e.APIVersion == from {
			if atTo[keyOf(e)] {
				pending[keyOf(e)] = append(pending[keyOf(e)], e)
				merged++
				continue
			}
			e.APIVersion = to
			relabeled++
		}
		out = append(out, e)
	}
	for i := range out {
		for _, stale := range pending[keyOf(out[i])] {
			if err := union(&out[i], stale); err != nil {
				return nil, 0, 0, fmt.Errorf("managedFields entry of %s (%s): %w", stale.Manager, stale.Operation, err)
			}
		}
		delete(pending, keyOf(out[i]))
	}
	return out, relabeled, merged, nil
}

// union adds stale's field set to into's and keeps the later time.
func union(into *metav1.ManagedFieldsEntry, stale metav1.ManagedFieldsEntry) error {
	a, err := set(into.FieldsV1)
	if err != nil {
		return err
	}
	b, err := set(stale.FieldsV1)
	if err != nil {
		return err
	}
	raw, err := a.Union(b).ToJSON()
	if err != nil {
		return err
	}
	into.FieldsV1 = metav1.NewFieldsV1(string(raw))
	if stale.Time != nil && (into.Time == nil || into.Time.Before(stale.Time)) {
		into.Time = stale.Time.DeepCopy()
	}
	return nil
}

func set(f *metav1.FieldsV1) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	raw := f.GetRawBytes()
	if len(raw) == 0 {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return s, nil
}

// Owners returns the field managers whose managedFields entries own the
// field at path (field names from the object's root, for example "spec",
// "conversion", "webhook", "clientConfig", "caBundle"), in the order of
// entries, each once. An entry whose fields cannot be decoded owns
// nothing.
func Owners(entries []metav1.ManagedFieldsEntry, path ...string) []string {
	p := make(fieldpath.Path, len(path))
	for i, name := range path {
		p[i] = fieldpath.PathElement{FieldName: &name}
	}
	var out []string
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		s, err := set(e.FieldsV1)
		if err != nil || !s.Has(p) || slices.Contains(out, e.Manager) {
			continue
		}
		out = append(out, e.Manager)
	}
	return out
}
