package edit

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

func withPUF(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd.Spec.PreserveUnknownFields = true
	return crd
}

// defaulted is the schema of crdtest.SpecSchema("size") with a default for size.
func defaulted() *apiextensionsv1.CustomResourceValidation {
	v := crdtest.SpecSchema("size")
	spec := v.OpenAPIV3Schema.Properties["spec"]
	size := spec.Properties["size"]
	size.Default = &apiextensionsv1.JSON{Raw: []byte(`"M"`)}
	spec.Properties["size"] = size
	v.OpenAPIV3Schema.Properties["spec"] = spec
	return v
}

// sized are what every version of the tests' CRDs has besides its schema:
// the status subresource and a Size printer column, which edits keep.
var sized = []crdtest.VersionOption{crdtest.StatusSubresource, crdtest.PrinterColumn("Size", "string", ".spec.size")}

// outcomes renders the checks as "Name=outcome" for comparison.
func outcomes(cs Checks) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+"="+string(c.Outcome))
	}
	return strings.Join(out, " ")
}

// removedV0 is a CRD whose v1 is the storage version and whose
// status.storedVersions still lists v0, removed from spec.versions — or,
// trimmed, no longer lists it.
func removedV0(trimmed bool) *apiextensionsv1.CustomResourceDefinition {
	b := crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage)
	if trimmed {
		return b.Stored("v1").CRD()
	}
	return b.Stored("v0", "v1").CRD()
}

