// Package cli holds the cobra commands of kubectl crdversion: kubectl-style
// glue (Options with Complete, Validate and Run) over the lifecycle core and
// the cluster layer.
package cli

import (
	goflag "flag"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	// Link client-go's credential plugins (exec, OIDC, …) so every kubeconfig
	// that works with kubectl works here.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

// FieldManager is the field manager name every write of this plugin uses
// unless --field-manager says otherwise.
const FieldManager = "kubectl-crdversion"

var rootLong = templates.LongDesc(`
	Take a CustomResourceDefinition safely through the life of its API versions.

	Adding a version, switching the storage version, rewriting stored objects,
	trimming status.storedVersions and removing an old version must happen in
	the order of the Kubernetes task page "Versions in CustomResourceDefinitions".
	Each command reads the live CRD, checks that its step is safe (the
	preflight), and changes nothing when it is not.`)

var rootExample = templates.Examples(`
	# Show where the versions of a CRD stand and what to run next
	kubectl crdversion status crontabs.stable.example.com

	# The same for a CRD named by short name or kind, as JSON
	kubectl crdversion status ct -o json`)

// NewRootCommand returns the `kubectl crdversion` command tree writing to
// streams. Connection flags are kubectl's (--kubeconfig, --context, -n, --as,
// …); of klog's flags only -v is exposed. Server warnings, such as those for
// a deprecated version, go to streams.ErrOut once each.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "kubectl-crdversion",
		Short:         "Manage the API versions of CustomResourceDefinitions safely",
		Long:          rootLong,
		Example:       rootExample,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl crdversion"},
		Run:           runHelp,
		Args:          unknownCommand,
	}

	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)

	configFlags := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0)
	warnings := newWarningWriter(streams.ErrOut, colorAllowed(printers.IsTerminal(streams.ErrOut), os.LookupEnv, runtime.GOOS))
	configFlags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.WarningHandler = warnings
		return c
	}
	configFlags.AddFlags(cmd.PersistentFlags())
	klogFlags := addKlogVerbosity(cmd)
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		showClientLogsWithV(cmd, klogFlags)
		return noNamespace(cmd)
	}

	f := cmdutil.NewFactory(configFlags)
	cmd.AddCommand(
		NewCmdStatus(f, streams, configFlags),
		NewCmdAddVersion(f, streams),
		NewCmdPromoteStorage(f, streams),
		NewCmdDeprecate(f, streams),
		NewCmdServe(f, streams),
		NewCmdUnserve(f, streams),
		NewCmdRepairReferences(f, streams),
		NewCmdMigrate(f, streams),
		NewCmdRetire(f, streams, configFlags),
		NewCmdDiff(f, streams),
		NewCmdCheckUpgrade(f, streams, configFlags),
		NewCmdDoctor(f, streams, configFlags),
		NewCmdGuard(f, streams),
		NewCmdVersion(streams),
	)
	shortenLongHelp(cmd)
	return cmd
}

func runHelp(cmd *cobra.Command, _ []string) { _ = cmd.Help() }

// namespaceAnnotation marks a command that gives -n/--namespace a meaning
// of its own (the value says which).
const namespaceAnnotation = "crdversion.kubectl.io/namespace"

// noNamespace refuses -n/--namespace given on the command line: a CRD is
// cluster-scoped, and every command covers its objects in all namespaces,
// so the flag (one of kubectl's connection flags) would be silently
// ignored. The kubeconfig's namespace is no flag and is not refused.
// A command annotated with namespaceAnnotation uses -n for something else
// (check-upgrade: a Helm release's namespace) and checks it itself.
func noNamespace(cmd *cobra.Command) error {
	if _, own := cmd.Annotations[namespaceAnnotation]; own {
		return nil
	}
	if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed {
		return usageErrorf(cmd, "-n/--namespace does not apply: a CRD is cluster-scoped, and %s covers its objects in every namespace", cmd.CommandPath())
	}
	return nil
}

// QuietClientLogs keeps client-go's own log lines (discovery retries and
// the like) off stderr, so that a failure is reported as the one error line
// the command returns. klog's state is global to the process: call it once,
// before running a command tree (main does), not per command tree; -v turns
// the lines back on for the run that gives it.
func QuietClientLogs() {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	// Errors would still reach stderr through klog's stderr threshold.
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// showClientLogsWithV sends klog's lines to stderr again, as klog does by
// default, when -v was given; otherwise it changes nothing.
func showClientLogsWithV(cmd *cobra.Command, klogFlags *goflag.FlagSet) {
	if f := cmd.Flags().Lookup("v"); f != nil && f.Changed {
		_ = klogFlags.Set("logtostderr", "true")
	}
}

// addKlogVerbosity exposes klog's -v (log level) and nothing else of klog.
// It returns klog's whole flag set for internal use.
func addKlogVerbosity(cmd *cobra.Command) *goflag.FlagSet {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	v := fs.Lookup("v")
	v.Usage = "number for the log level verbosity (klog)"
	cmd.PersistentFlags().AddGoFlag(v)
	return fs
}

// newWarningWriter shows each distinct warning the API server sends (for
// example that a version is deprecated) once on w, in colour when color.
func newWarningWriter(w io.Writer, color bool) rest.WarningHandler {
	return rest.NewWarningWriter(w, rest.WarningWriterOptions{Deduplicate: true, Color: color})
}

// colorAllowed reports whether output to a stream may use colour: only on
// a terminal, never with TERM=dumb, never with NO_COLOR set to a non-empty
// value (https://no-color.org: "when present and not an empty string"),
// and on Windows only in a terminal that sets WT_SESSION.
func colorAllowed(terminal bool, lookupEnv func(string) (string, bool), goos string) bool {
	term, _ := lookupEnv("TERM")
	noColor, _ := lookupEnv("NO_COLOR")
	wt, _ := lookupEnv("WT_SESSION")
	return terminal && term != "dumb" && noColor == "" && (goos != "windows" || wt != "")
}
