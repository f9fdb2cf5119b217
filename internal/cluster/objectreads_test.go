package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestListStreamFind: the read at To of an object is found only at the same
// key, uid and resourceVersion; objects the second list holds before the
// key are skipped, and the calls consume the stream in key order (etcd's:
// byte by byte over "namespace/name", so "a-b/x" comes before "a/x").
func TestListStreamFind(t *testing.T) {
	obj := func(ns, name, uid, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetUID(types.UID(uid))
		u.SetResourceVersion(rv)
		return u
	}
	second := []*unstructured.Unstructured{
		obj("a-b", "x", "u0", "1"), // created after the first list passed it
		obj("a", "m", "u1", "5"),
		obj("a", "n", "u2", "9"), // written between the lists
		obj("a", "p", "u9", "7"), // deleted and created again under the name
		obj("b", "z", "u4", "3"),
	}
	ch := make(chan *unstructured.Unstructured, len(second))
	for _, u := range second {
		ch <- u
	}
	close(ch)
	s := &listStream{items: ch}
	for _, tt := range []struct {
		first *unstructured.Unstructured
		found bool
	}{
		{obj("a", "m", "u1", "5"), true},
		{obj("a", "n", "u2", "8"), false},
		{obj("a", "o", "u3", "4"), false}, // deleted between the lists
		{obj("a", "p", "u5", "7"), false},
		{obj("b", "z", "u4", "3"), true},
		{obj("c", "a", "u6", "2"), false}, // past the end
	} {
		got := s.find(tt.first)
		if (got != nil) != tt.found {
			t.Errorf("find(%s): %v, want found %v", objectKey(tt.first), got, tt.found)
		}
		if got != nil && (got.GetUID() != tt.first.GetUID() || got.GetResourceVersion() != tt.first.GetResourceVersion()) {
			t.Errorf("find(%s) returned %s at %s", objectKey(tt.first), got.GetUID(), got.GetResourceVersion())
		}
	}
}
