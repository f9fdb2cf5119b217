package cli

import (
	"slices"

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
	names := connectionFlagNames
	if fleet {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "context" || n == "cluster" || n == "user" })
	}
	return changedFlags(fs, names)
}

// refreshCommand is the kubectl command that refreshes kubectl's cached
// discovery of the cluster these flags reach (kubectl api-resources
// invalidates the cache first), with the connection flags and the
// --cache-dir the user typed.
func refreshCommand(fs *pflag.FlagSet) string {
	return lifecycle.Kubectl("api-resources").Render(append(connectionFlags(fs, false), changedFlags(fs, []string{"cache-dir"})...))
}

// changedFlags returns the flags of names that the user typed, in the
// order of names, one Flag per value of a repeated flag.
func changedFlags(fs *pflag.FlagSet, names []string) []lifecycle.Flag {
	var out []lifecycle.Flag
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, lifecycle.Flag{Name: name, Value: v})
			}
			continue
		}
		// A flag whose value is optional takes it only after "=".
		out = append(out, lifecycle.Flag{Name: name, Value: f.Value.String(), Joined: f.NoOptDefVal != ""})
	}
	return out
}
