package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// corpusDir is the shared CRD corpus beside the repository (../shared/crds),
// or the directory in $CRDVERSION_CORPUS.
func corpusDir() string {
	if d := os.Getenv("CRDVERSION_CORPUS"); d != "" {
		return d
	}
	return filepath.Join(repoRoot, "..", "shared", "crds")
}

// TestCorpusInstallAndStatus installs every CRD of the shared corpus (the
// original files; the .nodesc copies differ only in descriptions) on the
// real API server and runs status on it. A CRD the API server rejects is
// reported as the API server's rejection, never as a failure of the plugin.
// CRDs of different names run in parallel; the releases of one CRD run in
// order, each removed before the next is installed.
func TestCorpusInstallAndStatus(t *testing.T) {
	slowTier(t, "every CRD of the corpus")
	dir := corpusDir()
	if _, err := os.Stat(dir); err != nil {
		missingPrerequisite(t, "no CRD corpus at %s (a checkout without ../shared); set CRDVERSION_CORPUS to run this test", dir)
	}
	byName := map[string][]corpusCRD{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".nodesc.yaml") {
			return err
		}
		objs, err := fixture.Read(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		for _, u := range objs {
			if !fixture.IsCRD(u) {
				continue
			}
			crd, err := fixture.CRD(u)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			rel, _ := filepath.Rel(dir, path)
			byName[crd.Name] = append(byName[crd.Name], corpusCRD{file: rel, crd: crd})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName) == 0 {
		t.Fatalf("no CRDs found under %s", dir)
	}

	c := newClients(t)
	var mu sync.Mutex
	var installed, rejected []string
	t.Run("crds", func(t *testing.T) {
		for name, files := range byName {
			sort.Slice(files, func(i, j int) bool { return files[i].file < files[j].file })
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				for _, f := range files {
					ok, msg := installAndStatus(t, c, f)
					mu.Lock()
					if ok {
						installed = append(installed, f.file)
					} else {
						rejected = append(rejected, f.file+": "+msg)
					}
					mu.Unlock()
				}
			})
		}
	})
	sort.Strings(rejected)
	t.Logf("%d CRD files installed and got a status; %d not served by the API server", len(installed), len(rejected))
	for _, r := range rejected {
		t.Logf("not served by the API server: %s", r)
	}
	if len(installed) == 0 {
		t.Error("no CRD of the corpus could be installed")
	}
}

type corpusCRD struct {
	file string
	crd  *apiextensionsv1.CustomResourceDefinition
}

// installAndStatus creates the CRD, checks status on it and deletes it. It
// returns false and the API server's message when the server rejects the CRD.
func installAndStatus(t *testing.T, c clients, f corpusCRD) (bool, string) {
	t.Helper()
	ctx := context.Background()
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	crd := f.crd.DeepCopy()
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return false, err.Error()
		}
		t.Fatalf("%s: creating %s: %v", f.file, crd.Name, err)
	}
	defer func() {
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("%s: deleting: %v", f.file, err)
		}
		waitFor(t, crd.Name+" to be deleted", func() (bool, error) {
			_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}()
	// The API server accepts some CRDs but never serves them (for example
	// a placeholder caBundle that cert-manager would inject): wait for
	// Established either way, and expect status to report it.
	established := false
	waitFor(t, crd.Name+" to be established or refused", func() (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established = true
				return true, nil
			}
			if cond.Type == apiextensionsv1.Established && cond.Reason != "" && cond.Reason != "Installing" {
				return true, nil
			}
		}
		return false, nil
	})
	if !established {
		s := statusJSON(t, crd.Name, "--count=false")
		nf, ok := finding(s, lifecycle.CodeNotEstablished)
		if !ok {
			t.Errorf("%s: not established, and status does not say so: %+v", f.file, s.Findings)
		}
		return false, "accepted but not established; status reports: " + nf.Message
	}
	if err := fixture.WaitEstablished(ctx, c.ext, crd.Name); err != nil {
		t.Fatalf("%s: %v", f.file, err)
	}
	r := plugin(t, "status", crd.Name, "-o", "json")
	if msg := statusExitMismatch(t, f.file+": status", r); msg != "" {
		t.Error(msg)
		return true, ""
	}
	var s report.Status
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Errorf("%s: decoding status: %v", f.file, err)
		return true, ""
	}
	if s.CRD.Name != crd.Name || s.State == lifecycle.StateUnknown || s.Objects == nil || s.Objects.Count != 0 {
		t.Errorf("%s: status = name %s, state %s, objects %+v", f.file, s.CRD.Name, s.State, s.Objects)
	}
	if table := plugin(t, "status", crd.Name); !strings.Contains(table.stdout, "State:") {
		t.Errorf("%s: status table: %v\n%s", f.file, table.err, table.stdout)
	} else if msg := statusExitMismatch(t, f.file+": status table", table); msg != "" {
		t.Error(msg)
	}
	return true, ""
}

func finding(s report.Status, code string) (lifecycle.Finding, bool) {
	for _, f := range s.Findings {
		if f.Code == code {
			return f, true
		}
	}
	return lifecycle.Finding{}, false
}
