package lifecycle

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// State is a step of the version lifecycle, OLD → NEW, from
// docs/lifecycle.md:
//
//	S0 one version          OLD served+storage                    storedVersions [OLD]
//	S1 NEW added            OLD served+storage, NEW served        [OLD]
//	S2 NEW is storage       OLD served, NEW served+storage        [OLD, NEW]
//	S3 migrated             same                                  [NEW]
//	S4 OLD deprecated       OLD served+deprecated                 [NEW]
//	S5 OLD unserved         OLD served: false                     [NEW]
//	S6 OLD retired          NEW only                              [NEW]
type State string

// The lifecycle states. StateUnknown is used when the CRD has no single
// storage version (only possible in a manifest), and when the step past
// S2 depends on an order of versions that nothing gives (see Order;
// StateDescription is then OrderUnknownDescription).
const (
	StateS0      State = "S0"
	StateS1      State = "S1"
	StateS2      State = "S2"
	StateS3      State = "S3"
	StateS4      State = "S4"
	StateS5      State = "S5"
	StateS6      State = "S6"
	StateUnknown State = "Unknown"
)

// Description is a short human name for the state.
func (s State) Description() string {
	switch s {
	case StateS0:
		return "one version"
	case StateS1:
		return "new version added"
	case StateS2:
		return "new version is storage, migration pending"
	case StateS3:
		return "migrated"
	case StateS4:
		return "old version deprecated"
	case StateS5:
		return "old version unserved"
	case StateS6:
		return "old version retired"
	}
	return "no single storage version"
}

// OrderUnknownDescription is the StateDescription of StateUnknown when the
// CRD has a single storage version but the order of its versions is not
// known (see Order), so neither is the step of the lifecycle.
const OrderUnknownDescription = "the order of the versions is unknown"

// RetiredVersionsAnnotation records, comma-separated, the versions that
// `kubectl crdversion retire` removed from spec.versions. It is what tells
// S6 (a version was retired) from S0 (the CRD only ever had one version).
const RetiredVersionsAnnotation = "crdversion.kubectl.io/retired-versions"

// Severity of a Finding.
type Severity string

// Severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Finding is one problem or notice about a CRD. Code is a stable
// machine-readable identifier (see docs/output.md). Run, when set, are the
// commands that resolve it, in order; Fix is then their rendering (see
// Command.Render), otherwise an instruction in words.
type Finding struct {
	Code     string    `json:"code"`
	Severity Severity  `json:"severity"`
	Version  string    `json:"version,omitempty"`
	Message  string    `json:"message"`
	Fix      string    `json:"fix,omitempty"`
	Run      []Command `json:"run,omitempty"`
}

// WithRun returns f resolved by cmds, run in order: Run is set and Fix is
// their rendering without connection flags.
func (f Finding) WithRun(cmds ...Command) Finding {
	f.Run = cmds
	f.Fix = RenderAll(cmds, nil)
	return f
}

// Rendered returns fs with every Fix that comes from Run rendered again
// with the connection flags global (see Command.Render). fs is not
// modified.
func Rendered(fs []Finding, global []Flag) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		if len(f.Run) > 0 {
			f.Fix = RenderAll(f.Run, global)
		}
		out[i] = f
	}
	return out
}

// Finding codes reported by Analyze.
const (
	CodeStoredVersionNotInSpec   = "StoredVersionNotInSpec"
	CodeMigrationPending         = "MigrationPending"
	CodeStorageVersionNotStored  = "StorageVersionNotStored"
	CodeDeprecatedServed         = "DeprecatedVersionServed"
	CodeNoneConversionPrunes     = "NoneConversionPrunesFields"
	CodeNoneConversionSchemas    = "NoneConversionSchemasDiffer"
	CodePreserveUnknownFields    = "PreserveUnknownFields"
	CodeWebhookConfigIncomplete  = "WebhookConfigIncomplete"
	CodeWebhookNoCABundle        = "WebhookNoCABundle"
	CodeStorageVersionCount      = "StorageVersionCount"
	CodeNoServedVersion          = "NoServedVersion"
	CodeStorageVersionNotServed  = "StorageVersionNotServed"
	CodeStorageNotHighestVersion = "StorageNotHighestPriority"
)

