package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// runner is what every command's options are, in kubectl's anatomy
// (auth/whoami.go, apply.go): XFlags, bound to cobra, build XOptions once
// with ToOptions(f, cmd, args); Validate checks them without the server;
// Run runs. Options are never mutated after ToOptions.
type runner interface {
	Validate() error
	Run(ctx context.Context) error
}

// runE is a command's RunE: flags to options, validate, run. A refusal's
// details not yet shown go to stderr above its error line.
func runE[O runner](toOptions func(cmd *cobra.Command, args []string) (O, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		o, err := toOptions(cmd, args)
		if err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		err = o.Run(cmd.Context())
		printRefusal(cmd.ErrOrStderr(), err)
		return err
	}
}

// printerFunc resolves -o once into the function that prints a command's
// report: human (the table or text view) without -o, the printer of -o
// json|yaml|jsonpath|go-template otherwise. -o name is refused with the
// same words by every command whose output is a report rather than
// objects.
func printerFunc(pf *genericclioptions.PrintFlags, command string, human printers.ResourcePrinterFunc) (printers.ResourcePrinterFunc, error) {
	switch *pf.OutputFormat {
	case "":
		return human, nil
	case "name":
		return nil, fmt.Errorf("-o name is not supported by %s: it prints a report, not objects; use -o json, -o yaml or -o jsonpath", command)
	}
	p, err := toPrinter(pf)
	if err != nil {
		return nil, err
	}
	return p.PrintObj, nil
}

// toPrinter is pf.ToPrinter with a short error for an unknown format:
// cli-runtime's lists all eleven formats in one line of 230 characters; the
// -o flag's help lists them too.
func toPrinter(pf *genericclioptions.PrintFlags) (printers.ResourcePrinter, error) {
	p, err := pf.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, fmt.Errorf("unable to match a printer suitable for the output format %q: use json, yaml, jsonpath or go-template (all formats: -o in --help)", *pf.OutputFormat)
	}
	return p, err
}

// humanPrinter wraps a human view of the report type T as a printer
// function.
func humanPrinter[T runtime.Object](view func(w io.Writer, r T) error) printers.ResourcePrinterFunc {
	return func(obj runtime.Object, w io.Writer) error {
		r, ok := obj.(T)
		if !ok {
			return fmt.Errorf("internal error: cannot print %T", obj)
		}
		return view(w, r)
	}
}
