package schema

import (
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Reason says why the API server drops the data at a path.
type Reason string

// Reasons of a Pruned path.
const (
	// ReasonUndeclared: the old schema declares the field; the new one
	// neither declares it nor keeps it (additionalProperties,
	// x-kubernetes-preserve-unknown-fields).
	ReasonUndeclared Reason = "FieldRemoved"
	// ReasonUnknown: the old schema keeps fields it does not declare
	// (x-kubernetes-preserve-unknown-fields); the new one prunes them.
	ReasonUnknown Reason = "PreserveUnknownFieldsRemoved"
	// ReasonUntyped: parts of a value the old schema kept without a schema
	// (below a field of ReasonUnknown's) that do not fit the new schema's
	// declaration of that field.
	ReasonUntyped Reason = "UntypedValuesPruned"
	// ReasonMapEntries: entries of an old additionalProperties map that the
	// new schema does not keep.
	ReasonMapEntries Reason = "MapEntriesRemoved"
	// ReasonEmbeddedResource: apiVersion, kind or metadata of an embedded
	// resource (x-kubernetes-embedded-resource) that the new schema no
	// longer keeps, or metadata the new schema coerces to ObjectMeta.
	ReasonEmbeddedResource Reason = "EmbeddedResourceChanged"
	// ReasonNull: null values the new schema prunes (the field is not
	// nullable and has no default).
	ReasonNull Reason = "NullPruned"
)

// Pruned is one path at which the API server drops stored data.
type Pruned struct {
	// Path is in kubectl's JSONPath style without braces: ".spec.url",
	// ".spec.items[*].name", ".spec.labels.*". A ".*" step stands for any
	// field name at that level: ".spec.*" is "the fields of .spec that the
	// new schema does not keep"; a final ".**" for any fields below (of a
	// value kept without a schema, read where the new schema has none).
	Path   string
	Reason Reason
}

// PrunedFields returns the paths of Prune(from, to), sorted.
func PrunedFields(from, to *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	for _, p := range Prune(from, to) {
		out = append(out, p.Path)
	}
	return out
}

// Prune returns the paths at which the API server drops data of an object
// stored under the schema from when it reads or writes the object through
// the schema to (conversion strategy None, which only rewrites apiVersion),
// sorted by path.
//
// It follows the API server's own pruning algorithm
// (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning, and the
// null pruning and ObjectMeta coercion that run with it) over every object
// that from can have stored: the fields from declares, the entries of its
// additionalProperties maps, and, where from sets
// x-kubernetes-preserve-unknown-fields, fields of any name and value. A
// value is assumed to have the type from declares for it. The result may
// name a path at which no stored object holds data; it never leaves out one
// at which the API server drops some. apiVersion, kind and metadata at the
// root are never pruned. A nil to prunes nothing (no schema, no pruning); a
// nil from yields nothing (nothing is known about the data).
func Prune(from, to *apiextensionsv1.JSONSchemaProps) []Pruned {
	if from == nil || to == nil {
		return nil
	}
	w := &walker{found: map[string]Reason{}}
	w.prune(prunedBy(from), to, "", true)
	var out []Pruned
	for _, p := range uncovered(w.found) {
		out = append(out, Pruned{Path: p, Reason: w.found[p]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// uncovered returns the paths of found that no other path of found with
// a ".*" step covers (Covers). Comparing every pair would take the square
// of their number times their length, which a deeply nested schema makes
// cubic in its depth (B25). The paths go into a tree of their steps
// instead, and each path is matched against the patterns that can cover
// it by walking the tree along it, a pattern's "*" beside a field name's
// own step, its "[*]" beside an index, and a final "**" covering all
// below.
func uncovered(found map[string]Reason) []string {
	root := &stepNode{}
	for p := range found {
		n := root
		for _, s := range steps(p) {
			n = n.child(s)
		}
		n.paths = append(n.paths, p)
	}
	root.match(root, false)
	var out []string
	root.collect(false, &out)
	return out
}

// stepNode is one step of the paths of Prune, by their steps from the
// root.
type stepNode struct {
	children map[string]*stepNode
	// paths end here (one, unless two spellings have the same steps).
	paths []string
	// covered: a pattern covers the paths that end here; below: one
	// covers all paths below (a final "**"); belowButOwn: a "**" child
	// of this node covers all paths below but itself.
	covered, below, belowButOwn bool
}

func (n *stepNode) child(step string) *stepNode {
	if n.children == nil {
		n.children = map[string]*stepNode{}
	}
	c := n.children[step]
	if c == nil {
		c = &stepNode{}
		n.children[step] = c
	}
	return c
}

// match marks what of the paths below n the patterns below pat cover,
// where pat's steps so far cover n's; star is whether they have a "*" or
// "**" step (a pattern without one covers only itself).
func (n *stepNode) match(pat *stepNode, star bool) {
	if star && pat != n && len(pat.paths) > 0 && len(n.paths) > 0 {
		n.covered = true
	}
	if all := pat.children["**"]; all != nil && len(all.paths) > 0 {
		if pat == n {
			n.belowButOwn = true
		} else {
			n.below = true
		}
	}
	for s, c := range n.children {
		if p := pat.children[s]; p != nil {
			c.match(p, star || s == "*" || s == "**")
		}
		switch {
		case strings.HasPrefix(s, "k:"):
			if p := pat.children["*"]; p != nil {
				c.match(p, true)
			}
		case strings.HasPrefix(s, "[") && s != "[*]":
			if p := pat.children["[*]"]; p != nil {
				c.match(p, star)
			}
		}
	}
}

// collect appends the paths below n that no pattern covers; covered is
// whether one covers all below n.
func (n *stepNode) collect(covered bool, out *[]string) {
	if !covered && !n.covered {
		*out = append(*out, n.paths...)
	}
	for s, c := range n.children {
		c.collect(covered || n.below || (n.belowButOwn && s != "**"), out)
	}
}

// kind is what is known of the data stored at a path.
type kind int

const (
	// pruned: what the API server's prune(x, s) leaves, s not preserving
	// unknown fields.
	pruned kind = iota
	// skipped: what skipPrune(x, s) leaves: s preserves unknown fields, or
	// s is the items schema of a list that does.
	skipped
	// emptied: what prune(x, nil) leaves: scalars, empty objects, lists of
	// these (the values of additionalProperties: true).
	emptied
	// anyJSON: any JSON value, kept without a schema.
	anyJSON
	// objectMeta: the metadata of an embedded resource.
	objectMeta
)

// value is the data that may be stored at a path: s is the old schema at
// that path for pruned and skipped.
type value struct {
	k kind
	s *apiextensionsv1.JSONSchemaProps
}

func prunedBy(s *apiextensionsv1.JSONSchemaProps) value {
	switch {
	case s == nil:
		return value{k: emptied}
	case preserves(s):
		return value{k: skipped, s: s}
	}
	return value{k: pruned, s: s}
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// untyped is a schema that lets a value of any type through.
func untyped(s *apiextensionsv1.JSONSchemaProps) bool { return s.Type == "" && !s.XIntOrString }

func (v value) mayBeObject() bool {
	switch v.k {
	case anyJSON, emptied, objectMeta:
		return true
	}
	return v.s.Type == "object" || untyped(v.s)
}

func (v value) mayBeList() bool {
	switch v.k {
	case anyJSON, emptied:
		return true
	case objectMeta:
		return false
	}
	return v.s.Type == "array" || untyped(v.s)
}

// mayBeNull: the API server prunes nulls where the old schema is not
// nullable when it stores an object (on every write, as on reads), so
// stored nulls are where the old schema is nullable or has no schema.
func (v value) mayBeNull() bool {
	switch v.k {
	case anyJSON, emptied:
		return true
	case objectMeta:
		return false
	}
	return v.s.Nullable
}

func (v value) isString() bool {
	return (v.k == pruned || v.k == skipped) && v.s.Type == "string"
}

func itemsOf(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s == nil || s.Items == nil {
		return nil
	}
	return s.Items.Schema
}

// elem is what the items of a list value may be.
func (v value) elem() value {
	switch v.k {
	case pruned:
		return prunedBy(itemsOf(v.s))
	case skipped:
		if it := itemsOf(v.s); it != nil {
			return value{k: skipped, s: it}
		}
		return value{k: anyJSON}
	}
	return v
}

// field is one field an object value may have; a field of the wildcard
// stands for any name but those of the named fields.
type field struct {
	name string
	v    value
	why  Reason
}

// objectMetaSchema is the shape of ObjectMeta: what the API server keeps
// of the metadata of an embedded resource.
var objectMetaSchema = func() *apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	num := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	strMap := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}}
	list := func(items apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	}
	t := true
	objects := list(apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &t})
	return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": str, "generateName": str, "namespace": str, "selfLink": str, "uid": str, "resourceVersion": str,
		"creationTimestamp": str, "deletionTimestamp": str, "generation": num, "deletionGracePeriodSeconds": num,
		"labels": strMap, "annotations": strMap, "finalizers": list(str), "ownerReferences": objects, "managedFields": objects,
	}}
}()

var metaFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

// fields returns the fields an object value may have: the named ones and
// the wildcard (nil when only the named ones can be there).
func (v value) fields(root bool) (named []field, wild *field) {
	switch v.k {
	case anyJSON:
		return nil, &field{v: value{k: anyJSON}, why: ReasonUntyped}
	case objectMeta:
		for _, name := range sortedKeys(objectMetaSchema.Properties) {
			p := objectMetaSchema.Properties[name]
			named = append(named, field{name: name, v: prunedBy(&p), why: ReasonEmbeddedResource})
		}
		return named, nil
	case emptied:
		return nil, nil
	}
	if !v.mayBeObject() {
		return nil, nil
	}
	embedded := v.s.XEmbeddedResource && !root
	for _, name := range sortedKeys(v.s.Properties) {
		if (root || embedded) && metaFields[name] {
			continue
		}
		p := v.s.Properties[name]
		named = append(named, field{name: name, v: prunedBy(&p), why: ReasonUndeclared})
	}
	if embedded {
		str := &apiextensionsv1.JSONSchemaProps{Type: "string"}
		named = append(named,
			field{name: "apiVersion", v: value{k: pruned, s: str}, why: ReasonEmbeddedResource},
			field{name: "kind", v: value{k: pruned, s: str}, why: ReasonEmbeddedResource},
			field{name: "metadata", v: value{k: objectMeta}, why: ReasonEmbeddedResource})
	}
	switch {
	case v.s.AdditionalProperties != nil:
		wild = &field{v: prunedBy(v.s.AdditionalProperties.Schema), why: ReasonMapEntries}
	case v.k == skipped:
		wild = &field{v: value{k: anyJSON}, why: ReasonUnknown}
	}
	return named, wild
}

