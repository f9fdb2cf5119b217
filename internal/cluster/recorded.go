package cluster

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// RecordedMissing compares what u's managedFields record with what the
// object holds in at (the same object as a write stores it, or as read):
// it returns the recorded fields at or under one of within (paths in the
// notation of schema.Prune; ".**" for all) that neither at nor u itself
// holds (paths in the
// notation of schema.Prune, ".spec.url", ".spec.items[*].name",
// ".spec.labels.*") that at lacks, sorted, in the same notation with list
// elements as "[*]". recorded is false when u has no managedFields entry
// with fields: then nothing is known of what it was written with.
//
// Every write since Kubernetes 1.18 records in metadata.managedFields the
// fields its manager set, and no schema prunes metadata: a field recorded
// there and absent from every read is data that the API server prunes on
// read — an old version's schema shrunk after the object was written (or a
// field the storage version's schema pruned as it was written).
func RecordedMissing(u *unstructured.Unstructured, at map[string]any, within []string) (missing []string, recorded bool) {
	return RecordedMissingThrough(u, at, within, "")
}

// RecordedMissingThrough is RecordedMissing over the managedFields entries
// written through apiVersion ("group/version"; "" for all): under a
// conversion webhook a version may name the same data otherwise, and only
// the entries of the version at is read at can be compared with it.
func RecordedMissingThrough(u *unstructured.Unstructured, at map[string]any, within []string, apiVersion string) (missing []string, recorded bool) {
	return recordedMissing(parseRecorded(u), u, at, within, apiVersion)
}

// recordedEntry is one managedFields entry with fields, parsed: the
// apiVersion it was written through and the leaves of its fieldsV1 set.
type recordedEntry struct {
	apiVersion string
	leaves     []fieldpath.Path
}

// parseRecorded parses each of u's managedFields entries once, for the
// judgements of one object (RecordedMissingThrough, WholeRecorded,
// Unaccounted); an entry without fields, or whose fieldsV1 does not parse,
// is left out.
func parseRecorded(u *unstructured.Unstructured) []recordedEntry {
	var out []recordedEntry
	for _, e := range u.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if raw := e.FieldsV1.GetRawBytes(); len(raw) == 0 || set.FromJSON(bytes.NewReader(raw)) != nil {
			continue
		}
		entry := recordedEntry{apiVersion: e.APIVersion}
		set.Leaves().Iterate(func(p fieldpath.Path) { entry.leaves = append(entry.leaves, p.Copy()) })
		out = append(out, entry)
	}
	return out
}

func recordedMissing(entries []recordedEntry, u *unstructured.Unstructured, at map[string]any, within []string, apiVersion string) (missing []string, recorded bool) {
	found := map[string]bool{}
	for _, e := range entries {
		if apiVersion != "" && e.apiVersion != apiVersion {
			continue
		}
		recorded = true
		for _, p := range e.leaves {
			under, shown := "", ""
			for i := range p {
				shown = appendStep(shown, p[i])
				if under == "" && coveredBy(shown, within) {
					under = shown
				}
			}
			// A field the read shows is compared as a whole already
			// (CompareObjects): hidden is what neither shows.
			if under != "" && !holds(at, p) && !holds(u.Object, p) {
				found[shown] = true
			}
		}
	}
	for p := range found {
		missing = append(missing, p)
	}
	sort.Strings(missing)
	return missing, recorded
}

// appendStep extends path (schema.Prune's notation) by one element of a
// managedFields path: a field name, or a list element as "[*]".
func appendStep(path string, pe fieldpath.PathElement) string {
	if pe.FieldName != nil {
		return schema.ChildPath(path, *pe.FieldName)
	}
	return path + "[*]"
}

func coveredBy(path string, patterns []string) bool {
	for _, p := range patterns {
		if schema.Covers(p, path) {
			return true
		}
	}
	return false
}

// WholeRecorded returns the paths (schema.Prune's notation, list elements
// as "[*]") at which u's managedFields entries written through apiVersion
// ("group/version"; "" for all) record a field as a whole — an atomic list
// or map (x-kubernetes-list-type or x-kubernetes-map-type atomic, and a
// list of objects without a list type) — where u, as read, holds a map
// (empty too: a read may have pruned every field of it) or a list with a
// map or list in it: data whose fields no
// entry names, so RecordedMissing cannot tell a field pruned on read
// there from one never written (B10). Metadata, apiVersion and kind are
// left out (no schema prunes them). Sorted, each once.
func WholeRecorded(u *unstructured.Unstructured, apiVersion string) []string {
	return wholeRecorded(parseRecorded(u), u, apiVersion)
}

