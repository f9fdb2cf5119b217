package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

var checkUpgradeLong = templates.LongDesc(`
	Check a new release's CustomResourceDefinitions against the live cluster
	before applying them.

	For each CRD in the manifests (multi-document YAML, or a directory of
	them): would the API server reject the update (a version of the live
	status.storedVersions missing from the new spec.versions, a changed scope
	or kind, not exactly one storage version), would stored data be lost or
	stored objects be rejected on their next write (the schema findings of
	diff), how kubectl's default version changes, and which served versions
	disappear (clients that still use them break). The prediction from these
	rules is checked with a server-side dry-run update of each CRD (one
	request per CRD; --server-dry-run=false skips it).

	When the release removes versions that status.storedVersions still lists,
	the output gives the kubectl crdversion commands that make the apply
	succeed, in order: the release's storage version added or served if
	needed, made the storage version, every object rewritten at it and
	status.storedVersions trimmed (migrate), then the apply.

	Exit codes, as kubectl diff: 0 every CRD can be applied without
	error-level findings, 1 a CRD would be rejected or has error-level
	findings, 2 the check failed.`)

var checkUpgradeExample = templates.Examples(`
	# Check cert-manager's next release before applying it
	kubectl crdversion check-upgrade -f cert-manager.crds.yaml

	# A directory of CRD manifests, as JSON
	kubectl crdversion check-upgrade -f gateway-api/standard/ -o json

	# Every cluster of the kubeconfig: where would the release be rejected?
	kubectl crdversion check-upgrade -f cert-manager.crds.yaml --all-contexts`)

// CheckUpgradeOptions are the inputs of check-upgrade.
type CheckUpgradeOptions struct {
	PrintFlags   *genericclioptions.PrintFlags
	Filename     string
	Recursive    bool
	ServerDryRun bool
	// Fleet checks the release against several contexts at once.
	Fleet    *FleetFlags
	contexts []string

	client  *cluster.Client
	printer printers.ResourcePrinter
	genericiooptions.IOStreams
}

// NewCmdCheckUpgrade returns the check-upgrade command.
func NewCmdCheckUpgrade(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	o := &CheckUpgradeOptions{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme), ServerDryRun: true, IOStreams: streams,
		Fleet: newFleetFlags(conn, time.Minute)}
	cmd := &cobra.Command{
		Use:                   "check-upgrade -f FILENAME [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Predict what applying a release's CRDs does, and how to make it safe",
		Long:                  checkUpgradeLong,
		Example:               checkUpgradeExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "Manifest file or directory with the release's CRDs (other kinds are ignored).")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "Read the directory of -f recursively.")
	cmd.Flags().BoolVar(&o.ServerDryRun, "server-dry-run", o.ServerDryRun, "Confirm each prediction with a server-side dry-run update of the CRD.")
	o.Fleet.addFlags(cmd)
	return checkCommand(cmd)
}

// Complete checks the arguments and builds the client and printer.
func (o *CheckUpgradeOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "unexpected arguments %v; the release's CRDs are given with -f", args)
	}
	if o.Filename == "" {
		return usageErrorf(cmd, "-f FILENAME is required")
	}
	var err error
	if o.printer, err = plainReportPrinter(o.PrintFlags); err != nil {
		return err
	}
	if o.Fleet.enabled() {
		o.contexts, err = o.Fleet.resolve()
		return err
	}
	o.client, err = cluster.New(f)
	return err
}

// Run checks every CRD of the release, prints the report and returns
// *FindingsError when a CRD would be rejected or has error-level findings.
func (o *CheckUpgradeOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	docs, err := manifest.ReadCRDs(o.Filename, o.Recursive)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no CustomResourceDefinition in %s", o.Filename)
	}
	if o.Fleet.enabled() {
		return o.runFleet(ctx, docs)
	}
	r, err := o.check(ctx, o.client, docs, "kubectl")
	if err != nil {
		return err
	}
	return finishReport(o.Out, o.printer, r, func(w io.Writer) error { return printUpgradeCheck(w, r) }, r.Summary)
}

// dryRun asks the API server to validate the release's CRD as an update of
// live (its spec replaced, labels and annotations merged, as an apply by
// the manager that applied the previous release does), or as a create.
// Refusals of the request itself (RBAC) skip the dry run; other failures
// are returned.
// check is the check of every CRD of docs against one cluster; kubectl is
// how the printed commands start ("kubectl", or "kubectl --context C").
func (o *CheckUpgradeOptions) check(ctx context.Context, c *cluster.Client, docs []manifest.CRDDoc, kubectl string) (*report.UpgradeCheck, error) {
	applyCmd := kubectl + " apply --server-side -f " + o.Filename
	r := &report.UpgradeCheck{Source: o.Filename}
	for _, d := range docs {
		live, err := c.CRDs.Get(ctx, d.CRD.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, err
		}
		p := upgrade.Check(live, d.CRD, d.Source, applyCmd)
		if kubectl != "kubectl" {
			for i, f := range p.Fix {
				p.Fix[i] = strings.Replace(f, "kubectl crdversion ", kubectl+" crdversion ", 1)
			}
		}
		if o.ServerDryRun {
			outcome, msg, err := dryRun(ctx, c, live, d.CRD)
			if err != nil {
				return nil, err
			}
			p.SetServerDryRun(outcome, msg)
		}
		for _, f := range p.Findings {
			r.Summary.Add(f.Severity)
		}
		if p.Apply == upgrade.Rejected {
			r.Summary.Incompatible = true
		}
		r.CRDs = append(r.CRDs, p)
	}
	return r, nil
}

