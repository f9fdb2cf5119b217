package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/usage"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// flagsCase is one command line of a flag-rule table: err is a substring
// of the one-line error, "" for none.
type flagsCase struct {
	args []string
	err  string
}

// toOptions parses args into a command that fl's AddFlags set up and
// returns what ToOptions and Validate make of them; the factory is never
// contacted (building clients does not reach a server, and ToOptions
// builds none).
func toOptions[O runner](t *testing.T, name string, addFlags func(*cobra.Command), toOpts func(cmdutil.Factory, *cobra.Command, []string) (O, error), args []string) (O, error) {
	t.Helper()
	var zero O
	cmd := &cobra.Command{Use: name}
	addFlags(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return zero, err
	}
	o, err := toOpts(cmdutil.NewFactory(genericclioptions.NewConfigFlags(false)), cmd, cmd.Flags().Args())
	if err != nil {
		return zero, err
	}
	return o, o.Validate()
}

func checkErr(t *testing.T, args []string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%q: %v", args, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n")):
		t.Errorf("%q: err %v, want one line containing %q", args, err, want)
	}
}

// TestDoctorOptionsValidate: doctor's flag rules, without a server.
func TestDoctorOptionsValidate(t *testing.T) {
	for _, tc := range []flagsCase{
		{args: []string{"crontabs.stable.example.com"}},
		{args: []string{"--all", "--usage-window", "30s"}},
		{args: nil, err: "name at least one CRD, or give --all; see 'doctor -h' for help and examples"},
		{args: []string{"ct", "--all"}, err: "name CRDs or give --all, not both"},
		{args: []string{"ct", "--chunk-size", "0"}, err: "--chunk-size must be positive, got 0"},
		{args: []string{"ct", "--webhook-timeout", "0s"}, err: "--webhook-timeout must be positive, got 0s"},
		{args: []string{"ct", "--usage-window", "-1s"}, err: "--usage-window must not be negative, got -1s"},
		{args: []string{"ct", "-o", "name"}, err: "-o name is not supported by doctor"},
		{args: []string{"ct", "-o", "xml"}, err: `output format "xml"`},
		{args: []string{"ct", "--contexts", "a", "--all-contexts"}, err: "--contexts and --all-contexts cannot be used together"},
		{args: []string{"ct", "--all-contexts", "--parallel", "0"}, err: "--parallel must be positive, got 0"},
		{args: []string{"ct", "--all-contexts", "--cluster-timeout", "0s"}, err: "--cluster-timeout must be positive, got 0s"},
		{args: []string{"ct", "--all-contexts", "-o", "name"}, err: "-o name is not supported by doctor"},
	} {
		fl := NewDoctorFlags(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		_, err := toOptions(t, "doctor", fl.AddFlags, fl.ToOptions, tc.args)
		checkErr(t, tc.args, err, tc.err)
	}
}

// TestCheckUpgradeOptionsValidate: check-upgrade's flag rules, without a
// server; every -f is kept, as kubectl apply keeps them.
func TestCheckUpgradeOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		flagsCase
		files []string
	}{
		{flagsCase{args: []string{"-f", "a.yaml"}}, []string{"a.yaml"}},
		{flagsCase{args: []string{"-f", "a.yaml", "-f", "crds/", "--filename=b.yaml"}}, []string{"a.yaml", "crds/", "b.yaml"}},
		{flagsCase{args: []string{"-f", "a.yaml,b.yaml", "-R"}}, []string{"a.yaml", "b.yaml"}},
		{flagsCase{args: nil, err: "-f FILENAME, --chart CHART, or --from OLD --to NEW is required; see 'check-upgrade -h' for help and examples"}, nil},
		{flagsCase{args: []string{"-f", ""}, err: "-f FILENAME, --chart CHART, or --from OLD --to NEW is required"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "--chart", "c/"}, err: "-f and --chart cannot be combined"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "--values", "v.yaml"}, err: "--values needs --chart"}, nil},
		{flagsCase{args: []string{"--chart", "c/", "-R"}, err: "-R applies to -f directories, not to --chart"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "-o", "sarif", "--all-contexts"}, err: "-o sarif is for one cluster, not for --contexts or --all-contexts"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "-o", "junit"}}, []string{"a.yaml"}},
		{flagsCase{args: []string{"--from", "old.yaml"}, err: "--from and --to go together"}, nil},
		{flagsCase{args: []string{"--from", "old.yaml", "--to", "new.yaml", "-f", "a.yaml"}, err: "-f and --chart do not apply"}, nil},
		{flagsCase{args: []string{"--from", "old.yaml", "--to", "new.yaml", "--all-contexts"}, err: "--contexts and --all-contexts do not apply"}, nil},
		{flagsCase{args: []string{"--from", "old.yaml", "--to", "new.yaml", "--values", "v.yaml"}, err: "--values are the --to chart's: --to new.yaml is no chart"}, nil},
		{flagsCase{args: []string{"--from", "old.yaml", "--to", "new.yaml", "--from-values", "v.yaml"}, err: "--from-values needs a chart in --from"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "--from-values", "v.yaml"}, err: "--from-values needs a chart in --from"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "crontabs"}, err: "unexpected arguments [crontabs]; the release's CRDs are given with -f"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "-o", "name"}, err: "-o name is not supported by check-upgrade"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "-o", "markdown"}, err: `output format "markdown"`}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "--contexts", "a", "--all-contexts"}, err: "--contexts and --all-contexts cannot be used together"}, nil},
		{flagsCase{args: []string{"-f", "a.yaml", "--all-contexts", "--cluster-timeout", "-1m"}, err: "--cluster-timeout must be positive, got -1m0s"}, nil},
	} {
		fl := NewCheckUpgradeFlags(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		o, err := toOptions(t, "check-upgrade", fl.AddFlags, fl.ToOptions, tc.args)
		checkErr(t, tc.args, err, tc.err)
		if tc.err == "" && err == nil && o.From == "" && (!reflect.DeepEqual(o.Filenames, tc.files) || o.source() != strings.Join(tc.files, ", ")) {
			t.Errorf("%q: files %q, want %q", tc.args, o.Filenames, tc.files)
		}
	}
}

