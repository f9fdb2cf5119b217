package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// crdScheme types CRDs for the printers, so -o yaml keeps apiVersion/kind.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// EditFlags are the flags every spec.versions edit (add-version,
// promote-storage, deprecate, serve, unserve) shares: output, dry run,
// field manager, confirmation and manifest mode.
type EditFlags struct {
	PrintFlags   *genericclioptions.PrintFlags
	FieldManager string
	Interactive  bool
	// Filename selects manifest mode; InPlace writes the file back.
	Filename string
	InPlace  bool
	// VersionOrder is --version-order, oldest first.
	VersionOrder []string
}

// NewEditFlags returns the edit flags with their defaults.
func NewEditFlags() *EditFlags {
	return &EditFlags{PrintFlags: genericclioptions.NewPrintFlags("edited").WithTypeSetter(crdScheme)}
}

// AddFlags registers -o, --dry-run, --field-manager, -i, -f and --in-place.
func (fl *EditFlags) AddFlags(cmd *cobra.Command) {
	fl.PrintFlags.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	cmdutil.AddFieldManagerFlagVar(cmd, &fl.FieldManager, FieldManager)
	cmd.Flags().BoolVarP(&fl.Interactive, "interactive", "i", false, "Show the preflight and ask for confirmation (y/N) before writing.")
	cmd.Flags().StringVarP(&fl.Filename, "filename", "f", "", "Edit the CRD in this manifest file (multi-document YAML; - for standard input) instead of the cluster; the cluster, when reachable, still provides storedVersions and objects for the preflight.")
	cmd.Flags().BoolVar(&fl.InPlace, "in-place", false, "With -f, write the edited file back instead of printing it.")
	addVersionOrderFlag(cmd.Flags(), &fl.VersionOrder)
}

// EditOptions are what every edit's options share, resolved once from
// EditFlags and the arguments "CRD VERSION".
type EditOptions struct {
	// Operation names the command in refusals ("add-version").
	Operation string
	// VersionOrder is the order of versions the user gave, oldest first
	// (--version-order): the preflight of promote-storage and the state
	// printed after the write use it.
	VersionOrder []string
	CRD, Version string
	DryRun       lifecycle.DryRun
	FieldManager string
	Interactive  bool
	Filename     string
	InPlace      bool
	// OutputSet is true when -o was given: the edited CRD goes to stdout
	// through printer, the preflight report to stderr.
	OutputSet bool

	printer printers.ResourcePrinter
	// client is nil in manifest mode when no cluster is configured
	// (noCluster says why).
	client    *cluster.Client
	noCluster string
	// conn are the connection flags typed, repeated in printed commands.
	conn []lifecycle.Flag
	// refresh is the command that refreshes kubectl's cached discovery
	// (refreshCommand).
	refresh string
	genericiooptions.IOStreams
}

// toOptions resolves the shared flags for the command operation.
func (fl *EditFlags) toOptions(f cmdutil.Factory, cmd *cobra.Command, args []string, operation string, streams genericiooptions.IOStreams) (*EditOptions, error) {
	if len(args) != 2 {
		return nil, usageErrorf(cmd, "a CRD and a version are required, got %d arguments", len(args))
	}
	if err := checkVersionNames("", args[1]); err != nil {
		return nil, err
	}
	if err := checkVersionNames("--version-order", fl.VersionOrder...); err != nil {
		return nil, err
	}
	o := &EditOptions{Operation: operation, CRD: args[0], Version: args[1], FieldManager: fl.FieldManager, VersionOrder: fl.VersionOrder,
		Interactive: fl.Interactive, Filename: fl.Filename, InPlace: fl.InPlace, OutputSet: *fl.PrintFlags.OutputFormat != "",
		conn: connectionFlags(cmd.Flags(), false), refresh: refreshCommand(cmd.Flags()), IOStreams: streams}
	var err error
	if o.DryRun, err = dryRunFlag(cmd); err != nil {
		return nil, err
	}
	cmdutil.PrintFlagsWithDryRunStrategy(fl.PrintFlags, strategyOf(o.DryRun))
	if o.OutputSet {
		if o.printer, err = toPrinter(fl.PrintFlags); err != nil {
			return nil, err
		}
	}
	c, err := cluster.New(f)
	switch {
	case err == nil:
		o.client = c
	case o.Filename != "":
		// The cluster is optional in manifest mode.
		o.noCluster = err.Error()
	default:
		return nil, err
	}
	return o, nil
}

// Validate checks the shared flag rules.
func (o *EditOptions) Validate() error {
	switch {
	case o.FieldManager == "":
		return fmt.Errorf("--field-manager must not be empty")
	case o.Interactive && o.DryRun != lifecycle.DryRunNone:
		return fmt.Errorf("--interactive cannot be used with --dry-run")
	case o.InPlace && o.Filename == "":
		return fmt.Errorf("--in-place needs -f FILE")
	case o.Filename != "" && o.OutputSet:
		return fmt.Errorf("-o cannot be used with -f: the edited file is the output")
	case o.InPlace && o.Filename == "-":
		return fmt.Errorf("--in-place cannot write back to standard input")
	}
	return nil
}

// editRun is one run of an edit: where it reads and writes.
type editRun struct {
	o      *EditOptions
	target *action.Target
	// file is the manifest in manifest mode.
	file *action.Manifest
}

