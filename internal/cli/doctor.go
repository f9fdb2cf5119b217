package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/doctor"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/preflight"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var doctorLong = templates.LongDesc(`
	Check the health of CustomResourceDefinitions across the cluster.

	For each CRD (those named, or every CRD with --all): its lifecycle state
	and the findings of status, and beyond them every list of its objects
	that the API server cannot answer (with the objects that break it), a
	conversion webhook that does not answer, status.storedVersions entries
	ready to trim, per deprecated or old served version whether clients
	still use it and who, and the owner references, scale targets and Helm release records that
	name a version the CRD does not serve, which the garbage collector and
	autoscalers cannot resolve (every listable resource read once; --skip-reference-check
	leaves it out). The output states how many API requests were made.

	Exit codes: 0 no error-level finding, 1 error-level findings, 2 the check
	failed. See docs/doctor.md for each check and its cost.`)

var doctorExample = templates.Examples(`
	# Check every CRD of the cluster
	kubectl crdversion doctor --all

	# Check two CRDs, as JSON
	kubectl crdversion doctor certificates.cert-manager.io issuers.cert-manager.io -o json`)

// DoctorFlags are doctor's flags, bound to the command.
type DoctorFlags struct {
	PrintFlags     *genericclioptions.PrintFlags
	All            bool
	ChunkSize      int64
	WebhookTimeout time.Duration
	Usage          UsageFlags
	// SkipReferenceCheck is --skip-reference-check.
	SkipReferenceCheck bool
	// Fleet runs doctor in several contexts at once.
	Fleet *FleetFlags
	genericiooptions.IOStreams
}

