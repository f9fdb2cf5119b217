package managedfields

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Writer is a field manager that wrote objects through one apiVersion, as
// the objects' managedFields record it: one manager and operation (Apply or
// Update), the number of objects with such an entry and the latest entry
// time. An entry's time changes when the manager's write changed the
// fields it owns; a write that changed nothing leaves it.
type Writer struct {
	Manager   string    `json:"manager"`
	Operation string    `json:"operation"`
	Objects   int       `json:"objects"`
	Last      time.Time `json:"last"`
}

// Writers groups the managedFields entries of many objects by apiVersion,
// manager and operation, in constant memory per group: Add each object's
// entries once.
type Writers struct {
	// Objects counts the objects added.
	Objects int
	groups  map[writerKey]*Writer
}

type writerKey struct{ apiVersion, manager, operation string }

// Add records one object's managedFields entries; an object counts once
// per (apiVersion, manager, operation) however many entries (subresources)
// it has for it.
func (w *Writers) Add(entries []metav1.ManagedFieldsEntry) {
	w.Objects++
	if w.groups == nil {
		w.groups = map[writerKey]*Writer{}
	}
	var seen []writerKey
	for _, e := range entries {
		k := writerKey{e.APIVersion, e.Manager, string(e.Operation)}
		g := w.groups[k]
		if g == nil {
			g = &Writer{Manager: e.Manager, Operation: string(e.Operation)}
			w.groups[k] = g
		}
		if !slices.Contains(seen, k) {
			g.Objects++
			seen = append(seen, k)
		}
		if e.Time != nil && e.Time.After(g.Last) {
			g.Last = e.Time.UTC()
		}
	}
}

// Of returns the writers through apiVersion (group/version), the latest
// first.
func (w *Writers) Of(apiVersion string) []Writer {
	var out []Writer
	for k, g := range w.groups {
		if k.apiVersion == apiVersion {
			out = append(out, *g)
		}
	}
	slices.SortFunc(out, func(a, b Writer) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		if c := strings.Compare(a.Manager, b.Manager); c != 0 {
			return c
		}
		return strings.Compare(a.Operation, b.Operation)
	})
	return out
}
