package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// TestReadAllIsBounded: an input of MaxFileBytes is read; one byte more is
// a *TooLargeError, and an endless input stops there.
func TestReadAllIsBounded(t *testing.T) {
	data, err := ReadAll(strings.NewReader(strings.Repeat("x", MaxFileBytes)), "exact")
	if err != nil || len(data) != MaxFileBytes {
		t.Fatalf("MaxFileBytes bytes: %d read, %v", len(data), err)
	}
	var tooLarge *TooLargeError
	if _, err := ReadAll(strings.NewReader(strings.Repeat("x", MaxFileBytes+1)), "over"); !errors.As(err, &tooLarge) || tooLarge.Name != "over" {
		t.Fatalf("MaxFileBytes+1 bytes: %v, want a *TooLargeError", err)
	}
	if _, err := ReadAll(endless{}, "endless"); !errors.As(err, &tooLarge) {
		t.Fatalf("an endless input: %v, want a *TooLargeError", err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

var _ io.Reader = endless{}

// TestReadCRDsOfNamesTheOtherDocument: a CRD twice in one file is named
// with both documents, the file once, so that the error line stays short.
func TestReadCRDsOfNamesTheOtherDocument(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crontabs.stable.example.com\n"
	file := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(file, []byte(crd+"---\n"+crd), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadCRDsOf([]string{file}, false)
	want := file + "#2: CustomResourceDefinition crontabs.stable.example.com is also in document 1; when applied, the last would win"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// TestSchemaDepthIsBounded: a CRD whose schema nests schema.MaxDepth
// levels, through properties, items, additionalProperties or each in
// turn, is read; one level more is a *schema.DepthError naming the CRD,
// the version and the depth, from every reader of CRD files: ReadCRDs
// (diff, check-upgrade), File.FindCRD (the edits of a manifest) and
// ReadSchemaFile, bare or wrapped.
func TestSchemaDepthIsBounded(t *testing.T) {
	dir := t.TempDir()
	crd := crdtest.New("deeps.example.com").Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).CRD()
	leaf := apiextensionsv1.JSONSchemaProps{Type: "string"}
	for i, through := range [][]crdtest.Nesting{
		{crdtest.ThroughProperties}, {crdtest.ThroughItems}, {crdtest.ThroughAdditionalProperties},
		{crdtest.ThroughProperties, crdtest.ThroughItems, crdtest.ThroughAdditionalProperties},
	} {
		write := func(name string, data []byte) string {
			t.Helper()
			path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", i, name))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
		manifest := func(depth int) []byte {
			t.Helper()
			data, err := crdtest.WithSchemaJSON(crd, "v2", crdtest.NestedJSON(depth, leaf, through...))
			if err != nil {
				t.Fatal(err)
			}
			return data
		}

		atLimit := write("limit", manifest(schema.MaxDepth))
		if docs, err := ReadCRDs(atLimit, false); err != nil || len(docs) != 1 {
			t.Errorf("%v, %d levels: %v (%d CRDs)", through, schema.MaxDepth, err, len(docs))
		}
		want := &schema.DepthError{CRD: "deeps.example.com", Version: "v2", Depth: schema.MaxDepth + 1}
		check := func(what string, err error) {
			t.Helper()
			var depthErr *schema.DepthError
			if !errors.As(err, &depthErr) || *depthErr != *want || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v, %s: %v, want one line of %v", through, what, err, want)
			}
		}
		data := manifest(schema.MaxDepth + 1)
		tooDeep := write("deep", data)
		_, err := ReadCRDs(tooDeep, false)
		check("ReadCRDs", err)
		_, _, err = Parse(data).FindCRD("deeps.example.com")
		check("FindCRD", err)
		_, err = ReadSchemaFile(tooDeep, "deeps.example.com", "v2")
		check("ReadSchemaFile of the manifest", err)
		bare := crdtest.NestedJSON(schema.MaxDepth+1, leaf, through...)
		_, err = ReadSchemaFile(write("bare", bare), "deeps.example.com", "v2")
		check("ReadSchemaFile of the bare schema", err)
		wrapped := append(append([]byte(`{"openAPIV3Schema":`), bare...), '}')
		_, err = ReadSchemaFile(write("wrapped", wrapped), "deeps.example.com", "v2")
		check("ReadSchemaFile of the wrapped schema", err)
	}
}
