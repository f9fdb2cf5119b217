package schema

import "testing"

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		accepted []string
		path     string
		want     bool
	}{
		{[]string{".spec.hostPort"}, ".spec.hostPort", true},
		{[]string{".spec"}, ".spec.hostPort", true},
		{[]string{".spec.host"}, ".spec.hostPort", false},
		{[]string{".spec.ports"}, ".spec.ports[2].x", true},
		{[]string{".spec.ports[2]"}, ".spec.ports[2].x", true},
		{[]string{".spec.ports[2]"}, ".spec.ports[3].x", false},
		{[]string{".spec.ports[*].x"}, ".spec.ports[3].x", true},
		{[]string{".spec.ports[*].x"}, ".spec.ports[*].x", true},
		{[]string{".spec.ports[*].x"}, ".spec.ports[3].y", false},
		{[]string{".spec.ports[0]"}, ".spec.ports[*]", false},
		{[]string{".spec.a"}, ".spec.*", false},
		{[]string{".spec"}, ".spec.*", true},
		{[]string{".spec.m[*]"}, ".spec.m[1][2]", true},
		{[]string{".spec.m[*][*].z"}, ".spec.m[1][2].z", true},
		{[]string{".spec.ports[*]"}, ".spec.ports", false},
		{[]string{".spec.ports[*]"}, ".spec.ports[", false},
		{nil, ".spec", false},
		{[]string{".a", ".spec.x"}, ".spec.x.y", true},
	} {
		if got := Under(tc.accepted, tc.path); got != tc.want {
			t.Errorf("Under(%q, %q) = %v, want %v", tc.accepted, tc.path, got, tc.want)
		}
	}
}
