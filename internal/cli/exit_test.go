package cli

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestPrintRefusal: a refusal's details are printed once, above its error
// line: those not shown yet (missing permissions), not those the preflight
// printed as FAIL lines.
func TestPrintRefusal(t *testing.T) {
	missing := &access.MissingError{Operation: "unserve", CRD: "crontabs.stable.example.com", Missing: access.EditCRD()}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"missing permissions, wrapped", fmt.Errorf("plan: %w", missing),
			"Missing permission(s) to unserve crontabs.stable.example.com:\n  - update customresourcedefinitions.apiextensions.k8s.io (to write the CRD)\n"},
		{"FAIL lines already printed", &lifecycle.RefusalError{Operation: "unserve", CRD: "c", Reason: "r", Details: []string{"d"}, Shown: true}, ""},
		{"another error", fmt.Errorf("boom"), ""},
		{"no error", nil, ""},
	} {
		var out bytes.Buffer
		printRefusal(&out, tc.err)
		if out.String() != tc.want {
			t.Errorf("%s: printed %q, want %q", tc.name, out.String(), tc.want)
		}
	}
}
