package cli

import (
	"context"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/completion"
)

// Shell completion. A command opts in with one line,
//
//	ValidArgsFunction: completeArgs(f, argCRD, argVersion),
//
// naming what each positional argument is; crdNameCompletion and
// versionCompletion are the two common cases. Completions come from the
// live cluster the connection flags on the command line select (a
// --kubeconfig or --context typed before TAB applies), and a cluster that
// cannot be reached completes nothing rather than failing. kubectl's own
// completion reaches them through the kubectl_complete-crdversion script
// (cmd/kubectl-crdversion), which runs `kubectl-crdversion __complete`.

// argKind is what a positional argument names.
type argKind int

const (
	// argCRD is the name of a CRD of the cluster (the first argument).
	argCRD argKind = iota
	// argVersion is a version in spec.versions of the CRD named by the
	// first argument; versions already given are not offered again.
	argVersion
	// argNew is a name that does not exist yet (add-version's new
	// version): nothing is offered.
	argNew
	// argCRDs, last, is any number of CRD names (CRD_NAME...); those
	// already given are not offered again.
	argCRDs
)

// completeArgs completes positional argument i as kinds[i]; arguments past
// the last kind complete nothing. Files are never offered.
func completeArgs(f cmdutil.Factory, kinds ...argKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		kind := argNew
		switch {
		case len(args) < len(kinds):
			kind = kinds[len(args)]
		case len(kinds) > 0 && kinds[len(kinds)-1] == argCRDs:
			kind = argCRDs
		}
		switch kind {
		case argCRD:
			return completeCRDNames(cmd, f, nil, toComplete), cobra.ShellCompDirectiveNoFileComp
		case argCRDs:
			return completeCRDNames(cmd, f, args, toComplete), cobra.ShellCompDirectiveNoFileComp
		case argVersion:
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeVersions(cmd, f, args[0], args[1:], toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// crdNameCompletion completes a CRD name as the first argument.
func crdNameCompletion(f cmdutil.Factory) cobra.CompletionFunc { return completeArgs(f, argCRD) }

// versionCompletion completes "CRD_NAME VERSION".
func versionCompletion(f cmdutil.Factory) cobra.CompletionFunc {
	return completeArgs(f, argCRD, argVersion)
}

// completeVersionFlag makes flag complete the versions of the CRD named by
// the first argument.
func completeVersionFlag(f cmdutil.Factory, cmd *cobra.Command, flag string) {
	cmdutil.CheckErr(cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeVersions(cmd, f, args[0], nil, toComplete), cobra.ShellCompDirectiveNoFileComp
	}))
}

func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// completeCRDNames returns the names of the cluster's CRDs that start with
// prefix and are not in given, each described by its kind.
func completeCRDNames(cmd *cobra.Command, f cmdutil.Factory, given []string, prefix string) []string {
	c, err := cluster.New(f)
	if err != nil {
		return nil
	}
	list, err := c.CRDs.List(completionContext(cmd), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	return completion.CRDNames(list.Items, given, prefix)
}

// completeVersions returns the versions of the CRD named crdArg that start
// with prefix and are not in given, in kubectl's priority order, each
// described by its state (storage, served, deprecated).
func completeVersions(cmd *cobra.Command, f cmdutil.Factory, crdArg string, given []string, prefix string) []string {
	c, err := cluster.New(f)
	if err != nil {
		return nil
	}
	crd, err := c.ResolveCRD(completionContext(cmd), crdArg)
	if err != nil {
		return nil
	}
	return completion.Versions(crd, given, prefix)
}