func wholeRecorded(entries []recordedEntry, u *unstructured.Unstructured, apiVersion string) []string {
	found := map[string]bool{}
	for _, e := range entries {
		if apiVersion != "" && e.apiVersion != apiVersion {
			continue
		}
		for _, p := range e.leaves {
			if len(p) == 0 || p[0].FieldName != nil && (*p[0].FieldName == "metadata" || *p[0].FieldName == "apiVersion" || *p[0].FieldName == "kind") {
				continue
			}
			v, ok := fieldValue(u.Object, p)
			if !ok || !composite(v) {
				continue
			}
			shown := ""
			for i := range p {
				shown = appendStep(shown, p[i])
			}
			found[shown] = true
		}
	}
	out := make([]string, 0, len(found))
	for p := range found {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// composite reports whether v can hold fields a schema prunes: a map
// (an empty one too: pruning on read may have emptied it), or a list with
// a map or a list in it (pruning drops fields, not list elements).
func composite(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return true
	case []any:
		for _, e := range t {
			switch e.(type) {
			case map[string]any, []any:
				return true
			}
		}
	}
	return false
}

// holds reports whether obj has a value at p: field names are map keys,
// keyed list elements are found by their key fields, set elements by
// value, and indexes by position.
func holds(obj any, p fieldpath.Path) bool {
	_, ok := fieldValue(obj, p)
	return ok
}

// fieldValue is the value of obj at p (see holds).
func fieldValue(obj any, p fieldpath.Path) (any, bool) {
	v, _, ok := locate(obj, p)
	return v, ok
}

// locate is the value of obj at p and its concrete path (field names as
// schema.ChildPath writes them, list elements by their index: ".spec.ports[0]").
func locate(obj any, p fieldpath.Path) (any, string, bool) {
	cur, path := obj, ""
	for _, pe := range p {
		if pe.FieldName != nil {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, "", false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, "", false
			}
			path = schema.ChildPath(path, *pe.FieldName)
			continue
		}
		l, ok := cur.([]any)
		if !ok {
			return nil, "", false
		}
		at := -1
		switch {
		case pe.Key != nil:
			at = slices.IndexFunc(l, func(e any) bool {
				m, ok := e.(map[string]any)
				return ok && keyMatches(m, *pe.Key)
			})
		case pe.Value != nil:
			want := (*pe.Value).Unstructured()
			at = slices.IndexFunc(l, func(e any) bool { return sameValue(e, want) })
		case pe.Index != nil && *pe.Index < len(l):
			at = *pe.Index
		}
		if at < 0 {
			return nil, "", false
		}
		cur, path = l[at], path+"["+strconv.Itoa(at)+"]"
	}
	return cur, path, true
}

// Unaccounted returns the top-level fields of u (".spec", ".status"; not
// metadata, apiVersion or kind) under which u, as read, holds a value
// that no managedFields entry records, neither the field itself nor one
// above it — leaving out values at defaulted (paths in schema.Prune's
// notation that a schema defaults: the API server may have set them on
// read). Every write since Kubernetes 1.18 records the fields it set, so
// managedFields that do not account for the data were rewritten by a
// client, or began after the object was written: they cannot show a
// field a narrowed schema hides either (B10). Without any entry, every
// top-level field holding data is unaccounted.
func Unaccounted(u *unstructured.Unstructured, defaulted []string) []string {
	return unaccounted(parseRecorded(u), u, defaulted)
}

func unaccounted(entries []recordedEntry, u *unstructured.Unstructured, defaulted []string) []string {
	var covered []string
	for _, e := range entries {
		for _, p := range e.leaves {
			if _, at, ok := locate(u.Object, p); ok {
				covered = append(covered, at)
			}
		}
	}
	var out []string
	for _, k := range sortedKeys(u.Object) {
		if k == "metadata" || k == "apiVersion" || k == "kind" {
			continue
		}
		if top := schema.ChildPath("", k); !accounted(u.Object[k], top, covered, defaulted) {
			out = append(out, top)
		}
	}
	return out
}

// accounted reports whether every value at or below path (v) lies at or
// under a path of covered, or under a defaulted one.
func accounted(v any, path string, covered, defaulted []string) bool {
	if schema.Under(covered, path) || schema.Under(defaulted, path) {
		return true
	}
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			return false
		}
		for k, e := range t {
			if !accounted(e, schema.ChildPath(path, k), covered, defaulted) {
				return false
			}
		}
		return true
	case []any:
		if len(t) == 0 {
			return false
		}
		for i, e := range t {
			if !accounted(e, path+"["+strconv.Itoa(i)+"]", covered, defaulted) {
				return false
			}
		}
		return true
	}
	return false
}

func keyMatches(m map[string]any, key value.FieldList) bool {
	for _, f := range key {
		if !sameValue(m[f.Name], f.Value.Unstructured()) {
			return false
		}
	}
	return true
}

// sameValue compares JSON values whose numbers may be int64 or float64.
func sameValue(a, b any) bool {
	ia, aInt := integer(a)
	ib, bInt := integer(b)
	fa, aFloat := a.(float64)
	fb, bFloat := b.(float64)
	switch {
	case aInt && bInt:
		return ia == ib
	case aFloat && bFloat:
		return fa == fb
	case aInt && bFloat:
		return sameIntFloat(ia, fb)
	case aFloat && bInt:
		return sameIntFloat(ib, fa)
	}
	return reflect.DeepEqual(a, b)
}

// integer is v as an int64 when it is one of the integer types JSON
// decoding gives (int64) or Go code writes (int).
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// sameIntFloat reports whether f is exactly the integer i: compared as
// float64, integers above 2^53 that differ would look the same (a value a
// webhook changed from 9007199254740993 to 9007199254740992).
func sameIntFloat(i int64, f float64) bool {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return false
	}
	return int64(f) == i
}
