package cli

import (
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestRefreshCommand: the printed kubectl api-resources reaches the
// cluster and the discovery cache of the command that printed it
// (--kubeconfig, --context, --cache-dir as typed), and nothing else.
func TestRefreshCommand(t *testing.T) {
	conn := genericclioptions.NewConfigFlags(true)
	cmd := NewCmdUnserve(nil, genericiooptions.NewTestIOStreamsDiscard())
	conn.AddFlags(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--kubeconfig", "kc2", "--context", "other", "--cache-dir", "/tmp/c d", "-n", "team-a"}); err != nil {
		t.Fatal(err)
	}
	if got, want := refreshCommand(cmd.Flags()), "kubectl --kubeconfig kc2 --context other --cache-dir '/tmp/c d' api-resources"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