func TestAddVersion(t *testing.T) {
	one := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD()
	}
	cases := []struct {
		name   string
		in     *apiextensionsv1.CustomResourceDefinition
		spec   AddVersionSpec
		checks string
		noop   bool
	}{
		{"copy of the storage version", one(), AddVersionSpec{Name: "v2", Served: true},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=warn", false},
		{"a retired version back", func() *apiextensionsv1.CustomResourceDefinition {
			c := one()
			c.Annotations = map[string]string{lifecycle.RetiredVersionsAnnotation: "v1alpha3"}
			return c
		}(), AddVersionSpec{Name: "v1alpha3", Served: true},
			"VersionName=pass VersionRetired=warn VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=pass", false},
		{"unserved: default unchanged", one(), AddVersionSpec{Name: "v2"},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=pass", false},
		{"invalid name", one(), AddVersionSpec{Name: "V2", Served: true},
			"VersionName=fail VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=pass", false},
		{"name not in version form", one(), AddVersionSpec{Name: "next", Served: true},
			"VersionName=warn VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=pass", false},
		{"unknown --from", one(), AddVersionSpec{Name: "v2", From: "v0", Served: true},
			"VersionName=pass FromVersion=fail VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=warn", false},
		{"same version again", one(), AddVersionSpec{Name: "v1", Served: true},
			"VersionName=pass VersionAbsent=pass", true},
		{"existing name, other flags", one(), AddVersionSpec{Name: "v1", Served: false},
			"VersionName=pass VersionAbsent=fail", false},
		{"schema that prunes under None", one(), AddVersionSpec{Name: "v2", Served: true, Schema: crdtest.SpecSchema("colour")},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=fail DefaultVersion=warn CopiedFrom=pass", false},
		{"--allow-pruning", one(), AddVersionSpec{Name: "v2", Served: true, Schema: crdtest.SpecSchema("colour"), Pruning: Pruning{All: true}},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=warn DefaultVersion=warn CopiedFrom=pass", false},
		{"webhook without client config", one(), AddVersionSpec{Name: "v2", Served: true, Schema: crdtest.SpecSchema("colour"),
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}}},
			"VersionName=pass VersionAbsent=pass ConversionStrategy=warn WebhookConfig=fail DefaultVersion=warn CopiedFrom=pass", false},
		{"webhook with URL and CA", one(), AddVersionSpec{Name: "v2", Served: true, Schema: crdtest.SpecSchema("colour"),
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://x.example.com"), CABundle: []byte("pem")}, ConversionReviewVersions: []string{"v1"}}}},
			"VersionName=pass VersionAbsent=pass ConversionStrategy=warn WebhookConfig=pass DefaultVersion=warn CopiedFrom=pass", false},
		{"empty deprecation warning", one(), AddVersionSpec{Name: "v2", Served: true, Deprecated: true, DeprecationWarning: ptr.To("")},
			"VersionName=pass DeprecationWarning=fail VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=warn", false},
		{"schema that is not an object", one(), AddVersionSpec{Name: "v2", Served: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			"VersionName=pass Schema=fail VersionAbsent=pass NoneConversionPruning=fail DefaultVersion=warn CopiedFrom=pass", false},
		{"existing name, now deprecated", one(), AddVersionSpec{Name: "v1", Served: true, Deprecated: true},
			"VersionName=pass VersionAbsent=fail", false},
		// B21: a version removed while objects were stored at it comes
		// back unserved with a schema that keeps every field; what that
		// schema and the others prune of each other under None is not
		// this step's loss (it writes no object, no client writes through
		// an unserved version; migrate measures) — served, or not stored,
		// it is.
		{"restore of a stored version, unserved", removedV0(false), AddVersionSpec{Name: "v0", Schema: PreserveUnknownSchema()},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=warn DefaultVersion=pass CopiedFrom=pass", false},
		{"restore of a version the API server says objects are stored at", removedV0(true), AddVersionSpec{Name: "v0", Schema: PreserveUnknownSchema(), StoredAt: true},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=warn DefaultVersion=pass CopiedFrom=pass", false},
		{"restore served", removedV0(false), AddVersionSpec{Name: "v0", Served: true, Schema: PreserveUnknownSchema()},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=fail DefaultVersion=pass CopiedFrom=pass", false},
		{"restore with a copied schema", removedV0(false), AddVersionSpec{Name: "v0"},
			"VersionName=pass VersionAbsent=pass RestoreSchema=fail NoneConversionPruning=pass DefaultVersion=pass", false},
		{"restore with a copied schema, --allow-pruning", removedV0(false), AddVersionSpec{Name: "v0", Pruning: Pruning{All: true}},
			"VersionName=pass VersionAbsent=pass RestoreSchema=warn NoneConversionPruning=pass DefaultVersion=pass", false},
		{"a new version, unserved, nothing stored at it", removedV0(true), AddVersionSpec{Name: "v0", Schema: PreserveUnknownSchema()},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=fail DefaultVersion=pass CopiedFrom=pass", false},
		// Case 11: the API server rejects defaults while preserveUnknownFields is true.
		{"defaults with preserveUnknownFields", withPUF(one()), AddVersionSpec{Name: "v2", Served: true, Schema: defaulted()},
			"VersionName=pass VersionAbsent=pass PreserveUnknownFields=fail NoneConversionPruning=pass DefaultVersion=warn CopiedFrom=pass", false},
		{"defaults without preserveUnknownFields", one(), AddVersionSpec{Name: "v2", Served: true, Schema: defaulted()},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=warn CopiedFrom=pass", false},
		{"no defaults with preserveUnknownFields", withPUF(one()), AddVersionSpec{Name: "v2", Served: true},
			"VersionName=pass VersionAbsent=pass NoneConversionPruning=pass DefaultVersion=warn", false},
		// Case 12: and Webhook conversion.
		{"webhook with preserveUnknownFields", withPUF(one()), AddVersionSpec{Name: "v2", Served: true,
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://x.example.com"), CABundle: []byte("pem")}, ConversionReviewVersions: []string{"v1"}}}},
			"VersionName=pass VersionAbsent=pass ConversionStrategy=warn WebhookConfig=pass PreserveUnknownFields=fail DefaultVersion=warn", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			r := AddVersion(tc.in, tc.spec)
			if got := outcomes(r.Checks); got != tc.checks {
				t.Errorf("checks:\n got %s\nwant %s", got, tc.checks)
			}
			if r.NoOp != tc.noop {
				t.Errorf("NoOp = %v, want %v", r.NoOp, tc.noop)
			}
			if tc.in.String() != before.String() {
				t.Error("AddVersion modified its input")
			}
			if r.Edited.ResourceVersion != tc.in.ResourceVersion {
				t.Error("the edited copy lost the resourceVersion the write is pinned to")
			}
		})
	}

	r := AddVersion(one(), AddVersionSpec{Name: "v2", Served: true, Deprecated: true, DeprecationWarning: ptr.To("old")})
	v2 := lifecycle.FindVersion(r.Edited, "v2")
	if v2 == nil || v2.Storage || !v2.Served || !v2.Deprecated || *v2.DeprecationWarning != "old" ||
		v2.Subresources == nil || len(v2.AdditionalPrinterColumns) != 1 {
		t.Errorf("v2 = %+v", v2)
	}
}

func TestPromoteStorage(t *testing.T) {
	cases := []struct {
		name   string
		in     *apiextensionsv1.CustomResourceDefinition
		to     string
		checks string
		noop   bool
	}{
		{"served version", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(), "v2",
			"VersionServed=pass NoneConversionPruning=pass", false},
		{"missing version", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(), "v2",
			"VersionExists=fail", false},
		{"unserved version", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Version("v2").Stored("v1").CRD(), "v2",
			"VersionServed=fail", false},
		{"already storage", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(), "v1",
			"VersionServed=pass", true},
		{"None conversion that prunes", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b")).Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD(), "v2",
			"VersionServed=pass NoneConversionPruning=fail", false},
		// Manifests only (case 15): the API server rejects both.
		{"two storage versions in a manifest", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Version("v1alpha1", crdtest.Served, crdtest.Storage).Stored("v1alpha1").CRD(), "v1",
			"VersionServed=pass StorageVersionCount=warn NoneConversionPruning=pass", false},
		{"no storage version in a manifest", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v1alpha1", crdtest.Served).Stored("v1alpha1").CRD(), "v1",
			"VersionServed=pass StorageVersionCount=warn NoneConversionPruning=pass", false},
		// B2: a move back says so; names nothing orders say that.
		{"back to an older version", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD(), "v1",
			"VersionServed=pass VersionOrder=warn NoneConversionPruning=pass", false},
		{"date-stamped names nothing orders", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1api20210501", crdtest.Served).Version("v1api20230101", crdtest.Served, crdtest.Storage).Stored("v1api20230101").CRD(), "v1api20210501",
			"VersionServed=pass VersionOrder=warn NoneConversionPruning=pass", false},
		{"forward by Kubernetes' rules: no word", crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Version("v2", crdtest.Served).Stored("v1").CRD(), "v2",
			"VersionServed=pass NoneConversionPruning=pass", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := PromoteStorage(tc.in, tc.to, Pruning{}, nil)
			if got := outcomes(r.Checks); got != tc.checks {
				t.Errorf("checks:\n got %s\nwant %s", got, tc.checks)
			}
			if r.NoOp != tc.noop {
				t.Errorf("NoOp = %v", r.NoOp)
			}
			if len(r.Checks.Failed()) == 0 && !r.NoOp {
				if s := lifecycle.StorageVersions(r.Edited); len(s) != 1 || s[0] != tc.to {
					t.Errorf("storage versions after the edit: %v", s)
				}
			}
		})
	}
}

// TestPromoteStoragePruningPaths: --allow-pruning=PATHS accepts the fields
// conversion None prunes under them and no other; the refusal's way out is
// the flag that accepts what it names and what was accepted.
func TestPromoteStoragePruningPaths(t *testing.T) {
	crd := crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b", "c")).
		Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD()
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{nil, "fail 2 field(s) would be pruned (use Webhook conversion, make the schemas agree, or pass --allow-pruning=.spec.b,.spec.c to accept the loss)"},
		{[]string{".spec.b"}, "fail 1 field(s) would be pruned (1 more accepted by --allow-pruning=.spec.b) (use Webhook conversion, make the schemas agree, or pass --allow-pruning=.spec.b,.spec.c to accept the loss)"},
		{[]string{".spec.c", ".spec.b"}, "warn 2 field(s) WILL BE LOST when objects move between v2 and other versions (--allow-pruning=.spec.c,.spec.b)"},
		{[]string{".spec"}, "warn 2 field(s) WILL BE LOST"},
		{[]string{".spec.bb", ".status"}, "fail 2 field(s) would be pruned (use Webhook conversion, make the schemas agree, or pass --allow-pruning=.spec.b,.spec.bb,.spec.c,.status to accept the loss)"},
	} {
		r := PromoteStorage(crd, "v2", Pruning{Paths: tc.paths}, nil)
		c := r.Checks[len(r.Checks)-1]
		if c.Name != CheckNoneConversionPruning || !strings.Contains(string(c.Outcome)+" "+c.Message, strings.TrimPrefix(strings.TrimPrefix(tc.want, "fail "), "warn ")) ||
			!strings.HasPrefix(tc.want, string(c.Outcome)) {
			t.Errorf("paths %q: %s %s %q, want %q", tc.paths, c.Name, c.Outcome, c.Message, tc.want)
		}
	}
}

// sendsTo is a CRD whose deprecated v1 warns "use TEXT", v2 served and v3
// the storage version.
func sendsTo(text string) *apiextensionsv1.CustomResourceDefinition {
	c := crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v2", crdtest.Served).Version("v3", crdtest.Served, crdtest.Storage).Stored("v3").CRD()
	c.Spec.Versions[0].Deprecated = true
	c.Spec.Versions[0].DeprecationWarning = ptr.To("example.com/v1 Widget is deprecated; use " + text)
	return c
}

func TestSetServedAndDeprecate(t *testing.T) {
	two := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v2").CRD()
	}
	cases := []struct {
		name   string
		result *Result
		checks string
		noop   bool
	}{
		{"unserve old", SetServed(two(), "v1", false), "VersionExists=pass NotStorage=pass AnotherServed=pass DefaultVersion=pass", false},
		{"unserve storage", SetServed(two(), "v2", false), "VersionExists=pass NotStorage=fail AnotherServed=pass DefaultVersion=warn", false},
		{"unserve the last served", SetServed(crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(), "v1", false),
			"VersionExists=pass NotStorage=fail AnotherServed=fail DefaultVersion=warn", false},
		{"unserve a stored version", SetServed(crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").CRD(), "v1", false),
			"VersionExists=pass NotStorage=pass AnotherServed=pass NotStored=warn DefaultVersion=pass", false},
		// B26: under Webhook, migrate reads at the stored version: unserving
		// it first would make the next step serve it again.
		{"unserve a stored version under a webhook", SetServed(crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served).Version("v2", crdtest.Served, crdtest.Storage).Stored("v1", "v2").WebhookURL("https://conv.example.com", nil).CRD(), "v1", false),
			"VersionExists=pass NotStorage=pass AnotherServed=pass NotStored=fail DefaultVersion=pass", false},
		// Friction 8: Gateway API's v1alpha2 warning sends clients to
		// v1beta1; unserving v1beta1 sends them nowhere.
		{"unserve the version another's warning names", SetServed(sendsTo("example.com/v2 Widget"), "v2", false),
			"VersionExists=pass NotStorage=pass AnotherServed=pass DeprecationWarnings=warn DefaultVersion=pass", false},
		{"unserve a version a warning names only as a prefix", SetServed(sendsTo("example.com/v2beta1 Widget"), "v2", false),
			"VersionExists=pass NotStorage=pass AnotherServed=pass DefaultVersion=pass", false},
		{"serve served", SetServed(two(), "v1", true), "VersionExists=pass", true},
		{"serve unknown", SetServed(two(), "v9", true), "VersionExists=fail", false},
		{"deprecate old", Deprecate(two(), "v1", nil, false), "VersionExists=pass", false},
		{"deprecate storage and default", Deprecate(two(), "v2", ptr.To("example.com/v2 Widget is going away"), false), "VersionExists=pass NotStorage=warn NotDefault=warn", false},
		// Case 23: a warning that names no API, on the only served version.
		{"deprecate with a vague warning", Deprecate(two(), "v1", ptr.To("This API is deprecated and is scheduled to be removed in a future release."), false), "VersionExists=pass WarningText=warn", false},
		{"deprecate the only served version", Deprecate(crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Stored("v1").CRD(), "v1", nil, false),
			"VersionExists=pass NotStorage=warn Replacement=warn NotDefault=warn", false},
		{"undo when not deprecated", Deprecate(two(), "v1", nil, true), "VersionExists=pass", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcomes(tc.result.Checks); got != tc.checks {
				t.Errorf("checks:\n got %s\nwant %s", got, tc.checks)
			}
			if tc.result.NoOp != tc.noop {
				t.Errorf("NoOp = %v", tc.result.NoOp)
			}
		})
	}
	d := Deprecate(two(), "v1", ptr.To("use v2"), false)
	again := Deprecate(d.Edited, "v1", ptr.To("use v2"), false)
	if !again.NoOp {
		t.Error("deprecating twice with the same warning is not a no-op")
	}
	undo := Deprecate(d.Edited, "v1", nil, true)
	if v := lifecycle.FindVersion(undo.Edited, "v1"); v.Deprecated || v.DeprecationWarning != nil {
		t.Errorf("undo left %+v", v)
	}
}

// TestRefusalIsOneShortLine: a refused edit's error line names what was
// refused and the failed check; the check's message and details are in the
// preflight report printed before it (Shown), and in Details.
func TestRefusalIsOneShortLine(t *testing.T) {
	r := PromoteStorage(crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a", "b", "c", "d", "e", "f", "g")).Version("v2", crdtest.Served, crdtest.Fields("z")).Stored("v1").CRD(), "v2", Pruning{}, nil)
	err := r.Refused("promote-storage")
	if err == nil {
		t.Fatal("no refusal")
	}
	msg := err.Error()
	want := "refusing to promote-storage widgets.example.com, nothing was changed: the preflight check " + CheckNoneConversionPruning + " failed; the FAIL line above says how to proceed"
	if msg != want {
		t.Errorf("refusal message:\n%s\nwant:\n%s", msg, want)
	}
	if !err.Shown || len(err.Details) != 1 || !strings.Contains(err.Details[0], "and 3 more") {
		t.Errorf("details: shown %v, %q", err.Shown, err.Details)
	}
}

// TestAddVersionWithSchemaKeepsSubresources: a version added with its own
// schema keeps the status and scale subresources, printer columns and
// selectable fields of the version it comes from (the storage version by
// default), so that controllers writing /status and kubectl scale keep
// working at it (bug B3: they were dropped silently).
func TestAddVersionWithSchemaKeepsSubresources(t *testing.T) {
	in := crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage).Version("v1beta1", crdtest.Served).Stored("v1").CRD()
	in.Spec.Versions[0].Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}
	in.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.size"}}
	in.Spec.Versions[1].Subresources = nil
	in.Spec.Versions[1].AdditionalPrinterColumns = nil
	for _, tc := range []struct {
		from, want string
		columns    int
	}{
		{"", "v2 keeps the status subresource, the scale subresource, 1 printer column(s), 1 selectable field(s) of v1", 1},
		{"v1beta1", "", 0},
	} {
		r := AddVersion(in, AddVersionSpec{Name: "v2", From: tc.from, Served: true, Schema: crdtest.SpecSchema("size")})
		v := lifecycle.FindVersion(r.Edited, "v2")
		if v == nil {
			t.Fatalf("from %q: v2 not added", tc.from)
		}
		var copied string
		for _, c := range r.Checks {
			if c.Name == "CopiedFrom" {
				copied = c.Message
			}
		}
		if copied != tc.want || len(v.AdditionalPrinterColumns) != tc.columns || (tc.columns > 0) != (v.Subresources != nil && v.Subresources.Scale != nil) {
			t.Errorf("from %q: check %q, version %+v", tc.from, copied, v)
		}
		if !strings.Contains(r.Summary, "the given schema") {
			t.Errorf("from %q: summary %q", tc.from, r.Summary)
		}
	}
}

// TestPruningWayOutOfAWildcard (trial): where the schemas' prediction is a
// wildcard (".spec.*": v1 keeps fields under .spec that it does not name,
// v2 prunes them), the refusal offered the bare --allow-pruning, which
// accepts every loss and switches the measurement off. It names the field
// above the wildcard, which --allow-pruning takes, and the line it prints
// passes the check.
func TestPruningWayOutOfAWildcard(t *testing.T) {
	crd := crdtest.New("widgets.example.com").EachVersion(sized...).Version("v1", crdtest.Served, crdtest.Storage, crdtest.Fields("a")).
		Version("v2", crdtest.Served, crdtest.Fields("a")).Stored("v1").CRD()
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.XPreserveUnknownFields = ptr.To(true)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec

	c := PromoteStorage(crd, "v2", Pruning{}, nil).Checks
	last := c[len(c)-1]
	if last.Name != CheckNoneConversionPruning || last.Outcome != Fail || !strings.Contains(last.Message, "pass --allow-pruning=.spec to accept") {
		t.Fatalf("%s %s %q, want a failure whose way out is --allow-pruning=.spec", last.Name, last.Outcome, last.Message)
	}
	c = PromoteStorage(crd, "v2", Pruning{Paths: []string{".spec"}}, nil).Checks
	if last := c[len(c)-1]; last.Outcome != Warn {
		t.Errorf("with the printed way out: %s %q, want a warning", last.Outcome, last.Message)
	}
	for path, want := range map[string]string{".spec.*": ".spec", ".spec.x.*.y": ".spec.x", ".spec.ports[*].name": ".spec.ports[*].name", ".*": ""} {
		if got, ok := flagPath(path); got != want || ok != (want != "") {
			t.Errorf("flagPath(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}
