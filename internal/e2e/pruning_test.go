package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/crdversion/kubectl-crdversion/internal/cluster"
	"github.com/crdversion/kubectl-crdversion/internal/e2e/fixture"
	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/loss"
	migresult "github.com/crdversion/kubectl-crdversion/internal/migrate/result"
	"github.com/crdversion/kubectl-crdversion/internal/schema"
)

// TestPruningPredictionMatchesAPIServer is the differential test of the
// static pruning prediction (schema.Prune, behind every "no field is
// pruned" of add-version, promote-storage, migrate, status, diff and
// check-upgrade) against the API server, which is the oracle.
//
// For every ordered pair (OLD, NEW) of differing schemas among the versions
// of every CRD of the corpus (../shared/crds, or $CRDVERSION_CORPUS; the
// repository's testdata/crds when neither is there) and of generated
// schemas (x-kubernetes-preserve-unknown-fields at several depths, maps
// read as structs, embedded resources, int-or-string, nullable), it
// installs a CRD with OLD as the storage version and conversion None,
// creates objects valid at OLD from a fixed seed (with unknown fields
// wherever OLD preserves them, and nulls where OLD allows them), reads them
// back at OLD and at NEW, and asserts that every path present at OLD and
// missing at NEW is named by schema.Prune(OLD, NEW). Paths the prediction
// names but no object lost are counted and logged ("extra").
//
// On the same objects it is also the differential test of the loss
// measurement's two designs (issue 30): each NEW is made the storage
// version in turn and the migration there is measured with
// loss.Options.CrossCheck — every pass by reads (two paged lists) is
// measured again by dry runs (migrate's update, one per object), and the
// test fails on any object whose verdicts differ, or when no pass read.
//
// The CRDs are reduced to what pruning looks at (the structural skeleton:
// type, properties, items, additionalProperties, nullable, default and the
// x-kubernetes-preserve-unknown-fields, -embedded-resource and
// -int-or-string extensions); value validations (patterns, enums, CEL
// rules, required, ...) never change what is pruned, and without them any
// object of the right shape is valid. The prediction is computed on the
// original schemas.
//
// CRDVERSION_PRUNE_SEED sets the seed (default 1) and
// CRDVERSION_PRUNE_OBJECTS the objects per CRD (default 4, five times as
// many for generated schemas; the first holds every declared field), for a bigger run on demand;
// CRDVERSION_PRUNE_ONLY keeps the subjects whose name contains it.
func TestPruningPredictionMatchesAPIServer(t *testing.T) {
	slowTier(t, "one CRD per corpus subject and storage version")
	seed := pruneEnvInt(t, "CRDVERSION_PRUNE_SEED", 1)
	perCRD := pruneEnvInt(t, "CRDVERSION_PRUNE_OBJECTS", 4)
	subjects := append(corpusSubjects(t), generatedSubjects(t)...)
	c := newClients(t)

	// One CRD per (subject, storage version OLD), holding OLD and each
	// version NEW whose schema differs and whose pair was not seen yet.
	type job struct {
		subject pruneSubject
		old     string
		news    []string
		crd     *apiextensionsv1.CustomResourceDefinition
	}
	var jobs []*job
	seen := map[string]bool{}
	only := os.Getenv("CRDVERSION_PRUNE_ONLY")
	for _, s := range subjects {
		if !strings.Contains(s.name, only) {
			continue
		}
		for _, old := range s.order {
			j := &job{subject: s, old: old}
			for _, new := range s.order {
				if new == old || schema.Equal(s.versions[old], s.versions[new]) {
					continue
				}
				key := canonical(s.versions[old]) + "\x00" + canonical(s.versions[new])
				if seen[key] {
					continue
				}
				seen[key] = true
				j.news = append(j.news, new)
			}
			if len(j.news) > 0 {
				jobs = append(jobs, j)
			}
		}
	}
	for i, j := range jobs {
		j.crd = skeletonCRD(fmt.Sprintf("p%03d.pruning.e2e.example.com", i), j.subject, j.old, j.news)
	}
	t.Logf("%d subjects, %d CRDs, seed %d, %d objects per CRD", len(subjects), len(jobs), seed, perCRD)
	for _, j := range jobs {
		t.Logf("%s: %s, storage %s, read at %s", j.crd.Name, j.subject.name, j.old, strings.Join(j.news, ", "))
	}

	type pairResult struct {
		subject, old, new string
		predicted         []schema.Pruned
		dropped           map[string]bool // concrete paths
		objects           int
		// measured is set when the loss measurement of the migration
		// from OLD to NEW answered; refused is its verdict.
		measured, refused bool
		// lost are the objects' paths whose value the read at NEW drops
		// or changes; refusal is the measurement's reason when it refused.
		lost    []string
		refusal string
	}
	var (
		mu      sync.Mutex
		results []pairResult
	)
	lossChecker := &countingChecker{Client: clusterClient(t, "")}
	ctx := context.Background()
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
			if _, err := crds.Create(ctx, j.crd, metav1.CreateOptions{}); err != nil {
				t.Errorf("%s (storage %s): the API server rejects the test CRD: %v", j.subject.name, j.old, err)
				return
			}
			defer func() { _ = crds.Delete(context.Background(), j.crd.Name, metav1.DeleteOptions{}) }()
			if err := fixture.WaitEstablished(ctx, c.ext, j.crd.Name); err != nil {
				t.Errorf("%s: %v", j.crd.Name, err)
				return
			}
			gen := newObjectGen(seed, j.subject.name+"/"+j.old, j.subject.names)
			skel := skeletonOf(j.subject.versions[j.old])
			res := c.dyn.Resource(gvr(j.crd, j.old))
			n := perCRD
			if j.subject.generated {
				n *= 5 // small objects; each class needs many draws
			}
			for i := range n {
				obj := gen.object(skel, i == 0)
				obj["apiVersion"] = j.crd.Spec.Group + "/" + j.old
				obj["kind"] = "Thing"
				obj["metadata"] = map[string]any{"name": "o" + strconv.Itoa(i)}
				if _, err := res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
					b, _ := json.Marshal(obj)
					t.Errorf("%s at %s: creating an object valid at %s: %v\n%.2000s", j.subject.name, j.old, j.old, err, b)
					return
				}
			}
			atOld := listByName(t, c, j.crd, j.old, n)
			var pairs []pairResult
			for _, new := range j.news {
				atNew := listByName(t, c, j.crd, new, n)
				r := pairResult{subject: j.subject.name, old: j.old, new: new, dropped: map[string]bool{}, objects: len(atOld),
					predicted: schema.Prune(j.subject.versions[j.old], j.subject.versions[new])}
				for name, o := range atOld {
					n, ok := atNew[name]
					if !ok {
						t.Errorf("%s (%s): %s is not listed at %s", j.crd.Name, j.subject.name, name, new)
						continue
					}
					o, n = maps.Clone(o), maps.Clone(n)
					for _, k := range []string{"apiVersion", "metadata"} {
						delete(o, k)
						delete(n, k)
					}
					droppedPaths(o, n, "", r.dropped)
					// What a rewrite at NEW loses of the data: values
					// dropped or changed (an explicit null carries
					// nothing: dropping it is reported, not refused).
					ch := cluster.CompareObjects(o, n)
					for _, p := range append(ch.Dropped, ch.Changed...) {
						r.lost = append(r.lost, name+": "+p)
					}
				}
				pairs = append(pairs, r)
			}
			// The loss measurement of the migration to each NEW, by
			// reads and by dry runs, on the same objects (stored at OLD).
			for i, new := range j.news {
				refusal, err := measureBothWays(ctx, c, lossChecker, j.crd.Name, j.old, new)
				if err != nil {
					t.Errorf("%s (%s) stored at %s, migrated to %s: %v", j.crd.Name, j.subject.name, j.old, new, err)
					continue
				}
				pairs[i].measured, pairs[i].refused, pairs[i].refusal = true, refusal != "", refusal
			}
			mu.Lock()
			results = append(results, pairs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Without a pass by reads the two designs were not compared: the
	// chooser must pick reads for these CRDs (conversion None, no
	// admission, no rule), so none means it or the lists broke.
	t.Logf("loss measurement: %d passes by reads over %d objects, each also by dry runs, every verdict alike",
		lossChecker.readPasses.Load(), lossChecker.readObjects.Load())
	if lossChecker.readPasses.Load() == 0 || lossChecker.readObjects.Load() == 0 {
		t.Error("no loss measurement pass compared its reads with its dry runs")
	}
	// Every storage switch here comes after the objects were written, so
	// each object holding an atomic list or map is judged by the CRD as it
	// was at its write (B10): without such reads, the count of false
	// refusals below says nothing about that evidence.
	t.Logf("loss measurement: %d reads of a CRD as it was at an object's last write", lossChecker.historyReads.Load())
	if lossChecker.historyReads.Load() == 0 {
		t.Error("no object of the corpus was judged by the CRD's history (data recorded as a whole, B10)")
	}

	sort.Slice(results, func(i, k int) bool {
		a, b := results[i], results[k]
		return a.subject+"\x00"+a.old+"\x00"+a.new < b.subject+"\x00"+b.old+"\x00"+b.new
	})
	// The measurement's verdict against the API server's own reads: a
	// migration whose objects lose nothing when read at NEW must not be
	// refused (a false refusal, issue 34: an ordinary upgrade of the
	// corpus stopped for nothing), and one whose objects lose a path must
	// be.
	var lossless, falseRefusals, losing, missedLosses, writes int
	for _, r := range results {
		switch {
		case !r.measured:
		case r.refusal == writesRefusedText:
			writes++
		case len(r.lost) == 0:
			lossless++
			if r.refused {
				falseRefusals++
				t.Errorf("%s %s -> %s: the migration was refused, but no object read at %s lacks or changes a value it has at %s (a false refusal): %s", r.subject, r.old, r.new, r.new, r.old, r.refusal)
			}
		default:
			losing++
			if !r.refused {
				missedLosses++
				t.Errorf("%s %s -> %s: the migration was not refused, but the objects lose %s", r.subject, r.old, r.new, strings.Join(r.lost, ", "))
			}
		}
	}
	t.Logf("loss measurement verdicts: %d false refusal(s) of %d migrations that lose nothing; %d of %d migrations that lose data not refused; %d refused for writes the API server refuses",
		falseRefusals, lossless, missedLosses, losing, writes)
	if lossless == 0 || losing == 0 {
		t.Errorf("the verdicts were compared on %d lossless and %d losing migrations; want both kinds", lossless, losing)
	}

	var pairs, objects, dropped, predicted, extra, missed int
	for _, r := range results {
		pairs++
		objects += r.objects
		dropped += len(r.dropped)
		predicted += len(r.predicted)
		used := make([]bool, len(r.predicted))
		var misses []string
		for d := range r.dropped {
			found := false
			for i, p := range r.predicted {
				if schema.Covers(p.Path, d) {
					found, used[i] = true, true
				}
			}
			if !found {
				misses = append(misses, d)
			}
		}
		for _, u := range used {
			if !u {
				extra++
			}
		}
		if len(misses) > 0 {
			missed += len(misses)
			sort.Strings(misses)
			t.Errorf("%s %s -> %s: the API server dropped %s, which the prediction does not name (it names %s)",
				r.subject, r.old, r.new, strings.Join(misses, ", "), pathsOf(r.predicted))
		}
	}
	t.Logf("%d version pairs, %d objects: the API server dropped %d paths, the prediction missed %d of them; it named %d paths, %d of them extra (no object lost data there)",
		pairs, objects, dropped, missed, predicted, extra)
	if pairs == 0 {
		t.Fatal("no version pair was checked")
	}
}

