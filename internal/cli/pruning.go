package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/crdversion/kubectl-crdversion/internal/edit"
)

// pruningFlag is --allow-pruning of migrate: given alone (or =true) it
// accepts every loss and skips the measurement; given paths
// (--allow-pruning=.spec.hostPort,.spec.legacy, or the flag repeated) it
// accepts losing those paths and what lies under them, and the measurement
// still refuses every other loss.
type pruningFlag struct {
	all   bool
	paths []string
}

var _ pflag.Value = (*pruningFlag)(nil)

func (p *pruningFlag) String() string {
	if p.all {
		return "true"
	}
	if len(p.paths) == 0 {
		return "false"
	}
	return strings.Join(p.paths, ",")
}

// Set takes true, false, or JSON paths from the object's root separated by
// commas (".spec.hostPort", ".metadata.labels.legacy", ".spec.ports[0]").
func (p *pruningFlag) Set(value string) error {
	if b, err := strconv.ParseBool(value); err == nil {
		p.all = b
		return nil
	}
	for _, path := range strings.Split(value, ",") {
		if !strings.HasPrefix(path, ".") || len(path) < 2 || strings.ContainsAny(strings.ReplaceAll(path, "[*]", ""), " \t*") {
			return fmt.Errorf("%q is not a JSON path from the object's root, such as .spec.hostPort or .spec.ports[*].name (the paths a refusal names)", path)
		}
		p.paths = append(p.paths, path)
	}
	return nil
}

func (p *pruningFlag) Type() string { return "paths" }

// pruning is what the flag accepts.
func (p *pruningFlag) pruning() edit.Pruning {
	return edit.Pruning{All: p.all, Paths: slices.Clone(p.paths)}
}

// addPruningFlag adds --allow-pruning to flags, usable alone.
func addPruningFlag(flags *pflag.FlagSet, p *pruningFlag, usage string) {
	flags.Var(p, "allow-pruning", usage)
	flags.Lookup("allow-pruning").NoOptDefVal = "true"
}
