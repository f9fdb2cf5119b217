// Package manifest applies kubectl crdversion's edits to CRD manifests in
// files, for GitOps users: the edited CustomResourceDefinition is found by
// name in a multi-document YAML file, and only the lines the edit changes
// are rewritten — other documents, comments, key order, quoting and
// indentation stay as they were.
//
// The edits it writes are those of spec.versions[*] (served, storage,
// deprecated, deprecationWarning, new versions) and spec.conversion. A
// version written in flow style ({name: v1, …}) or sharing YAML anchors
// cannot be edited line by line; the document is then re-serialized and
// Result.Normalized says so.
package manifest

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// File is a multi-document YAML file split into documents.
type File struct {
	docs []string // each document's text, without the "---" separator lines
	seps []string // separator line before each document ("" for the first when absent)
}

// Parse splits data on lines that are exactly "---" (optionally followed by
// a comment or spaces).
func Parse(data []byte) *File {
	f := &File{}
	var cur strings.Builder
	sep := ""
	for _, line := range strings.SplitAfter(string(data), "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if trimmed == "---" || strings.HasPrefix(trimmed, "--- ") || strings.HasPrefix(trimmed, "---\t") {
			f.docs = append(f.docs, cur.String())
			f.seps = append(f.seps, sep)
			cur.Reset()
			sep = line
			continue
		}
		cur.WriteString(line)
	}
	f.docs = append(f.docs, cur.String())
	f.seps = append(f.seps, sep)
	return f
}

// Bytes joins the documents back.
func (f *File) Bytes() []byte {
	var b bytes.Buffer
	for i, d := range f.docs {
		b.WriteString(f.seps[i])
		b.WriteString(d)
	}
	return b.Bytes()
}

// FindCRD returns the index and the typed object of the
// CustomResourceDefinition that name names: its full name, or as kubectl
// resolves names, a plural, singular, short name or kind (optionally with
// its group). A file with two documents for the same CRD is an error (the
// last would win when applied, and an edit of the first would be lost).
func (f *File) FindCRD(name string) (int, *apiextensionsv1.CustomResourceDefinition, error) {
	var all []apiextensionsv1.CustomResourceDefinition
	var index []int
	for i, d := range f.docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			return -1, nil, fmt.Errorf("document %d: %v", i+1, err)
		}
		apiVersion, _ := obj["apiVersion"].(string)
		if kind, _ := obj["kind"].(string); kind != "CustomResourceDefinition" || !strings.HasPrefix(apiVersion, "apiextensions.k8s.io/") {
			continue
		}
		// Before the typed decoding, whose time grows with the square
		// of the depth of items and additionalProperties.
		if err := checkDepth(obj); err != nil {
			return -1, nil, err
		}
		crd := apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal([]byte(d), &crd); err != nil {
			return -1, nil, fmt.Errorf("document %d: %v", i+1, err)
		}
		if apiVersion != "apiextensions.k8s.io/v1" {
			crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{} // matched by name only
		}
		crd.APIVersion = apiVersion
		all = append(all, crd)
		index = append(index, i)
	}
	if len(all) == 0 {
		return -1, nil, fmt.Errorf("no CustomResourceDefinition in the file")
	}
	name, err := lifecycle.CRDArg(name)
	if err != nil {
		return -1, nil, err
	}
	var matches []int
	for i := range all {
		if all[i].Name == name {
			matches = append(matches, i)
		}
	}
	if len(matches) == 0 {
		for _, m := range lifecycle.MatchCRDs(all, name) {
			for i := range all {
				if &all[i] == m {
					matches = append(matches, i)
				}
			}
		}
	}
	switch {
	case len(matches) == 0:
		var names []string
		for _, c := range all {
			names = append(names, c.Name)
		}
		return -1, nil, fmt.Errorf("no CustomResourceDefinition named %s in the file (it has: %s)", name, strings.Join(names, ", "))
	case len(matches) > 1:
		var where []string
		for _, m := range matches {
			if all[m].Name == name {
				where = append(where, fmt.Sprintf("document %d", index[m]+1))
			} else {
				where = append(where, fmt.Sprintf("%s in document %d", all[m].Name, index[m]+1))
			}
		}
		return -1, nil, fmt.Errorf("%s matches more than one document (%s); when applied, the last would win", name, strings.Join(where, ", "))
	}
	crd := &all[matches[0]]
	if crd.APIVersion != "apiextensions.k8s.io/v1" {
		return -1, nil, fmt.Errorf("document %d: %s is %s; only apiextensions.k8s.io/v1 is supported", index[matches[0]]+1, crd.Name, crd.APIVersion)
	}
	return index[matches[0]], crd, nil
}

// Result of Apply.
type Result struct {
	// Normalized is true when the document had to be re-serialized as a
	// whole instead of edited line by line.
	Normalized bool
}