// countingChecker is the plugin's cluster client counting the passes the
// loss measurement sent by reads and the objects they compared by reads.
type countingChecker struct {
	*cluster.Client
	readPasses, readObjects atomic.Int64
	// historyReads counts the reads of a CRD as it was at an object's
	// last write (B10's evidence for data recorded as a whole).
	historyReads atomic.Int64
}

func (c *countingChecker) CRDAt(ctx context.Context, name, rv string) (*apiextensionsv1.CustomResourceDefinition, error) {
	c.historyReads.Add(1)
	return c.Client.CRDAt(ctx, name, rv)
}

func (c *countingChecker) CheckObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, o cluster.CheckObjectsOptions) (*cluster.ObjectsCheck, error) {
	found, err := c.Client.CheckObjects(ctx, crd, o)
	if err == nil && o.Reads {
		c.readPasses.Add(1)
		c.readObjects.Add(int64(found.ReadAtTo))
	}
	return found, err
}

// measureBothWays makes version the storage version of the CRD named name
// and, once the API server serves it as such, measures what migrating the
// objects there loses with loss.Options.CrossCheck: a pass by reads is
// measured again by dry runs and a verdict that differs on any object is a
// *loss.Disagreement, returned. A refusal (the objects lose fields) is the
// measurement's answer: its text is returned. status.storedVersions is set to [old,
// version] first, old the version every object is stored at (no object
// was rewritten since), so that the measurement is of that migration
// alone, not also from the versions made the storage version before.
func measureBothWays(ctx context.Context, c clients, lc *countingChecker, name, old, version string) (refusal string, _ error) {
	crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", err
	}
	if err := lc.WaitStorageVersion(ctx, name, time.Minute); err != nil {
		return "", err
	}
	var crd *apiextensionsv1.CustomResourceDefinition
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Status.StoredVersions = []string{old, version}
		crd, err = crds.UpdateStatus(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", err
	}
	_, err = loss.Measure(ctx, lc, crd, loss.Options{CrossCheck: true, FieldManager: "crdversion-e2e"})
	var refused *lifecycle.RefusalError
	var objects *loss.Refusal
	var differ *loss.Disagreement
	switch {
	case errors.As(err, &objects) && writesRefused(objects.Objects):
		// The API server refuses the rewrite itself (a schema that
		// requires what the objects lack): the migration cannot run, and
		// says so; not a verdict on what it loses.
		return writesRefusedText, nil
	case errors.As(err, &refused):
		return refused.Error() + " " + strings.Join(refused.Details, "; "), nil
	case errors.As(err, &differ):
		return "", errors.New(differ.Detail())
	}
	return "", err
}

