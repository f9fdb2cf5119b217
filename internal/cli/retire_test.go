package cli

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/retire"
	"github.com/crdversion/kubectl-crdversion/internal/view"
)

// retireOptions parses args as retire's command line would and resolves
// them with ToOptions and Validate; no request is sent (the server does
// not exist).
func retireOptions(t *testing.T, args ...string) (*RetireOptions, error) {
	t.Helper()
	conn := genericclioptions.NewConfigFlags(false)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	fl := NewRetireFlags(streams, conn)
	cmd := &cobra.Command{Use: "retire"}
	conn.AddFlags(cmd.PersistentFlags())
	fl.AddFlags(cmd)
	if err := cmd.ParseFlags(append(args, "--server", "https://127.0.0.1:1")); err != nil {
		return nil, err
	}
	o, err := fl.ToOptions(cmdutil.NewFactory(conn), cmd, cmd.Flags().Args())
	if err == nil {
		err = o.Validate()
	}
	if out.Len()+errOut.Len() > 0 {
		t.Errorf("%v printed %q %q", args, out, errOut)
	}
	return o, err
}

// TestRetireFlags: retire's flag rules, each a one-line error before any
// request.
func TestRetireFlags(t *testing.T) {
	const crd = "crontabs.stable.example.com"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "a CRD and a version are required, got 0 arguments; see 'retire -h' for help and examples"},
		{[]string{crd}, "a CRD and a version are required, got 1 arguments"},
		{[]string{crd, "v1", "v2"}, "a CRD and a version are required, got 3 arguments"},
		{[]string{crd, "V1"}, `"V1" is not a valid version name`},
		{[]string{crd, "v1", "--dry-run=maybe"}, "Invalid dry-run value (maybe)"},
		{[]string{crd, "v1", "-o", "name"}, "-o name is not supported by retire"},
		{[]string{crd, "v1", "-o", "wide"}, `unable to match a printer suitable for the output format "wide"`},
		{[]string{crd, "v1", "--chunk-size", "0"}, "--chunk-size must be positive, got 0"},
		{[]string{crd, "v1", "--concurrency", "-1"}, "--concurrency must be positive, got -1"},
		{[]string{crd, "v1", "--concurrency", "1001"}, "--concurrency 1001 is more than 1000 writes in flight"},
		{[]string{crd, "v1", "--field-manager", ""}, "--field-manager must not be empty"},
		{[]string{crd, "v1", "--usage-window", "-1s"}, "--usage-window must not be negative, got -1s"},
		{[]string{crd, "v1", "--usage-window", "fortnight"}, `invalid argument "fortnight" for "--usage-window" flag`},
		{[]string{crd, "v1", "--prometheus-url", "prometheus:9090"}, `--prometheus-url "prometheus:9090" is not an http(s) URL`},
		{[]string{crd, "v1", "--prometheus-service", "prometheus:9090"}, `--prometheus-service "prometheus:9090" is not NAMESPACE/NAME:PORT`},
		{[]string{crd, "v1", "--prometheus-url", "http://p:9090", "--prometheus-service", "monitoring/p:9090"}, "give --prometheus-url or --prometheus-service, not both"},
		{[]string{crd, "v1", "--audit-log", "/nonexistent/audit.log"}, "--audit-log /nonexistent/audit.log: no such file or directory"},
		{[]string{crd, "v1", "--audit-log", "/"}, "--audit-log / is a directory"},
		{[]string{crd, "v1", "--contexts", "a", "--all-contexts"}, "--contexts and --all-contexts cannot be used together"},
		{[]string{crd, "v1", "--contexts", "a", "--parallel", "0"}, "--parallel must be positive, got 0"},
		{[]string{crd, "v1", "--contexts", "a", "--cluster-timeout", "0s"}, "--cluster-timeout must be positive, got 0s"},
	} {
		_, err := retireOptions(t, tc.args...)
		switch {
		case err == nil:
			t.Errorf("%v: accepted, want %q", tc.args, tc.want)
		case !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%v: %q, want one line with %q", tc.args, err, tc.want)
		}
	}
}

