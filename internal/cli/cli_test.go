package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/util/sanity"
)

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestKubectlConventions runs kubectl's own sanity checks of a command tree:
// normalized long descriptions and examples, kubectl-style flag names, and no
// flag registered on the global flag set.
func TestKubectlConventions(t *testing.T) {
	cmd := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	errs := sanity.RunCmdChecks(cmd, sanity.AllCmdChecks, []string{"kubectl crdversion completion"})
	errs = append(errs, sanity.RunGlobalChecks(sanity.AllGlobalChecks)...)
	for _, err := range errs {
		t.Error(err)
	}
	for _, c := range cmd.Commands() {
		if strings.HasSuffix(c.Short, ".") {
			t.Errorf("%s: short help ends with a period", c.Name())
		}
	}
}

func TestUsageShowsKubectlCrdversion(t *testing.T) {
	out, _, err := run(t, "status", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubectl crdversion status CRD") {
		t.Errorf("usage does not read as a kubectl plugin:\n%s", out)
	}
	if strings.Contains(out, "--log-dir") || strings.Contains(out, "--alsologtostderr") {
		t.Errorf("klog flags other than -v are exposed:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v["kind"] != "PluginVersion" || v["apiVersion"] != "crdversion.kubectl.io/v1alpha1" || v["version"] == "" || v["goVersion"] == "" {
		t.Errorf("version -o json = %v", v)
	}
	out, _, err = run(t, "version")
	if err != nil || !strings.HasPrefix(out, "kubectl-crdversion ") {
		t.Errorf("version = %q, %v", out, err)
	}
}

// Errors found before any request: the server in the kubeconfig is never
// contacted (it does not exist).
func TestStatusValidationNeedsNoServer(t *testing.T) {
	noServer := []string{"--server", "https://127.0.0.1:1", "--request-timeout", "1s"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "exactly one CRD is required, got 0 arguments"},
		{[]string{"status", "a", "b"}, "exactly one CRD is required, got 2 arguments"},
		{[]string{"status", "x.example.com", "-o", "wide"}, `unable to match a printer suitable for the output format "wide"`},
		{[]string{"status", "x.example.com", "--chunk-size", "-1"}, "--chunk-size must be positive"},
	}
	for _, tc := range cases {
		_, _, err := run(t, append(tc.args, noServer...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
