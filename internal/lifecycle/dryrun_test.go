package lifecycle

import (
	"slices"
	"testing"
)

func TestDryRunRequest(t *testing.T) {
	for d, want := range map[DryRun]struct {
		name            string
		request         []string
		sends, persists bool
	}{
		DryRunNone:   {"none", nil, true, true},
		DryRunClient: {"client", nil, false, false},
		DryRunServer: {"server", []string{"All"}, true, false},
	} {
		if got := d.String(); got != want.name {
			t.Errorf("DryRun(%d).String() = %q, want %q", d, got, want.name)
		}
		if got := d.Request(); !slices.Equal(got, want.request) {
			t.Errorf("%s: Request() = %q, want %q", d, got, want.request)
		}
		if d.Sends() != want.sends || d.Persists() != want.persists {
			t.Errorf("%s: Sends, Persists = %v, %v, want %v, %v", d, d.Sends(), d.Persists(), want.sends, want.persists)
		}
	}
}
