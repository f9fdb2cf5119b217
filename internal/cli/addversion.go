package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/edit"
	"github.com/crdversion/kubectl-crdversion/internal/manifest"
	"github.com/crdversion/kubectl-crdversion/internal/webhook"
)

var addVersionLong = templates.LongDesc(`
	Add a version to a CustomResourceDefinition.

	The new version copies the schema, subresources, printer columns and
	selectable fields of --from (default: the storage version), or takes its
	schema from --schema-file. It is served unless --served=false, and never
	the storage version: promote-storage does that once clients can use it.

	Preflight: the name is a DNS-1035 label not yet in spec.versions (a
	warning when it is not in Kubernetes version form); with conversion
	strategy None, no field is pruned between the new schema and the other
	versions' (--allow-pruning accepts the loss, listing it); with Webhook
	conversion, the configuration is complete and the webhook converts a sample
	object to the new version. A webhook behind a Service is checked as the API
	server reaches it: the caBundle holds certificates, the Service exists and
	exposes the port (default 443) with a ready endpoint (EndpointSlices), and,
	when an endpoint is reachable from this client, its serving certificate
	verifies for NAME.NAMESPACE.svc against the caBundle and it converts the
	sample; an endpoint this client cannot reach is a warning (not verified).
	The output says how kubectl's default version changes.`)

var addVersionExample = templates.Examples(`
	# Add v2 with the schema of the storage version
	kubectl crdversion add-version crontabs.stable.example.com v2

	# Add v2 with its own schema, converted by a webhook
	kubectl crdversion add-version crontabs.stable.example.com v2 --schema-file v2-schema.yaml \
	  --conversion Webhook --webhook-service crontab-system/conversion:443/convert --ca-bundle-file ca.crt

	# Restore a version still listed in status.storedVersions, unserved
	kubectl crdversion add-version crontabs.stable.example.com v1 --from v2 --served=false`)

// AddVersionOptions are the inputs of add-version beyond EditOptions.
type AddVersionOptions struct {
	*EditOptions
	From               string
	SchemaFile         string
	Served             bool
	Deprecated         bool
	DeprecationWarning string
	Conversion         string
	WebhookURL         string
	WebhookService     string
	CABundleFile       string
	ReviewVersions     []string
	AllowPruning       bool
	WebhookTimeout     time.Duration

	spec edit.AddVersionSpec
}

// NewCmdAddVersion returns the add-version command.
func NewCmdAddVersion(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AddVersionOptions{
		EditOptions:    newEditOptions("add-version", streams),
		Served:         true,
		ReviewVersions: []string{"v1"},
		WebhookTimeout: 10 * time.Second,
	}
	cmd := &cobra.Command{
		Use:                   "add-version CRD_NAME NEW_VERSION [--from VERSION | --schema-file FILE] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Add a version to a CRD, with its schema copied or from a file",
		Long:                  addVersionLong,
		Example:               addVersionExample,
		ValidArgsFunction:     completeArgs(f, argCRD, argNew),
		RunE: o.runE(f, o.Complete, func(ctx context.Context, _ *cobra.Command) error {
			return o.Run(ctx)
		}),
	}
	o.addFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.From, "from", "", "Copy schema, subresources, printer columns and selectable fields from this version (default: the storage version).")
	fl.StringVar(&o.SchemaFile, "schema-file", "", "YAML or JSON file with the new version's openAPIV3Schema (the schema itself, or {openAPIV3Schema: …}).")
	fl.BoolVar(&o.Served, "served", o.Served, "Serve the new version.")
	fl.BoolVar(&o.Deprecated, "deprecated", false, "Mark the new version deprecated.")
	fl.StringVar(&o.DeprecationWarning, "deprecation-warning", "", "The deprecationWarning of the new version (implies --deprecated).")
	fl.StringVar(&o.Conversion, "conversion", "", "Set the conversion strategy: None or Webhook (default: keep the CRD's).")
	fl.StringVar(&o.WebhookURL, "webhook-url", "", "URL of the conversion webhook (https://…).")
	fl.StringVar(&o.WebhookService, "webhook-service", "", "Service of the conversion webhook: NAMESPACE/NAME[:PORT][/PATH].")
	fl.StringVar(&o.CABundleFile, "ca-bundle-file", "", "PEM file with the CA that signed the webhook's serving certificate.")
	fl.StringSliceVar(&o.ReviewVersions, "conversion-review-versions", o.ReviewVersions, "ConversionReview versions the webhook accepts, in order of preference.")
	fl.BoolVar(&o.AllowPruning, "allow-pruning", false, "Accept conversion strategy None between schemas that prune fields; the fields are listed and lost.")
	fl.DurationVar(&o.WebhookTimeout, "webhook-timeout", o.WebhookTimeout, "How long to wait for the conversion webhook's answer in the preflight.")
	completeVersionFlag(f, cmd, "from")
	cmdutil.CheckErr(cmd.RegisterFlagCompletionFunc("conversion", cobra.FixedCompletions([]string{"None", "Webhook"}, cobra.ShellCompDirectiveNoFileComp)))
	return cmd
}

