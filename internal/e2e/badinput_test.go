package e2e

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// badInput is one run of the plugin binary with bad input.
type badInput struct {
	name string
	args []string
	want string // a substring of the one line on stderr
	// code is the exit code: 1, or 2 for status, diff, check-upgrade and
	// doctor (docs/exit-codes.md).
	code int
	// report is set for a refused preflight: stdout then carries the
	// preflight or plan that explains the one error line.
	report bool
}

// badInputFiles are the files the bad inputs name.
type badInputFiles struct {
	dir, missing, malformed, configMap, twoCRDs, huge, unreadable, good, empty string
	broken, unreachable                                                        string
}

func writeBadInputFiles(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) badInputFiles {
	t.Helper()
	dir := t.TempDir()
	f := badInputFiles{
		dir:         dir,
		missing:     filepath.Join(dir, "absent.yaml"),
		malformed:   filepath.Join(dir, "malformed.yaml"),
		configMap:   filepath.Join(dir, "configmap.yaml"),
		twoCRDs:     filepath.Join(dir, "two-crds.yaml"),
		huge:        filepath.Join(dir, "huge.yaml"),
		good:        filepath.Join(dir, "crd.yaml"),
		empty:       filepath.Join(dir, "empty.yaml"),
		broken:      filepath.Join(dir, "broken-kubeconfig"),
		unreachable: filepath.Join(dir, "unreachable-kubeconfig"),
		// Unreadable even for root: reading a process's memory at offset 0
		// fails with EIO.
		unreadable: "/proc/self/mem",
	}
	manifest := crd.DeepCopy()
	manifest.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	manifest.ObjectMeta = metav1.ObjectMeta{Name: crd.Name}
	manifest.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	doc, err := yaml.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.good, string(doc))
	writeFile(t, f.twoCRDs, string(doc)+"---\n"+string(doc))
	writeFile(t, f.empty, "# nothing yet\n")
	writeFile(t, f.malformed, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: [\n")
	writeFile(t, f.configMap, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-a-crd\ndata:\n  key: value\n")
	// 20 MB: a ConfigMap holding one very long string.
	writeFile(t, f.huge, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\ndata:\n  key: "+strings.Repeat("x", 20<<20)+"\n")
	writeFile(t, f.broken, "apiVersion: v1\nclusters: [\n")
	writeFile(t, f.unreachable, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	return f
}

// badInputs is every bad input: crd is at S2 (v1 and v2 served, v2 the
// storage version, storedVersions [v1 v2]); only is at S0 (v1 alone).
func badInputs(crd, only string, f badInputFiles) []badInput {
	return []badInput{
		// Unknown and wrong kinds.
		{name: "unknown CRD name", args: []string{"status", "nosuch.example.com"}, code: 2, want: `error: no CustomResourceDefinition matches "nosuch.example.com"`},
		{name: "unknown resource", args: []string{"status", "nosuchthings"}, code: 2, want: `error: no CustomResourceDefinition matches "nosuchthings"`},
		{name: "built-in resource", args: []string{"status", "pods"}, code: 2, want: `error: "pods" is the resource pods in API group "core", which is not defined by a CustomResourceDefinition`},
		{name: "built-in kind with group", args: []string{"add-version", "deployments.apps", "v2"}, want: `"deployments.apps" is the resource deployments in API group "apps"`},
		{name: "built-in resource to migrate", args: []string{"migrate", "pods"}, want: `"pods" is the resource pods in API group "core"`},
		{name: "built-in resource to doctor", args: []string{"doctor", "pods"}, code: 2, want: `no CustomResourceDefinition matches "pods"`},

		// Connections.
		{name: "unreachable server by name", args: []string{"status", crd, "--kubeconfig", f.unreachable}, code: 2, want: "127.0.0.1:1"},
		{name: "unreachable server by short name", args: []string{"status", "ct", "--kubeconfig", f.unreachable}, code: 2, want: "127.0.0.1:1"},
		{name: "broken kubeconfig", args: []string{"status", crd, "--kubeconfig", f.broken}, code: 2, want: "error: "},
		{name: "missing kubeconfig", args: []string{"status", crd, "--kubeconfig", f.missing}, code: 2, want: "error: "},
		{name: "unknown context", args: []string{"promote-storage", crd, "v2", "--context", "nosuch"}, want: `context "nosuch" does not exist`},

		// Commands, arguments and flags.
		{name: "unknown command", args: []string{"statuss", crd}, want: `unknown command "statuss" for "kubectl crdversion"; did you mean status?`},
		{name: "unknown flag", args: []string{"serve", crd, "v1", "--nosuch"}, want: "unknown flag: --nosuch"},
		{name: "no argument", args: []string{"status"}, code: 2, want: "exactly one CRD is required, got 0 arguments; see 'kubectl crdversion status -h'"},
		{name: "one argument too many", args: []string{"deprecate", crd, "v1", "v2"}, want: "a CRD and a version are required, got 3 arguments"},
		{name: "retire without a version", args: []string{"retire", crd}, want: "a CRD and a version are required, got 1 arguments"},
		{name: "diff with two arguments", args: []string{"diff", crd, "v1"}, code: 2, want: "CRD FROM TO (three arguments)"},
		{name: "doctor with neither CRD nor --all", args: []string{"doctor"}, code: 2, want: "name at least one CRD, or give --all"},
		{name: "check-upgrade without -f", args: []string{"check-upgrade"}, code: 2, want: "-f FILENAME, --chart CHART, or --from OLD --to NEW is required"},
		{name: "check-upgrade of a missing chart", args: []string{"check-upgrade", "--chart", f.missing}, code: 2, want: "--chart " + f.missing},
		{name: "check-upgrade --from without --to", args: []string{"check-upgrade", "--from", f.good}, code: 2, want: "--from and --to go together"},
		{name: "check-upgrade -n without a Helm release", args: []string{"check-upgrade", "-f", f.good, "-n", "x"}, code: 2, want: "needs --chart or --release"},
		{name: "guard of no CRD", args: []string{"guard"}, code: 1, want: "guard takes one CRD name, got 0"},
		{name: "bad output format", args: []string{"status", crd, "-o", "table"}, code: 2, want: `error: unable to match a printer suitable for the output format "table"`},
		{name: "bad output format of an edit", args: []string{"serve", crd, "v1", "-o", "tabel"}, want: `output format "tabel"`},
		{name: "-o name for migrate", args: []string{"migrate", crd, "-o", "name"}, want: "-o name is not supported by migrate"},
		{name: "bad output format of doctor", args: []string{"doctor", crd, "-o", "xml"}, code: 2, want: `output format "xml"`},
		{name: "bad dry-run value", args: []string{"retire", crd, "v1", "--dry-run=maybe"}, want: `Invalid dry-run value (maybe)`},
		{name: "bad dry-run value of an edit", args: []string{"unserve", crd, "v1", "--dry-run=yes"}, want: `Invalid dry-run value (yes)`},
		{name: "interactive dry run", args: []string{"serve", crd, "v1", "-i", "--dry-run=server"}, want: "--interactive cannot be used with --dry-run"},
		{name: "chunk size zero", args: []string{"status", crd, "--chunk-size", "0"}, code: 2, want: "error: --chunk-size must be positive"},
		{name: "chunk size not a number", args: []string{"migrate", crd, "--chunk-size", "ten"}, want: `invalid argument "ten" for "--chunk-size" flag`},
		{name: "chunk size negative for promote-storage", args: []string{"promote-storage", crd, "v2", "--chunk-size", "-5"}, want: "--chunk-size must be positive, got -5"},
		{name: "chunk size zero for doctor", args: []string{"doctor", crd, "--chunk-size", "0"}, code: 2, want: "--chunk-size must be positive"},
		{name: "concurrency zero", args: []string{"migrate", crd, "--concurrency", "0"}, want: "--concurrency must be positive, got 0"},
		{name: "own priority level of zero shares", args: []string{"migrate", crd, "--own-priority-level=0"}, want: "--own-priority-level must be positive (nominal concurrency shares), got 0"},
		{name: "own priority level of retire without --migrate", args: []string{"retire", crd, "v1", "--own-priority-level"}, want: "--own-priority-level applies to --migrate only (retire rewrites no object without it)"},
		{name: "own priority level with the server engine", args: []string{"migrate", crd, "--own-priority-level", "--engine=server"}, want: "--own-priority-level applies to --engine=client only"},
		{name: "concurrency zero for retire", args: []string{"retire", crd, "v1", "--concurrency", "0"}, want: "--concurrency must be positive, got 0"},
		// B22: ten million workers held 23 GB and never finished.
		{name: "concurrency past any API server", args: []string{"migrate", crd, "--concurrency", "10000000"}, want: "--concurrency 10000000 is more than 1000 writes in flight"},
		{name: "negative qps", args: []string{"migrate", crd, "--qps", "-1"}, want: "--qps must not be negative, got -1"},
		{name: "negative burst", args: []string{"migrate", crd, "--burst", "-1"}, want: "--burst must not be negative, got -1"},
		{name: "negative unreachable timeout", args: []string{"migrate", crd, "--unreachable-timeout", "-1s"}, want: "--unreachable-timeout must not be negative, got -1s"},
		{name: "negative retries", args: []string{"migrate", crd, "--retries", "-2"}, want: "--retries must not be negative, got -2"},
		{name: "negative sample", args: []string{"promote-storage", crd, "v2", "--sample", "-1"}, want: "--sample must be 0 (all) or positive"},
		{name: "bad duration", args: []string{"unserve", crd, "v1", "--usage-window", "fortnight"}, want: `invalid argument "fortnight" for "--usage-window" flag`},
		{name: "negative duration", args: []string{"retire", crd, "v1", "--usage-window", "-1s"}, want: "--usage-window must not be negative, got -1s"},
		{name: "absent audit log", args: []string{"unserve", crd, "v1", "--audit-log", "/nonexistent/audit.log"}, want: "--audit-log /nonexistent/audit.log: no such file or directory"},
		{name: "not an audit log", args: []string{"retire", crd, "v1", "--migrate", "--audit-log", f.configMap}, report: true, want: "is not an audit log"},
		{name: "both Prometheus sources", args: []string{"retire", crd, "v1", "--prometheus-url", "http://127.0.0.1:1", "--prometheus-service", "monitoring/prometheus:9090"}, want: "give --prometheus-url or --prometheus-service, not both"},
		{name: "Prometheus URL without a scheme", args: []string{"doctor", crd, "--prometheus-url", "prometheus:9090"}, code: 2, want: `--prometheus-url "prometheus:9090" is not an http(s) URL`},
		{name: "Prometheus service without a namespace", args: []string{"unserve", crd, "v1", "--prometheus-service", "prometheus:9090"}, want: `--prometheus-service "prometheus:9090" is not NAMESPACE/NAME:PORT`},
		{name: "bad duration for doctor", args: []string{"doctor", crd, "--webhook-timeout", "soon"}, code: 2, want: `invalid argument "soon" for "--webhook-timeout" flag`},
		{name: "zero webhook timeout", args: []string{"add-version", crd, "v3", "--webhook-timeout", "0s"}, want: "--webhook-timeout must be positive, got 0s"},
		{name: "zero webhook timeout for doctor", args: []string{"doctor", crd, "--webhook-timeout", "0s"}, code: 2, want: "--webhook-timeout must be positive, got 0s"},
		{name: "empty field manager", args: []string{"deprecate", crd, "v1", "--field-manager="}, want: "--field-manager must not be empty"},
		{name: "bad conversion strategy", args: []string{"add-version", crd, "v3", "--conversion", "Magic"}, want: `--conversion must be None or Webhook, got "Magic"`},
		{name: "bad webhook service", args: []string{"add-version", crd, "v3", "--conversion", "Webhook", "--webhook-service", "nonamespace"}, want: "--webhook-service must be NAMESPACE/NAME[:PORT][/PATH]"},

		// Version names: not DNS-1035 labels.
		{name: "version name with capitals", args: []string{"add-version", crd, "V3"}, want: `"V3" is not a valid version name`},
		{name: "version name starting with a digit", args: []string{"promote-storage", crd, "1v"}, want: `"1v" is not a valid version name`},
		{name: "version name with an underscore", args: []string{"deprecate", crd, "v1_beta"}, want: `"v1_beta" is not a valid version name`},
		{name: "invalid version to serve", args: []string{"serve", crd, "V1"}, want: `"V1" is not a valid version name`},
		{name: "invalid version to unserve", args: []string{"unserve", crd, "v1."}, want: `"v1." is not a valid version name`},
		{name: "invalid version to retire", args: []string{"retire", crd, "V1"}, want: `"V1" is not a valid version name`},
		{name: "invalid version to diff", args: []string{"diff", crd, "v1", "V2"}, code: 2, want: `"V2" is not a valid version name`},
		{name: "invalid --from", args: []string{"add-version", crd, "v3", "--from", "v_1"}, want: `--from "v_1" is not a valid version name`},
		{name: "two schemas for a version to add", args: []string{"add-version", crd, "v3", "--preserve-unknown-fields", "--schema-file", "schema.yaml"}, want: "--preserve-unknown-fields and --schema-file both give the schema: use one"},
		{name: "retire --allow-pruning=PATHS without --migrate", args: []string{"retire", crd, "v1", "--allow-pruning=.spec.color"}, want: "--allow-pruning applies to --migrate only"},
		{name: "invalid --version of a fleet status", args: []string{"status", crd, "--all-contexts", "--version", "V1"}, code: 2, want: `--version "V1" is not a valid version name`},

		// Unknown versions and refused targets.
		{name: "unknown version to promote", args: []string{"promote-storage", crd, "v7"}, report: true, want: "version v7 is not in spec.versions"},
		{name: "unknown version to retire", args: []string{"retire", crd, "v7"}, want: "has no version v7"},
		{name: "unknown version to diff", args: []string{"diff", crd, "v1", "v7"}, code: 2, want: "v7"},
		{name: "unknown --from", args: []string{"add-version", crd, "v3", "--from", "v9"}, report: true, want: "--from v9: no such version"},
		{name: "existing version to add", args: []string{"add-version", crd, "v1", "--served=false"}, report: true, want: "version v1 already exists"},
		{name: "storage version to unserve", args: []string{"unserve", crd, "v2"}, report: true, want: "v2 is the storage version"},
		{name: "last served version to unserve", args: []string{"unserve", only, "v1", "--skip-usage-check"}, report: true, want: "v1 is the last served version"},
		{name: "storage version to retire", args: []string{"retire", crd, "v2", "--usage-window=0"}, report: true, want: "stopped at step"},
		{name: "another resource type than crd/", args: []string{"status", "deployment/" + crd}, code: 2, want: "name a CustomResourceDefinition as NAME or crd/NAME"},
		{name: "a namespace for a cluster-wide step", args: []string{"migrate", crd, "-n", "default"}, want: "-n/--namespace does not apply"},

		// Files.
		{name: "missing file", args: []string{"add-version", crd, "v3", "-f", f.missing}, want: "no such file or directory"},
		{name: "missing schema file", args: []string{"add-version", crd, "v3", "--schema-file", f.missing}, want: "no such file or directory"},
		{name: "missing CA bundle", args: []string{"add-version", crd, "v3", "--conversion", "Webhook", "--webhook-url", "https://127.0.0.1:1/convert", "--ca-bundle-file", f.missing}, want: "no such file or directory"},
		{name: "missing release manifest", args: []string{"check-upgrade", "-f", f.missing}, code: 2, want: "no such file or directory"},
		{name: "unreadable file", args: []string{"promote-storage", crd, "v2", "-f", f.unreadable}, want: "input/output error"},
		{name: "unreadable release manifest", args: []string{"check-upgrade", "-f", f.unreadable}, code: 2, want: "input/output error"},
		{name: "directory as a file", args: []string{"serve", crd, "v1", "-f", f.dir}, want: "is a directory"},
		{name: "directory as a schema file", args: []string{"add-version", crd, "v3", "--schema-file", f.dir}, want: "is a directory"},
		{name: "malformed YAML", args: []string{"deprecate", crd, "v1", "-f", f.malformed}, want: "document 1"},
		{name: "malformed YAML release", args: []string{"check-upgrade", "-f", f.malformed}, code: 2, want: f.malformed},
		{name: "malformed schema file", args: []string{"add-version", crd, "v3", "--schema-file", f.malformed}, want: "--schema-file " + f.malformed},
		{name: "a CRD manifest as the schema file, without the new version", args: []string{"add-version", crd, "v3", "--schema-file", f.good}, want: "has no version v3 to take the schema of (its versions: v1, v2)"},
		{name: "a ConfigMap, no CRD", args: []string{"unserve", crd, "v1", "-f", f.configMap}, want: "no CustomResourceDefinition in the file"},
		{name: "a ConfigMap release", args: []string{"check-upgrade", "-f", f.configMap}, code: 2, want: "no CustomResourceDefinition in " + f.configMap},
		{name: "a ConfigMap diff", args: []string{"diff", "--old", f.configMap, "--new", f.configMap}, code: 2, want: "no CustomResourceDefinition in"},
		{name: "a diff against nothing", args: []string{"diff", "--old", f.configMap, "--new", f.good}, code: 2, want: "no CustomResourceDefinition in --old " + f.configMap},
		{name: "an empty schema file", args: []string{"add-version", crd, "v3", "--schema-file", f.empty}, want: "--schema-file " + f.empty + " is empty"},
		{name: "two CRDs where one is expected", args: []string{"add-version", crd, "v3", "-f", f.twoCRDs}, want: "matches more than one document"},
		{name: "two copies of a CRD in a release", args: []string{"check-upgrade", "-f", f.twoCRDs}, code: 2, want: "when applied, the last would win"},
		// kubectl apply -f A -f A would apply it twice; check-upgrade reads
		// every -f and refuses the second copy as it refuses two in a file.
		{name: "a release file given twice", args: []string{"check-upgrade", "-f", f.good, "-f", f.good}, code: 2, want: "is given twice"},
		{name: "--in-place on standard input", args: []string{"serve", crd, "v1", "-f", "-", "--in-place"}, want: "--in-place cannot write back to standard input"},
		{name: "huge file", args: []string{"serve", crd, "v1", "-f", f.huge}, want: "no CustomResourceDefinition in the file"},
		{name: "huge release", args: []string{"check-upgrade", "-f", f.huge}, code: 2, want: "no CustomResourceDefinition in"},
		{name: "endless file", args: []string{"deprecate", crd, "v1", "-f", "/dev/zero"}, want: "larger than"},
		{name: "endless schema file", args: []string{"add-version", crd, "v3", "--schema-file", "/dev/zero"}, want: "larger than"},
		{name: "endless release", args: []string{"check-upgrade", "-f", "/dev/zero"}, code: 2, want: "larger than"},

		// Fleet flags.
		{name: "unknown fleet context", args: []string{"status", crd, "--contexts", "nosuch"}, code: 2, want: `context "nosuch" is not in the kubeconfig`},
		{name: "contexts and all-contexts", args: []string{"retire", crd, "v1", "--contexts", "a", "--all-contexts"}, want: "--contexts and --all-contexts cannot be used together"},
		{name: "zero parallel", args: []string{"doctor", crd, "--all-contexts", "--parallel", "0"}, code: 2, want: "--parallel must be positive, got 0"},
		{name: "negative cluster timeout", args: []string{"check-upgrade", "-f", f.good, "--all-contexts", "--cluster-timeout", "-1m"}, code: 2, want: "--cluster-timeout must be positive"},
		{name: "--context with --contexts", args: []string{"status", crd, "--context", "x", "--contexts", "y"}, code: 2, want: "--context cannot be used with --contexts or --all-contexts"},
	}
}

// TestBadInput runs the plugin binary with bad input: each run must print
// one line on stderr in kubectl's style (and nothing on stdout, unless a
// refused preflight explains itself there), exit with the code of
// docs/exit-codes.md, stay within a time and memory bound, and leave the
// cluster unchanged: no CRD written, no object written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	crd := advance(t, c, "badinput.example.com", apiextensionsv1.NamespaceScoped, 2, lifecycle.StateS2)
	only := advance(t, c, "badinput-s0.example.com", apiextensionsv1.NamespaceScoped, 1, lifecycle.StateS0)
	names := []string{crd.Name, only.Name}
	f := writeBadInputFiles(t, crd)
	cases := badInputs(crd.Name, only.Name, f)
	if len(cases) < 30 {
		t.Fatalf("%d bad inputs, want at least 30", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		key := strings.Join(tc.args, " ")
		if seen[key] {
			t.Fatalf("bad input %q is in the table twice", key)
		}
		seen[key] = true
	}
	t.Logf("%d distinct bad inputs", len(cases))

	before, objects := resourceVersions(t, c, names), allObjectVersions(t, c, crd, only)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !hasFlag(args, "--kubeconfig") {
				args = append(args[:len(args):len(args)], "--kubeconfig", srv.Kubeconfig)
			}
			args = append(args, "--cache-dir", filepath.Join(f.dir, "cache"))
			start := time.Now()
			r := executeWithin(t, 90*time.Second, filepath.Join(pluginDir, "kubectl-crdversion"), nil, args...)
			elapsed := time.Since(start)
			want := tc.code
			if want == 0 {
				want = 1
			}
			if r.code != want {
				t.Errorf("exit code %d, want %d", r.code, want)
			}
			if r.stdout != "" && !tc.report {
				t.Errorf("stdout = %.300q, want nothing", r.stdout)
			}
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			said := lines[0]
			if tc.report {
				// A refusal's details are in its report, above the error line.
				said = r.stdout + said
			}
			if len(lines) != 1 || !strings.Contains(said, tc.want) {
				t.Errorf("stderr = %.600q, want one line containing %q (or the report above it)\nstdout:\n%.600s", r.stderr, tc.want, r.stdout)
			}
			// Bounded: no run may take the API server's or the machine's
			// time or memory for bad input (the huge file is 20 MB).
			if elapsed > 60*time.Second {
				t.Errorf("took %s", elapsed)
			}
			if r.maxRSSKiB > 400<<10 {
				t.Errorf("peak resident set %d MiB, want at most 400", r.maxRSSKiB>>10)
			}
			if after := resourceVersions(t, c, names); !reflect.DeepEqual(after, before) {
				t.Errorf("a CRD changed:\n before %v\n after  %v", before, after)
				before = after
			}
			if after := allObjectVersions(t, c, crd, only); !reflect.DeepEqual(after, objects) {
				t.Errorf("objects changed:\n before %v\n after  %v", objects, after)
				objects = after
			}
		})
	}
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// allObjectVersions are the resourceVersions of the objects of each CRD,
// read at its storage version.
func allObjectVersions(t *testing.T, c clients, crds ...*apiextensionsv1.CustomResourceDefinition) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, crd := range crds {
		out[crd.Name] = objectVersions(t, c, crd, lifecycle.StorageVersion(crd))
	}
	return out
}