type walker struct {
	found map[string]Reason
}

func (w *walker) add(path string, why Reason) {
	if _, ok := w.found[path]; !ok {
		w.found[path] = why
	}
}

// prune records what the API server's prune(x, t) drops of any x that v
// may be.
func (w *walker) prune(v value, t *apiextensionsv1.JSONSchemaProps, path string, root bool) {
	if t != nil && preserves(t) {
		w.skip(v, t, path, root)
		return
	}
	if t == nil && v.k == anyJSON {
		// prune(x, nil) empties every object in x, in lists of lists of
		// any depth.
		w.add(path+".**", ReasonUntyped)
		return
	}
	if v.mayBeObject() {
		named, wild := v.fields(root)
		if t == nil {
			for _, f := range named {
				w.add(childPath(path, f.name), f.why)
			}
			if wild != nil {
				w.add(path+".*", wild.why)
			}
		} else {
			w.fields(named, wild, v.k == objectMeta, t, path, root, false)
		}
	}
	if v.mayBeList() && v.k != emptied {
		// v's items follow its schema, which ends; anyJSON under nil
		// returned above.
		w.prune(v.elem(), itemsOf(t), path+"[*]", false)
	}
}

// skip records what skipPrune(x, t) drops of any x that v may be.
func (w *walker) skip(v value, t *apiextensionsv1.JSONSchemaProps, path string, root bool) {
	if v.mayBeObject() {
		named, wild := v.fields(root)
		w.fields(named, wild, v.k == objectMeta, t, path, root, true)
	}
	if it := itemsOf(t); it != nil && v.mayBeList() && v.k != emptied {
		w.skip(v.elem(), it, path+"[*]", false)
	}
}