// SchemaComparison says how a version's schema compares with the storage
// version's.
type SchemaComparison string

// Values of SchemaComparison.
const (
	SchemaIsStorage SchemaComparison = "storage"   // this is the storage version
	SchemaIdentical SchemaComparison = "identical" // same validation, defaulting and pruning
	SchemaDifferent SchemaComparison = "different"
	SchemaUnknown   SchemaComparison = "unknown" // no single storage version to compare with, or not in spec
)

// VersionStatus is one row of the versions table: a version in
// spec.versions, or one only listed in status.storedVersions (InSpec false).
type VersionStatus struct {
	Name               string `json:"name"`
	InSpec             bool   `json:"inSpec"`
	Served             bool   `json:"served"`
	Storage            bool   `json:"storage"`
	Deprecated         bool   `json:"deprecated"`
	DeprecationWarning string `json:"deprecationWarning,omitempty"`
	InStoredVersions   bool   `json:"inStoredVersions"`
	// Priority is the 1-based rank in kubectl's version priority among the
	// versions in spec.versions (1 sorts first); 0 when not in spec.
	Priority int `json:"priority"`
	// Default is true for the version kubectl uses when none is given.
	Default bool             `json:"default"`
	Schema  SchemaComparison `json:"schema"`
}

// Webhook is where a Webhook conversion strategy sends ConversionReviews.
type Webhook struct {
	// URL is set for url-style client configs.
	URL string `json:"url,omitempty"`
	// Service is "namespace/name:port/path" for service-style configs.
	Service string `json:"service,omitempty"`
	// CABundle tells whether a caBundle is set (its contents are not shown).
	CABundle                 bool     `json:"caBundle"`
	ConversionReviewVersions []string `json:"conversionReviewVersions,omitempty"`
}

// Conversion is the CRD's conversion strategy.
type Conversion struct {
	Strategy string   `json:"strategy"`
	Webhook  *Webhook `json:"webhook,omitempty"`
}

// NextStep is the command that moves the CRD to the next lifecycle state.
type NextStep struct {
	// Command is the rendering of Run; both are empty when the next step is
	// not a command (for example repairing a conversion webhook): Reason
	// then says what.
	Command string    `json:"command,omitempty"`
	Run     []Command `json:"run,omitempty"`
	Reason  string    `json:"reason"`
	// Loss, when set, says which fields conversion None drops in this
	// state, so that the step Reason names refuses (it measures the
	// objects), how to keep them, and that only an explicit
	// --allow-pruning accepts losing them. No Command is printed then:
	// advice never carries --allow-pruning.
	Loss string `json:"loss,omitempty"`
}

func next(reason string, cmds ...Command) *NextStep {
	return &NextStep{Command: RenderAll(cmds, nil), Run: cmds, Reason: reason}
}

// Rendered returns a copy of n with Command rendered with the connection
// flags global; nil for nil.
func (n *NextStep) Rendered(global []Flag) *NextStep {
	if n == nil {
		return nil
	}
	c := *n
	if len(c.Run) > 0 {
		c.Command = RenderAll(c.Run, global)
	}
	return &c
}

// CRDRef identifies the CRD and the resource it defines.
type CRDRef struct {
	Name   string `json:"name"`
	Group  string `json:"group"`
	Kind   string `json:"kind"`
	Plural string `json:"plural"`
	// Scope is Namespaced or Cluster.
	Scope string `json:"scope"`
}

