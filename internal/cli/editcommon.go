package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/access"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
)

// crdScheme types CRDs for the printers, so -o yaml keeps apiVersion/kind.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// EditOptions are what every spec.versions edit (add-version,
// promote-storage, deprecate, serve, unserve) shares: the CRD and version
// arguments, dry run, output, field manager and confirmation.
type EditOptions struct {
	PrintFlags   *genericclioptions.PrintFlags
	FieldManager string
	Interactive  bool
	DryRun       cmdutil.DryRunStrategy

	// CRD and Version are the positional arguments.
	CRD     string
	Version string

	// Filename selects manifest mode: the edit is made to the CRD named CRD
	// in this file instead of the cluster. InPlace writes the file back
	// instead of printing it.
	Filename string
	InPlace  bool
	file     *manifest.File
	fileDoc  int
	// live is the CRD as the cluster has it, in manifest mode when the
	// cluster is reachable and has it; liveSkip says why not otherwise.
	live     *apiextensionsv1.CustomResourceDefinition
	liveSkip string

	operation string
	client    *cluster.Client
	printer   printers.ResourcePrinter // nil: human-readable
	genericiooptions.IOStreams
}

func newEditOptions(operation string, streams genericiooptions.IOStreams) *EditOptions {
	return &EditOptions{
		PrintFlags: genericclioptions.NewPrintFlags("edited").WithTypeSetter(crdScheme),
		operation:  operation,
		IOStreams:  streams,
	}
}

// addFlags registers -o, --dry-run, --field-manager and -i.
func (o *EditOptions) addFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &o.FieldManager, FieldManager)
	cmd.Flags().BoolVarP(&o.Interactive, "interactive", "i", false, "Show the preflight and ask for confirmation (y/N) before writing.")
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "Edit the CRD in this manifest file (multi-document YAML; - for standard input) instead of the cluster; the cluster, when reachable, still provides storedVersions and objects for the preflight.")
	cmd.Flags().BoolVar(&o.InPlace, "in-place", false, "With -f, write the edited file back instead of printing it.")
}

// complete takes "CRD VERSION" and builds the client and printer.
func (o *EditOptions) complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 2 {
		return usageErrorf(cmd, "a CRD and a version are required, got %d arguments", len(args))
	}
	o.CRD, o.Version = args[0], args[1]
	if err := checkVersionNames("", o.Version); err != nil {
		return err
	}
	var err error
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.DryRun)
	if *o.PrintFlags.OutputFormat != "" {
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	if o.Interactive && o.DryRun != cmdutil.DryRunNone {
		return fmt.Errorf("--interactive cannot be used with --dry-run")
	}
	if o.InPlace && o.Filename == "" {
		return fmt.Errorf("--in-place needs -f FILE")
	}
	if o.Filename != "" {
		if o.printer != nil {
			return fmt.Errorf("-o cannot be used with -f: the edited file is the output")
		}
		var data []byte
		var err error
		if o.Filename == "-" {
			if o.InPlace {
				return fmt.Errorf("--in-place cannot write back to standard input")
			}
			data, err = manifest.ReadAll(o.In, "standard input")
		} else {
			data, err = manifest.ReadFile(o.Filename)
		}
		if err != nil {
			return err
		}
		o.file = manifest.Parse(data)
		// The cluster is optional in manifest mode.
		if c, err := cluster.New(f); err == nil {
			o.client = c
		} else {
			o.liveSkip = "no cluster configured (" + err.Error() + ")"
		}
		return nil
	}
	o.client, err = cluster.New(f)
	return err
}

// load returns the CRD to edit: the live one, or in manifest mode the one
// in the file, with the live status (storedVersions) when the cluster has
// the CRD.
func (o *EditOptions) load(ctx context.Context) (*apiextensionsv1.CustomResourceDefinition, error) {
	if o.file == nil {
		return o.client.ResolveCRD(ctx, o.CRD)
	}
	i, crd, err := o.file.FindCRD(o.CRD)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Filename, err)
	}
	o.fileDoc = i
	if o.client != nil {
		live, err := o.client.CRDs.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			o.live = live
			crd.Status = live.Status
		case apierrors.IsNotFound(err):
			o.liveSkip = "the cluster has no CRD " + crd.Name
		default:
			o.liveSkip = "the cluster is not reachable (" + err.Error() + ")"
		}
	}
	return crd, nil
}

// liveChecks says which checks manifest mode skipped for lack of live
// state, or, with live state, whether the cluster would accept the edited
// file: every version in the live status.storedVersions must stay in its
// spec.versions.
func (o *EditOptions) liveChecks(edited *apiextensionsv1.CustomResourceDefinition) edit.Checks {
	if o.file == nil {
		return nil
	}
	if o.live == nil {
		return edit.Checks{{Name: "LiveState", Outcome: edit.Skip,
			Message: "checks of live state (status.storedVersions, objects) skipped: " + o.liveSkip}}
	}
	var missing []string
	for _, v := range o.live.Status.StoredVersions {
		if lifecycle.FindVersion(edited, v) == nil {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return edit.Checks{{Name: "LiveStoredVersions", Outcome: edit.Warn,
			Message: fmt.Sprintf("the cluster's status.storedVersions lists %s, which this file's spec.versions lacks: applying the file will be rejected until kubectl crdversion migrate %s trims them", strings.Join(missing, ", "), o.live.Name)}}
	}
	return edit.Checks{{Name: "LiveStoredVersions", Outcome: edit.Pass,
		Message: fmt.Sprintf("every version in the cluster's status.storedVersions [%s] is in the file", strings.Join(o.live.Status.StoredVersions, ", "))}}
}

// runE is the RunE of an edit command: complete the shared options, then
// the command's own (optional), validate, run.
func (o *EditOptions) runE(f cmdutil.Factory, own func(cmd *cobra.Command) error, run func(ctx context.Context, cmd *cobra.Command) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.complete(f, cmd, args); err != nil {
			return err
		}
		if own != nil {
			if err := own(cmd); err != nil {
				return err
			}
		}
		if err := o.validate(); err != nil {
			return err
		}
		return run(cmd.Context(), cmd)
	}
}