// Apply rewrites document i of f so that it holds edited instead of
// original (both as decoded from it; edited is the output of one of the
// edit functions).
func (f *File) Apply(i int, original, edited *apiextensionsv1.CustomResourceDefinition) (Result, error) {
	text, err := applyLines(f.docs[i], original, edited)
	if err == errNeedsNormalize {
		out, err := normalized(f.docs[i], edited)
		if err != nil {
			return Result{}, err
		}
		f.docs[i] = out
		return Result{Normalized: true}, nil
	}
	if err != nil {
		return Result{}, err
	}
	f.docs[i] = text
	return Result{}, nil
}

var errNeedsNormalize = fmt.Errorf("the document cannot be edited line by line")

// normalized serializes edited in place of the document original: keys the
// original did not have at the top level (status, a null creationTimestamp)
// are left out, and its line endings are kept.
func normalized(original string, edited *apiextensionsv1.CustomResourceDefinition) (string, error) {
	var had map[string]any
	if err := yaml.Unmarshal([]byte(original), &had); err != nil {
		return "", err
	}
	var obj map[string]any
	data, err := yaml.Marshal(edited)
	if err != nil {
		return "", err
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return "", err
	}
	if _, ok := had["status"]; !ok {
		delete(obj, "status")
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		if hadMD, _ := had["metadata"].(map[string]any); hadMD == nil || hadMD["creationTimestamp"] == nil {
			if md["creationTimestamp"] == nil {
				delete(md, "creationTimestamp")
			}
		}
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	text := string(out)
	if strings.Contains(original, "\r\n") {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	return text, nil
}

// doc is one document as lines plus its yaml.v3 node tree.
type doc struct {
	lines []string // without line endings
	nl    string
	root  *yamlv3.Node
}

func applyLines(text string, original, edited *apiextensionsv1.CustomResourceDefinition) (string, error) {
	nl := "\n"
	if strings.Contains(text, "\r\n") {
		nl = "\r\n"
	}
	trailing := strings.HasSuffix(text, "\n")
	body := strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
	d := &doc{lines: strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n"), nl: nl}

	// Edits are applied bottom-up so line numbers of earlier nodes hold:
	// first the versions (later in the file), then conversion.
	if err := d.reparse(); err != nil {
		return "", err
	}
	spec := mapValue(d.root, "spec")
	if spec == nil {
		return "", errNeedsNormalize
	}
	if err := d.editVersions(spec, original, edited); err != nil {
		return "", err
	}
	if err := d.reparse(); err != nil {
		return "", err
	}
	if err := d.editConversion(mapValue(d.root, "spec"), original, edited); err != nil {
		return "", err
	}
	out := strings.Join(d.lines, nl)
	if trailing {
		out += nl
	}
	return out, nil
}

func (d *doc) reparse() error {
	var n yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(strings.Join(d.lines, "\n")), &n); err != nil {
		return err
	}
	if n.Kind != yamlv3.DocumentNode || len(n.Content) == 0 || n.Content[0].Kind != yamlv3.MappingNode {
		return errNeedsNormalize
	}
	d.root = n.Content[0]
	return nil
}

// MapEntry returns the key and value nodes of key in the YAML mapping m;
// nil, nil when m is no mapping or has no such key.
func MapEntry(m *yamlv3.Node, key string) (*yamlv3.Node, *yamlv3.Node) {
	if m == nil || m.Kind != yamlv3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func mapValue(m *yamlv3.Node, key string) *yamlv3.Node {
	_, v := MapEntry(m, key)
	return v
}

// lastLine is the last line (1-based) that node n occupies, found from the
// line of the next node at n's level or above (so block scalars and
// trailing comments of n count), or the end of the document.
func (d *doc) lastLine(start, column int) int {
	end := len(d.lines)
	for l := start + 1; l <= len(d.lines); l++ {
		line := d.lines[l-1]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if indent(line) < column-1 || (indent(line) == column-1 && !strings.HasPrefix(trimmed, "-")) {
			end = l - 1
			break
		}
		if indent(line) == column-1 && strings.HasPrefix(trimmed, "-") {
			end = l - 1
			break
		}
	}
	for end > start && strings.TrimSpace(d.lines[end-1]) == "" {
		end--
	}
	return end
}

func indent(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// replace substitutes lines [from, to] (1-based, inclusive) with repl.
func (d *doc) replace(from, to int, repl []string) {
	out := append([]string{}, d.lines[:from-1]...)
	out = append(out, repl...)
	d.lines = append(out, d.lines[to:]...)
}

// render marshals v as YAML lines indented by n spaces, the first line
// prefixed by first instead (for "- " items).
func render(v any, n int, first string) ([]string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	pad := strings.Repeat(" ", n)
	for i := range lines {
		if i == 0 && first != "" {
			lines[i] = first + lines[i]
		} else {
			lines[i] = pad + lines[i]
		}
	}
	return lines, nil
}

func (d *doc) editVersions(spec *yamlv3.Node, original, edited *apiextensionsv1.CustomResourceDefinition) error {
	_, seq := MapEntry(spec, "versions")
	if seq == nil || seq.Kind != yamlv3.SequenceNode || len(seq.Content) != len(original.Spec.Versions) {
		return errNeedsNormalize
	}
	for _, item := range seq.Content {
		// Flow style cannot be edited line by line, and an anchor or alias
		// (knative-serving shares one version block among all versions)
		// would carry an edit to other versions.
		if item.Kind != yamlv3.MappingNode || item.Style&yamlv3.FlowStyle != 0 || item.Anchor != "" || hasAlias(item) {
			return errNeedsNormalize
		}
	}
	// New versions first (they go after the last item), then field edits
	// from the last item up.
	if n := len(edited.Spec.Versions); n > len(original.Spec.Versions) {
		last := seq.Content[len(seq.Content)-1]
		end := d.lastLine(last.Line, last.Column-2)
		var block []string
		for _, v := range edited.Spec.Versions[len(original.Spec.Versions):] {
			lines, err := render(v, last.Column-1, strings.Repeat(" ", last.Column-3)+"- ")
			if err != nil {
				return err
			}
			block = append(block, lines...)
		}
		d.replace(end+1, end, block)
	} else if n < len(original.Spec.Versions) {
		return errNeedsNormalize
	}
	for i := len(seq.Content) - 1; i >= 0; i-- {
		if err := d.editVersion(seq.Content[i], &original.Spec.Versions[i], &edited.Spec.Versions[i]); err != nil {
			return err
		}
	}
	return nil
}

func hasAlias(n *yamlv3.Node) bool {
	if n.Kind == yamlv3.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

// editVersion sets the scalar fields of one version that differ.
func (d *doc) editVersion(item *yamlv3.Node, before, after *apiextensionsv1.CustomResourceDefinitionVersion) error {
	if before.Name != after.Name {
		return errNeedsNormalize
	}
	type field struct {
		key      string
		old, new *string // nil: absent
	}
	boolStr := func(b bool) *string { s := fmt.Sprint(b); return &s }
	quoted := func(p *string) *string {
		if p == nil {
			return nil
		}
		s := fmt.Sprintf("%q", *p)
		return &s
	}
	fields := []field{
		{"served", boolStr(before.Served), boolStr(after.Served)},
		{"storage", boolStr(before.Storage), boolStr(after.Storage)},
		{"deprecated", boolStr(before.Deprecated), boolStr(after.Deprecated)},
		{"deprecationWarning", quoted(before.DeprecationWarning), quoted(after.DeprecationWarning)},
	}
	// Edit keys bottom-up within the item.
	type op struct {
		line int
		do   func()
	}
	var ops []op
	for _, f := range fields {
		if (f.old == nil) == (f.new == nil) && (f.old == nil || *f.old == *f.new) {
			continue
		}
		k, v := MapEntry(item, f.key)
		switch {
		case k != nil && f.new == nil:
			from, to := k.Line, d.lastLine(k.Line, k.Column)
			ops = append(ops, op{k.Line, func() { d.replace(from, to, nil) }})
		case k != nil:
			if v.Kind != yamlv3.ScalarNode || v.Line != k.Line {
				return errNeedsNormalize
			}
			line := k.Line
			to := d.lastLine(k.Line, k.Column)
			text := strings.Repeat(" ", k.Column-1) + f.key + ": " + *f.new
			if v.LineComment != "" {
				text += " " + v.LineComment
			}
			ops = append(ops, op{line, func() { d.replace(line, to, []string{text}) }})
		case f.new != nil && (f.key != "deprecated" || *f.new == "true"):
			// Insert after the name key, at the item's indentation.
			nk, _ := MapEntry(item, "name")
			if nk == nil {
				return errNeedsNormalize
			}
			at := nk.Line
			text := strings.Repeat(" ", nk.Column-1) + f.key + ": " + *f.new
			ops = append(ops, op{at, func() { d.replace(at+1, at, []string{text}) }})
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].line < ops[j].line })
	for i := len(ops) - 1; i >= 0; i-- {
		ops[i].do()
	}
	return nil
}

func (d *doc) editConversion(spec *yamlv3.Node, original, edited *apiextensionsv1.CustomResourceDefinition) error {
	a, _ := yaml.Marshal(original.Spec.Conversion)
	b, _ := yaml.Marshal(edited.Spec.Conversion)
	if bytes.Equal(a, b) {
		return nil
	}
	k, _ := MapEntry(spec, "conversion")
	if edited.Spec.Conversion == nil {
		if k != nil {
			d.replace(k.Line, d.lastLine(k.Line, k.Column), nil)
		}
		return nil
	}
	anchor, _ := MapEntry(spec, "versions")
	if anchor == nil {
		return errNeedsNormalize
	}
	column := anchor.Column
	if k != nil {
		column = k.Column
	}
	body, err := render(edited.Spec.Conversion, column+1, "")
	if err != nil {
		return err
	}
	block := append([]string{strings.Repeat(" ", column-1) + "conversion:"}, body...)
	if k != nil {
		d.replace(k.Line, d.lastLine(k.Line, k.Column), block)
	} else {
		d.replace(anchor.Line, anchor.Line-1, block)
	}
	return nil
}
