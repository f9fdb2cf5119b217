package cluster

import "strconv"

// Changes is what a rewrite does to one object: the whole object as read
// compared with the whole object as the API server would store it, both of
// the same shape (the same version, or versions that conversion None tells
// apart by apiVersion alone). Paths are JSON paths (".spec.size",
// ".metadata.labels.app", ".spec.ports[2]", `.metadata.annotations["a/b"]`).
type Changes struct {
	// Dropped are the paths with a value (not null) before and none after:
	// pruning, a conversion webhook or admission removed them.
	Dropped []string `json:"dropped,omitempty"`
	// Changed are the paths whose value differs (a scalar, or a value of
	// another kind: a map or list that became something else).
	Changed []string `json:"changed,omitempty"`
	// Set are the paths absent (or null) before and with a value after:
	// defaults of the schema written through, or admission.
	Set []string `json:"set,omitempty"`
	// NullsDropped are the paths with an explicit null before and absent
	// after (a schema that is not nullable prunes them).
	NullsDropped []string `json:"nullsDropped,omitempty"`
	// GenerationChanged is true when metadata.generation differs: the
	// API server counts the rewrite as a change of the spec, and
	// controllers reconcile the object again.
	GenerationChanged bool `json:"generationChanged,omitempty"`
}

// Loses is true when the rewrite drops or changes data.
func (c Changes) Loses() bool { return len(c.Dropped)+len(c.Changed) > 0 }

// Empty is true when the rewrite changes nothing that is compared.
func (c Changes) Empty() bool {
	return !c.Loses() && len(c.Set)+len(c.NullsDropped) == 0 && !c.GenerationChanged
}

// serverSet are the metadata fields that the API server sets on every
// write, whatever the object holds: they are not the object's data.
var serverSet = map[string]bool{
	"resourceVersion": true, "generation": true, "managedFields": true, "creationTimestamp": true,
	"uid": true, "selfLink": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": true,
}

// CompareObjects compares before (an object read at some version) with
// after (what a rewrite would store, at the same version or one of the same
// shape) as whole objects: every field, metadata included (labels,
// annotations, finalizers, owner references — a conversion webhook or
// admission may change them), values as well as keys. apiVersion and the
// metadata that the API server sets on every write (resourceVersion,
// generation, managedFields, uid, timestamps) are not data; a change of
// generation is reported as GenerationChanged. Lists are compared element
// by element. Numbers are compared by value (5 and 5.0 are equal).
func CompareObjects(before, after map[string]any) Changes {
	var c Changes
	bm, _ := before["metadata"].(map[string]any)
	am, _ := after["metadata"].(map[string]any)
	c.GenerationChanged = !sameValue(bm["generation"], am["generation"])
	b, a := withoutServerSet(before), withoutServerSet(after)
	compareValues(&c, "", b, a)
	return c
}

func withoutServerSet(o map[string]any) map[string]any {
	out := make(map[string]any, len(o))
	for k, v := range o {
		if k == "apiVersion" {
			continue
		}
		out[k] = v
	}
	if m, ok := o["metadata"].(map[string]any); ok {
		meta := make(map[string]any, len(m))
		for k, v := range m {
			if !serverSet[k] {
				meta[k] = v
			}
		}
		out["metadata"] = meta
	}
	return out
}

func compareValues(c *Changes, path string, bv, av any) {
	switch b := bv.(type) {
	case map[string]any:
		a, ok := av.(map[string]any)
		if !ok {
			c.Changed = append(c.Changed, orRoot(path))
			return
		}
		for _, k := range sortedKeys(b) {
			p := path + pathKey(k)
			v, kept := a[k]
			switch {
			case !kept && b[k] == nil:
				c.NullsDropped = append(c.NullsDropped, p)
			case !kept:
				c.Dropped = append(c.Dropped, p)
			case b[k] == nil && v != nil:
				c.Set = append(c.Set, p)
			default:
				compareValues(c, p, b[k], v)
			}
		}
		for _, k := range sortedKeys(a) {
			if _, was := b[k]; !was && a[k] != nil {
				c.Set = append(c.Set, path+pathKey(k))
			}
		}
	case []any:
		a, ok := av.([]any)
		if !ok {
			c.Changed = append(c.Changed, orRoot(path))
			return
		}
		for i, e := range b {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(a) && e == nil:
				c.NullsDropped = append(c.NullsDropped, p)
			case i >= len(a):
				c.Dropped = append(c.Dropped, p)
			case e == nil && a[i] != nil:
				// As in a map: a null given a value.
				c.Set = append(c.Set, p)
			default:
				compareValues(c, p, e, a[i])
			}
		}
		for i := len(b); i < len(a); i++ {
			c.Set = append(c.Set, path+"["+strconv.Itoa(i)+"]")
		}
	default:
		if !sameValue(bv, av) {
			c.Changed = append(c.Changed, orRoot(path))
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}
