package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
)

// NewCmdServe returns the serve command.
func NewCmdServe(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newServedCommand(f, streams, true)
}

// NewCmdUnserve returns the unserve command.
func NewCmdUnserve(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newServedCommand(f, streams, false)
}

func newServedCommand(f cmdutil.Factory, streams genericiooptions.IOStreams, served bool) *cobra.Command {
	name, short, long, example := "serve", "Serve a version of a CRD again", templates.LongDesc(`
		Set served: true on a version of a CustomResourceDefinition, so that its
		endpoint is back in the API.`), templates.Examples(`
		# Serve v1beta1 of a CRD again
		kubectl crdversion serve crontabs.stable.example.com v1beta1`)
	if !served {
		name, short, long, example = "unserve", "Stop serving a version of a CRD", templates.LongDesc(`
			Set served: false on a version of a CustomResourceDefinition: its
			endpoint leaves the API, and clients that still use it fail.

			Preflight: the version is not the storage version; another version
			stays served; and no client requests it: the API server's metrics show
			no request to the version during --usage-window and no watch open on
			it (the evidence is printed; --skip-usage-check skips this, and the
			output records it). Objects stay readable through the other versions.`), templates.Examples(`
			# Stop serving v1beta1 after clients moved to v1
			kubectl crdversion unserve crontabs.stable.example.com v1beta1

			# Watch for clients for a minute first
			kubectl crdversion unserve crontabs.stable.example.com v1beta1 --usage-window 1m

			# See what would change, validated by the API server, without writing
			kubectl crdversion unserve crontabs.stable.example.com v1beta1 --dry-run=server`)
	}
	o := newEditOptions(name, streams)
	var usageFlags UsageFlags
	cmd := &cobra.Command{
		Use:                   name + " CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 short,
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     versionCompletion(f),
		RunE: o.runE(f, func(*cobra.Command) error { return usageFlags.validate() }, func(ctx context.Context, _ *cobra.Command) error {
			return runSetServed(ctx, o, served, usageFlags)
		}),
	}
	o.addFlags(cmd)
	if !served {
		usageFlags.addFlags(cmd, 15*time.Second)
	}
	return cmd
}

func runSetServed(ctx context.Context, o *EditOptions, served bool, u UsageFlags) error {
	crd, err := o.load(ctx)
	if err != nil {
		return err
	}
	r := edit.SetServed(crd, o.Version, served)
	if !served && !r.NoOp && len(r.Checks.Failed()) == 0 {
		check, err := usageCheck(ctx, o, crd, u)
		if err != nil {
			return err
		}
		r.Checks = append(r.Checks, check)
	}
	return o.apply(ctx, r)
}

// usageCheck is unserve's client-usage preflight: the API server's metrics
// for the version over the window. Use, or metrics that cannot be read,
// fail the check unless it is skipped.
func usageCheck(ctx context.Context, o *EditOptions, crd *apiextensionsv1.CustomResourceDefinition, u UsageFlags) (edit.Check, error) {
	const name = "ClientUsage"
	gv := crd.Spec.Group + "/" + o.Version
	switch {
	case u.SkipUsageCheck:
		return edit.Check{Name: name, Outcome: edit.Warn, Message: "client usage of " + gv + " was NOT checked (--skip-usage-check)"}, nil
	case o.client == nil || (o.file != nil && o.live == nil):
		return edit.Check{Name: name, Outcome: edit.Skip, Message: "client usage of " + gv + " not checked: " + o.liveSkip}, nil
	}
	fmt.Fprintf(o.ErrOut, "Measuring client requests to %s over %s from the API server's metrics…\n", gv, u.UsageWindow)
	rep, err := o.client.ClientUsage(ctx, cluster.GVR(crd, o.Version), u.UsageWindow)
	var me *cluster.MetricsError
	switch {
	case errors.As(err, &me):
		return edit.Check{Name: name, Outcome: edit.Fail, Message: fmt.Sprintf("whether clients still use %s is unknown: %v (grant get on the non-resource URL /metrics, or pass --skip-usage-check once you know no client uses it)", gv, me)}, nil
	case err != nil:
		return edit.Check{}, err
	}
	c := edit.Check{Name: name, Details: rep.Evidence()}
	switch rep.Verdict {
	case usage.InUse:
		c.Outcome, c.Message = edit.Fail, fmt.Sprintf("clients still use %s: move them to another version first (or pass --skip-usage-check)", gv)
	case usage.Unknown:
		c.Outcome, c.Message = edit.Fail, fmt.Sprintf("whether clients still use %s is unknown: %s; re-run", gv, rep.Reason)
	default:
		c.Outcome, c.Message = edit.Pass, "no client request to "+gv+" seen"
	}
	return c, nil
}
