package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/crdversion/kubectl-crdversion/internal/fleet"
)

// FleetFlags run a command against several kubeconfig contexts at once.
type FleetFlags struct {
	Contexts       []string
	AllContexts    bool
	ClusterTimeout time.Duration
	Parallel       int

	// base are the connection flags every context's connection copies.
	base *genericclioptions.ConfigFlags
}

func newFleetFlags(base *genericclioptions.ConfigFlags, timeout time.Duration) *FleetFlags {
	return &FleetFlags{base: base, ClusterTimeout: timeout, Parallel: 8}
}

func (fl *FleetFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&fl.Contexts, "contexts", nil, "Run against each of these kubeconfig contexts (comma-separated) at once, and combine the results.")
	cmd.Flags().BoolVar(&fl.AllContexts, "all-contexts", false, "Run against every context of the kubeconfig at once.")
	cmd.Flags().DurationVar(&fl.ClusterTimeout, "cluster-timeout", fl.ClusterTimeout, "With --contexts or --all-contexts: the time each cluster is given; a cluster that takes longer is reported as unreachable.")
	cmd.Flags().IntVar(&fl.Parallel, "parallel", fl.Parallel, "With --contexts or --all-contexts: clusters worked on at once.")
}

// enabled reports whether the command runs against a fleet.
func (fl *FleetFlags) enabled() bool { return fl != nil && (len(fl.Contexts) > 0 || fl.AllContexts) }

// resolve returns the contexts to run against, checked against the
// kubeconfig, in the order given (--contexts) or sorted (--all-contexts).
func (fl *FleetFlags) resolve() ([]string, error) {
	switch {
	case len(fl.Contexts) > 0 && fl.AllContexts:
		return nil, fmt.Errorf("--contexts and --all-contexts cannot be used together")
	case fl.Parallel <= 0:
		return nil, fmt.Errorf("--parallel must be positive, got %d", fl.Parallel)
	case fl.ClusterTimeout <= 0:
		return nil, fmt.Errorf("--cluster-timeout must be positive, got %s", fl.ClusterTimeout)
	case fl.base.Context != nil && *fl.base.Context != "":
		return nil, fmt.Errorf("--context cannot be used with --contexts or --all-contexts")
	case (fl.base.ClusterName != nil && *fl.base.ClusterName != "") || (fl.base.AuthInfoName != nil && *fl.base.AuthInfoName != "") || (fl.base.APIServer != nil && *fl.base.APIServer != ""):
		return nil, fmt.Errorf("--cluster, --user and --server cannot be used with --contexts or --all-contexts: each context names its own")
	}
	raw, err := fl.base.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	return fleet.Select(slices.Collect(maps.Keys(raw.Contexts)), fl.Contexts, fl.AllContexts)
}

// getter is the connection to one context: the command's connection flags
// with --context set to name.
func (fl *FleetFlags) getter(name string) *genericclioptions.ConfigFlags {
	b := fl.base
	c := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0)
	c.CacheDir, c.KubeConfig, c.Namespace = b.CacheDir, b.KubeConfig, b.Namespace
	c.TLSServerName, c.Insecure, c.CertFile, c.KeyFile, c.CAFile, c.BearerToken = b.TLSServerName, b.Insecure, b.CertFile, b.KeyFile, b.CAFile, b.BearerToken
	c.Impersonate, c.ImpersonateUID, c.ImpersonateGroup, c.ImpersonateUserExtra = b.Impersonate, b.ImpersonateUID, b.ImpersonateGroup, b.ImpersonateUserExtra
	c.Username, c.Password, c.Timeout, c.DisableCompression, c.ProxyURL = b.Username, b.Password, b.Timeout, b.DisableCompression, b.ProxyURL
	c.WrapConfigFn = b.WrapConfigFn
	c.Context = &name
	return c
}

// server is the API server URL a context points at, for the output.
func (fl *FleetFlags) server(name string) string {
	cfg, err := fl.getter(name).ToRESTConfig()
	if err != nil {
		return ""
	}
	return cfg.Host
}

// eachCluster calls fn for every context, at most fl.Parallel at once,
// each with its own deadline, and returns the results in context order.
func eachCluster[T any](ctx context.Context, fl *FleetFlags, names []string, fn func(ctx context.Context, name string, getter *genericclioptions.ConfigFlags) T) []T {
	return fleet.Each(ctx, names, fl.Parallel, fl.ClusterTimeout, func(ctx context.Context, name string) T {
		return fn(ctx, name, fl.getter(name))
	})
}