// writesRefusedText is measureBothWays' answer when the API server
// refuses every dry-run write it names.
const writesRefusedText = "the API server refuses the rewrite"

// writesRefused reports whether every object of a refusal is named for
// the API server's refusal of its dry-run write alone.
func writesRefused(objects []migresult.RefusedObject) bool {
	for _, o := range objects {
		if o.Refused == "" || len(o.Dropped)+len(o.Changed)+len(o.Hidden) > 0 || o.Unmeasured != "" {
			return false
		}
	}
	return len(objects) > 0
}

func pathsOf(ps []schema.Pruned) string {
	if len(ps) == 0 {
		return "none"
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Path)
	}
	return strings.Join(out, ", ")
}

func pruneEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// listByName lists the objects of crd at version, waiting (bounded) until
// the version serves all want of them.
func listByName(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition, version string, want int) map[string]map[string]any {
	out := map[string]map[string]any{}
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		l, err := c.dyn.Resource(gvr(crd, version)).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, o := range l.Items {
			out[o.GetName()] = o.Object
		}
		return len(out) >= want, nil
	})
	if err != nil {
		t.Errorf("listing %s at %s: %v (last error: %v; %d of %d objects listed)", crd.Name, version, err, last, len(out), want)
	}
	return out
}

// droppedPaths records the paths under path present in old and missing
// in new.
func droppedPaths(old, new any, path string, out map[string]bool) {
	switch o := old.(type) {
	case map[string]any:
		n, _ := new.(map[string]any) // pruning never changes a type
		for k, v := range o {
			nv, ok := n[k]
			if !ok {
				out[schema.ChildPath(path, k)] = true
				continue
			}
			droppedPaths(v, nv, schema.ChildPath(path, k), out)
		}
	case []any:
		n, _ := new.([]any)
		for i, v := range o {
			if i >= len(n) {
				out[fmt.Sprintf("%s[%d]", path, i)] = true
				continue
			}
			droppedPaths(v, n[i], fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// pruneSubject is a CRD's versions: their original schemas and the names
// of every property in any of them (for unknown fields that collide with
// declared ones).
type pruneSubject struct {
	name      string
	generated bool
	order     []string
	versions  map[string]*apiextensionsv1.JSONSchemaProps
	names     []string
}

func newSubject(name string, versions []apiextensionsv1.CustomResourceDefinitionVersion) pruneSubject {
	s := pruneSubject{name: name, versions: map[string]*apiextensionsv1.JSONSchemaProps{}}
	names := map[string]bool{}
	for i := range versions {
		v := &versions[i]
		sch := schema.Of(v)
		if sch == nil {
			continue
		}
		s.order = append(s.order, v.Name)
		s.versions[v.Name] = sch
		collectNames(sch, names)
	}
	for n := range names {
		s.names = append(s.names, n)
	}
	sort.Strings(s.names)
	return s
}

func collectNames(s *apiextensionsv1.JSONSchemaProps, out map[string]bool) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		out[k] = true
		collectNames(&p, out)
	}
	if s.Items != nil {
		collectNames(s.Items.Schema, out)
	}
	if s.AdditionalProperties != nil {
		collectNames(s.AdditionalProperties.Schema, out)
	}
}

// corpusSubjects are the multi-version CRDs of the corpus.
func corpusSubjects(t *testing.T) []pruneSubject {
	dir := corpusDir()
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join(repoRoot, "testdata", "crds")
		t.Logf("no CRD corpus beside the repository; reading the repository's copy %s", dir)
	}
	var out []pruneSubject
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		// The .nodesc copies (all the repository has) differ only in
		// descriptions: their pairs are the same pairs, checked once.
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		objs, err := fixture.Read(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		for _, u := range objs {
			if !fixture.IsCRD(u) {
				continue
			}
			crd, err := fixture.CRD(u)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if len(crd.Spec.Versions) > 1 {
				out = append(out, newSubject(rel+"#"+crd.Name, crd.Spec.Versions))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no multi-version CRDs under %s", dir)
	}
	return out
}

// generatedSubjects are schemas of each class of pruning, every one at
// several depths: each pair of versions is checked both ways.
func generatedSubjects(t *testing.T) []pruneSubject {
	spec := func(props string) string {
		return "type: object\nproperties:\n  spec:\n" + indentBy(props, "    ")
	}
	cases := []struct {
		name     string
		versions []string
	}{
		{"preserve-unknown-fields at .spec, a map read as a struct (B1)", []string{
			spec("type: object\nx-kubernetes-preserve-unknown-fields: true\nproperties:\n  replicas: {type: integer}\n  labels: {type: object, additionalProperties: {type: string}}"),
			spec("type: object\nproperties:\n  replicas: {type: integer}\n  labels: {type: object, properties: {team: {type: string}}}"),
		}},
		{"preserve-unknown-fields at the root", []string{
			"type: object\nx-kubernetes-preserve-unknown-fields: true",
			spec("type: object\nproperties:\n  a: {type: string}\n  b: {type: object, properties: {c: {type: integer}}}"),
			spec("type: object\nx-kubernetes-preserve-unknown-fields: true"),
		}},
		{"preserve-unknown-fields at depth 2, 3 and in list items", []string{
			spec("type: object\nproperties:\n  raw: {type: object, x-kubernetes-preserve-unknown-fields: true}\n  deep: {type: object, properties: {er: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}}}\n  steps: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {name: {type: string}}}}"),
			spec("type: object\nproperties:\n  raw: {type: object, properties: {a: {type: string}, b: {type: array, items: {type: object, properties: {c: {type: string}}}}}}\n  deep: {type: object, properties: {er: {type: object, properties: {a: {type: string}}}}}\n  steps: {type: array, items: {type: object, properties: {name: {type: string}}}}"),
			spec("type: object\nx-kubernetes-preserve-unknown-fields: true\nproperties:\n  raw: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: object, properties: {x: {type: string}}}}}\n  steps: {type: array, items: {type: object, properties: {name: {type: string}}}}"),
		}},
		{"maps and structs", []string{
			spec("type: object\nproperties:\n  m: {type: object, additionalProperties: {type: object, properties: {a: {type: string}, b: {type: string}}}}\n  o: {type: object, additionalProperties: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n  s: {type: object, additionalProperties: {type: string}}\n  l: {type: array, items: {type: object, additionalProperties: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}}}"),
			spec("type: object\nproperties:\n  m: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}\n  o: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}\n  s: {type: object, properties: {team: {type: string}, env: {type: object, properties: {x: {type: string}}}}}\n  l: {type: array, items: {type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}}"),
			spec("type: object\nproperties:\n  m: {type: object, properties: {x: {type: object, properties: {a: {type: string}}}}}\n  o: {type: object, additionalProperties: true}\n  s: {type: object, additionalProperties: {type: string}}\n  l: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}"),
		}},
		{"embedded resources", []string{
			spec("type: object\nproperties:\n  t: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}\n  u: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object, properties: {a: {type: string}}}}}\n  ts: {type: array, items: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}"),
			spec("type: object\nproperties:\n  t: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {metadata: {type: object, properties: {name: {type: string}}}}}\n  u: {type: object, properties: {spec: {type: object, properties: {a: {type: string}}}, kind: {type: string}}}\n  ts: {type: array, items: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}"),
			spec("type: object\nproperties:\n  t: {type: object, x-kubernetes-preserve-unknown-fields: true}\n  u: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}\n  ts: {type: array, items: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object}}}}"),
		}},
		{"int-or-string", []string{
			spec("type: object\nproperties:\n  port: {x-kubernetes-int-or-string: true}\n  size: {type: integer}\n  target: {type: object, properties: {a: {type: string}, b: {type: string}}}\n  ports: {type: array, items: {x-kubernetes-int-or-string: true}}"),
			spec("type: object\nproperties:\n  port: {type: object, properties: {a: {type: string}}}\n  size: {x-kubernetes-int-or-string: true}\n  target: {x-kubernetes-int-or-string: true}\n  ports: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}"),
			spec("type: object\nproperties:\n  port: {type: string}\n  size: {type: string}\n  target: {type: object, x-kubernetes-preserve-unknown-fields: true}\n  ports: {type: array, items: {type: string}}"),
		}},
		{"nullable and defaults", []string{
			spec("type: object\nproperties:\n  a: {type: string, nullable: true}\n  b: {type: string, nullable: true}\n  c: {type: object, nullable: true, properties: {d: {type: integer, nullable: true}}}\n  m: {type: object, additionalProperties: {type: string, nullable: true}}"),
			spec("type: object\nproperties:\n  a: {type: string}\n  b: {type: string, default: x}\n  c: {type: object, properties: {d: {type: integer}}}\n  m: {type: object, additionalProperties: {type: string}}"),
		}},
		{"unknown fields meeting new declarations", []string{
			spec("type: object\nx-kubernetes-preserve-unknown-fields: true"),
			spec("type: object\nx-kubernetes-preserve-unknown-fields: true\nproperties:\n  tpl: {type: object, properties: {a: {type: string}}}\n  items: {type: array, items: {type: object, properties: {b: {type: string}}}}\n  name: {type: string}\n  m: {type: object, additionalProperties: {type: integer}}"),
		}},
		{"additionalProperties true", []string{
			spec("type: object\nproperties:\n  a: {type: object, additionalProperties: true}\n  b: {type: object, x-kubernetes-preserve-unknown-fields: true}"),
			spec("type: object\nproperties:\n  a: {type: object, properties: {x: {type: string}, y: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n  b: {type: object, additionalProperties: true}"),
		}},
	}
	var out []pruneSubject
	for _, tc := range cases {
		var versions []apiextensionsv1.CustomResourceDefinitionVersion
		for i, y := range tc.versions {
			s := &apiextensionsv1.JSONSchemaProps{}
			if err := yaml.Unmarshal([]byte(y), s); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: fmt.Sprintf("v%d", i+1),
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: s}})
		}
		s := newSubject("generated: "+tc.name, versions)
		s.generated = true
		out = append(out, s)
	}
	return out
}