// Analysis is everything Analyze derives from a CRD.
type Analysis struct {
	CRD                   CRDRef          `json:"crd"`
	State                 State           `json:"state"`
	StateDescription      string          `json:"stateDescription"`
	OldVersion            string          `json:"oldVersion,omitempty"`
	NewVersion            string          `json:"newVersion,omitempty"`
	StorageVersion        string          `json:"storageVersion"`
	DefaultVersion        string          `json:"defaultVersion"`
	StoredVersions        []string        `json:"storedVersions"`
	Conversion            Conversion      `json:"conversion"`
	PreserveUnknownFields bool            `json:"preserveUnknownFields"`
	Versions              []VersionStatus `json:"versions"`
	Findings              []Finding       `json:"findings"`
	Next                  *NextStep       `json:"next,omitempty"`
	// VersionOrder is the order of versions the user gave, oldest first
	// (--version-order); printed commands that take it repeat it.
	VersionOrder []string `json:"versionOrder,omitempty"`
	// UnorderedVersions are the versions that nothing orders against the
	// storage version (see Order): no step that depends on which is newer
	// is advised while there are any.
	UnorderedVersions []string `json:"unorderedVersions,omitempty"`

	order Order
	// promoteLoss are the fields conversion None prunes between NewVersion
	// and the other versions (NoneConversionLoss) in S1; migrateLoss what
	// migrating the objects stored at old versions drops (MigrationLosses).
	// The step that loses them refuses without --allow-pruning.
	promoteLoss []string
	migrateLoss []Loss
	// staleManaged counts, per version, the objects whose managedFields
	// name it (see ManagedFieldsNaming).
	staleManaged map[string]int
}

// ManagedFieldsNaming records that n objects have managedFields entries
// naming version, as the API server listed them: retire refuses to remove
// version until they are rewritten, so its printed command carries
// --clean-managed-fields.
func (a *Analysis) ManagedFieldsNaming(version string, n int) {
	if a.staleManaged == nil {
		a.staleManaged = map[string]int{}
	}
	a.staleManaged[version] = n
	a.settle()
}

// Options are the user's inputs to AnalyzeWith.
type Options struct {
	// VersionOrder is the order of the CRD's versions, oldest first, for
	// names that Kubernetes' version rules and storedVersions do not order.
	VersionOrder []string
}

// Analyze derives the lifecycle state, the versions table, the findings and
// the next command for crd. It is pure and never modifies crd.
func Analyze(crd *apiextensionsv1.CustomResourceDefinition) Analysis {
	return AnalyzeWith(crd, Options{})
}

// OrderFlagVerbs are the commands that take --version-order; a printed
// command of these repeats the order the user gave.
var OrderFlagVerbs = []string{"status", "migrate", "retire", "promote-storage", "add-version", "deprecate", "serve", "unserve"}

// AnalyzeWith is Analyze with the user's inputs o.
func AnalyzeWith(crd *apiextensionsv1.CustomResourceDefinition, o Options) Analysis {
	a := Analysis{
		CRD: CRDRef{
			Name:   crd.Name,
			Group:  crd.Spec.Group,
			Kind:   crd.Spec.Names.Kind,
			Plural: crd.Spec.Names.Plural,
			Scope:  string(crd.Spec.Scope),
		},
		StorageVersion:        StorageVersion(crd),
		DefaultVersion:        DefaultVersion(crd),
		StoredVersions:        append([]string{}, crd.Status.StoredVersions...),
		Conversion:            conversionOf(crd),
		PreserveUnknownFields: crd.Spec.PreserveUnknownFields,
		Findings:              []Finding{},
		VersionOrder:          append([]string(nil), o.VersionOrder...),
		order:                 OrderOf(crd, o.VersionOrder),
	}
	a.Versions = versionRows(crd, a.StorageVersion, a.DefaultVersion)
	a.State, a.OldVersion, a.NewVersion = stateOf(crd, a.StorageVersion, a.order)
	a.StateDescription = a.State.Description()
	// A loss the schemas cannot tell (AnyField) is left to migrate's
	// measurement, which refuses before it.
	a.migrateLoss = slices.DeleteFunc(MigrationLosses(crd), func(l Loss) bool { return l.AnyField })
	if a.State == StateS1 {
		a.promoteLoss = NoneConversionLoss(crd, a.NewVersion)
	}
	if a.StorageVersion != "" {
		a.UnorderedVersions = a.order.Unordered(crd, a.StorageVersion)
	}
	if len(a.UnorderedVersions) > 0 && (a.State == StateS3 || a.State == StateS4 || a.State == StateS5) {
		// Which of S3–S5 this is, and which version is OLD, depends on
		// an order nothing gives.
		a.State, a.OldVersion, a.NewVersion = StateUnknown, "", ""
		a.StateDescription = OrderUnknownDescription
	}
	a.Findings = findings(crd, a)
	a.settle()
	return a
}

