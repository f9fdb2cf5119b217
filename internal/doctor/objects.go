package doctor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// maxObjectReads bounds how many objects doctor reads one by one, per
// failed list, to find those that break it when the API server's error does
// not name them.
const maxObjectReads = 1000

// maxNamed is how many unreadable objects a finding's message names (the
// report's lists name them all).
const maxNamed = 10

// listing is one list of a CRD's objects through one served version.
type listing struct {
	version string
	// n is the number of objects listed when err is nil.
	n int
	// err is the API server's refusal (an apierrors.APIStatus).
	err error
	// unreadable are the objects that break the list, as far as known;
	// more is set when there may be others.
	unreadable []string
	more       bool
	// read is set when the objects were read one by one through version.
	read bool
}

func (l listing) failed() bool { return l.err != nil && !l.forbidden() }
func (l listing) forbidden() bool {
	return apierrors.IsForbidden(l.err) || apierrors.IsUnauthorized(l.err)
}

// objectLists are the lists doctor made of one CRD's objects, the list
// version's first.
type objectLists struct {
	listings []listing
	// count is the number of objects, from the first list that succeeded;
	// nil when none did.
	count *int
	lists []report.ObjectList
}

// objects lists crd's objects through lifecycle.ListVersion, metadata only.
// The API server converts every object to the version it is listed at, so
// one it cannot convert (a conversion webhook that refuses it, a stored
// version no longer in spec.versions) fails the whole list. Further lists,
// each through every other served version in kubectl's priority order, are
// made when:
//
//   - the first list failed (other than Forbidden): the findings then say
//     whether any version lists the objects;
//   - it succeeded with objects and the CRD converts them through a webhook,
//     which may convert an object to one version and not to another (with
//     conversion None only a stored version missing from spec.versions
//     fails a read, and then at every version).
//
// For every failed list, the objects that break it are named (see name).
// Errors that are not the API server's answer (the connection) are
// returned.
func (d *Doctor) objects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*objectLists, error) {
	out := &objectLists{}
	first := lifecycle.ListVersion(crd)
	if first == "" {
		return out, nil // NoServedVersion says so
	}
	l, err := d.list(ctx, crd, first)
	if err != nil {
		return nil, err
	}
	out.listings = append(out.listings, l)
	switch {
	case l.forbidden():
	case l.err != nil, l.n > 0 && lifecycle.UsesWebhook(crd):
		for _, v := range otherServed(crd, first) {
			l, err := d.list(ctx, crd, v)
			if err != nil {
				return nil, err
			}
			out.listings = append(out.listings, l)
		}
	}
	if err := d.name(ctx, crd, out.listings); err != nil {
		return nil, err
	}
	for _, l := range out.listings {
		ol := report.ObjectList{Version: l.version, Unreadable: l.unreadable, MoreUnreadable: l.more}
		if l.err == nil {
			n := l.n
			ol.Objects = &n
			if out.count == nil {
				out.count = &n
			}
		} else {
			ol.Error = l.err.Error()
		}
		out.lists = append(out.lists, ol)
	}
	return out, nil
}