func indentBy(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func canonical(s *apiextensionsv1.JSONSchemaProps) string {
	b, _ := json.Marshal(skeletonOf(s))
	return string(b)
}

// skeletonCRD is a cluster-scoped CRD of group with old as the storage
// version and the versions news, all served, conversion None, each with
// the skeleton of its schema.
func skeletonCRD(group string, s pruneSubject, old string, news []string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names:      apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
		},
	}
	for _, v := range append([]string{old}, news...) {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == old,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: skeletonOf(s.versions[v])},
		})
	}
	return crd
}

// skeletonOf is what pruning looks at of a schema: type, properties,
// items, additionalProperties, nullable, default and the preserve-unknown,
// embedded-resource and int-or-string extensions. The root's metadata is
// left to the API server (name and generateName only may be declared).
func skeletonOf(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	out := skeleton(s)
	delete(out.Properties, "metadata")
	return out
}

func skeleton(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s == nil {
		return nil
	}
	out := &apiextensionsv1.JSONSchemaProps{Type: s.Type, Nullable: s.Nullable, Default: s.Default,
		XPreserveUnknownFields: s.XPreserveUnknownFields, XEmbeddedResource: s.XEmbeddedResource, XIntOrString: s.XIntOrString}
	if len(s.Properties) > 0 {
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for k, p := range s.Properties {
			out.Properties[k] = *skeleton(&p)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: skeleton(s.Items.Schema)}
	}
	if s.AdditionalProperties != nil {
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: s.AdditionalProperties.Allows, Schema: skeleton(s.AdditionalProperties.Schema)}
	}
	return out
}