func dryRun(ctx context.Context, c *cluster.Client, live, next *apiextensionsv1.CustomResourceDefinition) (string, string, error) {
	var err error
	if live == nil {
		obj := next.DeepCopy()
		obj.ResourceVersion, obj.Status = "", apiextensionsv1.CustomResourceDefinitionStatus{}
		_, err = c.CRDs.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	} else {
		err = c.DryRunUpdateCRD(ctx, live, func(obj *apiextensionsv1.CustomResourceDefinition) {
			obj.Spec = next.Spec
			obj.Labels = merged(obj.Labels, next.Labels)
			obj.Annotations = merged(obj.Annotations, next.Annotations)
		}, FieldManager)
	}
	switch {
	case err == nil:
		return upgrade.DryRunAccepted, "", nil
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return upgrade.DryRunRejected, err.Error(), nil
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsConflict(err):
		return upgrade.DryRunSkipped, err.Error(), nil
	}
	return "", "", err
}

func merged(a, b map[string]string) map[string]string {
	if len(a)+len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

func printUpgradeCheck(out io.Writer, r *report.UpgradeCheck) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CRD\tINSTALLED\tSTORAGE\tAPPLY\tDATA LOSS\tDEFAULT VERSION\tSERVED VERSIONS REMOVED")
	for _, p := range r.CRDs {
		storage, def := p.NewStorageVersion, p.NewDefaultVersion
		if p.Installed {
			storage = arrow(p.LiveStorageVersion, p.NewStorageVersion)
			def = arrow(p.LiveDefaultVersion, p.NewDefaultVersion)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, yesNo(p.Installed), dash(storage), strings.ToLower(p.Apply), yesNo(p.DataLoss), dash(def), dash(strings.Join(p.RemovedServedVersions, ",")))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, p := range r.CRDs {
		notable := 0
		for _, f := range p.Findings {
			if f.Severity != lifecycle.SeverityInfo {
				notable++
			}
		}
		if p.Apply == upgrade.Accepted && notable == 0 && p.ServerDryRun != upgrade.DryRunSkipped {
			continue
		}
		fmt.Fprintf(out, "\n%s (%s):\n", p.Name, p.Source)
		switch {
		case p.Apply == upgrade.Rejected:
			fmt.Fprintln(out, "  Apply: REJECTED by the API server")
		default:
			fmt.Fprintln(out, "  Apply: accepted")
		}
		for _, reason := range p.Reasons {
			fmt.Fprintf(out, "    - %s\n", reason)
		}
		switch {
		case p.ServerDryRun == upgrade.DryRunSkipped && p.ServerMessage != "":
			fmt.Fprintf(out, "  Server dry run: skipped (%s)\n", p.ServerMessage)
		case p.ServerDryRun != upgrade.DryRunSkipped && p.ServerDryRun != strings.ToLower(p.Static):
			fmt.Fprintf(out, "  Server dry run: %s, unlike the prediction from the update rules (%s): %s\n", p.ServerDryRun, strings.ToLower(p.Static), dash(p.ServerMessage))
		case p.ServerDryRun == upgrade.DryRunRejected:
			fmt.Fprintf(out, "  Server dry run: rejected: %s\n", p.ServerMessage)
		case p.ServerDryRun == upgrade.DryRunAccepted:
			fmt.Fprintln(out, "  Server dry run: accepted")
		}
		if notable > 0 {
			fmt.Fprintln(out, "  Findings:")
			for _, f := range p.Findings {
				if f.Severity == lifecycle.SeverityInfo {
					continue
				}
				fmt.Fprintf(out, "    %s %s %s: %s\n", strings.ToUpper(string(f.Severity)), dash(f.Version), f.Path, f.Message)
			}
		}
		if len(p.Fix) > 0 {
			fmt.Fprintln(out, "  To upgrade safely, run in order:")
			for i, c := range p.Fix {
				fmt.Fprintf(out, "    %d. %s\n", i+1, c)
			}
		}
	}
	fmt.Fprintf(out, "\n%s; %s\n", plural(len(r.CRDs), "CRD"), summaryText(r.Summary))
	return nil
}

func arrow(a, b string) string {
	if a == b {
		return a
	}
	return dash(a) + " -> " + dash(b)
}
