package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/guard"
)

var guardLong = templates.LongDesc(`
	Print, or install with --apply, a ValidatingAdmissionPolicy and binding
	that make the API server refuse updates of a CRD that remove a version,
	unserve one or move the storage version — whoever sends them — unless
	kubectl crdversion's preflight passed for exactly that change: the tool
	stamps its own writes of a guarded CRD. The annotation
	crdversion.kubectl.io/break-glass=REASON in the same update lets one
	change through. A policy cannot count objects or see clients; it makes
	sure the change went through the preflights that do (docs/guard.md).`)

var guardExample = templates.Examples(`
	# Print the guard of crontabs.stable.example.com (YAML, for a GitOps repository)
	kubectl crdversion guard crontabs.stable.example.com

	# Install it
	kubectl crdversion guard crontabs.stable.example.com --apply`)

// GuardOptions are guard's inputs.
type GuardOptions struct {
	CRD   string
	Apply bool
	// FieldManager is the field manager of the writes of --apply.
	FieldManager string

	getter genericclioptions.RESTClientGetter
	print  printers.ResourcePrinter
	genericiooptions.IOStreams
}

// NewCmdGuard returns the guard command.
func NewCmdGuard(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	printFlags := genericclioptions.NewPrintFlags("").WithTypeSetter(guardScheme).WithDefaultOutput("yaml")
	o := &GuardOptions{FieldManager: FieldManager, getter: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "guard CRD_NAME [--apply]",
		DisableFlagsInUseLine: true,
		Short:                 "Make the API server refuse unsafe version changes of a CRD that skip the preflights",
		Long:                  guardLong,
		Example:               guardExample,
		ValidArgsFunction:     crdNameCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*GuardOptions, error) {
			if len(args) != 1 {
				return nil, usageErrorf(cmd, "guard takes one CRD name, got %d argument(s)", len(args))
			}
			o.CRD = args[0]
			p, err := toPrinter(printFlags)
			if err != nil {
				return nil, err
			}
			o.print = p
			return o, nil
		}),
	}
	printFlags.AddFlags(cmd)
	cmd.Flags().BoolVar(&o.Apply, "apply", false, "Install the policy and binding, and mark the CRD guarded, instead of printing them.")
	cmd.Flags().StringVar(&o.FieldManager, "field-manager", o.FieldManager, "The field manager of the writes of --apply.")
	return cmd
}

// guardScheme knows the policy types, for the printers' type setter.
var guardScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = admissionregistrationv1.AddToScheme(s)
	_ = metav1.AddMetaToScheme(s)
	return s
}()

// Validate checks the options.
func (o *GuardOptions) Validate() error { return nil }

// Run prints the guard, or installs it for an installed CRD.
func (o *GuardOptions) Run(ctx context.Context) error {
	policy, binding := guard.Policy(o.CRD)
	if !o.Apply {
		if err := o.print.PrintObj(policy, o.Out); err != nil {
			return err
		}
		return o.print.PrintObj(binding, o.Out)
	}
	c, err := cluster.New(o.getter)
	if err != nil {
		return err
	}
	if _, err := c.GetCRD(ctx, o.CRD); err != nil {
		return err
	}
	if err := c.InstallGuard(ctx, o.CRD, policy, binding, o.FieldManager); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "validatingadmissionpolicy/%s and its binding installed; %s is guarded: updates that remove, unserve or move the storage version without kubectl crdversion's preflight are refused\n", policy.Name, o.CRD)
	return err
}
