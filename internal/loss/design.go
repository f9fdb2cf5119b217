package loss

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// writeActors says what, besides conversion None and the storage version
// storage's schema, can act on migrate's no-op update of crd's objects
// through storage — and so what a read at storage cannot show: a webhook or
// admission policy whose rules see UPDATE of the resource (any version, any
// match policy, whatever selectors narrow it), or a transition rule of
// storage's schema (oldSelf: evaluated on every update, not ratcheted), or
// a default of storage's schema that a version of stored (where objects
// may be stored) does not declare alike: the write sets it, or a path
// nullable at a version of stored and not at storage: the write drops an
// explicit null. ""
// when nothing can: the read at storage is what the write stores (the API
// server converts, prunes and defaults a read through a version as it
// does the write), and the measurement reads instead of dry-running. Rules
// that could not be listed count as acting: unknown is not nothing.
func writeActors(ctx context.Context, c Checker, crd *apiextensionsv1.CustomResourceDefinition, storage *apiextensionsv1.CustomResourceDefinitionVersion, stored []string) string {
	if rules := schema.TransitionRules(schema.Of(storage)); len(rules) > 0 {
		return fmt.Sprintf("%s's schema has transition rules (%s), which judge every update and no read",
			storage.Name, lifecycle.Shorten(rules, 2, "; ", "; and %d more"))
	}
	// An object read from etcd is defaulted with the schema of the
	// version it is stored at, a write with the schema of the version it
	// goes through: a default of the storage version that a stored
	// version lacks is set by the write and shown by no read.
	// Likewise an explicit null: a read keeps it where the version the
	// object is stored at says nullable, a write through a version that
	// does not drops it (and defaults the field, if it has a default).
	defaults := schema.Defaults(schema.Of(storage))
	nulls := schema.Nullable(schema.Of(storage))
	for _, name := range stored {
		v := lifecycle.FindVersion(crd, name)
		if v == nil || name == storage.Name {
			continue
		}
		old := schema.Defaults(schema.Of(v))
		for _, p := range slices.Sorted(maps.Keys(defaults)) {
			if old[p] != defaults[p] {
				return fmt.Sprintf("%s's schema defaults %s and %s's does not alike: a write sets it, a read of an object stored at %s does not", storage.Name, p, name, name)
			}
		}
		oldNulls := schema.Nullable(schema.Of(v))
		for _, p := range slices.Sorted(maps.Keys(oldNulls)) {
			if declared, ok := nulls[p]; ok && oldNulls[p] && !declared {
				return fmt.Sprintf("%s's schema makes %s nullable and %s's does not: a write drops an explicit null there (or defaults it), a read of an object stored at %s keeps it", name, p, storage.Name, name)
			}
		}
	}
	rules, err := c.AdmissionRules(ctx)
	if err != nil {
		return "the webhooks and admission policies that may act on the update could not be listed (" + err.Error() + ")"
	}
	acting := references.ActOn(rules, crd.Spec.Group, crd.Spec.Names.Plural, "UPDATE")
	if len(acting) == 0 {
		return ""
	}
	names := make([]string, len(acting))
	for i, r := range acting {
		names[i] = r.String()
	}
	return "admission acts on UPDATE of " + crd.Spec.Names.Plural + "." + crd.Spec.Group + ": " +
		lifecycle.Shorten(slices.Compact(names), 3, ", ", ", and %d more")
}

// Disagreement is a pass measured both by reads and by dry runs
// (Options.CrossCheck) whose verdicts differ: the reads missed what the
// write does, and their design must not be chosen there.
type Disagreement struct {
	CRD, From, To string
	// Objects are the objects whose verdicts differ, each with what the
	// reads found and what the dry run found.
	Objects []string
}

// Error is one line: the objects are in Detail.
func (d *Disagreement) Error() string {
	return fmt.Sprintf("the loss measurement of %s from %s to %s: its reads and its dry runs disagree on %d object(s)",
		d.CRD, d.From, d.To, len(d.Objects))
}

// Detail is Error with every object and both verdicts.
func (d *Disagreement) Detail() string {
	return d.Error() + ": " + strings.Join(d.Objects, "; ")
}

// disagree compares two checks of the same objects, one by reads and one
// by dry runs, verdict by verdict: what each drops, changes, sets, drops
// as null, hides (managedFields), leaves unrecorded, refuses to write, and
// refuses as new. metadata.generation is not compared: a read does not
// say whether a write would count as a change of the spec (reported, not
// judged), nor the number of objects: objects created or deleted between
// the passes are in one and not the other, with no verdict to differ.
func disagree(reads, dry *cluster.ObjectsCheck) []string {
	verdicts := func(c *cluster.ObjectsCheck) map[string][]string {
		m := map[string][]string{}
		add := func(kind string, ls []cluster.ObjectLoss) {
			for _, l := range ls {
				m[l.Object] = append(m[l.Object], kind+" "+strings.Join(l.Paths, ","))
			}
		}
		add("dropped", c.Lost)
		add("changed", c.Changed)
		add("set", c.Set)
		add("nullsDropped", c.NullsDropped)
		add("hidden", c.RecordedMissing)
		for _, n := range c.Unrecorded {
			m[n] = append(m[n], "unrecorded")
		}
		for _, p := range c.Problems {
			m[p.Object] = append(m[p.Object], "refused")
		}
		for _, p := range c.InvalidAsNew {
			m[p.Object] = append(m[p.Object], "invalidAsNew")
		}
		for _, p := range append(slices.Clone(c.Unreadable), c.Forbidden...) {
			m[p.Object] = append(m[p.Object], "unmeasured")
		}
		return m
	}
	r, d := verdicts(reads), verdicts(dry)
	var out []string
	for _, n := range slices.Sorted(maps.Keys(mergeKeys(r, d))) {
		a, b := strings.Join(r[n], "; "), strings.Join(d[n], "; ")
		if a != b {
			out = append(out, fmt.Sprintf("%s: reads [%s], dry run [%s]", n, a, b))
		}
	}
	return out
}

func mergeKeys(a, b map[string][]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