// fields records what the new object schema t drops of the fields of an
// object value; skip is whether t is applied by skipPrune (it keeps the
// fields it has no schema for). The fields of ObjectMeta (meta) that t
// drops are named once, as path.*.
func (w *walker) fields(named []field, wild *field, meta bool, t *apiextensionsv1.JSONSchemaProps, path string, root, skip bool) {
	embedded := t.XEmbeddedResource && !root
	seen := map[string]bool{}
	for _, f := range named {
		seen[f.name] = true
		if _, declared := t.Properties[f.name]; meta && !declared && t.AdditionalProperties == nil {
			if !skip {
				w.add(path+".*", f.why)
			}
			continue
		}
		if embedded && metaFields[f.name] {
			w.embeddedMeta(f, childPath(path, f.name))
			continue
		}
		w.field(f, t, false, childPath(path, f.name), skip)
	}
	if wild == nil {
		return
	}
	// A field of any name: one of those t declares or embeds, or another.
	for _, name := range sortedKeys(t.Properties) {
		if seen[name] || ((root || embedded) && metaFields[name]) {
			continue
		}
		w.field(field{name: name, v: wild.v, why: wild.why}, t, false, childPath(path, name), skip)
	}
	if embedded {
		for _, name := range []string{"apiVersion", "kind", "metadata"} {
			if !seen[name] {
				w.embeddedMeta(field{name: name, v: wild.v, why: wild.why}, childPath(path, name))
			}
		}
	}
	w.field(*wild, t, true, path+".*", skip)
}

// field records what t drops of the field f of an object: t's schema for
// it is its property (unless wild: a name t does not declare) or its
// additionalProperties.
func (w *walker) field(f field, t *apiextensionsv1.JSONSchemaProps, wild bool, path string, skip bool) {
	var ts *apiextensionsv1.JSONSchemaProps
	p, declared := t.Properties[f.name]
	switch {
	case declared && !wild:
		ts = &p
	case t.AdditionalProperties != nil:
		ts = t.AdditionalProperties.Schema
	default:
		if !skip {
			w.add(path, f.why)
		}
		return
	}
	if ts != nil && f.v.mayBeNull() && !ts.Nullable && ts.Default == nil {
		w.add(path, ReasonNull)
	}
	w.prune(f.v, ts, path, false)
}

// embeddedMeta records what a new embedded resource drops of its
// apiVersion, kind or metadata: the API server keeps them without pruning
// and coerces metadata to ObjectMeta (dropping what ObjectMeta does not
// have). An apiVersion or kind that is not a string, or metadata that is
// not an ObjectMeta, is worse than pruned: on v1.37 reading the object
// fails ("corrupt object ... must be a string"), and so does every list of
// the version (found by TestPruningPredictionMatchesAPIServer).
func (w *walker) embeddedMeta(f field, path string) {
	switch {
	case f.name != "metadata":
		if !f.v.isString() {
			w.add(path, ReasonEmbeddedResource)
		}
	case f.v.k == objectMeta:
	default:
		if f.v.mayBeObject() {
			w.add(path+".*", ReasonEmbeddedResource)
		}
		if typed := f.v.k == pruned || f.v.k == skipped; !typed || f.v.s.Type != "object" {
			// metadata that is not an object is dropped
			w.add(path, ReasonEmbeddedResource)
		}
	}
}