// otherServed are crd's served versions other than listed, in kubectl's
// priority order (its default version first).
func otherServed(crd *apiextensionsv1.CustomResourceDefinition, listed string) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name != listed {
			out = append(out, v.Name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return lifecycle.ByPriority(out)
}

// list counts crd's objects through version, reporting progress.
func (d *Doctor) list(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (listing, error) {
	l := listing{version: version}
	err := d.Reader.EachObject(ctx, crd, version, d.ChunkSize, func(string, string) error {
		l.n++
		if d.Progress != nil && l.n%progressEvery == 0 {
			d.Progress(Event{CRD: crd.Name, Version: version, Objects: l.n})
		}
		return nil
	})
	if d.Progress != nil {
		d.Progress(Event{CRD: crd.Name, Version: version, Objects: l.n, Done: true})
	}
	if err != nil {
		if !answered(err) {
			return l, err
		}
		l.n, l.err = 0, err
	}
	return l, nil
}

// answered reports whether err is the API server's answer rather than a
// failure to reach it.
func answered(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// errStop ends a list early.
var errStop = errors.New("stop")

// name finds the objects that break each failed list. The API server names
// them itself when it aggregates the objects it could not decode (Kubernetes
// 1.32+ with AllowUnsafeMalformedObjectDeletion, on by default from 1.37:
// up to 100 storage keys in the StatusError's causes, the first in its
// message). When it does not name them all, and another version lists the
// objects, doctor lists their names there and reads each, up to
// maxObjectReads, through the failed version: those the API server refuses
// are the ones. Forbidden reads leave the rest unknown (more).
func (d *Doctor) name(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, ls []listing) error {
	var good *listing
	for i := range ls {
		if ls[i].err == nil {
			good = &ls[i]
			break
		}
	}
	var names [][2]string // namespace and name of the objects at good.version
	namesMore, namesRead, namesOK := false, false, false
	for i := range ls {
		l := &ls[i]
		if !l.failed() {
			continue
		}
		l.unreadable, l.more = unreadableFromError(l.err, crd)
		if len(l.unreadable) > 0 && !l.more {
			continue
		}
		if good != nil && !namesRead {
			namesRead = true
			err := d.Reader.EachObject(ctx, crd, good.version, d.ChunkSize, func(ns, name string) error {
				if len(names) == maxObjectReads {
					namesMore = true
					return errStop
				}
				names = append(names, [2]string{ns, name})
				return nil
			})
			switch {
			case err == nil, errors.Is(err, errStop):
				namesOK = true
			case !answered(err):
				return err
			}
			// Otherwise the version that listed a moment ago no longer
			// does: the objects stay unnamed.
		}
		if !namesOK {
			l.more = true
			continue
		}
		unreadable, more, err := d.readEach(ctx, crd, l.version, names)
		if err != nil {
			return err
		}
		for _, o := range unreadable {
			if !slices.Contains(l.unreadable, o) {
				l.unreadable = append(l.unreadable, o)
			}
		}
		l.more, l.read = more || namesMore, true
	}
	return nil
}

// readEach reads each object of names through version and returns those
// the API server could not read; more is set when a read was forbidden
// (the rest are then unknown).
func (d *Doctor) readEach(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string, names [][2]string) ([]string, bool, error) {
	var out []string
	for i, o := range names {
		err := d.Reader.ReadObject(ctx, crd, version, o[0], o[1])
		if d.Progress != nil && ((i+1)%progressEvery == 0 || i == len(names)-1) {
			d.Progress(Event{CRD: crd.Name, Version: version, Objects: i + 1, Done: i == len(names)-1})
		}
		switch {
		case err == nil, apierrors.IsNotFound(err): // deleted since it was listed
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
			return out, true, nil
		case !answered(err):
			return nil, false, err
		default:
			out = append(out, objectName(o[0], o[1]))
		}
	}
	return out, false, nil
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

var (
	// keyInMessage is a storage key in the message of a StorageError.
	keyInMessage = regexp.MustCompile(`Key: (\S+?),`)
	// andMore is how the API server's message counts the objects it does
	// not name.
	andMore = regexp.MustCompile(`\(and \d+ more\)`)
)

// unreadableFromError are the objects an API server's list error names:
// the storage keys of the causes of a StatusError (reason StoreReadError),
// else the key in its message. more is set when the error says it names
// only some (a FieldValueTooMany cause, "(and N more)" with causes lost).
func unreadableFromError(err error, crd *apiextensionsv1.CustomResourceDefinition) ([]string, bool) {
	var out []string
	more := false
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if details := status.Status().Details; details != nil {
			for _, c := range details.Causes {
				if c.Type == metav1.CauseTypeTooMany {
					more = true
				}
				if o, ok := objectOfKey(c.Field, crd); ok {
					out = append(out, o)
				}
			}
		}
	}
	if len(out) > 0 {
		return out, more
	}
	for _, m := range keyInMessage.FindAllStringSubmatch(err.Error(), -1) {
		if o, ok := objectOfKey(m[1], crd); ok {
			out = append(out, o)
		}
	}
	return out, more || andMore.MatchString(err.Error())
}

// objectOfKey is the object ("namespace/name" or "name") that an etcd
// storage key of crd's objects names: <prefix>/<group>/<plural>/[<namespace>/]<name>.
func objectOfKey(key string, crd *apiextensionsv1.CustomResourceDefinition) (string, bool) {
	marker := "/" + crd.Spec.Group + "/" + crd.Spec.Names.Plural + "/"
	i := strings.LastIndex(key, marker)
	if i < 0 {
		return "", false
	}
	rest := key[i+len(marker):]
	parts := strings.Split(rest, "/")
	want := 1
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		want = 2
	}
	if len(parts) != want || slices.Contains(parts, "") {
		return "", false
	}
	return rest, true
}

// findings are the findings of the lists: for a forbidden first list, that
// the objects were not counted; when every list failed, one
// ObjectsUnlistable error; otherwise one ObjectsUnreadable error per failed
// list, naming the versions that list the objects. Each names the objects
// that break the list.
func (o *objectLists) findings(a lifecycle.Analysis) []lifecycle.Finding {
	if len(o.listings) == 0 {
		return nil
	}
	if first := o.listings[0]; first.forbidden() {
		f := lifecycle.UnreadableObjects(a, first.version, first.err.Error(), true)
		f.Fix = fmt.Sprintf("grant list on %s.%s", a.CRD.Plural, a.CRD.Group)
		return []lifecycle.Finding{f}
	}
	var failed []listing
	var listed, notListed []string
	for _, l := range o.listings {
		switch {
		case l.err == nil:
			listed = append(listed, l.version)
		case l.failed():
			failed = append(failed, l)
		default:
			notListed = append(notListed, l.version)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if len(listed) == 0 {
		first := failed[0]
		f := lifecycle.UnreadableObjects(a, first.version, first.err.Error(), false)
		f.Code = lifecycle.CodeObjectsUnlistable
		var versions []string
		for _, l := range failed {
			versions = append(versions, l.version)
		}
		f.Message = fmt.Sprintf("objects cannot be listed at any served version (%s): %s%s", strings.Join(versions, ", "), f.Message, unreadableText(first))
		if len(notListed) > 0 {
			f.Message += fmt.Sprintf("; not tried: %s (forbidden)", strings.Join(notListed, ", "))
		}
		return []lifecycle.Finding{f}
	}
	var out []lifecycle.Finding
	for _, l := range failed {
		f := lifecycle.UnreadableObjects(a, l.version, l.err.Error(), false)
		f.Message += fmt.Sprintf(" (they can be listed at %s)%s", strings.Join(listed, ", "), unreadableText(l))
		out = append(out, f)
	}
	return out
}

// unreadableText names the objects that break l, for a finding's message.
func unreadableText(l listing) string {
	switch {
	case len(l.unreadable) > 0:
	case l.read && !l.more:
		return fmt.Sprintf("; each object, read on its own at %s, was readable: the list itself fails", l.version)
	case l.read:
		return fmt.Sprintf("; the API server's answer does not name the objects that break the list at %s, and reading them one by one was refused", l.version)
	default:
		return fmt.Sprintf("; the API server's answer does not name the objects that break the list at %s, and no served version lists them to read them one by one", l.version)
	}
	named := lifecycle.Some(l.unreadable, maxNamed)
	switch {
	case len(l.unreadable) > maxNamed && l.more:
		named = lifecycle.Shorten(l.unreadable, maxNamed, ", ", " and at least %d more")
	case len(l.unreadable) > maxNamed:
		named += " (-o json lists them)"
	case l.more:
		named += " and possibly more"
	}
	return fmt.Sprintf("; objects the API server cannot read at %s: %s", l.version, named)
}
