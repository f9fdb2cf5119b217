package lifecycle

import (
	"fmt"
	"strings"
)

// Some is the first n (> 0) of items joined with ", ", then how many more there
// are: "a, b, c and 2 more". With n items or fewer it is all of them
// ("a, b"). It is how messages name a list that may be long.
func Some(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
