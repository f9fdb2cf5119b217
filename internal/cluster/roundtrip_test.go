package cluster

import (
	"slices"
	"testing"
)

// TestKeepUndefaulted: a path the round trip drops is kept when the schema
// of the version read at defaults it to the value read (the read defaults
// it again); any other value, or no default, is lost.
func TestKeepUndefaulted(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"mode":  "fast",
		"size":  int64(3),
		"ports": []any{map[string]any{"proto": "TCP"}, map[string]any{"proto": "UDP"}},
		"extra": "x",
	}}
	defaults := map[string]string{".spec.mode": `"fast"`, ".spec.size": `1`, ".spec.ports[*].proto": `"TCP"`}
	got := keepUndefaulted([]string{".spec.mode", ".spec.size", ".spec.ports[0].proto", ".spec.ports[1].proto", ".spec.extra", ".spec.missing"}, obj, defaults)
	want := []string{".spec.size", ".spec.ports[1].proto", ".spec.extra", ".spec.missing"}
	if !slices.Equal(got, want) {
		t.Errorf("keepUndefaulted = %q, want %q", got, want)
	}
	for path, want := range map[string]any{".spec.ports[1].proto": "UDP", ".spec.size": int64(3)} {
		if v, ok := valueAt(obj, path); !ok || v != want {
			t.Errorf("valueAt(%s) = %v, %v; want %v", path, v, ok, want)
		}
	}
	for _, path := range []string{".spec.ports[2]", ".spec.size.x", `.metadata.annotations["a/b"]`, ".spec.ports[x]"} {
		if v, ok := valueAt(obj, path); ok {
			t.Errorf("valueAt(%s) = %v, want none", path, v)
		}
	}
}