// objectGen makes objects valid at a skeleton schema from a seed: every
// declared field (the first object) or a random part of them, entries in
// maps, unknown fields of any type where the schema preserves them (named
// at random or like a field of another version), nulls where allowed.
type objectGen struct {
	r      *rand.Rand
	names  []string
	budget int
	full   bool
}

func newObjectGen(seed int, key string, names []string) *objectGen {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return &objectGen{r: rand.New(rand.NewSource(int64(seed) ^ int64(h.Sum64()))), names: names}
}

func (g *objectGen) object(s *apiextensionsv1.JSONSchemaProps, full bool) map[string]any {
	g.full, g.budget = full, 4000
	o, _ := g.value(s, 0).(map[string]any)
	if o == nil {
		o = map[string]any{}
	}
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		delete(o, k)
	}
	return o
}

func (g *objectGen) value(s *apiextensionsv1.JSONSchemaProps, depth int) any {
	g.budget--
	switch {
	case s == nil:
		return g.anyJSON(depth)
	case s.Nullable && g.r.Intn(8) == 0:
		return nil
	case s.XIntOrString:
		if g.r.Intn(2) == 0 {
			return g.r.Intn(100)
		}
		return "s" + strconv.Itoa(g.r.Intn(100))
	}
	switch s.Type {
	case "object":
		o := map[string]any{}
		for _, k := range sortedProps(s) {
			p := s.Properties[k]
			if (g.full && g.budget > 0) || (g.budget > 0 && g.r.Intn(2) == 0) {
				o[k] = g.value(&p, depth+1)
			}
		}
		if s.XEmbeddedResource {
			o["apiVersion"] = "example.com/v1"
			o["kind"] = "Embedded"
			o["metadata"] = map[string]any{"name": "e", "labels": map[string]any{"a": "b"}}
		}
		if s.AdditionalProperties != nil {
			for range 1 + g.r.Intn(2) {
				o[g.name()] = g.value(s.AdditionalProperties.Schema, depth+1)
			}
		}
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
			for range 1 + g.r.Intn(2) {
				k := g.name()
				if _, declared := s.Properties[k]; !declared && o[k] == nil {
					o[k] = g.unknown(k, depth+1)
				}
			}
		}
		return o
	case "array":
		var items *apiextensionsv1.JSONSchemaProps
		if s.Items != nil {
			items = s.Items.Schema
		}
		var l []any
		for range 1 + g.r.Intn(2) {
			l = append(l, g.value(items, depth+1))
		}
		return l
	case "string":
		return "s" + strconv.Itoa(g.r.Intn(100))
	case "integer":
		return g.r.Intn(100)
	case "number":
		return float64(g.r.Intn(100)) + 0.5
	case "boolean":
		return g.r.Intn(2) == 0
	}
	// No type: x-kubernetes-preserve-unknown-fields without one.
	return g.anyJSON(depth)
}

