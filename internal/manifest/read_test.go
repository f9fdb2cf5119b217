package manifest

import (
	"errors"
	"io"
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
