package cluster

import (
	"reflect"
	"testing"
)

func TestLostPaths(t *testing.T) {
	old := map[string]any{
		"apiVersion": "x/v1", "metadata": map[string]any{"name": "w1"},
		"spec": map[string]any{
			"replicas": int64(1), "image": "nginx", "extra": map[string]any{"deep": []any{int64(1), int64(2)}},
			"labels": map[string]any{"team": "a", "env": "prod", "a.b/c": "x"},
			"ports":  []any{map[string]any{"name": "a", "x": "1"}, map[string]any{"name": "b"}},
			"gone":   nil,
			"kind":   map[string]any{"a": "b"},
		},
	}
	new := map[string]any{
		"apiVersion": "x/v2",
		"spec": map[string]any{
			"replicas": int64(2), "labels": map[string]any{"team": "a"},
			"ports": []any{map[string]any{"name": "a"}},
			"kind":  "scalar",
		},
	}
	want := []string{".spec.extra", ".spec.image", ".spec.kind", `.spec.labels["a.b/c"]`, ".spec.labels.env", ".spec.ports[0].x", ".spec.ports[1]"}
	if got := LostPaths(old, new); !reflect.DeepEqual(got, want) {
		t.Errorf("LostPaths = %q, want %q", got, want)
	}
	if got := LostPaths(old, old); len(got) != 0 {
		t.Errorf("LostPaths of an object and itself = %q", got)
	}
}