// TestRetireOptions: what the flags resolve to.
func TestRetireOptions(t *testing.T) {
	audit := t.TempDir() + "/audit.log"
	if err := os.WriteFile(audit, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := retireOptions(t, "crontabs.stable.example.com", "v1", "--migrate", "--clean-managed-fields", "--skip-usage-check", "--dry-run=server", "-o", "json", "--usage-window", "7d",
		"--prometheus-url", "http://prometheus.monitoring:9090", "--audit-log", audit, "--audit-log", audit)
	if err != nil {
		t.Fatal(err)
	}
	want := retire.Options{DryRun: lifecycle.DryRunServer, SkipUsageCheck: true, Migrate: true, CleanManagedFields: true}
	if got := o.Retire; got.DryRun != want.DryRun || got.SkipUsageCheck != want.SkipUsageCheck || got.Migrate != want.Migrate || got.CleanManagedFields != want.CleanManagedFields {
		t.Errorf("retire options %+v, want %+v", got, want)
	}
	if o.log != o.ErrOut || o.Usage.Window != 7*24*time.Hour || o.CRD != "crontabs.stable.example.com" || o.Version != "v1" {
		t.Errorf("log to stdout with -o, or window %s, or %s %s", o.Usage.Window, o.CRD, o.Version)
	}
	if o.Usage.PrometheusURL != "http://prometheus.monitoring:9090" || len(o.Usage.AuditLogs) != 2 || !o.Usage.Skip {
		t.Errorf("usage configuration %+v", o.Usage)
	}
	if len(o.Retire.Global) != 1 || o.Retire.Global[0].Name != "server" {
		t.Errorf("connection flags %v, want --server", o.Retire.Global)
	}
	for args, want := range map[string]lifecycle.DryRun{"--dry-run=client": lifecycle.DryRunClient, "--dry-run=none": lifecycle.DryRunNone} {
		o, err := retireOptions(t, "crontabs.stable.example.com", "v1", args)
		if err != nil || o.Retire.DryRun != want {
			t.Errorf("%s: %v, dry run %d, want %d", args, err, o.Retire.DryRun, want)
		}
	}
	o, err = retireOptions(t, "crontabs.stable.example.com", "v1")
	if err != nil || o.log != o.Out {
		t.Errorf("without -o the log goes to stdout: %v", err)
	}
	var b bytes.Buffer
	if err := o.print(&report.Retire{CRD: "x"}, &b); err != nil || b.Len() > 0 {
		t.Errorf("the human view prints after the log: %q %v", b.String(), err)
	}
}

// TestRetireLog: the progress log's lines, as retire printed them before
// the executor moved to internal/retire.
func TestRetireLog(t *testing.T) {
	var log, errOut bytes.Buffer
	l := &view.RetireLog{Log: &log, ErrOut: &errOut, Sources: "every API server instance's /metrics, read 15s apart and the objects' managedFields", Refresh: "kubectl api-resources"}
	blocked := retire.Step{Number: 1, ID: retire.ClientsMoved, Title: "clients moved off v1", Status: retire.Blocked, Message: "clients still use v1",
		Command: "kubectl crdversion retire c.example.com v1", Evidence: []string{"open now: WATCH 1"}}
	done := retire.Step{Number: 3, ID: retire.StorageMoved, Title: "another version is the storage version", Status: retire.Done, Message: "the storage version is v2"}
	unserve := retire.Step{Number: 2, ID: retire.Unserved, Title: "v1 unserved", Status: retire.ToDo, Message: "set served: false on v1"}
	analysis := lifecycle.Analyze(&apiextensionsv1.CustomResourceDefinition{})
	for _, e := range []retire.Event{
		{Kind: retire.EventMeasuring},
		{Kind: retire.EventPlan, Steps: []retire.Step{blocked, done}},
		{Kind: retire.EventRetiring},
		{Kind: retire.EventStep, Step: done, Total: 7},
		{Kind: retire.EventTaking, Step: unserve, Total: 7},
		{Kind: retire.EventStep, Step: blocked, Total: 7},
		{Kind: retire.EventManagedFieldsCleaned, ManagedFields: &retire.ManagedFieldsCleanup{Rewritten: 3, Relabeled: 2, Merged: 1, Current: 4, Deleted: 5}},
		{Kind: retire.EventWarning, Err: errors.New("slow discovery")},
		{Kind: retire.EventRetired, Analysis: &analysis},
	} {
		e.CRD, e.Group, e.Version = "c.example.com", "example.com", "v1"
		l.Event(e)
	}
	want := `Measuring the client usage of example.com/v1 from every API server instance's /metrics, read 15s apart and the objects' managedFields…
Plan to retire v1 from c.example.com:
  1. BLOCKED  clients moved off v1: clients still use v1
              · open now: WATCH 1
              run: kubectl crdversion retire c.example.com v1
  3. DONE     another version is the storage version: the storage version is v2
Nothing is changed while a step is blocked; after unblocking, re-run to take the steps in order.
Retiring v1 from c.example.com
[3/7] another version is the storage version: DONE — the storage version is v2
[2/7] v1 unserved: set served: false on v1…
[1/7] clients moved off v1: BLOCKED — clients still use v1
      · open now: WATCH 1
      run: kubectl crdversion retire c.example.com v1
      managedFields rewritten on 3 object(s) (entries relabeled: 2, merged: 1); 4 already clean, 5 deleted
v1 retired from c.example.com. State: ` + string(analysis.State) + `, ` + analysis.StateDescription + "\n" +
		"Unserved: example.com/v1 is out of discovery. Clients that cached discovery keep calling it (404) until they refresh: run kubectl api-resources to refresh kubectl's cache, and restart long-running controllers that cache it (GitOps, policy engines, operators)\n"
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
	if errOut.String() != "Warning: slow discovery\n" {
		t.Errorf("stderr %q", errOut.String())
	}
}
