package lifecycle

import "testing"

func TestSome(t *testing.T) {
	for _, tc := range []struct {
		items []string
		n     int
		want  string
	}{
		{nil, 3, ""},
		{[]string{"a"}, 3, "a"},
		{[]string{"a", "b", "c"}, 3, "a, b, c"},
		{[]string{"a", "b", "c", "d"}, 3, "a, b, c and 1 more"},
		{[]string{"a", "b", "c", "d", "e"}, 1, "a and 4 more"},
	} {
		if got := Some(tc.items, tc.n); got != tc.want {
			t.Errorf("Some(%q, %d) = %q, want %q", tc.items, tc.n, got, tc.want)
		}
	}
}