// Complete turns the flags into the edit to make; it reads the schema and CA files.
func (o *AddVersionOptions) Complete(cmd *cobra.Command) error {
	if o.From != "" {
		if err := checkVersionNames("--from", o.From); err != nil {
			return err
		}
	}
	if err := positiveDuration("--webhook-timeout", o.WebhookTimeout); err != nil {
		return err
	}
	s := edit.AddVersionSpec{Name: o.Version, From: o.From, Served: o.Served, Deprecated: o.Deprecated, AllowPruning: o.AllowPruning}
	if cmd.Flags().Changed("deprecation-warning") {
		s.Deprecated = true
		s.DeprecationWarning = &o.DeprecationWarning
	}
	if o.SchemaFile != "" {
		if o.From != "" {
			return fmt.Errorf("--from and --schema-file cannot be combined")
		}
		v, err := readSchemaFile(o.SchemaFile)
		if err != nil {
			return err
		}
		s.Schema = v
	}
	webhookFlags := o.WebhookURL != "" || o.WebhookService != "" || o.CABundleFile != "" || cmd.Flags().Changed("conversion-review-versions")
	switch o.Conversion {
	case "":
		if webhookFlags {
			return fmt.Errorf("webhook flags need --conversion Webhook (also to change the webhook of a CRD that already uses Webhook conversion)")
		}
	case string(apiextensionsv1.NoneConverter):
		if webhookFlags {
			return fmt.Errorf("webhook flags cannot be used with --conversion None")
		}
		s.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	case string(apiextensionsv1.WebhookConverter):
		conv, err := o.webhookConversion()
		if err != nil {
			return err
		}
		s.Conversion = conv
	default:
		return fmt.Errorf("--conversion must be None or Webhook, got %q", o.Conversion)
	}
	o.spec = s
	return nil
}

func (o *AddVersionOptions) webhookConversion() (*apiextensionsv1.CustomResourceConversion, error) {
	cc := &apiextensionsv1.WebhookClientConfig{}
	switch {
	case o.WebhookURL != "" && o.WebhookService != "":
		return nil, fmt.Errorf("--webhook-url and --webhook-service cannot be combined")
	case o.WebhookURL != "":
		if !strings.HasPrefix(o.WebhookURL, "https://") {
			return nil, fmt.Errorf("--webhook-url must be an https:// URL, got %q", o.WebhookURL)
		}
		cc.URL = &o.WebhookURL
	case o.WebhookService != "":
		svc, err := parseServiceRef(o.WebhookService)
		if err != nil {
			return nil, err
		}
		cc.Service = svc
	}
	if o.CABundleFile != "" {
		pem, err := manifest.ReadFile(o.CABundleFile)
		if err != nil {
			return nil, err
		}
		cc.CABundle = pem
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: o.ReviewVersions},
	}, nil
}