// NewDoctorFlags returns doctor's flags with their defaults; conn are the
// connection flags each context of a fleet run copies.
func NewDoctorFlags(conn *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *DoctorFlags {
	return &DoctorFlags{
		PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(report.Scheme),
		ChunkSize:  cluster.ChunkSize, WebhookTimeout: 5 * time.Second,
		Fleet: newFleetFlags(conn, 5*time.Minute), IOStreams: streams,
	}
}

// AddFlags binds the flags to cmd.
func (fl *DoctorFlags) AddFlags(cmd *cobra.Command) {
	fl.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVar(&fl.All, "all", false, "Check every CRD of the cluster.")
	cmd.Flags().Int64Var(&fl.ChunkSize, "chunk-size", fl.ChunkSize, "Objects per page when listing them.")
	cmd.Flags().DurationVar(&fl.WebhookTimeout, "webhook-timeout", fl.WebhookTimeout, "How long to wait for a conversion webhook's answer.")
	fl.Usage.addFlags(cmd, 0)
	addReferenceFlag(cmd, &fl.SkipReferenceCheck)
	fl.Fleet.addFlags(cmd)
}

// DoctorOptions are doctor's inputs, resolved once from the flags and
// arguments; Run does not change them.
type DoctorOptions struct {
	// Names are the CRDs to check (names, resources, short names or kinds).
	Names          []string
	All            bool
	ChunkSize      int64
	WebhookTimeout time.Duration
	Usage          preflight.UsageConfig
	// SkipReferenceCheck leaves out the references that name
	// versions the CRDs do not serve.
	SkipReferenceCheck bool
	// Contexts are the kubeconfig contexts of a fleet run; empty for one
	// cluster.
	Contexts []string

	fleet  *FleetFlags
	getter genericclioptions.RESTClientGetter
	// conn are the connection flags typed, repeated in printed commands.
	conn  []lifecycle.Flag
	print printers.ResourcePrinterFunc
	// progress is set when lists show their progress on ErrOut (a
	// terminal, one cluster).
	progress bool
	genericiooptions.IOStreams
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(f cmdutil.Factory, streams genericiooptions.IOStreams, conn *genericclioptions.ConfigFlags) *cobra.Command {
	fl := NewDoctorFlags(conn, streams)
	cmd := &cobra.Command{
		Use:                   "doctor (CRD_NAME... | --all) [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Check the health of CRDs: state, findings, unreadable objects, webhooks, storedVersions",
		Long:                  doctorLong,
		Example:               doctorExample,
		ValidArgsFunction:     completeArgs(f, argCRDs),
		RunE: runE(func(cmd *cobra.Command, args []string) (*DoctorOptions, error) {
			return fl.ToOptions(f, cmd, args)
		}),
	}
	fl.AddFlags(cmd)
	return checkCommand(cmd)
}

// ToOptions resolves the flags and arguments: the CRDs named, the -o
// printer, the connection flags to repeat and, in a fleet run, the
// contexts (read from the kubeconfig). It builds no client: each run
// (cluster) builds its own.
func (fl *DoctorFlags) ToOptions(f cmdutil.Factory, cmd *cobra.Command, args []string) (*DoctorOptions, error) {
	switch {
	case fl.All && len(args) > 0:
		return nil, usageErrorf(cmd, "name CRDs or give --all, not both")
	case !fl.All && len(args) == 0:
		return nil, usageErrorf(cmd, "name at least one CRD, or give --all")
	}
	o := &DoctorOptions{
		Names: args, All: fl.All, ChunkSize: fl.ChunkSize, WebhookTimeout: fl.WebhookTimeout,
		Usage: fl.Usage.config(), SkipReferenceCheck: fl.SkipReferenceCheck,
		fleet: fl.Fleet, getter: f, conn: connectionFlags(cmd.Flags(), fl.Fleet.enabled()), IOStreams: fl.IOStreams,
	}
	var err error
	if fl.Fleet.enabled() {
		o.print, err = printerFunc(fl.PrintFlags, "doctor", humanPrinter(view.FleetDoctor))
		if err != nil {
			return nil, err
		}
		o.Contexts, err = fl.Fleet.resolve()
		return o, err
	}
	o.print, err = printerFunc(fl.PrintFlags, "doctor", humanPrinter(view.Doctor))
	o.progress = term.IsTerminal(fl.ErrOut)
	return o, err
}

// Validate checks the flag values.
func (o *DoctorOptions) Validate() error {
	if o.ChunkSize <= 0 {
		return fmt.Errorf("--chunk-size must be positive, got %d", o.ChunkSize)
	}
	if err := positiveDuration("--webhook-timeout", o.WebhookTimeout); err != nil {
		return err
	}
	return o.Usage.Validate()
}

// Run checks the CRDs of one cluster, or of every context of a fleet run,
// prints the report and returns *FindingsError when a finding is an error
// (or, in a fleet run, a cluster could not be checked).
func (o *DoctorOptions) Run(ctx context.Context) error {
	if len(o.Contexts) > 0 {
		return o.runFleet(ctx)
	}
	progress, stop := func(doctor.Event) {}, func() {}
	if o.progress {
		var update func(crd, version string, objects int, done bool)
		update, stop = view.DoctorProgress(o.ErrOut)
		progress = func(e doctor.Event) { update(e.CRD, e.Version, e.Objects, e.Done) }
	}
	r, err := o.doctor(ctx, o.getter, o.conn, progress)
	stop()
	if err != nil {
		return err
	}
	return printFindings(o.Out, o.print, r, r.Summary)
}

// doctor is one run of doctor in the cluster getter connects to, with its
// own request counter and cache of webhook endpoints; conn are the
// connection flags of its printed commands.
func (o *DoctorOptions) doctor(ctx context.Context, getter genericclioptions.RESTClientGetter, conn []lifecycle.Flag, progress func(doctor.Event)) (*report.Doctor, error) {
	cfg := doctor.Config{ChunkSize: o.ChunkSize, WebhookTimeout: o.WebhookTimeout,
		Usage: o.Usage, Conn: conn, Progress: progress, SkipReferences: o.SkipReferenceCheck}
	if o.progress && len(o.Contexts) == 0 {
		update, stop := view.ResourceProgress(o.ErrOut, "looking for references to versions that are not served")
		defer stop()
		cfg.ReferenceProgress = update
	}
	d, err := doctor.Connect(getter, cfg)
	if err != nil {
		return nil, err
	}
	return d.Run(ctx, o.Names, o.All)
}

// runFleet is doctor in every context at once, one run per context: a
// summary per cluster, then each cluster's findings. A cluster that could
// not be checked makes the run fail.
func (o *DoctorOptions) runFleet(ctx context.Context) error {
	start := time.Now()
	clusters := eachCluster(ctx, o.fleet, o.Contexts, func(ctx context.Context, name string, getter *genericclioptions.ConfigFlags) report.FleetDoctorCluster {
		t0 := time.Now()
		res := report.FleetDoctorCluster{Context: name, Server: o.fleet.server(name)}
		var err error
		res.Doctor, err = o.doctor(ctx, getter, inContext(o.conn, name), nil)
		res.Reach, res.Error = cluster.CheckReach(err)
		res.Seconds = time.Since(t0).Seconds()
		return res
	})
	r := &report.FleetDoctor{Clusters: clusters, Seconds: time.Since(start).Seconds()}
	r.Tally()
	return printFindings(o.Out, o.print, r, r.Summary)
}

// printFindings prints the report r with printer and returns *FindingsError
// when s is incompatible (kubectl diff's exit code 1).
func printFindings(out io.Writer, printer printers.ResourcePrinterFunc, r runtime.Object, s report.Summary) error {
	if err := printer(r, out); err != nil {
		return err
	}
	if s.Incompatible {
		return &FindingsError{Summary: view.SummaryText(s)}
	}
	return nil
}