// load reads the target: the live CRD, or in manifest mode the CRD in the
// file, with the live CRD beside it when the cluster has it.
func (o *EditOptions) load(ctx context.Context) (*editRun, error) {
	r := &editRun{o: o}
	var err error
	if o.Filename == "" {
		r.target, err = action.Load(ctx, o.client, o.CRD)
		return r, err
	}
	r.target, r.file, err = action.LoadFile(ctx, clusterAs[action.Reader](o.client), o.CRD, o.Filename, o.In, o.noCluster)
	return r, err
}

// finish prints the preflight of res, refuses when it failed, and
// otherwise writes res.Edited (pinned to the resourceVersion that was
// read) unless it is a no-op or a client dry run, then prints the outcome;
// in manifest mode it edits the file instead.
func (r *editRun) finish(ctx context.Context, res *edit.Result) error {
	o := r.o
	if r.file != nil {
		return r.finishFile(res)
	}
	checksOut := o.Out
	if o.OutputSet {
		checksOut = o.ErrOut // stdout carries the -o output
	}
	if err := lifecycle.CheckVersionOrder(res.Edited, o.VersionOrder); err != nil {
		return &lifecycle.RefusalError{Operation: o.Operation, CRD: res.Edited.Name, Reason: "--version-order does not fit the CRD",
			WayOut: "list its versions, oldest first", DetailsTitle: "--version-order", Details: []string{err.Error()}, Err: err}
	}
	view.Checks(checksOut, res.Checks)
	if err := res.Refused(o.Operation); err != nil {
		err.Global = o.conn
		return err
	}
	if res.NoOp {
		fmt.Fprintf(checksOut, "%s: %s\n", view.CRDRef(res.Edited.Name), res.Summary)
		if o.OutputSet {
			return o.printer.PrintObj(res.Edited, o.Out)
		}
		return nil
	}
	if o.Interactive {
		ok, err := confirm(o.In, o.ErrOut, fmt.Sprintf("%s: %s. Continue?", view.CRDRef(res.Edited.Name), res.Summary))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("not confirmed; nothing was changed")
		}
	}
	written, err := action.Write(ctx, o.client, res, action.WriteOptions{DryRun: o.DryRun, FieldManager: o.FieldManager, Operation: o.Operation})
	if err != nil {
		return err
	}
	if written.NotServed != nil {
		fmt.Fprintf(o.ErrOut, "Warning: %v\n", written.NotServed)
	}
	if o.OutputSet {
		return o.printer.PrintObj(written.CRD, o.Out)
	}
	fmt.Fprintf(o.Out, "%s edited%s: %s\n", view.CRDRef(written.CRD.Name), view.DryRunSuffix(o.DryRun), res.Summary)
	for _, v := range written.NewlyServed {
		fmt.Fprintf(o.Out, "Served: %s is in discovery; clients can use it now\n", lifecycle.GroupVersion(written.CRD, v))
	}
	for _, v := range written.NoLongerServed {
		view.Unserved(o.Out, lifecycle.GroupVersion(written.CRD, v), o.refresh)
	}
	for _, v := range written.RecordedStored {
		fmt.Fprintf(o.Out, "Recorded: status.storedVersions lists %s again (now [%s]): objects stay stored there until migrate rewrites them\n", v, strings.Join(written.CRD.Status.StoredVersions, ", "))
	}
	if o.DryRun == lifecycle.DryRunNone {
		a := lifecycle.AnalyzeWith(written.CRD, lifecycle.Options{VersionOrder: o.VersionOrder})
		a.RenderCommands(o.conn)
		fmt.Fprintf(o.Out, "State: %s, %s\n", a.State, a.StateDescription)
		switch {
		case a.Next != nil && a.Next.Command != "":
			fmt.Fprintf(o.Out, "Next: %s\n", a.Next.Command)
		case a.Next != nil && a.Next.Reason != "" && (a.State == lifecycle.StateUnknown || a.Next.Loss != ""):
			// No command can be printed (the order of versions is
			// unknown, or the step would lose fields): say what is
			// needed instead.
			fmt.Fprintf(o.Out, "Next: %s\n", a.Next.Reason)
			if a.Next.Loss != "" {
				fmt.Fprintf(o.Out, "  WARNING: %s\n", a.Next.Loss)
			}
		}
	}
	return nil
}

// finishFile is finish for manifest mode: the preflight goes to stderr, the
// edited file to stdout or back to the file.
func (r *editRun) finishFile(res *edit.Result) error {
	o := r.o
	res.Checks = append(res.Checks, action.LiveChecks(r.target, res.Edited)...)
	view.Checks(o.ErrOut, res.Checks)
	if err := res.Refused(o.Operation); err != nil {
		err.Global = o.conn
		return err
	}
	if !res.NoOp {
		normalized, err := r.file.Apply(res.Edited)
		if err != nil {
			return err
		}
		if normalized {
			fmt.Fprintf(o.ErrOut, "Warning: %s: the CRD's versions are in flow style; its document was re-serialized\n", o.Filename)
		}
	}
	fmt.Fprintf(o.ErrOut, "%s in %s: %s\n", view.CRDRef(res.Edited.Name), o.Filename, res.Summary)
	if o.InPlace {
		if res.NoOp {
			return nil
		}
		return r.file.WriteBack()
	}
	_, err := o.Out.Write(r.file.Bytes())
	return err
}

// clusterAs is the client as the cluster interface I of an action, or I's
// zero value (a nil interface, not an interface holding a nil pointer)
// when there is no cluster.
func clusterAs[I any](c *cluster.Client) I {
	var none I
	if c == nil {
		return none
	}
	return any(c).(I)
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