// AddFinding adds a finding found outside the CRD (for example from
// listing its objects), keeps the findings ordered and recomputes Next.
func (a *Analysis) AddFinding(f Finding) {
	a.Findings = append(a.Findings, f)
	a.settle()
}

var severityRank = map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}

// settle orders the findings most severe first (stable within a severity)
// and picks Next: the repair of the first blocking finding, else the
// lifecycle's next step.
func (a *Analysis) settle() {
	sort.SliceStable(a.Findings, func(i, j int) bool {
		return severityRank[a.Findings[i].Severity] < severityRank[a.Findings[j].Severity]
	})
	a.Next = repairStep(*a)
	if a.Next == nil {
		a.Next = nextStep(a.CRD.Name, *a)
	}
	if len(a.VersionOrder) == 0 {
		return
	}
	order := strings.Join(a.VersionOrder, ",")
	for i := range a.Findings {
		if len(a.Findings[i].Run) > 0 {
			a.Findings[i] = a.Findings[i].WithRun(withOrder(a.Findings[i].Run, order)...)
		}
	}
	if a.Next != nil && len(a.Next.Run) > 0 {
		a.Next = next(a.Next.Reason, withOrder(a.Next.Run, order)...)
	}
}

// withOrder is cmds with --version-order order added to those that take
// it and lack it.
func withOrder(cmds []Command, order string) []Command {
	out := make([]Command, len(cmds))
	for i, c := range cmds {
		out[i] = c
		if c.Tool != "" || !slices.Contains(OrderFlagVerbs, c.Verb) {
			continue
		}
		if slices.ContainsFunc(c.Flags, func(f Flag) bool { return f.Name == "version-order" }) {
			continue
		}
		out[i] = c.With("version-order", order)
	}
	return out
}

func conversionOf(crd *apiextensionsv1.CustomResourceDefinition) Conversion {
	c := Conversion{Strategy: string(apiextensionsv1.NoneConverter)}
	conv := crd.Spec.Conversion
	if conv == nil {
		return c
	}
	if conv.Strategy != "" {
		c.Strategy = string(conv.Strategy)
	}
	if conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil {
		return c
	}
	w := &Webhook{ConversionReviewVersions: conv.Webhook.ConversionReviewVersions}
	if cc := conv.Webhook.ClientConfig; cc != nil {
		w.CABundle = len(cc.CABundle) > 0
		if cc.URL != nil {
			w.URL = *cc.URL
		}
		if svc := cc.Service; svc != nil {
			w.Service = svc.Namespace + "/" + svc.Name
			if svc.Port != nil {
				w.Service += fmt.Sprintf(":%d", *svc.Port)
			}
			if svc.Path != nil {
				w.Service += *svc.Path
			}
		}
	}
	c.Webhook = w
	return c
}

