package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/crdversion/kubectl-crdversion/internal/action"
	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var promoteLong = templates.LongDesc(`
	Make a version the storage version of a CustomResourceDefinition.

	Objects written from then on are stored at the new version, and the API
	server adds it to status.storedVersions. Existing objects are not rewritten:
	run kubectl crdversion migrate next.

	Preflight: the version exists and is served; every existing object can be
	read at it (the API server converts each one, so a failing conversion
	webhook is caught) and at the current storage version, and no field read at
	the current version is missing at the new one (the API server prunes on
	read: the objects and paths that would lose data are named; --allow-pruning
	accepts the loss); every object (or --sample of them) is sent the no-op
	update that migrate will send through the new version, as a server-side
	dry run, so that its schema, CEL transition rules and UPDATE admission
	answer, and is then dry-run created at the new version under a generated
	name (the whole schema, without the ratcheting an update gets). With a
	conversion webhook, the round trip is checked too: the dry-run update is
	stored at the current version and read back, and every field of the
	object read at the new version must come back; with
	conversion strategy None, the schemas do not prune each other's fields.
	The objects are checked 16 at a time, with a progress bar on a terminal.
	Missing permissions (list, get, patch and create on the objects) are
	refused as such. With a
	conversion webhook behind a Service, first the checks of add-version: the
	caBundle, the Service and its port, a ready endpoint, and (when reachable
	from this client) the serving certificate and a sample conversion. Failures
	name the objects and quote the API server.`)

var promoteExample = templates.Examples(`
	# Make v2 the storage version
	kubectl crdversion promote-storage crontabs.stable.example.com v2

	# Check only the first 200 objects against v2's schema
	kubectl crdversion promote-storage crontabs.stable.example.com v2 --sample 200

	# Run every check, write nothing
	kubectl crdversion promote-storage crontabs.stable.example.com v2 --dry-run=server`)

// PromoteFlags are the flags of promote-storage.
type PromoteFlags struct {
	*EditFlags
	Sample         int
	ChunkSize      int64
	AllowPruning   bool
	WebhookTimeout time.Duration
}

// PromoteOptions are the inputs of promote-storage.
type PromoteOptions struct {
	*EditOptions
	// Sample limits the objects validated at the new version; 0 is all.
	Sample         int
	ChunkSize      int64
	AllowPruning   bool
	WebhookTimeout time.Duration
}

// NewCmdPromoteStorage returns the promote-storage command.
func NewCmdPromoteStorage(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	fl := &PromoteFlags{EditFlags: NewEditFlags(), ChunkSize: cluster.ChunkSize, WebhookTimeout: 10 * time.Second}
	cmd := &cobra.Command{
		Use:                   "promote-storage CRD_NAME VERSION [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Make a version the storage version of a CRD, after checking every object against it",
		Long:                  promoteLong,
		Example:               promoteExample,
		ValidArgsFunction:     versionCompletion(f),
		RunE: runE(func(cmd *cobra.Command, args []string) (*PromoteOptions, error) {
			eo, err := fl.EditFlags.toOptions(f, cmd, args, "promote-storage", streams)
			if err != nil {
				return nil, err
			}
			return &PromoteOptions{EditOptions: eo, Sample: fl.Sample, ChunkSize: fl.ChunkSize, AllowPruning: fl.AllowPruning, WebhookTimeout: fl.WebhookTimeout}, nil
		}),
	}
	fl.EditFlags.AddFlags(cmd)
	cmd.Flags().IntVar(&fl.Sample, "sample", fl.Sample, "Validate at most this many objects at the new version (0: all). Every object is still read at it.")
	cmd.Flags().Int64Var(&fl.ChunkSize, "chunk-size", fl.ChunkSize, "Objects per page when reading them.")
	cmd.Flags().BoolVar(&fl.AllowPruning, "allow-pruning", false, "Accept losing fields: those objects have at the current storage version and lack at the new one (read at both), and, with conversion strategy None, those the schemas prune; the objects and fields are listed and lost.")
	cmd.Flags().DurationVar(&fl.WebhookTimeout, "webhook-timeout", fl.WebhookTimeout, "How long to wait for the conversion webhook's answer in the preflight, when it is behind a Service whose endpoints this client reaches.")
	return cmd
}

// Validate checks the flags of promote-storage.
func (o *PromoteOptions) Validate() error {
	if err := o.EditOptions.Validate(); err != nil {
		return err
	}
	switch {
	case o.Sample < 0:
		return fmt.Errorf("--sample must be 0 (all) or positive, got %d", o.Sample)
	case o.ChunkSize <= 0:
		return fmt.Errorf("--chunk-size must be positive, got %d", o.ChunkSize)
	}
	return positiveDuration("--webhook-timeout", o.WebhookTimeout)
}

// Run reads the CRD, runs the preflight and writes the new storage version.
func (o *PromoteOptions) Run(ctx context.Context) error {
	r, err := o.load(ctx)
	if err != nil {
		return err
	}
	po := action.PromoteOptions{Version: o.Version, AllowPruning: o.AllowPruning, VersionOrder: o.EditOptions.VersionOrder, Sample: o.Sample, ChunkSize: o.ChunkSize,
		WebhookTimeout: o.WebhookTimeout, Write: o.DryRun != cmdutil.DryRunClient, FieldManager: o.FieldManager}
	if term.IsTerminal(o.ErrOut) {
		var stop func()
		po.Progress, stop = view.LabelledProgressBar(o.ErrOut, "checking the objects of "+o.CRD+" at "+o.Version)
		defer stop()
	}
	res, err := action.PromoteStorage(ctx, clusterAs[action.PromoteCluster](o.client), r.target, po)
	if err != nil {
		return err
	}
	return r.finish(ctx, res)
}
