package cluster

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
)

// listStream is a paged list of a resource read one object at a time, in
// the order the API server lists them: by etcd key, which for custom
// resources is the namespace, "/", then the name (objectKey) — the same
// order at every version, since the versions of a resource share their
// keys. The list runs ahead in a goroutine of its own, a few pages at most
// (pager's buffer), so memory does not grow with the objects.
type listStream struct {
	items <-chan *unstructured.Unstructured
	cur   *unstructured.Unstructured
	done  bool
}

// streamList starts the paged list of res (all namespaces) with pageSize
// objects a page; it stops when ctx is cancelled. A list that fails ends
// the stream early: the objects it did not reach are not found (find), and
// their checks take the dry-run path, which meets the failure on its own.
func streamList(ctx context.Context, res dynamic.NamespaceableResourceInterface, pageSize int64) *listStream {
	ch := make(chan *unstructured.Unstructured, max(pageSize, 1))
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return res.List(ctx, opts)
	})
	p.PageSize = pageSize
	go func() {
		defer close(ch)
		_ = p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			select {
			case ch <- obj.(*unstructured.Unstructured):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return &listStream{items: ch}
}

// find returns the object of the stream that is u read at the stream's
// version — the same key, uid and resourceVersion — or nil. It consumes the
// stream up to u's key: the calls must come in the lists' order, as they
// do for the items of a second paged list of the same resource. Objects of
// the stream before u's key (created after the other list passed them) are
// skipped.
func (s *listStream) find(u *unstructured.Unstructured) *unstructured.Unstructured {
	key := objectKey(u)
	for {
		if s.cur == nil && !s.done {
			s.cur = <-s.items
			s.done = s.cur == nil // closed: the list ended
		}
		if s.cur == nil {
			return nil
		}
		switch c := strings.Compare(objectKey(s.cur), key); {
		case c < 0:
			s.cur = nil
		case c > 0:
			return nil
		default:
			got := s.cur
			s.cur = nil
			if got.GetUID() != u.GetUID() || got.GetResourceVersion() != u.GetResourceVersion() {
				return nil
			}
			return got
		}
	}
}

// objectKey is u's place in the API server's list order: the namespace,
// "/", the name (the name alone for a cluster-scoped object), compared
// byte by byte as etcd compares its keys.
func objectKey(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// judgeRead is checkObject for an object read at From (u) and at To (read)
// at the same resourceVersion, compared with each other in place of the
// dry-run update's answer (CheckObjectsOptions.Reads). Without
// o.UpdateOnly, read is also sent as a new object (createDryRun): one the
// API server accepts as new it accepts as migrate's no-op update too (the
// same content, judged by the whole schema without ratcheting, where the
// update is judged with it; transition rules and admission, which could
// still tell them apart, rule reads out before). One it refuses as new
// may be refused as an update as well — an embedded resource's kind,
// which ratcheting does not spare — so it is sent the dry-run update
// after all (checkObject; f.dryRun).
func (c *Client) judgeRead(ctx context.Context, from, to, through dynamic.ResourceInterface, u, read *unstructured.Unstructured, o CheckObjectsOptions) (objectFinding, error) {
	var f objectFinding
	if !o.UpdateOnly {
		if err := createDryRun(ctx, to, read, o.FieldManager, &f); err != nil || f.forbidden != "" {
			return f, err
		}
		if f.invalidNew != "" {
			f, err := c.checkObject(ctx, from, to, through, u, true, o)
			f.dryRun = true
			return f, err
		}
	}
	compareFinding(&f, u, read, true, o)
	return f, nil
}
