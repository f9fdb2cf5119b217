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
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

var promoteLong = templates.LongDesc(`
	Make a version the storage version of a CustomResourceDefinition.

	Objects written from then on are stored at the new version, and the API
	server adds it to status.storedVersions. Existing objects are not rewritten:
	run kubectl crdversion migrate next.

	Preflight: the version exists and is served; every existing object can be
	read at it and keeps every field there (the objects and paths that would
	lose data are named; --allow-pruning accepts the loss); every object (or
	--sample of them) passes, as server-side dry runs, the no-op update that
	migrate will send through the new version and a create at it; a conversion
	webhook's round trip brings every field back, and one behind a Service
	passes the checks of add-version. Nothing is written when a check fails.

	See docs/lifecycle.md for each check of the preflight, and
	docs/troubleshooting.md for what a refusal means.`)

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
	AllowPruning   pruningFlag
	WebhookTimeout time.Duration
}

// PromoteOptions are the inputs of promote-storage.
type PromoteOptions struct {
	*EditOptions
	// Sample limits the objects validated at the new version; 0 is all.
	Sample         int
	ChunkSize      int64
	Pruning        edit.Pruning
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
			return &PromoteOptions{EditOptions: eo, Sample: fl.Sample, ChunkSize: fl.ChunkSize, Pruning: fl.AllowPruning.pruning(), WebhookTimeout: fl.WebhookTimeout}, nil
		}),
	}
	fl.EditFlags.AddFlags(cmd)
	cmd.Flags().IntVar(&fl.Sample, "sample", fl.Sample, "Validate at most this many objects at the new version (0: all). Every object is still read at it.")
	cmd.Flags().Int64Var(&fl.ChunkSize, "chunk-size", fl.ChunkSize, "Objects per page when reading them.")
	addPruningFlag(cmd.Flags(), &fl.AllowPruning, "Alone: accept losing fields and values the objects have at the current storage version and lack or change at the new one (read at both), those conversion strategy None prunes between the schemas, and objects not measured because the storage version is not served. With paths (--allow-pruning=.spec.hostPort,.spec.ports[*].name): accept those and what is under them; every other loss still refuses. The objects and fields are listed and lost.")
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
	po := action.PromoteOptions{Version: o.Version, Pruning: o.Pruning, VersionOrder: o.EditOptions.VersionOrder, Sample: o.Sample, ChunkSize: o.ChunkSize,
		WebhookTimeout: o.WebhookTimeout, Write: o.DryRun != lifecycle.DryRunClient, FieldManager: o.FieldManager,
		CrossCheck: crossCheckFile() != ""}
	if term.IsTerminal(o.ErrOut) {
		var stop func()
		po.Progress, stop = view.LabelledProgressBar(o.ErrOut, "checking the objects of "+o.CRD+" at "+o.Version)
		defer stop()
	}
	res, err := action.PromoteStorage(ctx, clusterAs[action.PromoteCluster](o.client), r.target, po)
	if err = recordDisagreement(crossCheckFile(), err); err != nil {
		return err
	}
	return r.finish(ctx, res)
}
