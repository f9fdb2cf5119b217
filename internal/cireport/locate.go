package cireport

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// Location is where a finding points in the release's files: a file as
// it was given (relative paths stay relative, as code scanning expects
// them from the repository root) and a 1-based line.
type Location struct {
	File string
	Line int
}

// Locator finds the file and line of each finding, reading each manifest
// once.
type Locator struct {
	// Chart is the chart directory or archive of a --chart check; empty
	// for manifests.
	Chart string
	// Fallback is the file of a finding whose CRD no document holds (a
	// CRD the release deletes): the chart's Chart.yaml, or the first
	// manifest given.
	Fallback string
	docs     map[string][]*yaml.Node
}

// Locate is the location of finding f of plan p: the document the plan's
// Source names ("FILE" or "FILE#N", N counting the non-empty documents
// and list items as the manifest reader does), and in it the line of the
// finding's version entry (spec.versions[].name) or, for a CRD-wide
// finding, of the deepest key of its path that the document has; the
// document's first line otherwise. A chart's template is located at its
// file, line 1 (its lines are the template's, not the rendered CRD's).
func (l *Locator) Locate(p upgrade.Plan, f schemadiff.Finding) Location {
	if strings.HasPrefix(p.Source, upgrade.InstalledSource) {
		return Location{File: l.Fallback, Line: 1}
	}
	file, n := p.Source, 1
	if i := strings.LastIndex(file, "#"); i >= 0 {
		if k, err := strconv.Atoi(file[i+1:]); err == nil {
			file, n = file[:i], k
		}
	}
	if l.Chart != "" {
		if fi, err := os.Stat(l.Chart); err == nil && !fi.IsDir() {
			// An archive: its members are not files of the repository.
			return Location{File: l.Chart, Line: 1}
		}
		if _, err := os.Stat(file); err != nil {
			// A template, named "CHART-NAME/templates/x.yaml".
			if _, rest, ok := strings.Cut(filepath.ToSlash(file), "/"); ok {
				return Location{File: filepath.Join(l.Chart, filepath.FromSlash(rest)), Line: 1}
			}
			return Location{File: l.Chart, Line: 1}
		}
		if strings.Contains(file, "/templates/") {
			return Location{File: file, Line: 1}
		}
	}
	docs := l.read(file)
	if n < 1 || n > len(docs) {
		return Location{File: file, Line: 1}
	}
	return Location{File: file, Line: lineIn(docs[n-1], f)}
}

// read parses file into its non-empty documents (list items expanded),
// once; a file that cannot be read or parsed has none.
func (l *Locator) read(file string) []*yaml.Node {
	if docs, ok := l.docs[file]; ok {
		return docs
	}
	if l.docs == nil {
		l.docs = map[string][]*yaml.Node{}
	}
	var docs []*yaml.Node
	if data, err := os.ReadFile(file); err == nil {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				if !errors.Is(err, io.EOF) {
					docs = nil
				}
				break
			}
			if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode || len(n.Content[0].Content) == 0 {
				continue
			}
			m := n.Content[0]
			if kind := value(m, "kind"); kind != nil && strings.HasSuffix(kind.Value, "List") {
				if items := value(m, "items"); items != nil && items.Kind == yaml.SequenceNode {
					docs = append(docs, items.Content...)
					continue
				}
			}
			docs = append(docs, m)
		}
	}
	l.docs[file] = docs
	return docs
}

// lineIn is the line of f in the CRD document doc: the version's entry;
// for a version the document does not have, the spec.versions key; else
// the key of the deepest part of f's path the document has.
func lineIn(doc *yaml.Node, f schemadiff.Finding) int {
	if f.Version != "" {
		if versionsKey, versions := manifest.MapEntry(value(doc, "spec"), "versions"); versions != nil && versions.Kind == yaml.SequenceNode {
			for _, v := range versions.Content {
				if name := value(v, "name"); name != nil && name.Value == f.Version {
					return name.Line
				}
			}
			return versionsKey.Line
		}
	}
	line := doc.Line
	at := doc
	for _, key := range strings.Split(strings.TrimPrefix(f.Path, "."), ".") {
		key, _, _ = strings.Cut(key, "[")
		k, next := manifest.MapEntry(at, key)
		if next == nil {
			break
		}
		line, at = k.Line, next
	}
	return line
}

// value is the value node of key in mapping m; nil when m is no mapping
// or has no such key.
func value(m *yaml.Node, key string) *yaml.Node {
	_, v := manifest.MapEntry(m, key)
	return v
}
