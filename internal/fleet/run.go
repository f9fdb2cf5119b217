package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Select returns the contexts a fleet run works on, out of available (the
// names of the kubeconfig's contexts, in any order): with all, every one of
// them, sorted; otherwise requested, each trimmed of spaces and checked
// against available, in the order given, without repeats. Errors: a
// requested name not in available ("context %q is not in the kubeconfig"),
// or all with no contexts at all.
func Select(available, requested []string, all bool) ([]string, error) {
	if all {
		if len(available) == 0 {
			return nil, fmt.Errorf("the kubeconfig has no contexts")
		}
		names := slices.Clone(available)
		slices.Sort(names)
		return names, nil
	}
	var out []string
	for _, name := range requested {
		name = strings.TrimSpace(name)
		if !slices.Contains(available, name) {
			return nil, fmt.Errorf("context %q is not in the kubeconfig", name)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Each calls fn for every name, at most parallel (> 0) at once, each call
// with a context that ends timeout after the call starts, and returns the
// results in the order of names.
func Each[T any](ctx context.Context, names []string, parallel int, timeout time.Duration, fn func(ctx context.Context, name string) T) []T {
	out := make([]T, len(names))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			out[i] = fn(cctx, name)
		})
	}
	wg.Wait()
	return out
}
