package lifecycle

import (
	"fmt"
	"strings"
)

// Some is the first n (> 0) of items joined with ", ", then how many more there
// are: "a, b, c and 2 more". With n items or fewer it is all of them
// ("a, b"). It is how messages name a list that may be long.
func Some(items []string, n int) string {
	return Shorten(items, n, ", ", " and %d more")
}

// Shorten is the first n (> 0) of items joined with sep, then more with its
// one %d set to how many items were left out: Shorten(items, 2, "; ",
// "; and %d more") is "a; b; and 3 more". With n items or fewer it is all
// of them joined with sep, and more is not written. Some is the wording most
// messages use; Shorten is for the few whose wording differs (a list of
// lines, a count that is a lower bound).
func Shorten(items []string, n int, sep, more string) string {
	if len(items) <= n {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:n], sep) + fmt.Sprintf(more, len(items)-n)
}
