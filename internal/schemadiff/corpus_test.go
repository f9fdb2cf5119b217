package schemadiff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// corpusDir is the shared CRD corpus beside the repository, or
// $CRDVERSION_CORPUS.
func corpusDir() string {
	if d := os.Getenv("CRDVERSION_CORPUS"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "crds")
}

// shape1Files are the CRDs with several versions, conversion None and
// identical schemas: the copies in testdata/, and, when the shared corpus
// is present, every file its sources.json marks as shape 1.
func shape1Files(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "crds", "gateway-api", "v0.6.2", "*.nodesc.yaml"))
	data, err := os.ReadFile(filepath.Join(corpusDir(), "sources.json"))
	if err != nil {
		t.Logf("no shared corpus (%v); testdata only", err)
		return files
	}
	var sources []struct {
		Dest   string   `json:"dest"`
		Type   string   `json:"type"`
		Shapes []string `json:"shapes"`
	}
	if err := json.Unmarshal(data, &sources); err != nil {
		t.Fatal(err)
	}
	for _, s := range sources {
		if s.Type == "crd" && slices.Contains(s.Shapes, "1") {
			files = append(files, filepath.Join(corpusDir(), s.Dest))
		}
	}
	return files
}

// TestShape1NoErrors: between any two versions of a CRD whose versions
// share one schema, and between the CRD and itself, there is no
// error-level finding.
func TestShape1NoErrors(t *testing.T) {
	files := shape1Files(t)
	if len(files) < 4 {
		t.Fatalf("only %d shape-1 files", len(files))
	}
	pairs := 0
	for _, f := range files {
		docs, err := manifest.ReadCRDs(f, false)
		if err != nil || len(docs) == 0 {
			t.Fatalf("%s: %v (%d CRDs)", f, err, len(docs))
		}
		for _, d := range docs {
			crd := d.CRD
			if len(crd.Spec.Versions) < 2 {
				t.Errorf("%s: %s has %d versions; not shape 1", f, crd.Name, len(crd.Spec.Versions))
			}
			for _, a := range crd.Spec.Versions {
				for _, b := range crd.Spec.Versions {
					got, err := Versions(crd, a.Name, b.Name)
					if err != nil {
						t.Fatal(err)
					}
					pairs++
					if n := Count(got, lifecycle.SeverityError); n > 0 {
						t.Errorf("%s: %s %s -> %s: %d errors: %+v", f, crd.Name, a.Name, b.Name, n, got)
					}
				}
			}
			if got := CRDs(crd, crd); len(got) > 0 {
				t.Errorf("%s: %s compared with itself: %+v", f, crd.Name, got)
			}
		}
	}
	t.Logf("%d files, %d version pairs", len(files), pairs)
}