// TestDoctorProgress: a list that reports progress draws a spinner naming
// the CRD and version; a list that ends before its first report draws
// nothing.
func TestDoctorProgress(t *testing.T) {
	var b bytes.Buffer
	progress, stop := view.DoctorProgress(&b)
	progress("small.example.com", "v1", 3, true)
	if b.Len() != 0 {
		t.Errorf("a short list drew %q", b.String())
	}
	progress("widgets.example.com", "v2", 250, false)
	progress("widgets.example.com", "v2", 400, true)
	stop()
	if !strings.Contains(b.String(), "checking widgets.example.com at v2") {
		t.Errorf("drew %q", b.String())
	}
}

// TestPrintDoctorUsage: the table view lists, per CRD, the verdict of
// each deprecated version and the clients its sources name.
func TestPrintDoctorUsage(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"}
	last := time.Date(2026, 11, 30, 10, 2, 11, 0, time.UTC)
	a := usage.Combine(gvr, time.Hour,
		usage.SourceReport{Source: usage.SourcePrometheus, Name: "Prometheus http://p:9090", Requests: map[string]int64{"LIST": 3}},
		usage.SourceReport{Source: usage.SourceAuditLog, Name: "audit log a.log", Clients: []usage.Client{{User: "alice", UserAgent: "nightly-backup/1.0", Verb: "LIST", Count: 3, Last: last, InWindow: true}}})
	r := &report.Doctor{CRDs: []report.DoctorCRD{{Name: "crontabs.stable.example.com", Usage: []usage.Assessment{a}}}}
	var b strings.Builder
	if err := view.Doctor(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"crontabs.stable.example.com: client usage of its deprecated and old versions",
		"  INUSE: clients still use stable.example.com/v1beta1 crontabs (seen by: Prometheus http://p:9090 and audit log a.log)",
		`    client: user alice, agent "nightly-backup/1.0": LIST 3, last 2026-11-30T10:02:11Z (inside the window)`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
