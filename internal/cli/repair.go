package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/references"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var repairReferencesLong = templates.LongDesc(`
	Rewrite the owner references, scale targets and Helm release records that name a version of a
	CustomResourceDefinition so that they name a served version (the storage
	version unless --to says another).

	Storage migration rewrites the custom objects, never the objects that
	name them: a ConfigMap, a Job or another custom object created while the
	old version was served keeps ownerReferences[].apiVersion GROUP/OLD, and
	a HorizontalPodAutoscaler or KEDA ScaledObject keeps
	spec.scaleTargetRef.apiVersion GROUP/OLD. Once OLD is unserved, the
	garbage collector cannot resolve that owner, and the object is never
	deleted with it; an autoscaler that maps its target by version cannot
	find it. unserve and retire refuse while such references exist; this
	command repairs them.

	Every listable resource's metadata is read (paged, a few resources at
	once; HorizontalPodAutoscalers and ScaledObjects whole). Each reference
	is rewritten with a JSON patch that first tests the object's uid and the
	reference as it was read (an owner reference's uid and apiVersion, a
	scale target's apiVersion, kind and name), so another writer's change is
	never overwritten: such an object is reported "changed" and left as it
	is. An autoscaler managed by another controller (KEDA's HPAs) or by
	GitOps gets its old version back from that owner: fix it there too. A resource that cannot be read is named; references on
	its objects are unknown and the command exits non-zero.`)

var repairReferencesExample = templates.Examples(`
	# See which owner references, scale targets and Helm release records name v1alpha2, sending nothing
	kubectl crdversion repair-references certificates.pki.example.com v1alpha2 --dry-run=client

	# Ask the API server whether it accepts each rewrite, writing nothing
	kubectl crdversion repair-references certificates.pki.example.com v1alpha2 --dry-run=server

	# Rewrite them to the storage version, and print the report as JSON
	kubectl crdversion repair-references certificates.pki.example.com v1alpha2 -o json`)

// RepairReferencesOptions are the inputs of repair-references.
type RepairReferencesOptions struct {
	CRD          string
	Repair       action.RepairReferencesOptions
	FieldManager string
	client       *cluster.Client
	print        printers.ResourcePrinterFunc
	genericiooptions.IOStreams
}

// NewCmdRepairReferences returns the repair-references command.
func NewCmdRepairReferences(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme)
	var to, fieldManager string
	cmd := &cobra.Command{
		Use:                   "repair-references CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Rewrite the owner references, scale targets and Helm release records that name a version",
		Long:                  repairReferencesLong,
		Example:               repairReferencesExample,
		ValidArgsFunction:     versionCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*RepairReferencesOptions, error) {
			if len(args) != 2 {
				return nil, usageErrorf(cmd, "a CRD and a version are required, got %d arguments", len(args))
			}
			if err := checkVersionNames("", args[1]); err != nil {
				return nil, err
			}
			if to != "" {
				if err := checkVersionNames("--to", to); err != nil {
					return nil, err
				}
			}
			dryRun, err := dryRunFlag(cmd)
			if err != nil {
				return nil, err
			}
			o := &RepairReferencesOptions{CRD: args[0], FieldManager: fieldManager, IOStreams: streams,
				Repair: action.RepairReferencesOptions{Version: args[1], To: to, DryRun: dryRun}}
			if o.print, err = printerFunc(pf, "repair-references", humanPrinter(view.ReferenceRepair)); err != nil {
				return nil, err
			}
			o.client, err = cluster.New(f)
			return o, err
		}),
	}
	pf.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &fieldManager, FieldManager)
	cmd.Flags().StringVar(&to, "to", "", "The version the references are rewritten to: a served version of the CRD (default: the storage version).")
	return cmd
}

// Validate checks the flags.
func (o *RepairReferencesOptions) Validate() error {
	if o.FieldManager == "" {
		return fmt.Errorf("--field-manager must not be empty")
	}
	return nil
}

// Run repairs the references and prints the report; it fails when a
// resource could not be read or a reference was not rewritten.
func (o *RepairReferencesOptions) Run(ctx context.Context) error {
	crd, err := o.client.ResolveCRD(ctx, o.CRD)
	if err != nil {
		return err
	}
	rep, runErr := action.RepairReferences(ctx, referenceFinder(o.client, o.ErrOut), cluster.ReferencePatcher{Client: o.client, FieldManager: o.FieldManager}, crd, o.Repair)
	if rep == nil {
		return runErr
	}
	if err := o.print(rep, o.Out); err != nil {
		return err
	}
	switch unrepaired := rep.Count(references.Changed) + rep.Count(references.Failed); {
	case runErr != nil:
		return fmt.Errorf("%d of the %d references were rewritten before it stopped (listed above), the rest were not: run the command again to finish: %w",
			rep.Count(references.Rewritten), rep.Found, runErr)
	case len(rep.Unseen) > 0:
		return fmt.Errorf("%d resource(s) could not be read: references to %s on their objects are unknown", len(rep.Unseen), rep.Target.APIVersion)
	case unrepaired > 0:
		return fmt.Errorf("%d reference(s) were not rewritten", unrepaired)
	}
	return nil
}

// referenceFinder finds owner references, scale targets and Helm release records on c, with a progress bar on
// errOut when it is a terminal.
func referenceFinder(c *cluster.Client, errOut io.Writer) action.ReferenceFinder {
	return progressFinder{References: preflight.References{Client: c}, errOut: errOut}
}

// progressFinder is preflight.References drawing its progress on a
// terminal.
type progressFinder struct {
	preflight.References
	errOut io.Writer
}

func (p progressFinder) Find(ctx context.Context, target references.Target) (*references.Inventory, error) {
	if term.IsTerminal(p.errOut) {
		update, stop := view.ResourceProgress(p.errOut, "looking for references to "+target.APIVersion)
		defer stop()
		p.Progress = update
	}
	return p.References.Find(ctx, target)
}