func (o *EditOptions) validate() error {
	if o.FieldManager == "" {
		return fmt.Errorf("--field-manager must not be empty")
	}
	return nil
}

// checksOut is where the preflight report goes: stdout for people, stderr
// when stdout carries -o output.
func (o *EditOptions) checksOut() io.Writer {
	if o.printer != nil {
		return o.ErrOut
	}
	return o.Out
}

// apply prints the preflight of r, refuses when it failed, and otherwise
// writes r.Edited (pinned to the resourceVersion that was read) unless it is
// a no-op or a client dry run, then prints the outcome.
func (o *EditOptions) apply(ctx context.Context, r *edit.Result) error {
	if o.file != nil {
		return o.applyToFile(r)
	}
	printChecks(o.checksOut(), r.Checks)
	if err := r.Refused(o.operation); err != nil {
		return err
	}
	if r.NoOp {
		fmt.Fprintf(o.checksOut(), "%s: %s\n", crdRef(r.Edited.Name), r.Summary)
		if o.printer != nil {
			return o.printer.PrintObj(r.Edited, o.Out)
		}
		return nil
	}
	if o.Interactive {
		ok, err := confirm(o.In, o.ErrOut, fmt.Sprintf("%s: %s. Continue?", crdRef(r.Edited.Name), r.Summary))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("not confirmed; nothing was changed")
		}
	}
	written := r.Edited
	if o.DryRun != cmdutil.DryRunClient {
		if missing, _ := o.client.Missing(ctx, access.EditCRD()); len(missing) > 0 {
			return &access.MissingError{Operation: o.operation, CRD: r.Edited.Name, Missing: missing}
		}
		var err error
		written, err = o.client.UpdateCRD(ctx, r.Edited, cluster.WriteOptions{DryRun: o.DryRun == cmdutil.DryRunServer, FieldManager: o.FieldManager})
		if err != nil {
			return err
		}
	}
	var notServed error
	if o.DryRun == cmdutil.DryRunNone {
		// Clients can use a newly served version once discovery lists it.
		notServed = o.client.WaitServed(ctx, written.Name, 30*time.Second)
	}
	if o.printer != nil {
		if notServed != nil {
			fmt.Fprintf(o.ErrOut, "Warning: %v\n", notServed)
		}
		return o.printer.PrintObj(written, o.Out)
	}
	fmt.Fprintf(o.Out, "%s edited%s: %s\n", crdRef(written.Name), dryRunSuffix(o.DryRun), r.Summary)
	if notServed != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %v\n", notServed)
	} else if o.DryRun == cmdutil.DryRunNone {
		for _, v := range r.NewlyServed {
			fmt.Fprintf(o.Out, "Served: %s/%s is in discovery; clients can use it now\n", written.Spec.Group, v)
		}
	}
	if o.DryRun == cmdutil.DryRunNone {
		a := lifecycle.Analyze(written)
		fmt.Fprintf(o.Out, "State: %s, %s\n", a.State, a.StateDescription)
		if a.Next != nil {
			fmt.Fprintf(o.Out, "Next: %s\n", a.Next.Command)
		}
	}
	return nil
}

// applyToFile is apply for manifest mode: the preflight goes to stderr, the
// edited file to stdout or back to the file.
func (o *EditOptions) applyToFile(r *edit.Result) error {
	r.Checks = append(r.Checks, o.liveChecks(r.Edited)...)
	printChecks(o.ErrOut, r.Checks)
	if err := r.Refused(o.operation); err != nil {
		return err
	}
	if !r.NoOp {
		_, original, err := o.file.FindCRD(o.CRD)
		if err != nil {
			return err
		}
		res, err := o.file.Apply(o.fileDoc, original, r.Edited)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Filename, err)
		}
		if res.Normalized {
			fmt.Fprintf(o.ErrOut, "Warning: %s: the CRD's versions are in flow style; its document was re-serialized\n", o.Filename)
		}
	}
	fmt.Fprintf(o.ErrOut, "%s in %s: %s\n", crdRef(r.Edited.Name), o.Filename, r.Summary)
	if o.InPlace {
		if r.NoOp {
			return nil
		}
		info, err := os.Stat(o.Filename)
		if err != nil {
			return err
		}
		return os.WriteFile(o.Filename, o.file.Bytes(), info.Mode().Perm())
	}
	_, err := o.Out.Write(o.file.Bytes())
	return err
}

func crdRef(name string) string { return "customresourcedefinition.apiextensions.k8s.io/" + name }

func dryRunSuffix(s cmdutil.DryRunStrategy) string {
	switch s {
	case cmdutil.DryRunClient:
		return " (dry run)"
	case cmdutil.DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// printChecks writes the preflight report, one check a line.
func printChecks(w io.Writer, cs edit.Checks) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "Preflight:")
	for _, c := range cs {
		fmt.Fprintf(w, "  %-4s  %s\n", strings.ToUpper(string(c.Outcome)), c.Message)
		for _, d := range c.Details {
			fmt.Fprintf(w, "          - %s\n", d)
		}
	}
}

// confirm asks question on out and reads y/yes from in; anything else,
// including end of input, is no.
func confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprintf(out, "%s (y/N): ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	if !strings.HasSuffix(line, "\n") {
		fmt.Fprintln(out) // end the prompt's line when the input had none
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}
