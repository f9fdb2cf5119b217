package e2e

import (
	"testing"

	"github.com/crdversion/kubectl-crdversion/internal/e2e/apiserver"
)

// ownServer starts an API server for t alone, in a process of its own (the
// test binary run again, see TestMain), and stops it when t ends. A
// kube-apiserver that fails a post-start hook ends its process with
// klog.Fatal (rbac/bootstrap-roles gave up so on a loaded machine, while
// the shards ran side by side): in this process it would end every test of
// the binary; in its own it fails t, with the fatal line, at start or
// whenever it happens while t runs.
func ownServer(t *testing.T, opts apiserver.Options) *apiserver.Server {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	s, err := apiserver.StartProcess(opts)
	if err != nil {
		t.Fatalf("the test's own API server: %v", err)
	}
	t.Cleanup(s.Stop)
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-s.Exited():
			t.Errorf("the test's own API server died while the test ran: %v", s.ExitErr())
		case <-stop:
		}
	}()
	// Runs before s.Stop (cleanups run last first): the end of the
	// process that Stop brings is not news.
	t.Cleanup(func() {
		close(stop)
		<-watched
	})
	return s
}