func (g *objectGen) name() string {
	if len(g.names) > 0 && g.r.Intn(2) == 0 {
		return g.names[g.r.Intn(len(g.names))]
	}
	return "x" + strconv.Itoa(g.r.Intn(1000))
}

// unknown is the value of an unknown field named k: any JSON, except
// that apiVersion and kind are strings and metadata an object with a name
// (and a field ObjectMeta does not have). Under a schema that makes them
// an embedded resource, other values make the object unreadable at all
// (the API server answers "corrupt object ... must be a string"), which is
// not pruning.
func (g *objectGen) unknown(k string, depth int) any {
	switch k {
	case "apiVersion", "kind":
		return "s" + strconv.Itoa(g.r.Intn(100))
	case "metadata":
		return map[string]any{"name": "m", "x1": 1}
	}
	return g.anyJSON(depth)
}

func (g *objectGen) anyJSON(depth int) any {
	g.budget--
	n := 6
	if depth > 6 || g.budget <= 0 {
		n = 4
	}
	switch g.r.Intn(n) {
	case 0:
		return "s" + strconv.Itoa(g.r.Intn(100))
	case 1:
		return g.r.Intn(100)
	case 2:
		return g.r.Intn(2) == 0
	case 3:
		return nil
	case 4:
		o := map[string]any{}
		for range 1 + g.r.Intn(2) {
			k := g.name()
			o[k] = g.unknown(k, depth+1)
		}
		return o
	default:
		var l []any
		for range 1 + g.r.Intn(2) {
			l = append(l, g.anyJSON(depth+1))
		}
		return l
	}
}

func sortedProps(s *apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	return slices.Sorted(slices.Values(keys))
}
