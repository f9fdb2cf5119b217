package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// CRDDoc is a CustomResourceDefinition read from a manifest.
type CRDDoc struct {
	// Source is "file" or "file#N" for the N-th document (1-based) of a
	// multi-document file.
	Source string
	CRD    *apiextensionsv1.CustomResourceDefinition
	// HelmOrigin is where a Helm chart holds the CRD (HelmCRDsDir,
	// HelmTemplates); empty for a plain manifest.
	HelmOrigin string
}

// Origins of a Helm chart's CRD (CRDDoc.HelmOrigin).
const (
	// HelmCRDsDir is the chart's crds/ directory: Helm creates such a CRD
	// on install when it does not exist, and never updates or deletes it.
	HelmCRDsDir = "crds"
	// HelmTemplates is a rendered template: every helm upgrade applies
	// it; a later release that stops rendering it, and helm uninstall,
	// delete it with every object unless it keeps the resource policy.
	HelmTemplates = "templates"
)

// ReadCRDs reads the CustomResourceDefinitions of a YAML or JSON manifest
// (multi-document; "List" objects expanded), or of every *.yaml, *.yml and
// *.json file in a directory (in name order; with recursive, in its
// subdirectories too), as `kubectl apply -f` does. Other kinds are skipped.
// A CRD of apiextensions.k8s.io/v1beta1 is an error, as is a CRD named twice
// (applying both, the last would win).
func ReadCRDs(path string, recursive bool) ([]CRDDoc, error) {
	return ReadCRDsOf([]string{path}, recursive)
}

// ReadCRDsOf reads the CRDs of every path as ReadCRDs reads one, in the order
// given, as `kubectl apply -f A -f B` applies them all: a CRD named in two
// documents of any of them is an error. No path is an empty result.
func ReadCRDsOf(paths []string, recursive bool) ([]CRDDoc, error) {
	var out []CRDDoc
	seen := map[string]string{}
	for _, path := range paths {
		files, err := manifestFiles(path, recursive)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := ReadFile(f)
			if err != nil {
				return nil, err
			}
			docs, err := ParseCRDs(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, d := range docs {
				d.Source = f + d.Source
				if prev, ok := seen[d.CRD.Name]; ok {
					if prev == d.Source {
						// One file named twice (-f a -f a): the file is
						// the mistake, not its CRDs.
						return nil, fmt.Errorf("%s is given twice", f)
					}
					if doc, same := strings.CutPrefix(prev, f+"#"); same {
						prev = "document " + doc // of the same file
					}
					return nil, fmt.Errorf("%s: CustomResourceDefinition %s is also in %s; when applied, the last would win", d.Source, d.CRD.Name, prev)
				}
				seen[d.CRD.Name] = d.Source
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// ParseCRDs decodes the CustomResourceDefinitions of a multi-document YAML
// or JSON stream. Each Source is "" for a single-document stream, else
// "#N" for the N-th document.
func ParseCRDs(data []byte) ([]CRDDoc, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		if kind, _ := m["kind"].(string); strings.HasSuffix(kind, "List") {
			if items, ok := m["items"].([]any); ok {
				for _, it := range items {
					if im, ok := it.(map[string]any); ok {
						objs = append(objs, im)
					}
				}
				continue
			}
		}
		objs = append(objs, m)
	}
	var out []CRDDoc
	for i, m := range objs {
		apiVersion, _ := m["apiVersion"].(string)
		if kind, _ := m["kind"].(string); kind != "CustomResourceDefinition" || !strings.HasPrefix(apiVersion, "apiextensions.k8s.io/") {
			continue
		}
		src := ""
		if len(objs) > 1 {
			src = fmt.Sprintf("#%d", i+1)
		}
		if apiVersion != "apiextensions.k8s.io/v1" {
			return nil, fmt.Errorf("document %d: %s is %s; only apiextensions.k8s.io/v1 is supported", i+1, nameOf(m), apiVersion)
		}
		if err := checkDepth(m); err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, crd); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		out = append(out, CRDDoc{Source: src, CRD: crd})
	}
	return out, nil
}

// checkDepth fails with a *schema.DepthError when the schema of a version
// of the CRD m (decoded, not yet typed) nests deeper than schema.MaxDepth.
func checkDepth(m map[string]any) error {
	spec, _ := m["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		version, _ := v.(map[string]any)
		validation, _ := version["schema"].(map[string]any)
		if d := schema.DecodedDepth(validation["openAPIV3Schema"]); d > schema.MaxDepth {
			name, _ := version["name"].(string)
			return &schema.DepthError{CRD: nameOf(m), Version: name, Depth: d}
		}
	}
	return nil
}

func nameOf(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

func manifestFiles(path string, recursive bool) ([]string, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file or directory", path)
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// MaxFileBytes bounds every file the plugin reads as input (manifests,
// schema files, CA bundles, standard input): 32 MiB, ten times the largest
// request body the API server accepts (3 MiB), so a real manifest always
// fits while /dev/zero or a runaway file cannot exhaust memory.
const MaxFileBytes = 32 << 20

// ReadFile reads the file at path, or fails with a *TooLargeError when it
// holds more than MaxFileBytes.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path)
}

// ReadAll reads r, named name in errors, to its end, or fails with a
// *TooLargeError when it holds more than MaxFileBytes.
func ReadAll(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		// "read NAME: is a directory" names the file already.
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &TooLargeError{Name: name}
	}
	return data, nil
}

// TooLargeError is an input larger than MaxFileBytes.
type TooLargeError struct{ Name string }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d MiB, the most this plugin reads from one input", e.Name, MaxFileBytes>>20)
}
