package cli

import (
	"github.com/spf13/pflag"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// connectionFlagNames are kubectl's connection flags that select the
// cluster and identity, in the order they are printed. Credentials
// (--token, --username, --password) are never repeated in printed commands;
// --namespace and --request-timeout do not select a cluster.
var connectionFlagNames = []string{"kubeconfig", "context", "cluster", "user", "server", "tls-server-name",
	"certificate-authority", "client-certificate", "client-key", "insecure-skip-tls-verify", "as", "as-group", "as-uid"}

// connectionFlags returns the connection flags the user typed, so that the
// commands the plugin prints (fix:, Next:, run:) reach the same cluster as
// the command that printed them. fleet leaves out the flags that pick a
// context, cluster or user: each cluster's commands name their own
// --context.
func connectionFlags(fs *pflag.FlagSet, fleet bool) []lifecycle.Flag {
	var out []lifecycle.Flag
	for _, name := range connectionFlagNames {
		f := fs.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if fleet && (name == "context" || name == "cluster" || name == "user") {
			continue
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, lifecycle.Flag{Name: name, Value: v})
			}
			continue
		}
		out = append(out, lifecycle.Flag{Name: name, Value: f.Value.String()})
	}
	return out
}