// ChildPath is the path of the field name of the object at path, in the
// style of Prune's paths: ".spec.url", or ".spec['dotted.name']".
func ChildPath(path, name string) string {
	if strings.ContainsAny(name, ".[]* '") {
		return path + "['" + name + "']"
	}
	return path + "." + name
}

func childPath(path, name string) string { return ChildPath(path, name) }

// Covers reports whether the pattern (a path of Prune, where ".*" is any
// field name, "[*]" any list index and a final ".**" any steps below)
// names path (a path in the same style, with list indexes such as "[0]" or
// "[*]"). Both name the same number of steps, but for ".**".
func Covers(pattern, path string) bool {
	ps, qs := steps(pattern), steps(path)
	if n := len(ps); n > 0 && ps[n-1] == "**" && len(qs) >= n {
		ps, qs = ps[:n-1], qs[:n-1]
	}
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		p, q := ps[i], qs[i]
		if p == q {
			continue
		}
		switch p {
		case "*":
			if !strings.HasPrefix(q, "k:") {
				return false
			}
		case "[*]":
			if !strings.HasPrefix(q, "[") {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// steps splits a path into field names ("k:spec"; "*" for any name) and
// list indexes ("[0]", "[*]").
func steps(path string) []string {
	var out []string
	for i := 0; i < len(path); {
		switch {
		case strings.HasPrefix(path[i:], "['"):
			end := strings.Index(path[i+2:], "']")
			if end < 0 {
				return append(out, "k:"+path[i:])
			}
			out = append(out, "k:"+path[i+2:i+2+end])
			i += 2 + end + 2
		case path[i] == '[':
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return append(out, "k:"+path[i:])
			}
			out = append(out, path[i:i+end+1])
			i += end + 1
		case path[i] == '.':
			j := i + 1
			for j < len(path) && path[j] != '.' && path[j] != '[' {
				j++
			}
			if name := path[i+1 : j]; name == "*" || name == "**" {
				out = append(out, name)
			} else {
				out = append(out, "k:"+name)
			}
			i = j
		default:
			return append(out, "k:"+path[i:])
		}
	}
	return out
}

// Keeps reports whether the API server keeps the field at path (Prune's
// notation, list elements as "[*]" or "[0]") when it reads or writes an
// object with schema s: every step is declared (a property, the schema of
// additionalProperties or of list items), or a schema on the way preserves
// unknown fields, or the field is metadata, apiVersion or kind of the object
// or of an embedded resource, which are never pruned. A nil s keeps
// everything (no structural schema, nothing pruned). A field s does not
// keep is pruned on every read: data still in etcd there shows in no read.
func Keeps(s *apiextensionsv1.JSONSchemaProps, path string) bool {
	cur := s
	for i, st := range steps(path) {
		if cur == nil || preserves(cur) {
			return true
		}
		if (i == 0 || cur.XEmbeddedResource) && (st == "k:metadata" || st == "k:apiVersion" || st == "k:kind") {
			return true
		}
		switch {
		case strings.HasPrefix(st, "["):
			if cur.Items == nil || cur.Items.Schema == nil {
				return cur.Items == nil && untyped(cur)
			}
			cur = cur.Items.Schema
		case strings.HasPrefix(st, "k:"):
			name := strings.TrimPrefix(st, "k:")
			if p, ok := cur.Properties[name]; ok {
				cur = &p
				continue
			}
			ap := cur.AdditionalProperties
			switch {
			case ap == nil:
				return false
			case ap.Schema != nil:
				cur = ap.Schema
			default:
				// additionalProperties: true keeps the value, pruned as
				// having no schema (its scalars and empty objects).
				return ap.Allows
			}
		default:
			return false
		}
	}
	return true
}