func versionRows(crd *apiextensionsv1.CustomResourceDefinition, storage, def string) []VersionStatus {
	names := make([]string, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
	}
	rank := map[string]int{}
	for i, n := range ByPriority(names) {
		rank[n] = i + 1
	}
	storageSchema := schema.Of(FindVersion(crd, storage))
	rows := make([]VersionStatus, 0, len(names))
	for _, n := range ByPriority(names) {
		v := FindVersion(crd, n)
		row := VersionStatus{
			Name:             n,
			InSpec:           true,
			Served:           v.Served,
			Storage:          v.Storage,
			Deprecated:       v.Deprecated,
			InStoredVersions: slices.Contains(crd.Status.StoredVersions, n),
			Priority:         rank[n],
			Default:          n == def,
			Schema:           SchemaUnknown,
		}
		if v.DeprecationWarning != nil {
			row.DeprecationWarning = *v.DeprecationWarning
		}
		switch {
		case v.Storage && n == storage:
			row.Schema = SchemaIsStorage
		case storage == "":
		case schema.Equal(schema.Of(v), storageSchema):
			row.Schema = SchemaIdentical
		default:
			row.Schema = SchemaDifferent
		}
		rows = append(rows, row)
	}
	for _, s := range crd.Status.StoredVersions {
		if FindVersion(crd, s) == nil {
			rows = append(rows, VersionStatus{Name: s, InStoredVersions: true, Schema: SchemaUnknown})
		}
	}
	return rows
}

// stateOf places the CRD in the lifecycle. NEW is the storage version, or the
// newest version above it (by order, see Order) when one was added but not
// promoted yet. OLD is the version on its way out that the next step acts
// on: the oldest one when several are. A version that order cannot place
// against the storage version counts as one on its way out here;
// AnalyzeWith then reports S3–S5 as StateUnknown, with no OLD and no step
// advised (see UnorderedVersions).
func stateOf(crd *apiextensionsv1.CustomResourceDefinition, storage string, order Order) (state State, old, new string) {
	if storage == "" {
		return StateUnknown, "", ""
	}
	var higher, lower []string
	for _, v := range crd.Spec.Versions {
		switch {
		case v.Name == storage:
		case order.Newer(v.Name, storage) && !v.Deprecated:
			higher = append(higher, v.Name)
		case order.Newer(v.Name, storage):
			// A deprecated version is never the one to move to: it is on
			// its way out, whatever its priority.
			lower = append(lower, v.Name)
		case isPreviewOfLaterMajor(v.Name, storage):
			// v3alpha1 beside storage v2 is a preview of what comes next,
			// not a version on its way out.
		default:
			lower = append(lower, v.Name)
		}
	}
	if len(higher) > 0 {
		return StateS1, storage, order.Newest(higher)
	}
	var pending []string
	for _, s := range crd.Status.StoredVersions {
		if s != storage {
			pending = append(pending, s)
		}
	}
	if len(pending) > 0 {
		return StateS2, order.Oldest(pending), storage
	}
	if len(lower) == 0 {
		if retired := RetiredVersions(crd); len(retired) > 0 {
			return StateS6, retired[len(retired)-1], storage
		}
		return StateS0, storage, ""
	}
	var servedPlain, servedDeprecated []string
	for _, n := range lower {
		v := FindVersion(crd, n)
		switch {
		case v.Served && !v.Deprecated:
			servedPlain = append(servedPlain, n)
		case v.Served:
			servedDeprecated = append(servedDeprecated, n)
		}
	}
	switch {
	case len(servedPlain) > 0:
		return StateS3, order.Oldest(servedPlain), storage
	case len(servedDeprecated) > 0:
		return StateS4, order.Oldest(servedDeprecated), storage
	default:
		return StateS5, order.Oldest(lower), storage
	}
}

var kubeVersion = regexp.MustCompile(`^v([0-9]+)(alpha|beta)([0-9]+)$`)

// isPreviewOfLaterMajor reports whether name is an alpha or beta of a
// greater major version than storage (v3alpha1 beside v2).
func isPreviewOfLaterMajor(name, storage string) bool {
	m := kubeVersion.FindStringSubmatch(name)
	if m == nil || !IsKubeVersion(storage) {
		return false
	}
	var major, storageMajor int
	if _, err := fmt.Sscanf(m[1], "%d", &major); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(storage, "v"), "%d", &storageMajor); err != nil {
		return false
	}
	return major > storageMajor
}

// NewerThanStorage lists the versions in spec.versions that the analysis'
// order (the given order, Kubernetes' version rules, storedVersions) says
// are newer than the storage version: versions the lifecycle moves
// towards, never away from.
func (a Analysis) NewerThanStorage() []string {
	var out []string
	for _, v := range a.Versions {
		if v.InSpec && a.order.Newer(v.Name, a.StorageVersion) {
			out = append(out, v.Name)
		}
	}
	return out
}

