package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
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
}

// complete takes "CRD VERSION" and builds the client and printer.
func (o *EditOptions) complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) != 2 {
		return cmdutil.UsageErrorf(cmd, "a CRD and a version are required, got %d arguments", len(args))
	}
	o.CRD, o.Version = args[0], args[1]
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
	o.client, err = cluster.New(f)
	return err
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
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// versionCompletion completes a CRD name first, then one of its versions.
func versionCompletion(f cmdutil.Factory) cobra.CompletionFunc {
	names := crdNameCompletion(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return names(cmd, args, toComplete)
		case 1:
			c, err := cluster.New(f)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			crd, err := c.ResolveCRD(context.Background(), args[0])
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, v := range crd.Spec.Versions {
				if strings.HasPrefix(v.Name, toComplete) {
					out = append(out, v.Name)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}
