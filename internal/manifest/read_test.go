package manifest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