func (a Analysis) version(name string) *VersionStatus {
	for i := range a.Versions {
		if a.Versions[i].Name == name && a.Versions[i].InSpec {
			return &a.Versions[i]
		}
	}
	return nil
}

func (a Analysis) versionServed(name string) bool {
	for _, v := range a.Versions {
		if v.Name == name {
			return v.Served
		}
	}
	return false
}

// IsVersionName reports whether v can name a version of a CRD: a DNS-1035
// label, as the API server requires of spec.versions[].name. The commands
// take only such names, so a printed command must not carry another.
func IsVersionName(v string) bool { return len(validation.IsDNS1035Label(v)) == 0 }

// RetiredVersions are the valid entries of crd's retired-versions
// annotation (RetiredVersionsAnnotation): version names (DNS-1035 labels)
// no longer in spec.versions, in the annotation's order.
func RetiredVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, s := range strings.Split(crd.Annotations[RetiredVersionsAnnotation], ",") {
		s = strings.TrimSpace(s)
		if s != "" && IsVersionName(s) && FindVersion(crd, s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// repairStep is the next step when something blocks the lifecycle: an
// error finding (a storedVersions entry missing from spec.versions,
// unreadable objects, a CRD that is not established, …) or no served
// version. Its fix is the next command when it is one; otherwise Next only
// says what to resolve. Moving the lifecycle on before that would make
// things worse.
func repairStep(a Analysis) *NextStep {
	for _, f := range a.Findings {
		if f.Severity != SeverityError && f.Code != CodeNoServedVersion {
			continue
		}
		if len(f.Run) > 0 && f.Run[0].Tool == "" {
			reason := "resolve first: " + f.Message
			if f.Code == CodeStoredVersionNotInSpec && f.Run[0].Verb != "migrate" {
				reason = fmt.Sprintf("objects stored at %s are unreadable until %s is back in spec.versions; then kubectl crdversion migrate %s rewrites them and trims storedVersions", f.Version, f.Version, a.CRD.Name)
			}
			return next(reason, f.Run...)
		}
		reason := "resolve first: " + f.Message
		if f.Fix != "" {
			reason += "; " + f.Fix
		}
		return &NextStep{Reason: reason}
	}
	return nil
}

func nextStep(name string, a Analysis) *NextStep {
	if storage := a.version(a.StorageVersion); storage != nil && storage.Deprecated && a.State != StateS1 {
		// Every client is told to move off the version all objects are
		// written at, and the state's next step (deprecating or unserving
		// another version) would leave no version to move to.
		return next(fmt.Sprintf("the storage version %s is deprecated, so clients are told to leave the version every object is written at; undo the deprecation (or first add a newer version and make it the storage version)", a.StorageVersion),
			Crdversion("deprecate", name, a.StorageVersion).With("undo", ""))
	}
	if a.State == StateUnknown && len(a.UnorderedVersions) > 0 {
		return &NextStep{Reason: fmt.Sprintf("nothing says whether %s is newer or older than the storage version %s (names outside Kubernetes version form); %s",
			strings.Join(a.UnorderedVersions, ", "), a.StorageVersion, AskOrder(a.StorageVersion, a.UnorderedVersions))}
	}
	switch a.State {
	case StateS0:
		return next("add a new version when the API changes; schemas are copied from the storage version",
			Crdversion("add-version", name, PlaceholderNewVersion).With("from", a.StorageVersion))
	case StateS1:
		if !a.versionServed(a.NewVersion) {
			return next(fmt.Sprintf("%s must be served before it can become the storage version (then kubectl crdversion promote-storage %s %s)", a.NewVersion, name, a.NewVersion),
				Crdversion("serve", name, a.NewVersion))
		}
		reason := fmt.Sprintf("make %s the storage version once every client and the controller can use it", a.NewVersion)
		if len(a.promoteLoss) > 0 {
			// No command: promote-storage refuses here, and a pasted
			// --allow-pruning would lose data nobody chose to lose.
			return &NextStep{Reason: reason + " (kubectl crdversion promote-storage " + name + " " + a.NewVersion + "), once the schemas keep every field", Loss: promoteLossText(a)}
		}
		if !a.versionServed(a.StorageVersion) {
			// promote-storage reads every object at the storage version,
			// to compare it with the new one, and refuses while it is not
			// served.
			return next(fmt.Sprintf("serve the storage version %s, at which promote-storage reads the objects to compare them with %s; then %s", a.StorageVersion, a.NewVersion, reason),
				Crdversion("serve", name, a.StorageVersion), Crdversion("promote-storage", name, a.NewVersion))
		}
		return next(reason, Crdversion("promote-storage", name, a.NewVersion))
	case StateS2:
		reason := fmt.Sprintf("rewrite stored objects at %s and trim storedVersions to [%s]", a.StorageVersion, a.StorageVersion)
		if len(a.migrateLoss) > 0 {
			return &NextStep{Reason: reason + " (kubectl crdversion migrate " + name + "), once the schemas keep every field", Loss: migrateLossText(a)}
		}
		if !a.versionServed(a.StorageVersion) {
			// migrate writes through the storage version and refuses
			// while it is not served.
			reason = fmt.Sprintf("serve the storage version %s, which migrate writes through; then %s", a.StorageVersion, reason)
		}
		if u := a.unservedStored(); len(u) > 0 {
			reason = fmt.Sprintf("serve %s again, where migrate reads the objects stored there to measure what the conversion webhook keeps of them (it refuses unmeasured while they are not served); then %s", strings.Join(u, ", "), reason)
		}
		return next(reason, migrateFix(a)...)
	case StateS3:
		return next(fmt.Sprintf("warn clients that still request %s", a.OldVersion),
			Crdversion("deprecate", name, a.OldVersion))
	case StateS4:
		return next(fmt.Sprintf("stop serving %s once no client requests it", a.OldVersion),
			Crdversion("unserve", name, a.OldVersion))
	case StateS5:
		// --migrate: status.storedVersions without OLD is a claim (a status
		// trimmed by hand says the same), so retire proves that no object
		// is stored at OLD with a pass of migrate before the removal; it
		// writes only objects that are.
		retire := Crdversion("retire", name, a.OldVersion).With("migrate", "")
		proof := fmt.Sprintf("any object still stored at %s is rewritten first (--migrate: storedVersions alone does not prove none is)", a.OldVersion)
		n, scanned := a.staleManaged[a.OldVersion]
		switch {
		case n > 0:
			return next(fmt.Sprintf("remove %s from spec.versions; %s; %d object(s) have managedFields entries naming %s, which --clean-managed-fields rewrites to %s first (server-side apply on them would fail once %s is gone)", a.OldVersion, proof, n, a.OldVersion, a.StorageVersion, a.OldVersion),
				retire.With("clean-managed-fields", ""))
		case !scanned:
			// Not listed: retire refuses while an entry names OLD, so the
			// command rewrites any first (a no-op when there is none).
			return next(fmt.Sprintf("remove %s from spec.versions; %s; objects whose managedFields name %s are rewritten to %s first (--clean-managed-fields; server-side apply on them would fail once %s is gone)", a.OldVersion, proof, a.OldVersion, a.StorageVersion, a.OldVersion),
				retire.With("clean-managed-fields", ""))
		}
		return next(fmt.Sprintf("remove %s from spec.versions (no object's managedFields name it); %s", a.OldVersion, proof), retire)
	}
	return nil
}

// RenderCommands renders again every command of a (its findings' fixes and
// Next) with the connection flags global, so that printed lines reach the
// cluster that was read (see Command.Render).
func (a *Analysis) RenderCommands(global []Flag) {
	a.Findings = Rendered(a.Findings, global)
	a.Next = a.Next.Rendered(global)
}