// parseServiceRef parses NAMESPACE/NAME[:PORT][/PATH].
func parseServiceRef(s string) (*apiextensionsv1.ServiceReference, error) {
	bad := fmt.Errorf("--webhook-service must be NAMESPACE/NAME[:PORT][/PATH], got %q", s)
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" || rest == "" {
		return nil, bad
	}
	ref := &apiextensionsv1.ServiceReference{Namespace: ns}
	nameport, path, hasPath := strings.Cut(rest, "/")
	if hasPath {
		p := "/" + path
		ref.Path = &p
	}
	name, port, hasPort := strings.Cut(nameport, ":")
	if name == "" {
		return nil, bad
	}
	ref.Name = name
	if hasPort {
		n, err := strconv.ParseInt(port, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return nil, bad
		}
		p := int32(n)
		ref.Port = &p
	}
	return ref, nil
}

// readSchemaFile reads an openAPIV3Schema, bare or wrapped as
// {openAPIV3Schema: …}.
func readSchemaFile(path string) (*apiextensionsv1.CustomResourceValidation, error) {
	data, err := manifest.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe map[string]any
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("--schema-file %s: %v", path, err)
	}
	v := &apiextensionsv1.CustomResourceValidation{}
	if _, wrapped := probe["openAPIV3Schema"]; wrapped {
		err = yaml.UnmarshalStrict(data, v)
	} else {
		v.OpenAPIV3Schema = &apiextensionsv1.JSONSchemaProps{}
		err = yaml.UnmarshalStrict(data, v.OpenAPIV3Schema)
	}
	if err != nil {
		return nil, fmt.Errorf("--schema-file %s: %v", path, err)
	}
	return v, nil
}

// Run reads the CRD, runs the preflight (with the webhook check) and writes.
func (o *AddVersionOptions) Run(ctx context.Context) error {
	crd, err := o.load(ctx)
	if err != nil {
		return err
	}
	r := edit.AddVersion(crd, o.spec)
	if conv := r.Edited.Spec.Conversion; !r.NoOp && len(r.Checks.Failed()) == 0 && conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
		r.Checks = append(r.Checks, o.webhookChecks(ctx, crd, conv.Webhook)...)
	}
	return o.apply(ctx, r)
}

// webhookChecks asks the webhook to convert a sample object — an existing
// one when there is any, else a minimal object — to the new version. A
// webhook behind a Service is checked as the API server would reach it
// (serviceWebhookChecker), in manifest mode only when the cluster has the
// CRD.
func (o *AddVersionOptions) webhookChecks(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, conv *apiextensionsv1.WebhookConversion) edit.Checks {
	from := cluster.ListVersion(crd)
	desired := crd.Spec.Group + "/" + o.Version
	sample := sampleObject(crd, from, "crdversion-preflight-sample")
	minimal := ""
	live := o.client != nil && (o.file == nil || o.live != nil)
	if from != "" && live {
		list, err := o.client.Dynamic.Resource(cluster.GVR(crd, from)).List(ctx, metav1.ListOptions{Limit: 1})
		switch {
		case err == nil && len(list.Items) > 0:
			sample = &list.Items[0]
		case apierrors.IsForbidden(err):
			minimal = fmt.Sprintf(" (a minimal one: list %s is forbidden, so no stored object was tried)", cluster.GVR(crd, from).GroupResource())
		}
	}
	if conv.ClientConfig != nil && conv.ClientConfig.Service != nil {
		if !live {
			return edit.Checks{{Name: checkWebhookService, Outcome: edit.Skip,
				Message: "the conversion webhook's Service was not checked: " + o.liveSkip}}
		}
		return newServiceWebhookChecker(o.client, o.WebhookTimeout).checks(ctx, conv, &conversionProbe{sample: sample, desired: desired})
	}
	c := edit.Check{Name: checkWebhookConverts}
	switch err := webhook.Verify(ctx, conv, sample, desired, o.WebhookTimeout); {
	case err == nil:
		c.Outcome, c.Message = edit.Pass, fmt.Sprintf("the conversion webhook converted a sample %s to %s%s", crd.Spec.Names.Kind, desired, minimal)
	default:
		c.Outcome, c.Message = edit.Fail, err.Error()
	}
	return edit.Checks{c}
}
