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

// TestShorten holds the wordings of the callers that do not use Some's.
func TestShorten(t *testing.T) {
	abcde := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		items     []string
		n         int
		sep, more string
		want      string
	}{
		{nil, 2, "; ", "; and %d more", ""},
		{abcde[:2], 2, "; ", "; and %d more", "a; b"},
		{abcde, 2, "; ", "; and %d more", "a; b; and 3 more"},
		{abcde, 4, ", ", ", … %d more", "a, b, c, d, … 1 more"},
		{abcde, 1, ", ", " and at least %d more", "a and at least 4 more"},
		{[]string{"a\n", "b\n", "c\n"}, 2, "", "… and %d more lines\n", "a\nb\n… and 1 more lines\n"},
		{[]string{"a\n", "b\n"}, 2, "", "… and %d more lines\n", "a\nb\n"},
	} {
		if got := Shorten(tc.items, tc.n, tc.sep, tc.more); got != tc.want {
			t.Errorf("Shorten(%q, %d, %q, %q) = %q, want %q", tc.items, tc.n, tc.sep, tc.more, got, tc.want)
		}
	}
}
