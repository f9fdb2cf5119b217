package cli

import (
	"testing"

	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// TestDryRunFlag checks the one conversion of --dry-run: each value kubectl
// accepts becomes one lifecycle.DryRun, and an unknown value is refused.
func TestDryRunFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want lifecycle.DryRun
	}{
		{nil, lifecycle.DryRunNone},
		{[]string{"--dry-run=none"}, lifecycle.DryRunNone},
		{[]string{"--dry-run"}, lifecycle.DryRunClient},
		{[]string{"--dry-run=client"}, lifecycle.DryRunClient},
		{[]string{"--dry-run=server"}, lifecycle.DryRunServer},
	} {
		cmd := &cobra.Command{}
		cmdutil.AddDryRunFlag(cmd)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := dryRunFlag(cmd)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %s, %v; want %s", tc.args, got, err, tc.want)
		}
	}
	cmd := &cobra.Command{}
	cmdutil.AddDryRunFlag(cmd)
	if err := cmd.ParseFlags([]string{"--dry-run=all"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dryRunFlag(cmd); err == nil {
		t.Error("--dry-run=all: no error, want kubectl's refusal of an unknown value")
	}
}
